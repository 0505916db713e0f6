package worker

import (
	"path/filepath"
	"testing"

	"github.com/docjobs/docjobs/internal/store/sqlite/sqlitetest"
)

// migratedSQLitePath writes a copy of the migrated database into a new
// directory of the test's and returns its path, for sqlite.Open.
func migratedSQLitePath(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "db.sqlite")
	sqlitetest.WriteMigrated(t, path)
	return path
}
