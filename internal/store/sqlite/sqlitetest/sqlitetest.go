// Package sqlitetest gives a test a SQLite database of its own that is
// already migrated, copied from one migrated once per test binary:
// migrating (River's migrations and docjobs', through the C-to-Go SQLite)
// costs about 0.3 s of CPU under -race, half of a package's test CPU when
// every test migrated its own (docs/benchmarks.md, fifteenth session).
package sqlitetest

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

// migrated is the bytes of an empty database sqlite.Open has migrated.
var migrated = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "docjobs-sqlitetest-")
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

// WriteMigrated writes a copy of the migrated database to path: sqlite.Open
// on it finds every migration applied, and it is still the test's own.
func WriteMigrated(t testing.TB, path string) {
	t.Helper()
	raw, err := migrated()
	if err != nil {
		t.Fatalf("migrated SQLite template: %v", err)
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
}
