package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The removal sweep deletes uploads no record of its database names, so a
// storage belongs to one database: a serve with another database on it
// (two deployments started from one directory, sharing ./data's storage)
// refuses to start, saying how to resolve it, and the owner still starts.
func TestAStorageServesOneDatabase(t *testing.T) {
	dir := t.TempDir()
	storage := "file://" + filepath.Join(dir, "files") + "?create_dir=true&metadata=skip&no_tmp_dir=true"
	env := func(db string) map[string]string {
		return map[string]string{"DOCJOBS_DATA_DIR": filepath.Join(dir, db), "DOCJOBS_STORAGE_URL": storage,
			"DOCJOBS_DATABASE_URL": "sqlite://" + filepath.Join(dir, db+".db")}
	}
	if code, stderr := serveFor(t, env("a"), nil); code != ExitOK {
		t.Fatalf("the first database on the storage: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "files", "docjobs-storage-owner")); err != nil {
		t.Errorf("the storage names no owner: %v", err)
	}
	code, stderr := serveFor(t, env("b"), nil)
	if code == ExitOK || !strings.Contains(stderr, "DOCJOBS_STORAGE_URL: the storage belongs to another docjobs database") ||
		!strings.Contains(stderr, "delete docjobs-storage-owner") {
		t.Errorf("another database on the storage: exit %d, want a refusal:\n%s", code, stderr)
	}
	if code, stderr := serveFor(t, env("a"), nil); code != ExitOK {
		t.Errorf("the owner again: exit %d\n%s", code, stderr)
	}
}
