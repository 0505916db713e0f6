package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
)

// dialRaw opens a TCP connection to env that the test closes at its end.
func dialRaw(t *testing.T, env *testEnv) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", env.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// getHealthz sends GET /healthz on conn and reads the answer, within
// limit; the connection stays open (keep-alive).
func getHealthz(conn net.Conn, br *bufio.Reader, limit time.Duration) error {
	_ = conn.SetDeadline(time.Now().Add(limit))
	defer conn.SetDeadline(time.Time{})
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// wantClosedByServer fails unless the server closed conn within a few
// seconds (what it sent before, such as HTTP/2 settings, is skipped).
func wantClosedByServer(t *testing.T, conn net.Conn, what string) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("%s: still open (%v)", what, err)
	}
}

// h2Idle opens an HTTP/2 connection in clear text (as a gRPC client does),
// exchanges settings and leaves it with no stream open.
func h2Idle(t *testing.T, env *testEnv) net.Conn {
	t.Helper()
	conn := dialRaw(t, env)
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	defer conn.SetDeadline(time.Time{})
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the server's settings: %v", err)
		}
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			if err := fr.WriteSettingsAck(); err != nil {
				t.Fatal(err)
			}
			return conn
		}
	}
}

// heldWatch is a gRPC connection of its own holding one Health.Watch.
func heldWatch(t *testing.T, env *testEnv) {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+env.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if _, err := openWatch(t, ctx, conn); err != nil {
		t.Fatal(err)
	}
}

// openConns is the number of connections env's listener holds.
func openConns(env *testEnv) int {
	if l := env.srv.conns.Load(); l != nil {
		return l.open()
	}
	return -1
}

// keylessOnly is the number of connections the limiter sees held only by
// what a client without a key keeps going.
func keylessOnly(env *testEnv) int {
	l := env.srv.conns.Load()
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.conns {
		if c.requests > 0 && c.requests == c.held {
			n++
		}
	}
	return n
}

// A client without a key used to shut everyone out by holding the
// connection cap with connections doing nothing (audit-api3 F1). At the cap,
// a new connection now takes the place of one doing nothing.
func TestConnectionsDoingNothingAtTheCapMakeRoomForANewClient(t *testing.T) {
	const limit = 3
	tests := []struct {
		name string
		// hold opens a connection that does nothing in its way.
		hold func(t *testing.T, env *testEnv) net.Conn
	}{
		{"idle HTTP/1.1 keep-alive connections after a /healthz", func(t *testing.T, env *testEnv) net.Conn {
			conn := dialRaw(t, env)
			if err := getHealthz(conn, bufio.NewReader(conn), 5*time.Second); err != nil {
				t.Fatal(err)
			}
			return conn
		}},
		{"HTTP/2 connections with no stream open", h2Idle},
		{"connections that never sent a byte", dialRaw},
		{"connections whose request head stalled", func(t *testing.T, env *testEnv) net.Conn {
			conn := dialRaw(t, env)
			if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHo"); err != nil {
				t.Fatal(err)
			}
			return conn
		}},
		{"gRPC connections held only by a keyless Health.Watch", func(t *testing.T, env *testEnv) net.Conn {
			heldWatch(t, env)
			return nil
		}},
		{"gRPC connections held only by a health check that sends no message", func(t *testing.T, env *testEnv) net.Conn {
			before := keylessOnly(env)
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			go func() {
				_, _, _, _ = tryRawGRPCWith(ctx, env, grpc_health_v1.Health_Check_FullMethodName, "", nil, stalledBody(t, nil))
			}()
			for deadline := time.Now().Add(5 * time.Second); keylessOnly(env) == before; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the health check did not reach the server")
				}
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := startServer(t, func(c *Config, _ *Deps) { c.MaxConnections = limit })
			var held []net.Conn
			for range limit {
				held = append(held, tt.hold(t, env))
			}
			// A new client is answered: the hold has not shut it out. (Within
			// less than ReadHeaderTimeout, which would end some holds.)
			conn := dialRaw(t, env)
			if err := getHealthz(conn, bufio.NewReader(conn), 5*time.Second); err != nil {
				t.Fatalf("a new client with %d held connections: %v", limit, err)
			}
			if n := openConns(env); n > limit {
				t.Errorf("%d connections open, the cap is %d", n, limit)
			}
			if held[0] != nil {
				// The one doing nothing longest made room.
				wantClosedByServer(t, held[0], "the oldest held connection")
			}
		})
	}
}

