package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// A job's end reaches every process at once through LISTEN/NOTIFY: the
// transaction that ends or deletes a job calls pg_notify, which PostgreSQL
// delivers only when it commits, and each process keeps one connection
// listening for all jobs, whose watchers it signals (sqlstore's WatchEnd).
// A worker in another process than the API that took a cancel stops its
// provider calls within milliseconds instead of at its next poll.
//
// The channel is shared by every schema of the database, so the payload
// names the schema: tests (and deployments that share a database) keep
// theirs apart.

// endChannel carries the ends of jobs.
const endChannel = "docjobs_job_end"

// notifyEnd is the dialect's NotifyEnd; its argument is the job id.
const notifyEnd = `SELECT pg_notify('` + endChannel + `', json_build_object('schema', current_schema(), 'job', ?::text)::text)`

type endPayload struct {
	Schema string `json:"schema"`
	Job    string `json:"job"`
}

// Timing of the listener. A wait that hears nothing for endPing pings the
// connection, so one lost without a word (a dropped network) is noticed
// and replaced; reconnecting waits from endRetryMin, doubling to
// endRetryMax, while the database refuses.
const (
	endPing        = 10 * time.Second
	endRetryMin    = 100 * time.Millisecond
	endRetryMax    = 10 * time.Second
	endConnectWait = 10 * time.Second
)

// endListener is a process's listening connection.
type endListener struct {
	cc *pgx.ConnConfig
	// ended signals a job's watchers; recheck signals the watched jobs
	// that ended while nothing listened.
	ended   func(jobID string)
	recheck func(context.Context) error
	logger  *slog.Logger
	cancel  context.CancelFunc
	done    chan struct{}
	// pid is the listening connection's server process (0 while none),
	// for tests that cut it.
	pid atomic.Uint32
}

// startEndListener listens before it returns, unless the first connection
// fails: then it keeps trying in the background, and until it succeeds,
// ends in other processes are seen only at the watchers' polls.
func startEndListener(ctx context.Context, cc *pgx.ConnConfig, ended func(string), recheck func(context.Context) error, logger *slog.Logger) *endListener {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l := &endListener{cc: cc, ended: ended, recheck: recheck, logger: logger, cancel: cancel, done: make(chan struct{})}
	connectCtx, stop := context.WithTimeout(ctx, endConnectWait)
	conn, schema, err := l.connect(connectCtx)
	stop()
	if err != nil {
		logger.WarnContext(ctx, "store: cannot listen for job ends yet; another process's cancel reaches this one's workers at their next check", "err", err)
	}
	go l.run(runCtx, conn, schema)
	return l
}

// close stops listening and waits for the listener to end.
func (l *endListener) close() {
	l.cancel()
	<-l.done
}

// connect opens the listening connection, listens, and returns the schema
// its ends are announced under (the one the store's connections use).
func (l *endListener) connect(ctx context.Context) (*pgx.Conn, string, error) {
	conn, err := pgx.ConnectConfig(ctx, l.cc)
	if err != nil {
		return nil, "", fmt.Errorf("connect: %w", err)
	}
	var schema string
	if _, err := conn.Exec(ctx, `LISTEN `+endChannel); err == nil {
		err = conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema)
	}
	if err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, "", fmt.Errorf("listen: %w", err)
	}
	return conn, schema, nil
}

// run hears ends on conn until it fails, then connects again, until ctx
// ends. After each new connection it rechecks the watched jobs: the ends
// announced while it was away were not heard.
func (l *endListener) run(ctx context.Context, conn *pgx.Conn, schema string) {
	defer close(l.done)
	wait := time.Duration(0)
	for {
		if conn != nil {
			l.pid.Store(conn.PgConn().PID())
			err := l.receive(ctx, conn, schema)
			l.pid.Store(0)
			closeCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			conn.Close(closeCtx)
			stop()
			if ctx.Err() != nil {
				return
			}
			l.logger.WarnContext(ctx, "store: lost the connection listening for job ends; reconnecting", "err", err)
			conn, wait = nil, 0
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		var err error
		if conn, schema, err = l.connect(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			wait = min(max(2*wait, endRetryMin), endRetryMax)
			l.logger.WarnContext(ctx, "store: cannot listen for job ends; retrying", "err", err, "retry_in", wait)
			continue
		}
		if err := l.recheck(ctx); err != nil && ctx.Err() == nil {
			l.logger.WarnContext(ctx, "store: rechecking watched jobs after reconnecting failed; their watchers poll", "err", err)
		}
	}
}

// receive signals the ends announced for schema until the connection
// fails or ctx ends.
func (l *endListener) receive(ctx context.Context, conn *pgx.Conn, schema string) error {
	for {
		waitCtx, stop := context.WithTimeout(ctx, endPing)
		n, err := conn.WaitForNotification(waitCtx)
		stop()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if conn.IsClosed() || !errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("wait: %w", err)
			}
			if err := conn.Ping(ctx); err != nil {
				return fmt.Errorf("ping: %w", err)
			}
			continue
		}
		var p endPayload
		if json.Unmarshal([]byte(n.Payload), &p) != nil || p.Schema != schema || p.Job == "" {
			continue
		}
		l.ended(p.Job)
	}
}
