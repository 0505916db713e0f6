// Package sqlite is the embedded store: store.Store on one SQLite file
// (modernc.org/sqlite, pure Go) with River's SQLite driver, the default of
// `docjobs serve`. Queries live in package sqlstore; this package opens the
// database, states SQLite's dialect and owns its migrations.
//
// The writer pool has exactly one connection: River's SQLite driver needs it
// (SQLite allows one writer, and River's parallel maintenance would otherwise
// meet SQLITE_BUSY), and it makes every write transaction serial. A second,
// query_only pool serves SELECTs outside transactions beside it (WAL). A
// consequence for this package: code holding a transaction must never use
// the writer pool, or it waits for itself.
package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivertype"
	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/docjobs/docjobs/internal/store/sqlstore"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Config configures the SQLite store.
type Config struct {
	// Path is the database file; its directory is created (0700) and the
	// file (0600) if missing.
	Path string
	// BusyTimeout is how long a statement waits for a lock held by another
	// process on the same file. Default 10s.
	BusyTimeout time.Duration
	// FlushDelay is how long after secrets are erased the write-ahead log,
	// which may still hold their sealed bytes, is truncated; 0 means
	// DefaultFlushDelay.
	FlushDelay time.Duration
	// CheckSchema makes Open check the schema instead of migrating it
	// (sqlstore.Store.CheckSchema): the admin commands other than migrate
	// must not upgrade a database older servers use.
	CheckSchema bool
	Logger      *slog.Logger
}

// Store is store.Store on SQLite.
type Store struct {
	*sqlstore.Store[*sql.Tx]
	db, read *sql.DB
	// ends looks for job ends committed by other processes (ends.go).
	ends *endPoller
}

// Open opens (creating if needed) and migrates the database at cfg.Path,
// or only checks its schema (Config.CheckSchema).
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Path == "" {
		return nil, errors.New("sqlite: path is required")
	}
	if strings.ContainsRune(cfg.Path, '?') {
		return nil, fmt.Errorf("sqlite: path %q must not contain '?'", cfg.Path)
	}
	if err := os.MkdirAll(filepath.Dir(cfg.Path), 0o700); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	if err := createPrivate(cfg.Path); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	busy := cfg.BusyTimeout
	if busy <= 0 {
		busy = 10 * time.Second
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	// Readers: WAL lets them run beside the writer, on their own
	// connections, seeing every commit made before they start.
	rq := url.Values{}
	rq.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	rq.Add("_pragma", "query_only(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	// NORMAL is durable against process crashes in WAL mode; only a power
	// loss can drop the last commits.
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	// Deleted secrets are overwritten with zeros, not left in free pages.
	q.Add("_pragma", "secure_delete(on)")
	// BEGIN IMMEDIATE: a write transaction takes the write lock at its start,
	// so two transactions never deadlock upgrading read locks.
	q.Set("_txlock", "immediate")
	connector, err := sqlite.NewConnector(cfg.Path + "?" + q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", cfg.Path, err)
	}
	db := sql.OpenDB(cachingConnector{connector})
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	readConnector, err := sqlite.NewConnector(cfg.Path + "?" + rq.Encode())
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", cfg.Path, err)
	}
	read := sql.OpenDB(cachingConnector{readConnector})
	read.SetMaxOpenConns(readConns)
	read.SetMaxIdleConns(readConns)
	read.SetConnMaxIdleTime(0)
	// One more read-only connection, kept for PRAGMA data_version (ends.go).
	watch := sql.OpenDB(cachingConnector{readConnector})
	watch.SetMaxOpenConns(1)
	watch.SetMaxIdleConns(1)
	watch.SetConnMaxLifetime(0)
	watch.SetConnMaxIdleTime(0)

	if cfg.FlushDelay <= 0 {
		cfg.FlushDelay = DefaultFlushDelay
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s, err := newStore(cfg.Path, db, read, watch, newFlusher(db, cfg.FlushDelay, cfg.Logger), cfg.Logger)
	if err != nil {
		_ = db.Close()
		_ = read.Close()
		_ = watch.Close()
		return nil, err
	}
	if cfg.CheckSchema {
		if err := s.CheckSchema(ctx); err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("sqlite: %s: %w", cfg.Path, err)
		}
		return s, nil
	}
	// Processes opening a new file together migrate it one at a time:
	// River migrates each version in a transaction of its own, outside
	// docjobs' migration transaction, and two of them side by side
	// collided on its tables.
	lock, err := waitLockFile(cfg.Path + ".migrate.lock")
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("sqlite: migrate %s: lock: %w", cfg.Path, err)
	}
	err = s.Migrate(ctx)
	_ = lock.Close()
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("sqlite: migrate %s: %w", cfg.Path, err)
	}
	return s, nil
}

