package sqlite

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"time"
)

// DefaultFlushDelay is how long after secrets are erased the WAL is
// truncated, when Config.FlushDelay is zero.
const DefaultFlushDelay = time.Second

// flusher truncates the write-ahead log a little after secrets were
// erased, once for all the erasures of that while. Truncating drops the
// page images that still held the erased (sealed, never plaintext) bytes;
// secure_delete has already zeroed them in the main file by then. Done at
// once it held the one writer connection about 5 ms at the end of every
// job, in front of the next job's create (docs/benchmarks.md).
type flusher struct {
	db    *sql.DB
	delay time.Duration
	log   *slog.Logger
	kick  chan struct{}
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

func newFlusher(db *sql.DB, delay time.Duration, log *slog.Logger) *flusher {
	f := &flusher{db: db, delay: delay, log: log,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go f.run()
	return f
}

// soon asks for a flush within the delay; it never blocks.
func (f *flusher) soon(context.Context) error {
	select {
	case f.kick <- struct{}{}:
	default: // one is due already
	}
	return nil
}

func (f *flusher) run() {
	defer close(f.done)
	for {
		select {
		case <-f.stop:
			return
		case <-f.kick:
		}
		t := time.NewTimer(f.delay)
		select {
		case <-f.stop:
		case <-t.C:
		}
		t.Stop()
		f.flush()
	}
}

func (f *flusher) flush() {
	if _, err := f.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		f.log.Warn("store: flushing erased secrets failed", "err", err)
	}
}

// close flushes what is due, so erased bytes do not outlive the store, and
// stops the flusher. Later calls do nothing.
func (f *flusher) close() {
	f.once.Do(func() {
		close(f.stop)
		<-f.done
		select {
		case <-f.kick:
			f.flush()
		default:
		}
	})
}
