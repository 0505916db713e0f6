package cli

import (
	"path/filepath"
	"testing"

	"github.com/docjobs/docjobs/internal/store/sqlite/sqlitetest"
)

// migratedDataDir is a new data directory of the test's holding a copy of
// the migrated database, for a service whose test is not about migrating.
func migratedDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	sqlitetest.WriteMigrated(t, filepath.Join(dir, "docjobs.db"))
	return dir
}
