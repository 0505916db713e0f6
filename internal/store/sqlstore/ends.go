package sqlstore

import "sync"

// endSignals tells watchers in this process that a job ended here, the
// moment the transaction that ended it commits. A progress stream polls
// the database, which is what works across processes; this only lets a
// stream in the process that ended the job send the terminal event without
// waiting for its next poll. A job ended by another process is seen at
// that poll, as before.
type endSignals struct {
	mu       sync.Mutex
	watchers map[string]map[chan struct{}]struct{}
}

// watch returns a channel closed when jobID ends in this process, and a
// stop that forgets it. Stop must be called, or the watch stays until the
// job ends.
func (e *endSignals) watch(jobID string) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.watchers == nil {
		e.watchers = map[string]map[chan struct{}]struct{}{}
	}
	if e.watchers[jobID] == nil {
		e.watchers[jobID] = map[chan struct{}]struct{}{}
	}
	e.watchers[jobID][ch] = struct{}{}
	return ch, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if w := e.watchers[jobID]; w != nil {
			delete(w, ch)
			if len(w) == 0 {
				delete(e.watchers, jobID)
			}
		}
	}
}

// ended closes the channels of jobID's watchers; call it after the commit
// that made the job terminal or deleted it.
func (e *endSignals) ended(jobID string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for ch := range e.watchers[jobID] {
		close(ch)
	}
	delete(e.watchers, jobID)
}

// WatchEnd returns a channel closed once jobID is made terminal or deleted
// by this process, and a stop to call when the caller no longer waits. A
// job that ended before the call is not signalled: read its status after
// watching, not before.
func (s *Store[TTx]) WatchEnd(jobID string) (<-chan struct{}, func()) {
	return s.ends.watch(jobID)
}