// Keep-alive connections are closed longest idle first: a client that
// just used its connection keeps it.
func TestTheLongestIdleConnectionIsClosedFirst(t *testing.T) {
	env := startServer(t, func(c *Config, _ *Deps) { c.MaxConnections = 2 })
	a, b := dialRaw(t, env), dialRaw(t, env)
	ra, rb := bufio.NewReader(a), bufio.NewReader(b)
	for _, step := range []struct {
		conn net.Conn
		br   *bufio.Reader
	}{{a, ra}, {b, rb}, {a, ra}} { // b is now the longest idle
		if err := getHealthz(step.conn, step.br, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	c := dialRaw(t, env)
	if err := getHealthz(c, bufio.NewReader(c), 10*time.Second); err != nil {
		t.Fatalf("a new client: %v", err)
	}
	wantClosedByServer(t, b, "the longest idle connection")
	if n := gathered(t, env.srv.deps.Registry, "docjobs_connections_reclaimed_total", nil).GetCounter().GetValue(); n != 1 {
		t.Errorf("docjobs_connections_reclaimed_total = %v, want 1", n)
	}
	if err := getHealthz(a, ra, 5*time.Second); err != nil {
		t.Errorf("the recently used connection: %v", err)
	}
}

// A connection serving a request is never closed to make room: a new one
// waits while every open connection serves one, and gets a place as soon as
// one of them goes idle.
func TestConnectionsServingARequestAreNotClosedToMakeRoom(t *testing.T) {
	env := startServer(t, func(c *Config, _ *Deps) { c.MaxConnections = 2 })

	// One REST create whose body is half sent (the handler is reading it)...
	rest := dialRaw(t, env)
	const body = `{"sourceUrls":["https://a.test/x.txt"]}`
	head := "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + keyAlice +
		"\r\nContent-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n"
	if _, err := io.WriteString(rest, head+body[:10]); err != nil {
		t.Fatal(err)
	}
	// ...and one gRPC call the service is working on.
	started, release := env.svc.blockNextGet()
	client, _, as := grpcClient(t, env)
	called := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err := client.GetJob(as(ctx, keyAlice), &docjobsv1.GetJobRequest{Id: "job-1"})
		called <- err
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the gRPC call did not start")
	}

	waiting := dialRaw(t, env)
	wbr := bufio.NewReader(waiting)
	// Longer than connGrace, so a connection the limiter could take would
	// have been taken by now.
	if err := getHealthz(waiting, wbr, 2*connGrace+500*time.Millisecond); err == nil {
		t.Fatal("a third connection was served while two served requests")
	}

	// The REST body completes: it is answered on its own connection, which
	// was not closed, and the waiting client then gets that connection's place.
	_ = rest.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(rest, body[10:]); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(rest), nil)
	if err != nil {
		t.Fatalf("the REST create that was being read: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the REST create: status %d", resp.StatusCode)
	}
	_ = waiting.SetReadDeadline(time.Now().Add(10 * time.Second))
	wresp, err := http.ReadResponse(wbr, nil)
	if err != nil {
		t.Fatalf("the waiting client once a connection went idle: %v", err)
	}
	_ = wresp.Body.Close()

	// The gRPC call was not cut either.
	release()
	if err := <-called; err != nil {
		t.Errorf("the gRPC call that was being served: %v", err)
	}
	wantClosedByServer(t, rest, "the idle REST connection")
}

// An HTTP/1 answer given without reading a declared request body waits
// only a moment for the body: net/http reads it out to keep the connection,
// and used to wait with no deadline, so that a client without a key that
// declared a body and sent none held its connection busy, unanswered, for
// as long as it liked. A body that comes with its request still keeps the
// connection.
func TestABodyTheHandlerDidNotReadIsWaitedForOnlyAMoment(t *testing.T) {
	env := startServer(t)
	const body100 = "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"
	tests := []struct {
		name, request string
		sendBody      bool
		wantStatus    int
	}{
		{"a /healthz with a body", "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", false, 200},
		{"a create without a key", "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n", false, 401},
		{"an upload without a key", "POST /v1/jobs/upload HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 100\r\n\r\n", false, 401},
		{"a chunked body without a key", "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", false, 401},
		{"a listing with a body", "GET /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + keyAlice + "\r\nContent-Length: 100\r\n\r\n", false, 200},
		{"a create without a key, body sent", "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n" + body100, true, 401},
		{"a /healthz with a body sent", "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + body100, true, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			conn := dialRaw(t, env)
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(conn, tt.request); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if !tt.sendBody {
				if _, err := br.ReadByte(); !errors.Is(err, io.EOF) || !resp.Close {
					t.Errorf("after the answer (Connection: close %v): %v, want the connection closed", resp.Close, err)
				}
				return
			}
			if resp.Close {
				t.Error("Connection: close, want the connection kept")
			}
			if err := getHealthz(conn, br, 10*time.Second); err != nil {
				t.Errorf("the next request on the connection: %v", err)
			}
		})
	}
}

// A REST body that does not arrive within JSONReadTimeout is 408
// DEADLINE_EXCEEDED in the words gRPC uses for a message that does not
// arrive (audit-api3 F6), not 400 "reading request body failed".
func TestARESTBodyThatDoesNotArriveInTimeIs408(t *testing.T) {
	env := startServer(t, func(c *Config, _ *Deps) { c.JSONReadTimeout = 200 * time.Millisecond })
	req, err := http.NewRequest("POST", env.baseURL+"/v1/jobs", stalledBody(t, []byte(`{"sourceUrls":`)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+keyAlice)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m := wantStatusBody(t, resp, http.StatusRequestTimeout, codes.DeadlineExceeded, true)
	if want := "the request body did not arrive within 200ms"; m["message"] != want {
		t.Errorf("message = %q, want %q", m["message"], want)
	}
	t.Run("a client that closes mid-body is still a bad request", func(t *testing.T) {
		conn := dialRaw(t, env)
		head := "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + keyAlice + "\r\nContent-Length: 100\r\n\r\n{"
		if _, err := io.WriteString(conn, head); err != nil {
			t.Fatal(err)
		}
		_ = conn.(*net.TCPConn).CloseWrite()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("status %d, want 400", resp.StatusCode)
		}
		_ = resp.Body.Close()
	})
}
