package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	sqlite "modernc.org/sqlite"
)

// openCaching opens a one-connection database through cachingConnector, as
// Open does, with a table t(k, v) of three rows.
func openCaching(t *testing.T) *sql.DB {
	t.Helper()
	connector, err := sqlite.NewConnector(filepath.Join(t.TempDir(), "cache.db") + "?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(cachingConnector{connector})
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	for _, q := range []string{
		`CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)`,
		`INSERT INTO t (k, v) VALUES (1, 'a'), (2, 'b'), (3, 'c')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// cached returns how many statements the pool's one connection keeps.
func cached(t *testing.T, db *sql.DB) int {
	t.Helper()
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	n := -1
	if err := conn.Raw(func(dc any) error {
		n = len(dc.(*cachingConn).stmts)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func value(t *testing.T, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, k int) string {
	t.Helper()
	var v string
	if err := q.QueryRowContext(t.Context(), `SELECT v FROM t WHERE k = ?`, k).Scan(&v); err != nil {
		t.Fatalf("select k=%d: %v", k, err)
	}
	return v
}

func TestRepeatedStatementsArePreparedOnce(t *testing.T) {
	db := openCaching(t)
	before := cached(t, db)
	for k, want := range map[int]string{1: "a", 2: "b", 3: "c"} {
		if got := value(t, db, k); got != want {
			t.Errorf("k=%d: got %q, want %q", k, got, want)
		}
	}
	for i := range 3 {
		if _, err := db.Exec(`UPDATE t SET v = ? WHERE k = ?`, fmt.Sprint("x", i), 1); err != nil {
			t.Fatal(err)
		}
	}
	if got := value(t, db, 1); got != "x2" {
		t.Errorf("after three updates k=1 is %q, want x2: a reused statement kept old bindings", got)
	}
	if got := cached(t, db) - before; got != 2 {
		t.Errorf("cache grew by %d statements for one SELECT and one UPDATE run many times, want 2", got)
	}
}

func TestSameStatementWhileItsRowsAreOpenRunsUncached(t *testing.T) {
	db := openCaching(t)
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	const q = `SELECT k, v FROM t WHERE k >= ? ORDER BY k`
	outer, err := tx.Query(q, 1)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for outer.Next() {
		var k int
		var v string
		if err := outer.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		// The same text again, on the same connection, mid-iteration.
		inner, err := tx.Query(q, k)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for inner.Next() {
			n++
		}
		if err := inner.Close(); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s%d", v, n))
	}
	if err := outer.Err(); err != nil {
		t.Fatal(err)
	}
	outer.Close()
	if want := "[a3 b2 c1]"; fmt.Sprint(got) != want {
		t.Errorf("outer/inner iteration gave %v, want %s", got, want)
	}
}

func TestStatementsBeyondTheCapRunUncached(t *testing.T) {
	db := openCaching(t)
	for i := range maxCachedStatements + 10 {
		// Distinct texts, as SQL built with a variable placeholder count is.
		var n int
		if err := db.QueryRow(fmt.Sprintf(`SELECT count(*) + %d FROM t`, i)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 3+i {
			t.Fatalf("query %d gave %d, want %d", i, n, 3+i)
		}
	}
	if got := cached(t, db); got != maxCachedStatements {
		t.Errorf("cache holds %d statements, want the cap %d", got, maxCachedStatements)
	}
}

func TestCachedStatementsSurviveSchemaChanges(t *testing.T) {
	db := openCaching(t)
	if got := value(t, db, 2); got != "b" {
		t.Fatalf("k=2 is %q", got)
	}
	if _, err := db.Exec(`ALTER TABLE t ADD COLUMN w TEXT`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE INDEX t_v ON t (v)`); err != nil {
		t.Fatal(err)
	}
	if got := value(t, db, 2); got != "b" {
		t.Errorf("after ALTER TABLE the cached SELECT gave %q, want b", got)
	}
}

func TestRolledBackWritesThroughCachedStatementsAreGone(t *testing.T) {
	db := openCaching(t)
	const update = `UPDATE t SET v = ? WHERE k = ?`
	if _, err := db.Exec(update, "kept", 3); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(update, "lost", 3); err != nil {
		t.Fatal(err)
	}
	if got := value(t, tx, 3); got != "lost" {
		t.Errorf("inside the transaction k=3 is %q, want lost", got)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if got := value(t, db, 3); got != "kept" {
		t.Errorf("after rollback k=3 is %q, want kept", got)
	}
}

func TestLimitPlaceholdersBecomeExpressions(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"numbered", `SELECT id FROM j WHERE q = ?2 LIMIT ?3`, `SELECT id FROM j WHERE q = ?2 LIMIT +?3`},
		{"anonymous with offset", "SELECT id FROM j\n\tLIMIT ?\n\tOFFSET ?", "SELECT id FROM j\n\tLIMIT +?\n\tOFFSET +?"},
		{"named, lower case", `select id from j limit :max`, `select id from j limit +:max`},
		{"in a subquery", `UPDATE j SET s = 1 WHERE id IN (SELECT id FROM j LIMIT @n)`, `UPDATE j SET s = 1 WHERE id IN (SELECT id FROM j LIMIT +@n)`},
		{"literal limit untouched", `SELECT id FROM j LIMIT 10`, `SELECT id FROM j LIMIT 10`},
		{"a placeholder inside an expression", `SELECT id FROM j LIMIT ?1 - 1`, `SELECT id FROM j LIMIT +?1 - 1`},
		{"already an expression", `SELECT id FROM j LIMIT +?1`, `SELECT id FROM j LIMIT +?1`},
		{"a column named like the keyword", `SELECT limit_n FROM j WHERE limit_n = ?`, `SELECT limit_n FROM j WHERE limit_n = ?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := limitsAsExpressions(tt.in); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// One cached statement serves every LIMIT and OFFSET bound to it.
func TestCachedStatementHonoursEachBoundLimit(t *testing.T) {
	db := openCaching(t)
	const q = `SELECT v FROM t ORDER BY k LIMIT ? OFFSET ?`
	for _, tt := range []struct {
		limit, offset int
		want          string
	}{{1, 0, "a"}, {3, 0, "abc"}, {2, 1, "bc"}, {0, 0, ""}, {-1, 2, "c"}} {
		rows, err := db.Query(q, tt.limit, tt.offset)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			got += v
		}
		rows.Close()
		if got != tt.want {
			t.Errorf("LIMIT %d OFFSET %d: got %q, want %q", tt.limit, tt.offset, got, tt.want)
		}
	}
}

// BenchmarkBoundLimit runs a cached statement with a bound LIMIT, as River's
// job fetch is, with the placeholder as SQLite would see it without and with
// limitsAsExpressions: bare, SQLite re-prepares it at every run.
func BenchmarkBoundLimit(b *testing.B) {
	const q = `SELECT k FROM t WHERE k IN (SELECT k FROM t WHERE v <> 'z' ORDER BY v, k LIMIT ?1)`
	for _, bc := range []struct{ name, sql string }{{"bare", q}, {"expression", limitsAsExpressions(q)}} {
		b.Run(bc.name, func(b *testing.B) {
			connector, err := sqlite.NewConnector(filepath.Join(b.TempDir(), "bench.db"))
			if err != nil {
				b.Fatal(err)
			}
			db := sql.OpenDB(connector)
			defer db.Close()
			db.SetMaxOpenConns(1)
			if _, err := db.Exec(`CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
				b.Fatal(err)
			}
			stmt, err := db.Prepare(bc.sql) // prepared once, like the cache does
			if err != nil {
				b.Fatal(err)
			}
			defer stmt.Close()
			for i := 0; b.Loop(); i++ {
				rows, err := stmt.Query(1 + i%8)
				if err != nil {
					b.Fatal(err)
				}
				rows.Close()
			}
		})
	}
}