// createPrivate creates the database file, empty (which SQLite takes for a
// new database), readable by its owner only whatever the umask: it holds
// every job's text and answers. SQLite would create it 0644 less the
// umask; it gives the -wal and -shm files the database file's mode, so
// they follow. An existing file is left as it is.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	return nil
}

// readConns is the size of the read-only pool. Reads outside a transaction
// (job and row lookups, the API's GETs) run there, so they no longer queue
// behind the one writer connection (docs/benchmarks.md).
const readConns = 4

func newStore(path string, db, read, watch *sql.DB, flush *flusher, logger *slog.Logger) (*Store, error) {
	migrations, err := fs.Sub(migrationFS, "migrations")
	if err != nil {
		flush.close()
		return nil, fmt.Errorf("sqlite: migrations: %w", err)
	}
	core, err := sqlstore.New(sqlstore.Config{
		Dialect: sqlstore.Dialect{
			IsUniqueViolation:  isUniqueViolation,
			Unavailable:        isUnavailable,
			Time:               func(t time.Time) any { return t.Format(sqlstore.TimeLayout) },
			LastAttemptedBy:    `json_extract(attempted_by, '$[#-1]')`,
			MergeRiverMetadata: `jsonb_patch(json(metadata), json(?))`,
			// The expression of the index migration 016 adds.
			RiverJobsOf: func(jobID string) (string, any) { return `args ->> 'job_id' = ?`, jobID },
			AfterErase:  flush.soon,
		},
		Migrations: migrations,
		Logger:     logger,
	}, &backend{path: path, db: db, read: read, flush: flush}, pollOnlyDriver{Driver: riversqlite.New(db), read: read})
	if err != nil {
		flush.close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	ends := startEndPoller(endPollerConfig{DB: watch, Interval: endPoll, Watching: core.WatchingEnds,
		Started: core.EndWatchStarted(), Recheck: core.RecheckWatched, Logger: logger})
	return &Store{Store: core, db: db, read: read, ends: ends}, nil
}

// Close stops looking for other processes' job ends, then closes the
// database.
func (s *Store) Close() error {
	return errors.Join(s.ends.close(), s.Store.Close())
}

func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}

// isUnavailable reports an error after which the same request may succeed
// later: the database was closed under it (the process is stopping), a
// connection went bad, or another process (a second docjobs, a backup, an
// operator's sqlite3 shell) held the file's lock past the busy timeout,
// SQLITE_BUSY with any extended code. Within one process writers queue for
// the one writer connection and never meet SQLITE_BUSY; one that waits
// past its request's deadline gets DeadlineExceeded, not this. Errors of
// the file itself (SQLITE_IOERR, SQLITE_FULL, SQLITE_CORRUPT, SQLITE_CANTOPEN)
// are not: they need an operator, and stay INTERNAL.
func isUnavailable(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()&0xff == sqlite3.SQLITE_BUSY
	}
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) || isDBClosed(err)
}

// isDBClosed reports database/sql's "sql: database is closed", which it
// does not export.
func isDBClosed(err error) bool {
	const closed = "sql: database is closed"
	for err != nil {
		if err.Error() == closed {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			return slices.ContainsFunc(u.Unwrap(), isDBClosed)
		default:
			return false
		}
	}
	return false
}

