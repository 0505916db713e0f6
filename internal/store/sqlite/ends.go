package sqlite

import (
	"context"
	"database/sql"
	"log/slog"
	"sync/atomic"
	"time"
)

// SQLite has no channel between processes, so a job ended by another
// process on the same file (`serve --role=api` beside `--role=worker`) was
// heard here only at the watcher's own poll: 2 s for a file job, 500 ms for
// a progress stream. While any job's end is watched, the store asks one
// connection of its own for `PRAGMA data_version` every endPoll, and reads
// the watched jobs' states (sqlstore's RecheckWatched) only when the answer
// changed, that is when some other connection committed since the last
// look. The pragma reads the WAL index header in shared memory, a few
// microseconds, and touches no table.
//
// The connection is a dedicated one: data_version does not move for a
// connection's own commits, and the read pool's connections are taken in
// turn, so their values cannot be compared from one look to the next. It
// is query_only and holds no transaction between looks, so it neither
// takes a place of the read pool nor keeps WAL checkpoints from running.
// This process's own commits move it too (the writer is another
// connection); they cost a recheck at most once per endPoll while jobs
// are watched, and their watchers were signalled at commit already.
//
// Nothing is polled while nothing is watched: the loop sleeps on
// EndWatchStarted until a watch begins.

// endPoll is how often data_version is read while a job's end is watched:
// the longest an end committed by another process waits to be heard, plus
// one read of the watched jobs.
const endPoll = 25 * time.Millisecond

// endPoller looks for ends committed by other processes.
type endPoller struct {
	// db has one connection, kept for data_version alone.
	db       *sql.DB
	interval time.Duration
	// watching, started and recheck are the core's WatchingEnds,
	// EndWatchStarted and RecheckWatched.
	watching func() bool
	started  <-chan struct{}
	recheck  func(context.Context) error
	log      *slog.Logger
	cancel   context.CancelFunc
	done     chan struct{}
	// looks counts the data_version reads, for tests of the idle loop.
	looks atomic.Int64
}

type endPollerConfig struct {
	DB       *sql.DB
	Interval time.Duration
	Watching func() bool
	Started  <-chan struct{}
	Recheck  func(context.Context) error
	Logger   *slog.Logger
}

func startEndPoller(cfg endPollerConfig) *endPoller {
	ctx, cancel := context.WithCancel(context.Background())
	p := &endPoller{db: cfg.DB, interval: cfg.Interval, watching: cfg.Watching, started: cfg.Started,
		recheck: cfg.Recheck, log: cfg.Logger, cancel: cancel, done: make(chan struct{})}
	go p.run(ctx)
	return p
}

// close stops the loop, waits for it and closes its connection.
func (p *endPoller) close() error {
	p.cancel()
	<-p.done
	return p.db.Close()
}

func (p *endPoller) run(ctx context.Context) {
	defer close(p.done)
	var conn *sql.Conn
	defer func() {
		if conn != nil {
			_ = conn.Close()
		}
	}()
	// last is the data_version of the previous look; until a look has
	// succeeded (and after any failure) it is unknown, and the next look
	// rechecks whatever it reads: a commit may have gone unseen.
	var last int64
	known, failing := false, false
	tick := time.NewTimer(p.interval)
	defer tick.Stop()
	for {
		if !p.watching() {
			select {
			case <-ctx.Done():
				return
			case <-p.started:
			}
			continue // the wake may be stale: ask again
		}
		v, err := p.version(ctx, &conn)
		if err == nil && (!known || v != last) {
			// The version is taken before the watched jobs are listed and
			// read, so an end committed after this look moves the next one.
			known, last = true, v
			err = p.recheck(ctx)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			known = false
			if !failing {
				p.log.WarnContext(ctx, "store: looking for job ends committed by other processes failed; their watchers poll until it works again", "err", err)
			}
		} else if failing {
			p.log.InfoContext(ctx, "store: looking for job ends committed by other processes works again")
		}
		failing = err != nil
		tick.Reset(p.interval)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// version reads data_version on the kept connection, taking it first if
// the previous look lost it.
func (p *endPoller) version(ctx context.Context, conn **sql.Conn) (int64, error) {
	if *conn == nil {
		c, err := p.db.Conn(ctx)
		if err != nil {
			return 0, err
		}
		*conn = c
	}
	var v int64
	if err := (*conn).QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v); err != nil {
		// Given back (or dropped, if broken); the next look takes one
		// again and, its version unknown, rechecks.
		_ = (*conn).Close()
		*conn = nil
		return 0, err
	}
	p.looks.Add(1)
	return v, nil
}
