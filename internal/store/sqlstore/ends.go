package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/docjobs/docjobs/internal/job"
)

// endSignals tells watchers in this process that a job ended, the moment
// the transaction that ended it commits here, or the moment the database
// announces that another process ended it (Dialect.NotifyEnd, JobEnded).
// A file's worker stops its provider calls on it, and a progress stream
// sends its terminal event without waiting for its next poll. Where the
// database announces nothing (SQLite), an end committed by another process
// is seen at the watcher's poll, as before.
type endSignals struct {
	mu       sync.Mutex
	watchers map[string]map[chan struct{}]struct{}
}

// watch returns a channel closed when jobID ends, and a stop that forgets
// it. Stop must be called, or the watch stays until the job ends.
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
// that made the job terminal or deleted it. A second call for the same end
// (this process's own, then the database's announcement of it) finds
// nothing left to close.
func (e *endSignals) ended(jobID string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for ch := range e.watchers[jobID] {
		close(ch)
	}
	delete(e.watchers, jobID)
}

// watched lists the jobs with watchers.
func (e *endSignals) watched() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := make([]string, 0, len(e.watchers))
	for id := range e.watchers {
		ids = append(ids, id)
	}
	return ids
}

// WatchEnd returns a channel closed once jobID is made terminal or deleted
// by this process or, where the database announces ends, by any process;
// and a stop to call when the caller no longer waits. A job that ended
// before the call is not signalled: read its status after watching, not
// before.
func (s *Store[TTx]) WatchEnd(jobID string) (<-chan struct{}, func()) {
	return s.ends.watch(jobID)
}

// notifyEnd announces, in the transaction q that ends or deletes jobID,
// that the job ended; the database delivers it only if that commits.
func (s *Store[TTx]) notifyEnd(ctx context.Context, q Querier, jobID string) error {
	if s.dialect.NotifyEnd == "" {
		return nil
	}
	if _, err := s.exec(ctx, q, s.dialect.NotifyEnd, jobID); err != nil {
		return fmt.Errorf("announce the end of job %s: %w", jobID, err)
	}
	return nil
}

// JobEnded signals this process's watchers of jobID: the backend calls it
// for each end the database announces (Dialect.NotifyEnd), this process's
// own included.
func (s *Store[TTx]) JobEnded(jobID string) { s.ends.ended(jobID) }

// recheckBatch bounds the ids one query of RecheckWatched reads.
const recheckBatch = 500

// RecheckWatched signals the watched jobs that have ended or are gone. The
// backend calls it once it listens again after losing its connection: the
// ends announced meanwhile were not heard.
func (s *Store[TTx]) RecheckWatched(ctx context.Context) error {
	ids := s.ends.watched()
	for len(ids) > 0 {
		batch := ids[:min(len(ids), recheckBatch)]
		ids = ids[len(batch):]
		args := make([]any, len(batch))
		for i, id := range batch {
			args[i] = id
		}
		rows, err := s.query(ctx, s.backend.DB(), `SELECT id, status FROM jobs WHERE id IN (`+
			strings.TrimSuffix(strings.Repeat("?,", len(batch)), ",")+`)`, args...)
		if err != nil {
			return fmt.Errorf("recheck watched jobs: %w", err)
		}
		live := make(map[string]bool, len(batch))
		for rows.Next() {
			var id, status string
			if err := rows.Scan(&id, &status); err != nil {
				rows.Close()
				return fmt.Errorf("recheck watched jobs: %w", err)
			}
			live[id] = !job.Status(status).Terminal()
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("recheck watched jobs: %w", err)
		}
		for _, id := range batch {
			if !live[id] {
				s.ends.ended(id)
			}
		}
	}
	return nil
}