// pollOnlyDriver is River's SQLite driver without its emulated
// LISTEN/NOTIFY. The emulation polls an outbox table on a fixed 50ms
// interval, so every stage hand-off waited up to that long, and it costs an
// outbox write per insert and a query per poll. docjobs on SQLite is one
// process: after each commit that inserted River jobs the store wakes its
// own producers instead (sqlstore's wake), which River does at once only
// for drivers without a listener. Measured in docs/decisions.md.
//
// Its executor also skips River's redundant completion of jobs the store
// already completed in their own transaction (completer.go).
type pollOnlyDriver struct {
	*riversqlite.Driver
	read *sql.DB
}

func (d pollOnlyDriver) GetExecutor() riverdriver.Executor {
	return skipFinishedExecutor{Executor: d.Driver.GetExecutor(), read: d.read}
}

func (pollOnlyDriver) SupportsListener() bool     { return false }
func (pollOnlyDriver) SupportsListenNotify() bool { return false }

// backend adapts database/sql to sqlstore.Backend: db is the one writer
// connection, read the read-only pool, path the database file.
type backend struct {
	path     string
	db, read *sql.DB
	flush    *flusher
}

// DB sends SELECTs to the read pool and every other statement to the writer.
func (b *backend) DB() sqlstore.Querier {
	return poolQuerier{write: querier{b.db}, read: querier{b.read}}
}

func (b *backend) Begin(ctx context.Context) (*sql.Tx, error) { return b.db.BeginTx(ctx, nil) }

// BeginRead starts a transaction on a read connection: a plain (deferred)
// BEGIN, which in WAL mode reads one snapshot from its first SELECT on,
// beside the writer and without blocking it.
func (b *backend) BeginRead(ctx context.Context) (*sql.Tx, error) {
	return b.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
}

func (b *backend) Tx(tx *sql.Tx) sqlstore.Querier { return querier{tx} }

func (b *backend) Commit(_ context.Context, tx *sql.Tx) error { return tx.Commit() }

func (b *backend) Rollback(_ context.Context, tx *sql.Tx) error { return tx.Rollback() }

func (b *backend) CompleteRiverJob(ctx context.Context, tx *sql.Tx, row *rivertype.JobRow) error {
	_, err := river.JobCompleteTx[*riversqlite.Driver](ctx, tx, &river.Job[completeArgs]{JobRow: row})
	if err != nil {
		return fmt.Errorf("complete river job %d: %w", row.ID, err)
	}
	return nil
}

func (b *backend) Ping(ctx context.Context) error { return b.db.PingContext(ctx) }

func (b *backend) Close() error {
	b.flush.close()
	return errors.Join(b.read.Close(), b.db.Close())
}

// completeArgs lets JobCompleteTx complete a River job of any kind: it only
// needs the row, and decoding the row's args into an empty struct ignores them.
type completeArgs struct{}

func (completeArgs) Kind() string { return "docjobs_any" }

// execQuerier is what *sql.DB and *sql.Tx share.
type execQuerier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

type querier struct{ q execQuerier }

func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := q.q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (q querier) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	rows, err := q.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

// poolQuerier routes statements outside a transaction by what they do.
type poolQuerier struct{ write, read querier }

func (p poolQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return p.write.Exec(ctx, query, args...)
}

func (p poolQuerier) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	if isSelect(query) {
		return p.read.Query(ctx, query, args...)
	}
	return p.write.Query(ctx, query, args...) // UPDATE … RETURNING and the like
}

// isSelect reports whether query starts with SELECT; a read-only
// connection refuses anything else, so a wrong guess fails loudly.
func isSelect(query string) bool {
	q := strings.TrimLeft(query, " \t\r\n(")
	return len(q) >= 6 && strings.EqualFold(q[:6], "SELECT")
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }
