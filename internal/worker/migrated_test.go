package worker

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/docjobs/docjobs/internal/store/sqlite"
)

// migratedSQLite is an empty SQLite database that sqlite.Open has
// migrated, made once per test binary. Migrating one (River's migrations
// and docjobs', through the C-to-Go SQLite) costs about 0.3 s of CPU under
// -race, half of this package's CPU when every test migrated its own; a
// test's store opens a copy instead, finds every migration applied, and is
// still a database of its own (docs/benchmarks.md, fifteenth session).
var migratedSQLite = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "docjobs-worker-migrated-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "db.sqlite")
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: path, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	if err := st.Close(); err != nil {
		return nil, err
	}
	// Closing the last connection checkpoints the write-ahead log into
	// the file and removes it; a log left behind would hold part of the
	// schema the copy lacks.
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return nil, fmt.Errorf("the migrated database left a %d-byte write-ahead log", fi.Size())
	}
	return os.ReadFile(path)
})

// migratedSQLitePath writes a copy of the migrated database into a new
// directory of the test's and returns its path, for sqlite.Open.
func migratedSQLitePath(t *testing.T) string {
	t.Helper()
	raw, err := migratedSQLite()
	if err != nil {
		t.Fatalf("migrated SQLite template: %v", err)
	}
	path := filepath.Join(t.TempDir(), "db.sqlite")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
