package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"regexp"
)

// database/sql prepares, runs and finalizes every statement it is given
// without Prepare, and modernc.org/sqlite keeps no cache of its own, so
// each River and store query was parsed anew: preparing took 32% of the
// service's CPU in `docjobs bench`, against 12% for running the statements,
// all of it on the one connection every writer waits for
// (docs/benchmarks.md). pgx caches prepared statements per connection by
// default; this gives the SQLite connection the same.

// maxCachedStatements bounds the cache. The service's statements are a fixed
// set (about a hundred, River's included); SQL built with a variable number
// of placeholders runs uncached once the cache is full.
const maxCachedStatements = 256

// cachingConnector opens connections that keep their prepared statements.
type cachingConnector struct{ driver.Connector }

func (c cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	inner, ok := conn.(sqliteConn)
	if !ok {
		_ = conn.Close()
		return nil, errors.New("sqlite: driver connection lacks the context methods")
	}
	return &cachingConn{sqliteConn: inner, stmts: make(map[string]*cachedStmt)}, nil
}

// sqliteConn is what modernc.org/sqlite's connection implements and
// cachingConn passes through.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// boundLimit is a LIMIT or OFFSET given by a bare placeholder: ?, ?NNN or a
// named one.
var boundLimit = regexp.MustCompile(`(?i)\b(LIMIT|OFFSET)(\s+)([?][0-9]*|[:@$][A-Za-z_][A-Za-z0-9_]*)`)

// limitsAsExpressions writes a LIMIT or OFFSET placeholder as +placeholder.
// SQLite (3.53, as modernc ships it) plans a bare placeholder there as the
// integer bound to it and marks the statement to be re-prepared whenever
// that parameter is bound again, which for a cached statement is every run:
// River's job fetch (LIMIT ?3) was parsed and planned anew at each poll,
// two thirds of its cost, on the writer connection. Under unary plus the
// limit is an expression evaluated at run time and the plan no longer
// depends on it. (The database-wide switch for this, the query planner
// stability guarantee, is not reachable through the driver.)
func limitsAsExpressions(query string) string {
	return boundLimit.ReplaceAllString(query, "$1$2+$3")
}

// cachingConn runs ExecContext and QueryContext through a prepared statement
// kept per SQL text. database/sql never uses one connection from two
// goroutines at once, so the map needs no lock; a statement whose rows are
// still open (a query issued while iterating another of the same text) is
// busy, and that query runs uncached.
type cachingConn struct {
	sqliteConn
	stmts map[string]*cachedStmt
}

type cachedStmt struct {
	stmt interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	}
	busy bool
}

// statement returns the cached statement for query, preparing it on first
// use; nil when the query must run uncached.
func (c *cachingConn) statement(ctx context.Context, query string) (*cachedStmt, error) {
	if s, ok := c.stmts[query]; ok {
		if s.busy {
			return nil, nil
		}
		return s, nil
	}
	if len(c.stmts) >= maxCachedStatements {
		return nil, nil
	}
	st, err := c.sqliteConn.PrepareContext(ctx, limitsAsExpressions(query))
	if err != nil {
		return nil, err
	}
	typed, ok := st.(interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	})
	if !ok {
		_ = st.Close()
		return nil, nil
	}
	s := &cachedStmt{stmt: typed}
	c.stmts[query] = s
	return s, nil
}

func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	s, err := c.statement(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.sqliteConn.ExecContext(ctx, query, args)
	}
	return s.stmt.ExecContext(ctx, args)
}

func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	s, err := c.statement(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.sqliteConn.QueryContext(ctx, query, args)
	}
	rows, err := s.stmt.QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	s.busy = true
	return &cachedRows{Rows: rows, release: func() { s.busy = false }}, nil
}

// Close finalizes the cached statements before the connection.
func (c *cachingConn) Close() error {
	var errs []error
	for q, s := range c.stmts {
		errs = append(errs, s.stmt.Close())
		delete(c.stmts, q)
	}
	errs = append(errs, c.sqliteConn.Close())
	return errors.Join(errs...)
}

// cachedRows frees its statement for the next query when closed. It hides
// the driver's column-type methods, which neither River nor the store use.
type cachedRows struct {
	driver.Rows
	release func()
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	if r.release != nil {
		r.release()
		r.release = nil
	}
	return err
}
