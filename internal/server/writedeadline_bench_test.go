package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/docjobs/docjobs/gen/openapi"
)

// BenchmarkAnswerDeadline is what the answers' write deadline adds to a
// request: a keep-alive HTTP/1.1 GET over loopback, answered by the
// handler alone and through answerDeadline (deadline set at the start, on
// writes and after the handler; /openapi.yaml is written in two pieces).
func BenchmarkAnswerDeadline(b *testing.B) {
	srv := &Server{cfg: Config{}.withDefaults()}
	for _, route := range []struct {
		name string
		h    http.HandlerFunc
	}{{"healthz", healthz}, {"openapi", serveOpenAPI}} {
		for _, wrapped := range []bool{false, true} {
			name := route.name + " plain"
			var h http.Handler = route.h
			if wrapped {
				name, h = route.name+" with deadline", srv.answerDeadline(route.h)
			}
			b.Run(name, func(b *testing.B) {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					b.Fatal(err)
				}
				hs := &http.Server{Handler: h}
				go func() { _ = hs.Serve(ln) }()
				defer hs.Close()
				conn, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					b.Fatal(err)
				}
				defer conn.Close()
				br := bufio.NewReaderSize(conn, 64<<10)
				req := []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
				want := int64(len("ok\n"))
				if route.name == "openapi" {
					want = int64(len(openapi.YAML))
				}
				for b.Loop() {
					if _, err := conn.Write(req); err != nil {
						b.Fatal(err)
					}
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						b.Fatal(err)
					}
					n, err := io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					if err != nil || n != want {
						b.Fatalf("%d bytes, %v", n, err)
					}
				}
			})
		}
	}
}
