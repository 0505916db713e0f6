package server

import (
	"net/http"
	"time"
)

// This file bounds how long an HTTP answer may wait on a client that does
// not read it.
//
// The server has no WriteTimeout (it would cut long downloads), and only
// the streams set deadlines of their own. A client that pipelined HTTP/1
// requests for /openapi.yaml, or for any answer, and read none kept its
// handler blocked writing, its connection busy and so a place at the
// connection cap, for as long as it liked (connlimit.go never closes a
// connection serving a request); a JSON answer had a fixed two minutes,
// which cut a large answer to a slow client just as well. Now every answer
// gets the downloads' rule: a write that moves nothing for IOIdleTimeout
// fails, and net/http closes the connection (on HTTP/2, resets the stream).
//
// A handler that sets its own write deadline (downloads, the result stream,
// the progress events) takes the answer's deadline over from the first time
// it does, so a stream keeps exactly the rule it had and is not wrapped
// twice.

// answerDeadline gives every answer of next a write deadline that each write
// moving bytes renews (IOIdleTimeout).
func (s *Server) answerDeadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		aw := &answerWriter{ResponseWriter: w,
			idle: newIdleDeadline(http.NewResponseController(w).SetWriteDeadline, s.cfg.IOIdleTimeout)}
		if r.ProtoMajor == 1 {
			// An HTTP/1 write deadline is the connection's and outlives
			// the request: one left by an earlier answer on a kept-alive
			// connection may have passed, and net/http writes a
			// "100 Continue" under it before the handler writes anything.
			// Only writes heed it, so a handler that works long before
			// its answer is not cut. (On HTTP/2 the deadline is the
			// stream's, new with it, and fires even with no write under
			// way: there it waits for the first write, so that an upload
			// reading its body for minutes is not reset.)
			aw.idle.extend()
		}
		next.ServeHTTP(aw, r)
		// What net/http writes once the handler returns (the buffered
		// rest, the chunked terminator) goes out under a deadline too:
		// a small answer is written only then.
		aw.extend()
	})
}

// answerWriter renews the write deadline before each write, until the
// handler sets one itself. Unwrap lets http.ResponseController reach the
// connection through it (hijacking, read deadlines, full duplex).
type answerWriter struct {
	http.ResponseWriter
	idle *idleDeadline
	// own is set once the handler set a write deadline of its own; the
	// writer then passes writes through as they are.
	own bool
}

func (w *answerWriter) extend() {
	if !w.own {
		w.idle.extend()
	}
}

func (w *answerWriter) WriteHeader(code int) {
	w.extend()
	w.ResponseWriter.WriteHeader(code)
}

// Write writes p in pieces of at most idleWritePiece, renewing the deadline
// before each: a client that keeps reading a large answer slowly is not cut,
// one that reads nothing of a piece for IOIdleTimeout is.
func (w *answerWriter) Write(p []byte) (int, error) {
	if w.own {
		return w.ResponseWriter.Write(p)
	}
	n := 0
	for {
		w.idle.extend()
		k, err := w.ResponseWriter.Write(p[:min(len(p), idleWritePiece)])
		n += k
		p = p[k:]
		if err != nil || len(p) == 0 {
			return n, err
		}
	}
}

func (w *answerWriter) Flush() { _ = w.FlushError() }

func (w *answerWriter) FlushError() error {
	w.extend()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// SetWriteDeadline hands the answer's write deadline to the handler, for
// good: a stream sets the one its own rule gives.
func (w *answerWriter) SetWriteDeadline(t time.Time) error {
	w.own = true
	return http.NewResponseController(w.ResponseWriter).SetWriteDeadline(t)
}

func (w *answerWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
