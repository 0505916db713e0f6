// Package postgres is the scale-out store: store.Store on PostgreSQL through
// pgx/v5 with River's pgx driver, so that many API and worker processes share
// one database. Queries live in package sqlstore; this package connects,
// states PostgreSQL's dialect and owns its migrations.
package postgres

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/store/sqlstore"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Config configures the PostgreSQL store.
type Config struct {
	// URL is a libpq URL or DSN; pool settings such as pool_max_conns go in
	// it. Without pool_max_conns the pool holds poolSize connections.
	URL string
	// Schema, when set, holds every table, River's included: it is created if
	// missing and put first on the search_path of each connection. Tests give
	// each test its own.
	Schema string
	// NodeCheck is how often the connection holding this process's node id
	// is checked (default 5s); see Work.
	NodeCheck time.Duration
	// NodeCheckTimeout bounds one such check, and one take of the id
	// again after its connection dropped (default 15s). A sibling sweep
	// looks twice at an id, NodeCheck plus twice this apart, before it
	// takes the id from a holder that may only have lost its connection.
	NodeCheckTimeout time.Duration
	// CheckSchema makes Open check the schema instead of migrating it
	// (sqlstore.Store.CheckSchema): the admin commands other than migrate
	// must not upgrade a database older servers use.
	CheckSchema bool
	Logger      *slog.Logger
}

// Store is store.Store on PostgreSQL.
type Store struct {
	*sqlstore.Store[pgx.Tx]
	pool    *pgxpool.Pool
	backend *backend
	// ends is the connection listening for the ends of jobs (ends.go);
	// nil until Open starts it.
	ends *endListener
}

// Open connects and migrates, or only checks the schema (Config.CheckSchema).
func Open(ctx context.Context, cfg Config) (*Store, error) {
	pc, err := poolConfig(cfg.URL, runtime.NumCPU())
	if err != nil {
		return nil, err
	}
	starting, err := lockStart(ctx, pc.ConnConfig, cfg.Schema)
	if err != nil {
		return nil, err
	}
	defer starting.Close(context.WithoutCancel(ctx))
	if cfg.Schema != "" {
		if _, err := starting.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{cfg.Schema}.Sanitize()); err != nil {
			return nil, fmt.Errorf("postgres: create schema %s: %w", cfg.Schema, err)
		}
		pc.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{cfg.Schema}.Sanitize()
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	s, err := newStore(pool, cfg)
	if err != nil {
		pool.Close()
		return nil, err
	}
	if cfg.CheckSchema {
		err = s.CheckSchema(ctx)
	} else if err = s.Migrate(ctx); err != nil {
		err = fmt.Errorf("migrate: %w", err)
	}
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	// One connection beside the pool: a listening connection is held for
	// the life of the process, and must not take a place queries wait for.
	s.ends = startEndListener(ctx, pc.ConnConfig.Copy(), s.JobEnded, s.RecheckWatched, logger(cfg))
	return s, nil
}

// Close stops listening for job ends and closes the pool.
func (s *Store) Close() error {
	if s.ends != nil {
		s.ends.close()
	}
	return s.Store.Close()
}

func logger(cfg Config) *slog.Logger {
	if cfg.Logger != nil {
		return cfg.Logger
	}
	return slog.Default()
}

// poolConfig parses url and sizes the pool as url says, else by poolSize.
func poolConfig(url string, cpus int) (*pgxpool.Config, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse url: %s", withoutConnString(err))
	}
	if !strings.Contains(url, "pool_max_conns") {
		pc.MaxConns = poolSize(cpus)
	}
	return pc, nil
}

// withoutConnString is pgx's parse error without the connection string it
// quotes: pgx hides a password in the URL's user information but not one
// given as a query parameter (?password=), and the error is printed at
// start. What follows the quoted string says what is wrong with it.
func withoutConnString(err error) string {
	var pce *pgconn.ParseConfigError
	if !errors.As(err, &pce) {
		return err.Error()
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, "`: "); i >= 0 {
		return msg[i+len("`: "):]
	}
	if inner := errors.Unwrap(pce); inner != nil {
		return inner.Error()
	}
	return "the URL does not parse"
}

