// Package sqlstore is the SQL core shared by the SQLite and PostgreSQL stores:
// every query of store.Store is written here once, against a small Backend
// that each database package implements (how a transaction is begun, how a
// River job is completed inside it) and a Dialect that states the few ways the
// two SQL languages differ.
package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/riverlog"
	"github.com/docjobs/docjobs/internal/store"
)

// Querier runs SQL written with ? placeholders (already rebound by the core
// to the dialect's form). Backends wrap their pool and their transactions in it.
type Querier interface {
	Exec(ctx context.Context, query string, args ...any) (rowsAffected int64, err error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
}

// Rows iterates a result set. Scan destinations are pointers to string,
// int, int64, bool, []byte or sql.Scanner implementations.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Backend is what one database engine provides to the core. TTx is the
// transaction type of the engine's River driver, so that River's InsertManyTx
// and JobCompleteTx run inside the core's transactions.
type Backend[TTx any] interface {
	// DB runs statements outside any transaction.
	DB() Querier
	// Begin starts a read-write transaction.
	Begin(ctx context.Context) (TTx, error)
	// BeginRead starts a read-only transaction whose statements all see
	// one snapshot of the database, taken no later than its first
	// statement (PostgreSQL: REPEATABLE READ READ ONLY; SQLite: a
	// deferred transaction on a read connection, which WAL keeps on the
	// snapshot of its first read). It never waits for writers, nor they
	// for it; the caller ends it with Rollback, soon: on SQLite it holds
	// back WAL checkpoints and a read connection, on PostgreSQL a
	// connection and vacuum's horizon.
	BeginRead(ctx context.Context) (TTx, error)
	// Tx runs statements inside tx.
	Tx(tx TTx) Querier
	Commit(ctx context.Context, tx TTx) error
	Rollback(ctx context.Context, tx TTx) error
	// CompleteRiverJob marks the running River job completed inside tx
	// (river.JobCompleteTx with the engine's driver type); ctx is a River
	// worker's context.
	CompleteRiverJob(ctx context.Context, tx TTx, job *rivertype.JobRow) error
	// HoldNode takes node id id for this process until the hold is
	// released, store.ErrNodeHeld when a live process holds it. Where a
	// hold can be lost, taking the id this way is what the previous
	// holder's attempt to take it back after its connection dropped
	// refuses (the id's generation moves on): whoever holds it may hand
	// that holder's running jobs back to the queue.
	HoldNode(ctx context.Context, id string) (NodeHold, error)
	// NodeFree reports whether node id id is free now (nil) or held by a
	// live process (store.ErrNodeHeld), leaving no mark on it: a holder
	// whose connection dropped takes it back unhindered. window is the
	// longest such a holder may take to do so (0 where a hold cannot be
	// lost while its process lives): an id still free a window after it
	// was seen free is no live process's.
	NodeFree(ctx context.Context, id string) (window time.Duration, err error)
	Ping(ctx context.Context) error
	Close() error
}

// NodeHold is a process's exclusive hold on a node id.
type NodeHold interface {
	// Lost is closed if the hold ends without Release: the database
	// session that held it ended and another process took the id before
	// this one could take it back. Nil when the hold cannot be lost.
	Lost() <-chan struct{}
	// Settle is how long a process that held the id before this one may
	// still be working its jobs without knowing it lost the id (its
	// connection dropped and it has not checked since); the jobs it left
	// running are reclaimed only after that. 0 when a hold cannot be lost
	// while its process lives.
	Settle() time.Duration
	// Release gives the id up. It is called once.
	Release(ctx context.Context) error
}

// Dialect is how the SQL of one engine differs from the core's.
type Dialect struct {
	// NumberedParams rewrites ? placeholders to $1, $2, … (PostgreSQL).
	NumberedParams bool
	// ForKeyShare, ForUpdate and ForDelete are appended to the SELECT that
	// locks a job row, from the weakest to the strongest; empty where a
	// write transaction already holds the database lock (SQLite). Which
	// transaction takes which, and why, is told with the lock order in locks.go.
	//
	// ForKeyShare keeps the row from being deleted, and nothing else: what
	// inserting a row that references it takes anyway.
	ForKeyShare string
	// ForUpdate serializes the transactions that change the job or its rows
	// but never its key.
	ForUpdate string
	// ForDelete excludes every other lock on the row, ForKeyShare's
	// included.
	ForDelete string
	// Retryable reports an error after which the whole transaction may be
	// run again and succeed: a deadlock or serialization failure the
	// database resolved by aborting this transaction. Nil: none is.
	Retryable func(error) bool
	// IsUniqueViolation reports a unique-constraint error.
	IsUniqueViolation func(error) bool
	// Unavailable reports an error meaning the database could not be
	// reached (a connection refused or cut, the pool closed, a lock held
	// past the busy timeout): the store wraps it in store.ErrUnavailable.
	// Nil: none is. It is never asked about the caller's own cancel or
	// deadline, which stay what they are.
	Unavailable func(error) bool
	// Time encodes a UTC timestamp (already truncated to microseconds) as a
	// query argument; the core scans time.Time, or text in TimeLayout.
	Time func(time.Time) any
	// LastAttemptedBy is an SQL expression for the last element of
	// river_job.attempted_by.
	LastAttemptedBy string
	// MergeRiverMetadata is an SQL expression of river_job.metadata with
	// the JSON object given as its only argument merged into it, key by
	// key at the top level, as River merges its own.
	MergeRiverMetadata string
	// RiverJobsOf is an SQL condition on river_job that holds for the
	// rows whose args name job jobID, with one ? placeholder for arg, in a
	// form an index answers: a delete of one job must not scan River's
	// table, which keeps every finished row for a day.
	RiverJobsOf func(jobID string) (cond string, arg any)
	// MigrationLock, when set, runs first in the migration transaction so
	// that concurrent starts apply migrations once.
	MigrationLock string
	// AccountLock, when set, is a statement taking a lock on one account
	// (its only argument) until the transaction ends, so that checks of an
	// account's limits and the insert they allow serialize per account.
	// Empty where a write transaction already holds the database lock
	// (SQLite).
	AccountLock string
	// NotifyEnd, when set, runs in every transaction that ends or deletes
	// a job (its only argument is the job id) and announces the end to the
	// other processes on the database once the transaction commits
	// (PostgreSQL's pg_notify); their backend passes it on to JobEnded.
	// Empty where the database has no such channel (SQLite): ends are
	// signalled in process, and the backend looks for other processes'
	// ends itself (RecheckWatched).
	NotifyEnd string
	// GenericPlans, when set, runs in a transaction before statements
	// whose planning costs more than running them, so that they reuse the
	// plan prepared the first time (PostgreSQL plans a prepared statement
	// anew for its parameters at each of its first executions, and keeps
	// doing so while that plan looks cheaper).
	GenericPlans string
	// AfterErase runs after a transaction that deleted secrets committed, so
	// that erased bytes do not linger (SQLite checkpoints its WAL).
	AfterErase func(ctx context.Context) error
}

// TimeLayout is how text timestamps are stored: fixed width, so that they
// sort as strings, with microseconds, always UTC.
const TimeLayout = "2006-01-02T15:04:05.000000Z"

// Config configures the core.
type Config struct {
	Dialect Dialect
	// Migrations holds the engine's schema as NNN_name.sql files applied in order.
	Migrations fs.FS
	// Schema is the River schema ("" = the connection's default).
	Schema string
	Logger *slog.Logger
}

// Store implements store.Store over a Backend.
type Store[TTx any] struct {
	backend    Backend[TTx]
	dialect    Dialect
	driver     riverdriver.Driver[TTx]
	migrations fs.FS
	schema     string
	logger     *slog.Logger
	// riverLogger is logger as River's clients get it (riverlog): River's
	// job ids under their own key, its repeated errors collapsed.
	riverLogger *slog.Logger
	// inserter is an insert-only River client (no queues) used for
	// InsertManyTx inside the store's transactions.
	inserter *river.Client[TTx]
	// waker is set while Work runs on a driver without LISTEN/NOTIFY.
	waker atomic.Pointer[waker[TTx]]
	now   func() time.Time
	// llmGroups groups concurrent FinishLLM calls per job (finishllm.go).
	llmGroups llmGroups
	// ends signals the jobs this process ends (ends.go).
	ends endSignals
	// endMergeHook, when set (SetEndMergeHook, tests only), runs just
	// before a cancel or the deadline merges a job's answers.
	endMergeHook func(jobID string)
	// endLocks lets one cancel or deadline of a merging job at a time
	// merge its answers in this process (endmerge.go); endWaitHook, when
	// set (SetEndWaitHook, tests only), runs when one waits there.
	endLocks    endLocks
	endWaitHook func(jobID string)
}

var _ store.Store = (*Store[any])(nil)

// New returns a store over backend, whose River driver is driver. It does not
// migrate; call Migrate.
func New[TTx any](cfg Config, backend Backend[TTx], driver riverdriver.Driver[TTx]) (*Store[TTx], error) {
	if cfg.Dialect.IsUniqueViolation == nil || cfg.Dialect.Time == nil || cfg.Dialect.LastAttemptedBy == "" || cfg.Dialect.MergeRiverMetadata == "" || cfg.Dialect.RiverJobsOf == nil {
		return nil, errors.New("sqlstore: incomplete dialect")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	// The inserter's FetchCooldown throttles its insert notifications per
	// queue; at River's 100ms default a hand-off soon after another on the
	// same queue would go unannounced and wait for the fetch poll.
	riverLogger := riverlog.New(logger.Handler(), riverlog.DefaultWindow)
	inserter, err := river.NewClient(driver, &river.Config{Logger: riverLogger, Schema: cfg.Schema, FetchCooldown: time.Millisecond})
	if err != nil {
		return nil, fmt.Errorf("river insert client: %w", err)
	}
	return &Store[TTx]{
		backend:     backend,
		dialect:     cfg.Dialect,
		driver:      driver,
		migrations:  cfg.Migrations,
		schema:      cfg.Schema,
		logger:      logger,
		riverLogger: riverLogger,
		inserter:    inserter,
		now:         time.Now,
		ends:        endSignals{started: make(chan struct{}, 1)},
	}, nil
}

// Ping checks the database connection.
func (s *Store[TTx]) Ping(ctx context.Context) error { return s.unavailable(s.backend.Ping(ctx)) }

// Close closes the database.
func (s *Store[TTx]) Close() error { return s.backend.Close() }

// RiverJob returns a River job by id (for operators and for the store suite,
// which checks that fan-in completed the River job with the rows).
func (s *Store[TTx]) RiverJob(ctx context.Context, id int64) (*rivertype.JobRow, error) {
	row, err := s.inserter.JobGet(ctx, id)
	if errors.Is(err, rivertype.ErrNotFound) {
		return nil, store.ErrNotFound
	}
	return row, err
}

// RiverJobsByKind returns the River jobs of one kind, by id, at most 10,000
// (for operators and for the store suite).
func (s *Store[TTx]) RiverJobsByKind(ctx context.Context, kind string) ([]*rivertype.JobRow, error) {
	params := river.NewJobListParams().Kinds(kind).OrderBy(river.JobListOrderByID, river.SortOrderAsc).First(10_000)
	res, err := s.inserter.JobList(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("list river jobs of kind %s: %w", kind, err)
	}
	return res.Jobs, nil
}

// q rebinds a query written with ? placeholders to the dialect.
func (s *Store[TTx]) q(query string) string {
	if !s.dialect.NumberedParams {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 16)
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	return b.String()
}

// exec and query rebind and run on qr, with every text argument made
// storable (storableArgs). An error that means the database could not be
// reached comes back wrapped in store.ErrUnavailable (unavailable), from
// the statement or from reading its rows.
func (s *Store[TTx]) exec(ctx context.Context, qr Querier, query string, args ...any) (int64, error) {
	n, err := qr.Exec(ctx, s.q(query), storableArgs(args)...)
	return n, s.unavailable(err)
}

func (s *Store[TTx]) query(ctx context.Context, qr Querier, query string, args ...any) (Rows, error) {
	rows, err := qr.Query(ctx, s.q(query), storableArgs(args)...)
	if err != nil {
		return nil, s.unavailable(err)
	}
	if s.dialect.Unavailable == nil {
		return rows, nil
	}
	return unavailableRows{Rows: rows, unavailable: s.unavailable}, nil
}

// unavailableRows passes a lost connection met while reading rows on as
// store.ErrUnavailable.
type unavailableRows struct {
	Rows
	unavailable func(error) error
}

func (r unavailableRows) Scan(dest ...any) error { return r.unavailable(r.Rows.Scan(dest...)) }
func (r unavailableRows) Err() error             { return r.unavailable(r.Rows.Err()) }

// unavailable wraps err in store.ErrUnavailable when the dialect says it
// means the database could not be reached. The caller's cancel or
// deadline is left as it is: the request ended, the database may be fine.
func (s *Store[TTx]) unavailable(err error) error {
	switch {
	case err == nil, s.dialect.Unavailable == nil, errors.Is(err, store.ErrUnavailable),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		!s.dialect.Unavailable(err):
		return err
	}
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}

// errNoRows is returned by queryRow when the query matched nothing.
var errNoRows = errors.New("no rows")

// queryRow scans the first row of a query; errNoRows when there is none.
func (s *Store[TTx]) queryRow(ctx context.Context, qr Querier, query string, args []any, dest ...any) error {
	rows, err := s.query(ctx, qr, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return errNoRows
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

// inTx runs fn in a transaction, committing when it returns nil. fn must use
// only q: on SQLite the writer pool has one connection, which the transaction
// holds.
//
// fn may run more than once: when the database aborts the transaction for a
// deadlock or a serialization failure (Dialect.Retryable), the whole of it
// is run again, up to txAttempts times. So fn must start from nothing each
// time (reset what it reports to its caller at its top) and do nothing
// outside the transaction; what must follow the commit goes after inTx
// returns. Every caller in this package is written so.
func (s *Store[TTx]) inTx(ctx context.Context, fn func(tx TTx, q Querier) error) error {
	for attempt := 1; ; attempt++ {
		err := s.runTx(ctx, fn)
		if err == nil || attempt == txAttempts || s.dialect.Retryable == nil || !s.dialect.Retryable(err) {
			return err
		}
		s.logger.WarnContext(ctx, "store: transaction aborted by the database, running it again", "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(txRetryPause(attempt)):
		}
	}
}

// txAttempts is how many times inTx runs a transaction the database keeps
// aborting. Once the job row is locked in one order (locks.go) a deadlock
// needs a path that order missed; a retry then lets the surviving side
// finish first, and the rerun almost surely passes.
const txAttempts = 4

// txRetryPause is the wait before running a transaction again: a few
// milliseconds, growing and jittered, so that two transactions aborted
// together do not meet again at once.
func txRetryPause(attempt int) time.Duration {
	base := time.Duration(attempt) * 5 * time.Millisecond
	return base + rand.N(base)
}

// runTx runs fn in one transaction. Its error is passed through
// unavailable again: River's inserts and completions inside fn reach the
// database without exec and query.
//
// A failed COMMIT is not: once COMMIT was sent, a connection cut before
// its answer leaves the outcome unknown (the server may have committed),
// so "not served, retry" would be untrue, and a create without an
// idempotency key retried as told would make a second job. It stays an
// internal error (500, no Retry-After). An abort the database answered
// (a serialization failure) still reaches inTx's Retryable through the
// wrapping.
func (s *Store[TTx]) runTx(ctx context.Context, fn func(tx TTx, q Querier) error) error {
	tx, err := s.backend.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", s.unavailable(err))
	}
	if err := fn(tx, s.backend.Tx(tx)); err != nil {
		_ = s.backend.Rollback(ctx, tx) // the error that matters is fn's
		return s.unavailable(err)
	}
	if err := s.backend.Commit(ctx, tx); err != nil {
		return fmt.Errorf("commit (outcome unknown): %w", err)
	}
	return nil
}

// inSnapshot runs fn in a read-only transaction that sees one snapshot of
// the database (Backend.BeginRead). fn must only read, and be quick: what
// the transaction holds is listed at BeginRead.
func (s *Store[TTx]) inSnapshot(ctx context.Context, fn func(q Querier) error) error {
	tx, err := s.backend.BeginRead(ctx)
	if err != nil {
		return fmt.Errorf("begin read: %w", s.unavailable(err))
	}
	err = fn(s.backend.Tx(tx))
	// Nothing was written: ending the transaction either way is the same,
	// and a rollback cannot fail for a conflict.
	_ = s.backend.Rollback(ctx, tx)
	return err
}

// insertRiverJobs inserts River jobs in tx, nothing for an empty list, and
// adds their queues to woken: the caller wakes them once tx has committed.
func (s *Store[TTx]) insertRiverJobs(ctx context.Context, tx TTx, params []river.InsertManyParams, woken *[]string) error {
	if len(params) == 0 {
		return nil
	}
	res, err := s.inserter.InsertManyTx(ctx, tx, params)
	if err != nil {
		return fmt.Errorf("insert river jobs: %w", err)
	}
	*woken = append(*woken, queuesOf(res)...)
	return nil
}

// afterErase runs the dialect's post-erase step; a failure is logged, not
// returned, because the erase itself committed.
func (s *Store[TTx]) afterErase(ctx context.Context, jobID string) {
	if s.dialect.AfterErase == nil {
		return
	}
	if err := s.dialect.AfterErase(ctx); err != nil {
		s.logger.WarnContext(ctx, "store: flushing erased secrets failed", "job_id", jobID, "err", err)
	}
}

// ts is the stored form of t: UTC, microseconds.
func (s *Store[TTx]) ts(t time.Time) any { return s.dialect.Time(truncate(t)) }

// tsOrNull is ts, or NULL for the zero time.
func (s *Store[TTx]) tsOrNull(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return s.ts(t)
}

// nowUTC is the current time as stored.
func (s *Store[TTx]) nowUTC() time.Time { return truncate(s.now()) }

func truncate(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
