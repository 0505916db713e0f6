package server

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"
)

// BenchmarkConnLimiter is what the connection cap adds: to every request
// (beginRequest and its end, one mutex for the listener, from every core at
// once), and to a connection accepted at the cap (finding the one to close
// among DefaultMaxConnections: the head of the idle list, or a scan of them
// all when no head will do, here one that finds none).
func BenchmarkConnLimiter(b *testing.B) {
	newLimiter := func(n int, st http.ConnState) *connLimiter {
		l := newConnLimiter(nil, DefaultMaxConnections, time.Now, func() {})
		start := time.Now().Add(-time.Hour)
		for i := range n {
			c := &trackedConn{l: l, state: st, since: start.Add(time.Duration(i))}
			l.addLocked(c)
			if st == http.StateIdle {
				l.listLocked(c, listIdle)
			}
		}
		return l
	}
	b.Run("request", func(b *testing.B) {
		l := newLimiter(0, http.StateIdle)
		ctx := l.ConnContext(context.Background(), &trackedConn{l: l})
		for b.Loop() {
			beginRequest(ctx).endRequest()
		}
	})
	b.Run("request parallel", func(b *testing.B) {
		l := newLimiter(0, http.StateIdle)
		b.RunParallel(func(pb *testing.PB) {
			ctx := l.ConnContext(context.Background(), &trackedConn{l: l})
			for pb.Next() {
				beginRequest(ctx).endRequest()
			}
		})
	})
	for _, tt := range []struct {
		name  string
		state http.ConnState
	}{
		{"at the cap, idle connections", http.StateIdle},
		{"at the cap, connections being served (the scan)", http.StateActive},
	} {
		b.Run(tt.name, func(b *testing.B) {
			l := newLimiter(DefaultMaxConnections, tt.state)
			for b.Loop() {
				l.mu.Lock()
				if v, _ := l.victimLocked(time.Now()); (v == nil) != (tt.state == http.StateActive) {
					b.Fatal("wrong choice")
				}
				l.mu.Unlock()
			}
		})
	}
}

var _ net.Conn = (*trackedConn)(nil)
