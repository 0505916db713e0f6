package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
)

// smallSendBuffers is a listener whose connections have a small send
// buffer, so that a handler writing to a client that reads nothing blocks
// after kilobytes rather than megabytes.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

// startUnreadServer starts a server on a listener with small send buffers,
// a cap of one connection and IOIdleTimeout idle.
func startUnreadServer(t *testing.T, idle time.Duration) *testEnv {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startServerOn(t, smallSendBuffers{ln}, func(c *Config, _ *Deps) {
		c.MaxConnections = 1
		c.IOIdleTimeout = idle
	})
}

// dialSmallReceive is dialRaw with a small receive buffer.
func dialSmallReceive(t *testing.T, env *testEnv) net.Conn {
	t.Helper()
	conn := dialRaw(t, env)
	if err := conn.(*net.TCPConn).SetReadBuffer(4 << 10); err != nil {
		t.Fatal(err)
	}
	return conn
}

// pipelineUnread opens a connection that sends request again and again,
// HTTP/1.1 pipelining, and reads none of the answers. The sending stops
// when the connection closes.
func pipelineUnread(request string) func(t *testing.T, env *testEnv) net.Conn {
	return func(t *testing.T, env *testEnv) net.Conn {
		conn := dialSmallReceive(t, env)
		go func() {
			for {
				if _, err := io.WriteString(conn, request); err != nil {
					return
				}
			}
		}()
		return conn
	}
}

// waitWriteBlocked waits until the server's side of conn has been active
// for half a second without a change (an HTTP/1 server between pipelined
// requests goes idle for a moment; one blocked writing does not), or is
// gone.
func waitWriteBlocked(t *testing.T, env *testEnv, conn net.Conn) {
	t.Helper()
	seen := false
	waitLimiter(t, env, "the server blocked writing to a client that reads nothing", func(l *connLimiter) bool {
		c := trackedLocked(l, conn)
		if c == nil {
			return seen // closed already
		}
		seen = true
		return c.state == http.StateActive && l.now().Sub(c.since) > 500*time.Millisecond
	})
}

