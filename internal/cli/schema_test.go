package cli

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// olderDatabase makes a database under a new data dir as the release
// before the last migration left it: the last migration unrecorded and
// undone. It returns the data dir and the number of that migration.
func olderDatabase(t *testing.T) (dir string, last int) {
	t.Helper()
	dir = t.TempDir()
	if code, _, stderr := run(t, map[string]string{"DOCJOBS_DATA_DIR": dir}, "apikey", "create", "--account", "acme"); code != ExitOK {
		t.Fatalf("apikey create: exit %d: %s", code, stderr)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "docjobs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow(`SELECT max(version) FROM docjobs_migrations`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	// 016_river_leftovers added a table and an index on River's: an older
	// database has neither them nor their record.
	if last != 16 {
		t.Fatalf("the last migration is %d: olderDatabase undoes 16 (river_leftovers); undo the new one instead", last)
	}
	for _, q := range []string{`DROP TABLE job_river_leftovers`, `DROP INDEX docjobs_river_job_job_id`,
		`DELETE FROM docjobs_migrations WHERE version = 16`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return dir, last
}

// schemaVersion is the highest docjobs migration the database records.
func schemaVersion(t *testing.T, dir string) int {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, "docjobs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRow(`SELECT max(version) FROM docjobs_migrations`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// A newer binary's apikey list migrated the database it read, and older
// servers then refused it (audit-readme F2). Only migrate upgrades a
// database now: every other admin command refuses one that is behind,
// saying to run migrate, and leaves it as it was.
func TestAdminCommandsOtherThanMigrateNeverUpgradeADatabase(t *testing.T) {
	dir, last := olderDatabase(t)
	env := map[string]string{"DOCJOBS_DATA_DIR": dir}
	for _, args := range [][]string{
		{"apikey", "list"},
		{"apikey", "revoke", "0123456789ab"},
		{"apikey", "create", "--account", "acme"},
		{"account", "set", "--account", "acme", "--extraction-mode", "OCR_ALWAYS"},
		{"account", "set", "--account", "acme", "--extraction-mode", "OCR_ALWAYS", "--create"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, stderr := run(t, env, args...)
			want := fmt.Sprintf("is at migration %d, this docjobs knows %d: run `docjobs migrate` first", last-1, last)
			if code != ExitError || out != "" || !strings.Contains(stderr, want) || !strings.Contains(stderr, "nothing was changed") {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d saying %q", code, out, stderr, ExitError, want)
			}
			if v := schemaVersion(t, dir); v != last-1 {
				t.Fatalf("the database is at migration %d after %v, want %d: it was migrated", v, args, last-1)
			}
		})
	}
	code, out, stderr := run(t, env, "migrate")
	if want := fmt.Sprintf("docjobs: applied migrations %d\n", last); code != ExitOK || out != "migrations applied\n" || !strings.Contains(stderr, want) {
		t.Fatalf("migrate: exit %d, stdout %q, stderr %q; want the migration applied and said in %q", code, out, stderr, want)
	}
	if code, out, stderr := run(t, env, "apikey", "list"); code != ExitOK || !strings.Contains(out, "acme") {
		t.Fatalf("apikey list after migrate: exit %d, stdout %q: %s", code, out, stderr)
	}
}

// The admin commands log at WARN unless DOCJOBS_LOG_LEVEL says otherwise:
// the line naming the database is not buried under thirty lines of
// migrations (audit-readme F10); what was migrated is one plain line.
func TestAdminCommandsSayInOneLineWhatTheyMigrated(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := run(t, map[string]string{"DOCJOBS_DATA_DIR": dir}, "apikey", "create", "--account", "acme")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "docjobs: applied migrations 1–") || !strings.Contains(lines[0], " and River's 1–") ||
		!strings.HasPrefix(lines[1], "docjobs: key ") || !strings.Contains(lines[2], "created by this command") {
		t.Fatalf("stderr of apikey create on a new database:\n%s\nwant three plain lines: the migrations, the key's id, the database", stderr)
	}
	code, _, stderr = run(t, map[string]string{"DOCJOBS_DATA_DIR": dir}, "migrate")
	if code != ExitOK || stderr != "docjobs: no migration to apply\ndocjobs: database sqlite://"+filepath.Join(dir, "docjobs.db")+"\n" {
		t.Fatalf("migrate of a current database: exit %d, stderr %q", code, stderr)
	}
	_, _, stderr = run(t, map[string]string{"DOCJOBS_DATA_DIR": t.TempDir(), "DOCJOBS_LOG_LEVEL": "info"}, "migrate")
	if !strings.Contains(stderr, `"msg":"store: applied migration"`) {
		t.Errorf("DOCJOBS_LOG_LEVEL=info: stderr lacks the migration log lines:\n%s", stderr)
	}
}

// A database with no migration at all (a PostgreSQL schema nobody used,
// an empty SQLite file) is new: what makes something migrates it, what
// reads refuses it as not the server's.
func TestAnEmptyDatabaseIsMigratedOnlyByWhatMakesSomething(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "docjobs.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	env := map[string]string{"DOCJOBS_DATA_DIR": dir}
	code, _, stderr := run(t, env, "apikey", "list")
	if want := "holds no docjobs tables, and this command makes none"; code != ExitError || !strings.Contains(stderr, want) {
		t.Fatalf("apikey list: exit %d: %q; want %q", code, stderr, want)
	}
	if code, _, stderr := run(t, env, "apikey", "create", "--account", "acme"); code != ExitOK || !strings.Contains(stderr, "applied migrations 1–") {
		t.Fatalf("apikey create: exit %d: %s", code, stderr)
	}
}

// The admin commands take serve's --data-dir (audit-readme F8).
func TestAdminCommandsTakeServesDataDirFlag(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(t.TempDir()) // ./data is not dir
	want := "docjobs: database sqlite://" + filepath.Join(dir, "docjobs.db")
	for _, args := range [][]string{
		{"migrate", "--data-dir", dir},
		{"apikey", "create", "--account", "acme", "--data-dir", dir},
		{"apikey", "--data-dir", dir, "list"},
		{"account", "set", "--account", "acme", "--extraction-mode", "OCR_ALWAYS", "--data-dir", dir},
	} {
		if code, _, stderr := run(t, map[string]string{}, args...); code != ExitOK || !strings.Contains(stderr, want) {
			t.Fatalf("%v: exit %d: %q; want it to use %s", args, code, stderr, dir)
		}
	}
	if v := schemaVersion(t, dir); v == 0 {
		t.Fatal("no migration in the --data-dir database")
	}
}
