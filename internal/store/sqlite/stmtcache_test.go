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
