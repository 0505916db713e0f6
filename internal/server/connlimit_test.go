package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
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
		// settled is the state the server records the connection hold
		// returns in, waited for so that the connections are in the
		// limiter's order in the order they were opened.
		settled http.ConnState
	}{
		{"idle HTTP/1.1 keep-alive connections after a /healthz", func(t *testing.T, env *testEnv) net.Conn {
			conn := dialRaw(t, env)
			if err := getHealthz(conn, bufio.NewReader(conn), 5*time.Second); err != nil {
				t.Fatal(err)
			}
			return conn
		}, http.StateIdle},
		{"HTTP/2 connections with no stream open", h2Idle, http.StateIdle},
		{"HTTP/2 connections whose answer the client gives no window for", func(t *testing.T, env *testEnv) net.Conn {
			return h2ZeroWindow(t, env, "/healthz")
		}, http.StateActive},
		{"connections that never sent a byte", dialRaw, http.StateNew},
		{"connections whose request head stalled", func(t *testing.T, env *testEnv) net.Conn {
			conn := dialRaw(t, env)
			if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHo"); err != nil {
				t.Fatal(err)
			}
			return conn
		}, http.StateNew},
		{"gRPC connections held only by a keyless Health.Watch", func(t *testing.T, env *testEnv) net.Conn {
			heldWatch(t, env)
			return nil
		}, 0},
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
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := startServer(t, func(c *Config, _ *Deps) { c.MaxConnections = limit })
			var held []net.Conn
			for range limit {
				conn := tt.hold(t, env)
				if conn != nil {
					waitLimiter(t, env, fmt.Sprintf("the connection %v, no handler running", tt.settled), func(l *connLimiter) bool {
						c := trackedLocked(l, conn)
						return c != nil && c.state == tt.settled && c.requests == 0
					})
				}
				held = append(held, conn)
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
		waitState(t, env, step.conn, http.StateIdle)
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

// waitLimiter waits, for up to ten seconds, until cond holds of env's
// limiter (called with its lock held): the client side of a connection
// sees its answer before the server records the connection idle, so a test
// that depends on that record waits for it rather than for time.
func waitLimiter(t *testing.T, env *testEnv, what string, cond func(l *connLimiter) bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		// Serve sets the limiter as it starts, which may come after a
		// test's first dial has been accepted by the listener's backlog.
		if l := env.srv.conns.Load(); l != nil {
			l.mu.Lock()
			ok := cond(l)
			l.mu.Unlock()
			if ok {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not after 10s", what)
		}
	}
}

// trackedLocked is the connection the limiter counts for the client side
// conn, nil if it counts none.
func trackedLocked(l *connLimiter, conn net.Conn) *trackedConn {
	for _, c := range l.conns {
		if c.RemoteAddr().String() == conn.LocalAddr().String() {
			return c
		}
	}
	return nil
}

// waitState waits until the server records conn in state st.
func waitState(t *testing.T, env *testEnv, conn net.Conn, st http.ConnState) {
	t.Helper()
	waitLimiter(t, env, fmt.Sprintf("%v %v", conn.LocalAddr(), st), func(l *connLimiter) bool {
		c := trackedLocked(l, conn)
		return c != nil && c.state == st
	})
}

// wantListsConsistent fails unless every connection on the limiter's
// lists is one it counts.
func wantListsConsistent(t *testing.T, env *testEnv) {
	t.Helper()
	l := env.srv.conns.Load()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.lists {
		for c := l.lists[i].head; c != nil; c = c.links[i].next {
			if c.index < 0 || c.index >= len(l.conns) || l.conns[c.index] != c {
				t.Errorf("list %d holds a connection not counted (index %d of %d)", i, c.index, len(l.conns))
			}
		}
	}
}

// net/http reports an HTTP/2 connection idle after it is closed with
// streams open (it closes them first, then the connection). Closed to make
// room, such a connection went back on the idle list, and the next
// connection at the cap took it out a second time: index -1, a panic in
// Accept that ended the process (audit review1 F1). No key was needed.
func TestReclaimingHTTP2ConnectionsWithStreamsOpenAgainAndAgainKeepsServing(t *testing.T) {
	env := startServer(t, func(c *Config, _ *Deps) { c.MaxConnections = 2 })
	heldWatch(t, env)
	heldWatch(t, env)
	var watches []*trackedConn
	waitLimiter(t, env, "two connections held by a Watch", func(l *connLimiter) bool {
		watches = watches[:0]
		for _, c := range l.conns {
			if c.requests > 0 && c.requests == c.held {
				watches = append(watches, c)
			}
		}
		return len(watches) == 2
	})

	// Takes the place of a Watch connection once it has held it a second.
	first := dialRaw(t, env)
	if err := getHealthz(first, bufio.NewReader(first), 10*time.Second); err != nil {
		t.Fatalf("the first new client: %v", err)
	}
	// The closed Watch's handler returns after net/http reported its
	// connection idle.
	waitLimiter(t, env, "the handler of the closed Watch to return", func(*connLimiter) bool {
		for _, c := range watches {
			if c.index < 0 && c.requests == 0 {
				return true
			}
		}
		return false
	})
	wantListsConsistent(t, env)

	second := dialRaw(t, env)
	if err := getHealthz(second, bufio.NewReader(second), 10*time.Second); err != nil {
		t.Fatalf("the second new client: %v", err)
	}
	wantListsConsistent(t, env)
	if n := openConns(env); n > 2 {
		t.Errorf("%d connections open, the cap is 2", n)
	}
}

// An HTTP/2 connection with no stream open reads the client's pings and
// settings: it is idle, not an HTTP/1 request head in part. net/http hands
// the hooks the same connection for HTTP/2 as for HTTP/1, so the limiter
// took every HTTP/2 connection for HTTP/1 (audit review1 F3): a gRPC
// connection that had sent a keep-alive ping was closed after silent new
// ones.
func TestAnIdleHTTP2ConnectionThatSentAPingIsIdle(t *testing.T) {
	env := startServer(t, func(c *Config, _ *Deps) { c.MaxConnections = 4 })
	conn := h2Idle(t, env)
	waitState(t, env, conn, http.StateIdle)
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	fr := http2.NewFramer(conn, conn)
	if err := fr.WritePing(false, [8]byte{1}); err != nil {
		t.Fatal(err)
	}
	for { // the server read the ping once it answers it
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := f.(*http2.PingFrame); ok && p.IsAck() {
			break
		}
	}
	l := env.srv.conns.Load()
	l.mu.Lock()
	defer l.mu.Unlock()
	c := trackedLocked(l, conn)
	if c == nil {
		t.Fatal("the connection is not counted")
	}
	if got := c.reclaimRankLocked(time.Now()); got != rankIdle {
		t.Errorf("rank %d (state %v, h2 %v, read %v), want %d (idle)", got, c.state, c.h2.Load(), c.read.Load(), rankIdle)
	}
}

// A connection is HTTP/2 when its first bytes are the preface, however
// they arrive (net/http reads the preface in two pieces).
func TestAConnectionIsHTTP2WhenItOpensWithThePreface(t *testing.T) {
	tests := []struct {
		name   string
		reads  []string
		wantH2 bool
	}{
		{"the preface in one read", []string{h2Preface + "\x00\x00"}, true},
		{"the preface as net/http reads it", []string{h2Preface[:14], h2Preface[14:]}, true},
		{"the preface a byte at a time", strings.Split(h2Preface, ""), true},
		{"an HTTP/1 request", []string{"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"}, false},
		{"a method PRI over HTTP/1", []string{"PRI / HTTP/1.1\r\nHost: x\r\n\r\n"}, false},
		{"the preface after an HTTP/1 request", []string{"GET / HTTP/1.1\r\n\r\n", h2Preface}, false},
		{"the preface cut short", []string{h2Preface[:20]}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server, client := net.Pipe()
			t.Cleanup(func() { _ = server.Close(); _ = client.Close() })
			c := &trackedConn{Conn: server}
			go func() {
				for _, r := range tt.reads {
					_, _ = io.WriteString(client, r)
				}
				_ = client.Close()
			}()
			_, _ = io.Copy(io.Discard, c)
			if got := c.h2.Load(); got != tt.wantH2 {
				t.Errorf("h2 %v, want %v", got, tt.wantH2)
			}
		})
	}
}

// h2ZeroWindow opens an HTTP/2 connection in clear text that gives the
// server no window for its answers, sends a GET of path and returns once
// the answer's head arrived: the handler has run, the body cannot be sent.
func h2ZeroWindow(t *testing.T, env *testEnv, path string) net.Conn {
	t.Helper()
	conn := dialRaw(t, env)
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	defer conn.SetDeadline(time.Time{})
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}); err != nil {
		t.Fatal(err)
	}
	var head bytes.Buffer
	enc := hpack.NewEncoder(&head)
	for _, f := range []hpack.HeaderField{{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"}, {Name: ":authority", Value: "x"}, {Name: ":path", Value: path}} {
		_ = enc.WriteField(f)
	}
	sent := false
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("before the answer's head: %v", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() || sent {
				continue
			}
			if err := fr.WriteSettingsAck(); err != nil {
				t.Fatal(err)
			}
			if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: head.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
				t.Fatal(err)
			}
			sent = true
		case *http2.HeadersFrame:
			return conn
		}
	}
}
