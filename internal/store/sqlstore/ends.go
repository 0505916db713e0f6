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
// database announces nothing (SQLite), the backend looks for ends committed
// by other processes itself while any job is watched (WatchingEnds,
// EndWatchStarted) and signals them through RecheckWatched.
type endSignals struct {
	mu       sync.Mutex
	watchers map[string]map[chan struct{}]struct{}
	// started receives, without blocking, when a job becomes watched while
	// none was; its one place keeps a wake pending until it is taken.
	started chan struct{}
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
	if len(e.watchers) == 0 {
		select {
		case e.started <- struct{}{}:
		default: // a wake is pending already (or nobody asked for one)
		}
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

// watching reports whether any job is watched.
func (e *endSignals) watching() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.watchers) > 0
}

// WatchEnd returns a channel closed once jobID is made terminal or deleted
// by this process or, where the database announces ends or the backend
// looks for them (SQLite), by any process; and a stop to call when the
// caller no longer waits. A job that ended before the call is not
// signalled: read its status after watching, not before.
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

// WatchingEnds reports whether any job's end is watched in this process.
func (s *Store[TTx]) WatchingEnds() bool { return s.ends.watching() }

// EndWatchStarted receives each time a job's end becomes watched while
// none was (at most one wake is kept pending). A backend that looks for
// other processes' ends by polling (SQLite) waits on it while nothing is
// watched, so an idle process does not poll.
func (s *Store[TTx]) EndWatchStarted() <-chan struct{} { return s.ends.started }

// recheckBatch bounds the ids one query of RecheckWatched reads.
const recheckBatch = 500

// RecheckWatched signals the watched jobs that have ended or are gone. The
// PostgreSQL backend calls it once it listens again after losing its
// connection (the ends announced meanwhile were not heard); the SQLite
// backend whenever another connection has committed since it last looked.
func (s *Store[TTx]) RecheckWatched(ctx context.Context) error {
	ids := s.ends.watched()
	for len(ids) > 0 {
		batch := ids[:min(len(ids), recheckBatch)]
		ids = ids[len(batch):]
		if err := s.recheck(ctx, batch); err != nil {
			return fmt.Errorf("recheck watched jobs: %w", err)
		}
	}
	return nil
}

// terminalStatuses is job.Status.Terminal as SQL.
var terminalStatuses = `('` + string(job.StatusComplete) + `', '` + string(job.StatusFailed) + `', '` + string(job.StatusCancelled) + `')`

// recheck signals the jobs of ids that have ended or are gone.
func (s *Store[TTx]) recheck(ctx context.Context, ids []string) error {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	in := `(` + strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",") + `)`
	// Nearly every look finds every watched job there and live (SQLite
	// looks after any commit, this process's own included): one row says
	// so, where a row per job cost three times as much (500 jobs, SQLite).
	var found, ended int64
	if err := s.queryRow(ctx, s.backend.DB(), `SELECT count(*), count(CASE WHEN status IN `+terminalStatuses+
		` THEN 1 END) FROM jobs WHERE id IN `+in, args, &found, &ended); err != nil {
		return err
	}
	if found == int64(len(ids)) && ended == 0 {
		return nil
	}
	rows, err := s.query(ctx, s.backend.DB(), `SELECT id, status FROM jobs WHERE id IN `+in, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	live := make(map[string]bool, len(ids))
	for rows.Next() {
		var id, status string
		if err := rows.Scan(&id, &status); err != nil {
			return err
		}
		live[id] = !job.Status(status).Terminal()
	}
	if err := rows.Err(); err != nil {
		return err
	}
	rows.Close()
	for _, id := range ids {
		if !live[id] {
			s.ends.ended(id)
		}
	}
	return nil
}
