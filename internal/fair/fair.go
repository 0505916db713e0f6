// Package fair is a counting semaphore that hands freed places to waiting
// accounts in turn, so one account's backlog cannot starve another's work.
package fair

import (
	"context"
	"sync"
)

// Sem bounds the work in flight (calls to a provider slot, model rows of
// a worker process) and, when it is full, hands freed places to waiting
// accounts in turn: each account waits in its own FIFO queue, and the
// queues are served round-robin, so an account with a thousand queued
// calls delays another account's one call by at most one call per other
// waiting account.
type Sem struct {
	mu     sync.Mutex
	free   int
	queues map[string][]*waiter
	// ring holds the accounts with waiters, in the order they are served.
	ring []string
}

type waiter struct {
	ready   chan struct{} // closed when the place is handed over
	granted bool
}

// NewSem returns a Sem with n places.
func NewSem(n int) *Sem {
	return &Sem{free: n, queues: map[string][]*waiter{}}
}

// Acquire waits for a place for account, or for ctx to end.
func (s *Sem) Acquire(ctx context.Context, account string) error {
	_, err := s.acquire(ctx, account, -1)
	return err
}

// AcquireQueued is Acquire unless account already has maxWaiting
// acquirers waiting for a place: then it reports false at once, without a
// place. A caller that holds something while it waits (a River job holds
// its worker's slot) steps back instead, so that one account's backlog
// cannot fill what other accounts' work must get through to reach the
// queue at all.
func (s *Sem) AcquireQueued(ctx context.Context, account string, maxWaiting int) (bool, error) {
	return s.acquire(ctx, account, max(maxWaiting, 0))
}

// acquire waits for a place, unless maxWaiting >= 0 and account has that
// many waiters already.
func (s *Sem) acquire(ctx context.Context, account string, maxWaiting int) (bool, error) {
	s.mu.Lock()
	if s.free > 0 && len(s.ring) == 0 {
		s.free--
		s.mu.Unlock()
		return true, nil
	}
	if maxWaiting >= 0 && len(s.queues[account]) >= maxWaiting {
		s.mu.Unlock()
		return false, nil
	}
	w := &waiter{ready: make(chan struct{})}
	if len(s.queues[account]) == 0 {
		s.ring = append(s.ring, account)
	}
	s.queues[account] = append(s.queues[account], w)
	s.mu.Unlock()

	select {
	case <-w.ready:
		return true, nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	if w.granted {
		// The place arrived as ctx ended: pass it on.
		s.mu.Unlock()
		s.Release()
		return false, context.Cause(ctx)
	}
	s.remove(account, w)
	s.mu.Unlock()
	return false, context.Cause(ctx)
}

// Waiting is how many acquirers wait for a place.
func (s *Sem) Waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, q := range s.queues {
		n += len(q)
	}
	return n
}

// Release frees a place: it goes to the first waiter of the account whose
// turn it is, which then moves to the back of the ring.
func (s *Sem) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ring) == 0 {
		s.free++
		return
	}
	account := s.ring[0]
	q := s.queues[account]
	w := q[0]
	s.ring = s.ring[1:]
	if len(q) == 1 {
		delete(s.queues, account)
	} else {
		s.queues[account] = q[1:]
		s.ring = append(s.ring, account)
	}
	w.granted = true
	close(w.ready)
}

// remove takes a waiter that gave up out of its queue (s.mu held).
func (s *Sem) remove(account string, w *waiter) {
	q := s.queues[account]
	for i, x := range q {
		if x == w {
			q = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(q) > 0 {
		s.queues[account] = q
		return
	}
	delete(s.queues, account)
	for i, a := range s.ring {
		if a == account {
			s.ring = append(s.ring[:i:i], s.ring[i+1:]...)
			break
		}
	}
}