// A client that asks and reads nothing of the answers used to hold its
// connection busy, and so a place at the connection cap, for as long as it
// liked (keyless answers had no write deadline; JSON answers a fixed two
// minutes). Every answer's writes are now cut when they move nothing for
// IOIdleTimeout, and the connection's place goes to the next client.
func TestAnAnswerItsClientDoesNotReadIsCutAndItsPlaceFreed(t *testing.T) {
	const idle = time.Second
	tests := []struct {
		name string
		hold func(t *testing.T, env *testEnv) net.Conn
	}{
		{"/openapi.yaml pipelined without a key",
			pipelineUnread("GET /openapi.yaml HTTP/1.1\r\nHost: x\r\n\r\n")},
		{"/healthz pipelined without a key (answers written after the handler)",
			pipelineUnread("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")},
		{"/readyz pipelined without a key",
			pipelineUnread("GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")},
		{"/metrics pipelined without a key",
			pipelineUnread("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")},
		{"an unknown path's 404 pipelined without a key",
			pipelineUnread("GET /nothing-here HTTP/1.1\r\nHost: x\r\n\r\n")},
		{"a job list pipelined with a key",
			pipelineUnread("GET /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + keyAlice + "\r\n\r\n")},
		{"/openapi.yaml over HTTP/2 with no window for it",
			func(t *testing.T, env *testEnv) net.Conn { return h2ZeroWindow(t, env, "/openapi.yaml") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := startUnreadServer(t, idle)
			held := tt.hold(t, env)
			waitWriteBlocked(t, env, held)

			// The cap is one connection: the next client is answered once
			// the held one is cut. Without a deadline it never was.
			start := time.Now()
			conn := dialRaw(t, env)
			if err := getHealthz(conn, bufio.NewReader(conn), idle+10*time.Second); err != nil {
				t.Fatalf("the next client, at a cap of one held by a client that reads nothing: %v", err)
			}
			t.Logf("the next client was answered after %v", time.Since(start).Round(time.Millisecond))
			wantClosedByServer(t, held, "the connection whose answers were not read")
			if n := openConns(env); n > 1 {
				t.Errorf("%d connections open, the cap is 1", n)
			}
		})
	}
}

// throttled is a client that reads steadily at about rate bytes a second
// (less when the machine is busy), at most 4 KiB at a time.
type throttled struct {
	r     io.Reader
	rate  int
	start time.Time
	n     int
}

func (t *throttled) Read(p []byte) (int, error) {
	if t.start.IsZero() {
		t.start = time.Now()
	}
	if ahead := time.Duration(t.n)*time.Second/time.Duration(t.rate) - time.Since(t.start); ahead > 0 {
		time.Sleep(ahead)
	}
	n, err := t.r.Read(p[:min(len(p), 4<<10)])
	t.n += n
	return n, err
}

// A client that reads steadily but slowly is not cut, however long its
// answers take: each write that moves bytes renews the deadline, and a
// large answer is written in pieces that each renew it.
func TestAnAnswerItsClientReadsSteadilyIsNotCut(t *testing.T) {
	const (
		idle = 3 * time.Second
		rate = 64 << 10
	)
	// Written at once, it would take five seconds to be read: a deadline
	// renewed only per answer, or per write of the handler, cuts it.
	bigTitle := strings.Repeat("t", 320<<10)
	tests := []struct {
		name    string
		request string
		times   int
		wantMin int // bytes in each body at least
	}{
		{"pipelined /openapi.yaml answers, longer than the idle timeout in all", "GET /openapi.yaml HTTP/1.1\r\nHost: x\r\n\r\n", 6, 40 << 10},
		{"one JSON answer longer than the idle timeout", "GET /v1/jobs/job-big HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + keyAlice + "\r\n\r\n", 1, len(bigTitle)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := startUnreadServer(t, idle)
			env.svc.mu.Lock()
			env.svc.jobs["job-big"] = &docjobsv1.Job{Id: "job-big", AccountId: "alice", Title: bigTitle}
			env.svc.mu.Unlock()
			conn := dialSmallReceive(t, env)
			_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
			if _, err := io.WriteString(conn, strings.Repeat(tt.request, tt.times)); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			br := bufio.NewReaderSize(&throttled{r: conn, rate: rate}, 4<<10)
			total := 0
			for i := range tt.times {
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("answer %d of %d, after %v and %d bytes: %v", i+1, tt.times, time.Since(start), total, err)
				}
				n, err := io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				total += int(n)
				if err != nil || resp.StatusCode != http.StatusOK || n < int64(tt.wantMin) {
					t.Fatalf("answer %d of %d after %v: status %d, %d bytes, %v", i+1, tt.times, time.Since(start), resp.StatusCode, n, err)
				}
			}
			took := time.Since(start)
			t.Logf("%d bytes in %v", total, took.Round(time.Millisecond))
			if took <= idle {
				t.Fatalf("read in %v: not longer than the idle timeout (%v), the test proves nothing", took, idle)
			}
			_ = conn.SetDeadline(time.Time{})
			if err := getHealthz(conn, bufio.NewReader(conn), 10*time.Second); err != nil {
				t.Errorf("the connection after its answers: %v", err)
			}
		})
	}
}

// A stream's handler sets its own write deadline and keeps it: the answer's
// own renewal steps aside (a progress stream whose client takes no event
// within WriteTimeout is cut by that, not kept going by IOIdleTimeout).
func TestAHandlerThatSetsAWriteDeadlineOwnsIt(t *testing.T) {
	const idle = 100 * time.Millisecond
	env := startServer(t, func(c *Config, _ *Deps) { c.IOIdleTimeout = idle })
	type outcome struct{ set, write error }
	done := make(chan outcome, 1)
	h := env.srv.answerDeadline(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Through the wrapper observe adds, as the streams are.
		rc := http.NewResponseController(&statusWriter{ResponseWriter: w})
		var o outcome
		// A deadline passed already, and a write past the least time
		// between two of the answer's renewals.
		o.set = rc.SetWriteDeadline(time.Now().Add(-time.Second))
		time.Sleep(idle)
		_, o.write = w.Write([]byte(strings.Repeat("x", 64<<10)))
		done <- o
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	if resp, err := http.Get(fmt.Sprintf("http://%s/", ln.Addr())); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	o := <-done
	if o.set != nil {
		t.Fatalf("SetWriteDeadline through the wrappers: %v", o.set)
	}
	if o.write == nil {
		t.Error("a write after the handler set a deadline that had passed succeeded: the answer's renewal overrode it")
	}
}
