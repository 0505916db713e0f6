package server

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// BenchmarkAccountLimiter is what the rate limit adds to a request: one
// take, for one busy account, for many accounts in turn, and from every
// core at once (one mutex serves them all). B/bucket is the live heap a
// bucket holds, map entry included, measured over 100,000 accounts.
func BenchmarkAccountLimiter(b *testing.B) {
	accounts := make([]string, 10_000)
	for i := range accounts {
		accounts[i] = fmt.Sprintf("account-%d", i)
	}
	// A rate no benchmark reaches, so every take passes.
	const perSecond, burst = 1e9, 1_000_000
	b.Run("one account", func(b *testing.B) {
		l := newAccountLimiter(perSecond, burst, time.Now)
		for b.Loop() {
			l.take("alice")
		}
	})
	b.Run("10000 accounts", func(b *testing.B) {
		l := newAccountLimiter(perSecond, burst, time.Now)
		i := 0
		for b.Loop() {
			l.take(accounts[i%len(accounts)])
			i++
		}
	})
	b.Run("10000 accounts parallel", func(b *testing.B) {
		l := newAccountLimiter(perSecond, burst, time.Now)
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				l.take(accounts[i%len(accounts)])
				i++
			}
		})
	})
	b.Run("memory", func(b *testing.B) {
		const n = 100_000
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("account-%d", i)
		}
		for b.Loop() {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			l := newAccountLimiter(perSecond, burst, time.Now)
			for _, a := range names {
				l.take(a)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/bucket")
			runtime.KeepAlive(l)
		}
	})
}
