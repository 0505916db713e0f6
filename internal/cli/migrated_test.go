package cli

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
// -race, half of this package's CPU when every service a test started
// migrated its own; such a test's service opens a copy instead, finds
// every migration applied, and still has a database of its own
// (docs/benchmarks.md, fifteenth session).
var migratedSQLite = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "docjobs-cli-migrated-")
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

// migratedDataDir is a new data directory of the test's holding a copy of
// the migrated database, for a service whose test is not about migrating.
func migratedDataDir(t *testing.T) string {
	t.Helper()
	raw, err := migratedSQLite()
	if err != nil {
		t.Fatalf("migrated SQLite template: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "docjobs.db"), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}
