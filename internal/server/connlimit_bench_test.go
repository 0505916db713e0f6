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
// once), and to a connection accepted at the cap (the scan for the one to
// close, over DefaultMaxConnections idle connections).
func BenchmarkConnLimiter(b *testing.B) {
	newLimiter := func(n int) *connLimiter {
		l := newConnLimiter(nil, DefaultMaxConnections, time.Now, func() {})
		now := time.Now()
		for i := range n {
			c := &trackedConn{l: l, state: http.StateIdle, since: now.Add(time.Duration(i))}
			l.addLocked(c)
		}
		return l
	}
	b.Run("request", func(b *testing.B) {
		l := newLimiter(0)
		ctx := l.ConnContext(context.Background(), &trackedConn{l: l})
		for b.Loop() {
			beginRequest(ctx).endRequest()
		}
	})
	b.Run("request parallel", func(b *testing.B) {
		l := newLimiter(0)
		b.RunParallel(func(pb *testing.PB) {
			ctx := l.ConnContext(context.Background(), &trackedConn{l: l})
			for pb.Next() {
				beginRequest(ctx).endRequest()
			}
		})
	})
	b.Run("scan at the cap", func(b *testing.B) {
		l := newLimiter(DefaultMaxConnections)
		for b.Loop() {
			l.mu.Lock()
			if v, _ := l.reclaimableLocked(time.Now()); v == nil {
				b.Fatal("nothing to reclaim")
			}
			l.mu.Unlock()
		}
	})
}

var _ net.Conn = (*trackedConn)(nil)
