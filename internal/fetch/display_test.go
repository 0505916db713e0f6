package fetch

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func causes(err error) []error {
	if err == nil {
		return nil
	}
	out := []error{err}
	switch e := err.(type) {
	case interface{ Unwrap() error }:
		out = append(out, causes(e.Unwrap())...)
	case interface{ Unwrap() []error }:
		for _, c := range e.Unwrap() {
			out = append(out, causes(c)...)
		}
	}
	return out
}

func TestADownloadsErrorNamesNoQueryValueOfItsURL(t *testing.T) {
	const secret = "PRESIGNEDSECRET42"
	query := "?X-Amz-Credential=" + secret + "&X-Amz-Signature=" + secret
	refusing, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + refusing.Addr().String()
	refusing.Close() // nothing listens there now: the connection is refused
	tests := []struct {
		name    string
		handler http.HandlerFunc // nil: no server, source is closed
		cfg     Config
	}{
		{"the server answers 403", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusForbidden) }, Config{}},
		{"the server answers 503", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }, Config{}},
		{"the file is over the limit", func(w http.ResponseWriter, _ *http.Request) { w.Write(make([]byte, 2048)) }, Config{MaxBytes: 1024}},
		{"the server stalls", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, Config{StallTimeout: 50 * time.Millisecond}},
		{"nothing listens", nil, Config{}},
		{"redirects without end", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, r.URL.Path+"x"+query, http.StatusFound)
		}, Config{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := closed
			if tt.handler != nil {
				base = serve(t, tt.handler).URL
			}
			e := newEnv(t, tt.cfg, nil)
			_, err := e.f.Fetch(context.Background(), "a", "j", 0, base+"/doc.pdf"+query)
			var fe *Error
			if !errors.As(err, &fe) {
				t.Fatalf("Fetch error = %v, want *Error", err)
			}
			if !strings.Contains(fe.Error(), "/doc.pdf?X-Amz-Credential=…&X-Amz-Signature=…") {
				t.Errorf("error %q does not name the source by its host and path", fe.Error())
			}
			// The row, a log line and River see Error(); a log or a caller
			// may also print any error it wraps.
			for _, c := range causes(err) {
				if strings.Contains(c.Error(), secret) {
					t.Errorf("%T in the error's chain carries the query value: %q", c, c.Error())
				}
			}
		})
	}
}