// poolSize is the pool's default size on a machine of cpus cores. pgx's
// own default, one connection per core and at least four, starved a
// worker process: its recognize and model workers, River's producers and
// the API queued for four connections, and on two cores a job of ten
// files waited 20 ms longer for its first provider call than with eight
// (docjobs bench: wall ÷ critical path 1.57–1.63 with four, 1.48–1.52 with
// eight, 1.54 with sixteen, 1.68 with thirty-two, the database sharing the
// two cores).
func poolSize(cpus int) int32 {
	return int32(max(8, 2*cpus))
}

// lockStart returns a connection holding the session lock under which
// processes sharing a schema start: creating the schema, River's migrations
// and docjobs' own. River migrates each version in its own transaction
// (some cannot share one), outside the lock docjobs' migration transaction
// takes, so processes started together on a new database ran River's
// migrations beside each other, collided on its tables and types, and all
// but one exited. Closing the connection releases the lock.
func lockStart(ctx context.Context, cc *pgx.ConnConfig, schema string) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	if schema == "" {
		if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			conn.Close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("postgres: current schema: %w", err)
		}
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext('docjobs_start.' || $1::text))`, schema); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("postgres: wait for other processes starting: %w", err)
	}
	return conn, nil
}

func newStore(pool *pgxpool.Pool, cfg Config) (*Store, error) {
	migrations, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		return nil, fmt.Errorf("postgres: migrations: %w", err)
	}
	b := newBackend(pool, cfg)
	core, err := sqlstore.New(sqlstore.Config{
		Dialect: sqlstore.Dialect{
			NumberedParams: true,
			// The lock order of the transactions of a job is in
			// sqlstore/locks.go. NO KEY UPDATE: the job row's key never
			// changes, and unlike FOR UPDATE it does not wait on the KEY
			// SHARE that a FinishOCR holds while it inserts its file's
			// rows (the files of a job insert in parallel).
			ForKeyShare:        ` FOR KEY SHARE`,
			ForUpdate:          ` FOR NO KEY UPDATE`,
			ForDelete:          ` FOR UPDATE`,
			Retryable:          isRetryable,
			IsUniqueViolation:  isUniqueViolation,
			Unavailable:        isUnavailable,
			Time:               func(t time.Time) any { return t },
			LastAttemptedBy:    `attempted_by[array_upper(attempted_by, 1)]`,
			MergeRiverMetadata: `metadata || ?::jsonb`,
			// Containment, which River's GIN index on args answers (3 ms
			// at 200,000 rows, 8.5 ms at a million, where args->>'job_id'
			// scanned the table: 53 and 242 ms).
			RiverJobsOf: riverJobsOf,
			// Every process hears of every end at once (ends.go).
			NotifyEnd: notifyEnd,
			// A group's UPDATE of up to 32 rows (finishllm.go) took 1.5–3
			// ms to plan for its parameters at each bind, four times
			// what running it takes, in the tail of every job.
			GenericPlans: `SET LOCAL plan_cache_mode = force_generic_plan`,
			// Nodes starting together migrate one at a time (per schema).
			MigrationLock: `SELECT pg_advisory_xact_lock(hashtext('docjobs_migrate.' || current_schema()))`,
			// An advisory lock rather than a lock on the account's row:
			// the store never requires an accounts row for a job's
			// account, and the limit must hold all the same. A hash
			// collision only makes two accounts wait for each other's
			// creates, never lets one pass its limit.
			AccountLock: `SELECT pg_advisory_xact_lock(hashtext('docjobs_account.' || current_schema() || '.' || ?::text))`,
		},
		Migrations: migrations,
		Schema:     cfg.Schema,
		Logger:     cfg.Logger,
	}, b, riverpgxv5.New(pool))
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return &Store{Store: core, pool: pool, backend: b}, nil
}

// isRetryable reports the errors after which PostgreSQL has aborted the
// transaction and running it again may succeed: a serialization failure
// (40001) or a deadlock it broke by choosing this transaction (40P01).
func isRetryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// isUnavailable reports an error meaning the database could not be
// reached, after which the same request may succeed: no connection could
// be made (refused, timed out, the server refusing connections for now or
// for good: every pgconn.ConnectError, as the service cannot tell an
// outage from a server that will never come back), the pool is closed (the
// process is stopping), the connection was cut under a statement (a
// network error, EOF, pgx's "conn closed"), or the server said so itself:
// class 08 (connection exception), 57P01–57P03 (the server shutting down,
// crashed or starting) and 53300 (too many connections).
func isUnavailable(err error) bool {
	var (
		ce *pgconn.ConnectError
		ne net.Error
		pe *pgconn.PgError
	)
	switch {
	case errors.As(err, &ce):
		return true // before PgError: a refused login wraps the server's FATAL
	case errors.As(err, &pe):
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" ||
			pe.Code == "57P03" || pe.Code == "53300"
	case errors.As(err, &ne):
		return true
	}
	return errors.Is(err, puddle.ErrClosedPool) || errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// backend adapts pgx to sqlstore.Backend.
type backend struct {
	pool             *pgxpool.Pool
	nodeCheck        time.Duration
	nodeCheckTimeout time.Duration
	logger           *slog.Logger
	hooks            nodeHooks // set by tests before any Work
}

func newBackend(pool *pgxpool.Pool, cfg Config) *backend {
	b := &backend{pool: pool, nodeCheck: cfg.NodeCheck, nodeCheckTimeout: cfg.NodeCheckTimeout, logger: cfg.Logger}
	if b.nodeCheck <= 0 {
		b.nodeCheck = defaultNodeCheck
	}
	if b.nodeCheckTimeout <= 0 {
		b.nodeCheckTimeout = defaultNodeCheckTimeout
	}
	if b.logger == nil {
		b.logger = slog.Default()
	}
	return b
}

func (b *backend) DB() sqlstore.Querier { return querier{b.pool} }

func (b *backend) Begin(ctx context.Context) (pgx.Tx, error) { return b.pool.Begin(ctx) }

// BeginRead starts a REPEATABLE READ READ ONLY transaction: its statements
// all see the snapshot of its first one. A read-only transaction takes no
// row locks and is never aborted for serialization at this level.
func (b *backend) BeginRead(ctx context.Context) (pgx.Tx, error) {
	return b.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
}

func (b *backend) Tx(tx pgx.Tx) sqlstore.Querier { return querier{tx} }

func (b *backend) Commit(ctx context.Context, tx pgx.Tx) error { return tx.Commit(ctx) }

func (b *backend) Rollback(ctx context.Context, tx pgx.Tx) error {
	// A cancelled ctx must not leave the connection in an open transaction.
	return tx.Rollback(context.WithoutCancel(ctx))
}

func (b *backend) CompleteRiverJob(ctx context.Context, tx pgx.Tx, row *rivertype.JobRow) error {
	_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, &river.Job[completeArgs]{JobRow: row})
	if err != nil {
		return fmt.Errorf("complete river job %d: %w", row.ID, err)
	}
	return nil
}

func (b *backend) Ping(ctx context.Context) error { return b.pool.Ping(ctx) }

func (b *backend) Close() error {
	b.pool.Close()
	return nil
}

// completeArgs lets JobCompleteTx complete a River job of any kind: it only
// needs the row, and decoding the row's args into an empty struct ignores them.
type completeArgs struct{}

func (completeArgs) Kind() string { return "docjobs_any" }

// execQuerier is what *pgxpool.Pool and pgx.Tx share.
type execQuerier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

type querier struct{ q execQuerier }

func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := q.q.Exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (q querier) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	rows, err := q.q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// riverJobsOf is the dialect's RiverJobsOf: the River rows whose args
// contain {"job_id": jobID}.
func riverJobsOf(jobID string) (string, any) {
	arg, _ := json.Marshal(map[string]string{"job_id": jobID}) // a map of strings always encodes
	return `args @> ?::jsonb`, string(arg)
}
