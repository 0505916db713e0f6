package worker

import (
	"context"
	"errors"
	"sync"
)

// runningMarks lets the files of one job that start together in this
// process share one MarkRunning. River starts a job's files within a
// millisecond or two of each other, each reads the job as NEW before any
// has marked it, and each then marked it: on PostgreSQL ten UPDATEs of one
// row, nine of them queued on the first one's lock until it committed,
// then nine reads to tell "already running" from "deleted", all on the
// path to the files' first provider calls and all competing for the
// pool's connections (docs/benchmarks.md, sixteenth session). A file that
// finds a mark of its job in flight waits for that one instead. Nothing is
// kept once a mark ends: a file that starts later reads the job again and
// sees it RUNNING.
type runningMarks struct {
	mu       sync.Mutex
	inFlight map[string]*runningMark
}

// runningMark is one MarkRunning in flight and the files waiting for it.
type runningMark struct {
	done    chan struct{}
	err     error
	waiters int // files sharing this mark besides the one making it
}

// mark calls markRunning for jobID, or waits for the call another file of
// the job is making and returns its outcome. That outcome holds for the
// waiter too: the call began after the waiter read the job as NEW, so it
// either moved the job on, found it moved on, or found it deleted. A
// waiter whose ctx ends stops waiting; one whose mark failed only because
// the marking file's context ended makes its own.
func (m *runningMarks) mark(ctx context.Context, jobID string, markRunning func(context.Context) error) error {
	if m == nil {
		return markRunning(ctx)
	}
	m.mu.Lock()
	if call, ok := m.inFlight[jobID]; ok {
		call.waiters++
		m.mu.Unlock()
		select {
		case <-call.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if call.err == nil || ctx.Err() != nil || !isContextError(call.err) {
			return call.err
		}
		return markRunning(ctx)
	}
	if m.inFlight == nil {
		m.inFlight = map[string]*runningMark{}
	}
	// Until the call returns: a panic in it leaves the waiters an error.
	call := &runningMark{done: make(chan struct{}), err: errors.New("marking the job running panicked")}
	m.inFlight[jobID] = call
	m.mu.Unlock()

	defer func() {
		m.mu.Lock()
		delete(m.inFlight, jobID)
		m.mu.Unlock()
		close(call.done)
	}()
	err := markRunning(ctx)
	call.err = err
	return err
}

// waiting reports how many files wait for jobID's mark in flight.
func (m *runningMarks) waiting(jobID string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if call, ok := m.inFlight[jobID]; ok {
		return call.waiters
	}
	return 0
}

func isContextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
