package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// leave writes a file as a process killed mid-conversion leaves it.
func leave(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("a user's sheet in plain text"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// What a killed process left in its conversion folder goes when a process
// next holds its node id; another node's folder (a live process sharing
// the data directory) is left alone.
func TestTheConversionFolderOfTheNodeIDIsEmptiedAtStart(t *testing.T) {
	db := sqliteNodeDatabase(t)
	data := db.env["DOCJOBS_DATA_DIR"]
	db.env["DOCJOBS_NODE_ID"] = "w1"
	mine := filepath.Join(data, "tmp", "w1", "excelize-1365154749")
	theirs := filepath.Join(data, "tmp", "w2", "excelize-2225661759")
	leave(t, mine)
	leave(t, filepath.Join(data, "tmp", "w1", "docjobs-office-1", "in", "document.doc"))
	leave(t, theirs)

	var left []os.DirEntry
	var info os.FileInfo
	code, stderr := serveFor(t, db.env, func() {
		var err error
		if left, err = os.ReadDir(filepath.Join(data, "tmp", "w1")); err != nil {
			t.Error(err)
		}
		if info, err = os.Stat(filepath.Join(data, "tmp", "w1")); err != nil {
			t.Error(err)
		}
	})
	if code != ExitOK {
		t.Fatalf("serve: exit %d\n%s", code, stderr)
	}
	if len(left) != 0 {
		t.Errorf("w1's conversion folder holds %v once w1 runs; want it empty", left)
	}
	if info != nil && info.Mode().Perm() != 0o700 {
		t.Errorf("w1's conversion folder has mode %v, want 0700", info.Mode().Perm())
	}
	if _, err := os.Stat(theirs); err != nil {
		t.Errorf("w2's conversion folder lost its file: %v", err)
	}
}

// Conversions wait for the folder: the River client starts before Work
// says which node id it holds, and the folder is emptied only then.
func TestConversionsWaitForTheFolderToBeEmptied(t *testing.T) {
	data := t.TempDir()
	temp := newConvertTemp()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if dir, err := temp.Dir(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dir before the node id is held = %q, %v; want it to wait", dir, err)
	}
	temp.take(data, "w1", quiet)
	dir, err := temp.Dir(context.Background())
	if err != nil || dir != filepath.Join(data, "tmp", "w1") {
		t.Fatalf("Dir = %q, %v; want %s", dir, err, filepath.Join(data, "tmp", "w1"))
	}

	// A node id is escaped into one folder name.
	temp = newConvertTemp()
	temp.take(data, "../evil/x", quiet)
	if dir, _ := temp.Dir(context.Background()); dir != filepath.Join(data, "tmp", "..%2Fevil%2Fx") {
		t.Errorf("Dir for node ../evil/x = %q", dir)
	}
}
