package worker

import (
	"context"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"
)

// startLane counts the files of this process that are on their way to
// their first provider calls, so that work which can wait lets them pass.
// On a busy machine the files of a job compete for the same cores; every
// millisecond of CPU spent storing one file's source and recording its rows
// before the last file's requests are out lengthens the job by about as
// much (docs/benchmarks.md), while the same work done a little later, when
// the calls are in flight, costs nothing the caller waits for.
type startLane struct {
	mu    sync.Mutex
	n     int
	empty chan struct{} // closed when n drops to zero; nil while n is zero
}

// enter puts a file in the lane; the returned leave, idempotent, takes it
// out.
func (l *startLane) enter() (leave func()) {
	l.mu.Lock()
	l.n++
	if l.empty == nil {
		l.empty = make(chan struct{})
	}
	l.mu.Unlock()
	return sync.OnceFunc(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.n--
		if l.n == 0 {
			close(l.empty)
			l.empty = nil
		}
	})
}

// wait returns once the lane is empty, after at most limit, or when ctx
// ends: a process that never empties its lane delays the work that yields
// by no more than limit.
func (l *startLane) wait(ctx context.Context, limit time.Duration) {
	l.mu.Lock()
	empty := l.empty
	l.mu.Unlock()
	if empty == nil {
		return
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-empty:
	case <-t.C:
	case <-ctx.Done():
	}
}

// rowsOut calls done once each of a file's rows has had its request
// written or its call end, whichever comes first.
type rowsOut struct {
	left atomic.Int64
	done func()
}

func newRowsOut(rows int, done func()) *rowsOut {
	o := &rowsOut{done: done}
	o.left.Store(int64(rows))
	if rows == 0 {
		done()
	}
	return o
}

// row returns the idempotent signal of one row; a nil rowsOut gives a
// no-op.
func (o *rowsOut) row() func() {
	if o == nil {
		return func() {}
	}
	return sync.OnceFunc(func() {
		if o.left.Add(-1) == 0 {
			o.done()
		}
	})
}

// whenWritten arranges for sent to be called once ctx's HTTP request has
// been written to the provider.
func whenWritten(ctx context.Context, sent func()) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { sent() },
	})
}
