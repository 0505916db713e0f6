package cli

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/store"
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
	temp := newConvertTemp(data, quiet)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if dir, err := temp.Dir(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dir before the node id is held = %q, %v; want it to wait", dir, err)
	}
	release, err := temp.claim("w1")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	temp.use("w1")
	dir, err := temp.Dir(context.Background())
	if err != nil || dir != filepath.Join(data, "tmp", "w1") {
		t.Fatalf("Dir = %q, %v; want %s", dir, err, filepath.Join(data, "tmp", "w1"))
	}

	// A node id is escaped into one folder name.
	temp = newConvertTemp(data, quiet)
	release, err = temp.claim("../evil/x")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	temp.use("../evil/x")
	if dir, _ := temp.Dir(context.Background()); dir != filepath.Join(data, "tmp", "..%2Fevil%2Fx") {
		t.Errorf("Dir for node ../evil/x = %q", dir)
	}
}

// A node id's folder is locked while claimed: a second claim (another
// process's, of another database) is ErrNodeHeld and empties nothing;
// once released, the next claim empties it.
func TestAClaimedConversionFolderIsNotEmptiedByAnotherClaim(t *testing.T) {
	data := t.TempDir()
	first := newConvertTemp(data, quiet)
	release, err := first.claim("w1")
	if err != nil {
		t.Fatal(err)
	}
	inFlight := filepath.Join(data, "tmp", "w1", "excelize-123")
	leave(t, inFlight)

	_, err = newConvertTemp(data, quiet).claim("w1")
	if !errors.Is(err, store.ErrNodeHeld) || !strings.Contains(err.Error(), "node id w1") || !strings.Contains(err.Error(), data) {
		t.Fatalf("second claim = %v, want ErrNodeHeld naming the node id and the data directory", err)
	}
	if _, err := os.Stat(inFlight); err != nil {
		t.Fatalf("the first claim's file after a second claim: %v", err)
	}
	release()
	release, err = newConvertTemp(data, quiet).claim("w1")
	if err != nil {
		t.Fatalf("claim after release = %v", err)
	}
	defer release()
	if _, err := os.Stat(inFlight); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file left by a released claim: %v, want it emptied", err)
	}
}

// sharedDataDir is the environment of a serve on data directory dir with a
// database (and storage) of its own, named name.
func sharedDataDir(dir, name string) map[string]string {
	return map[string]string{
		"DOCJOBS_DATA_DIR":     dir,
		"DOCJOBS_DATABASE_URL": "sqlite://" + filepath.Join(dir, name+".db"),
		"DOCJOBS_STORAGE_URL":  "file://" + filepath.Join(dir, name+"-files") + "?create_dir=true&metadata=skip&no_tmp_dir=true",
	}
}

// Two deployments sharing a data directory but not a database: the node id
// is free in each database, but its conversion folder is not. A second
// process with the same configured id refuses to start, naming the id and
// the data directory, and leaves the first one's files alone; with the
// host's id it works under a derived one.
func TestASecondDeploymentOnTheDataDirectoryDoesNotTakeTheFolder(t *testing.T) {
	dir := t.TempDir()
	inFlight := filepath.Join(dir, "tmp", "f2", "excelize-123")
	t.Run("configured node id", func(t *testing.T) {
		a, b := sharedDataDir(dir, "a"), sharedDataDir(dir, "b")
		a["DOCJOBS_NODE_ID"], b["DOCJOBS_NODE_ID"] = "f2", "f2"
		var codeB int
		var stderrB string
		code, stderr := serveFor(t, a, func() {
			leave(t, inFlight)
			codeB, stderrB = serveFor(t, b, nil)
			if _, err := os.Stat(inFlight); err != nil {
				t.Errorf("A's file in its conversion folder once B started: %v", err)
			}
		})
		if code != ExitOK {
			t.Fatalf("A: exit %d\n%s", code, stderr)
		}
		if codeB == ExitOK || !strings.Contains(stderrB, "DOCJOBS_NODE_ID f2") || !strings.Contains(stderrB, dir) {
			t.Errorf("B on A's data directory and node id: exit %d, want a refusal naming the node id and %s:\n%s", codeB, dir, stderrB)
		}
	})
	t.Run("host node id", func(t *testing.T) {
		host, err := os.Hostname()
		if err != nil || host == "" {
			t.Skip("no host name")
		}
		a, b := sharedDataDir(dir, "c"), sharedDataDir(dir, "d")
		var codeB int
		var stderrB string
		code, stderr := serveFor(t, a, func() {
			leave(t, filepath.Join(dir, "tmp", url.PathEscape(host), "excelize-456"))
			codeB, stderrB = serveFor(t, b, nil)
			if _, err := os.Stat(filepath.Join(dir, "tmp", url.PathEscape(host), "excelize-456")); err != nil {
				t.Errorf("A's file in its conversion folder once B started: %v", err)
			}
		})
		if code != ExitOK {
			t.Fatalf("A: exit %d\n%s", code, stderr)
		}
		if codeB != ExitOK || !strings.Contains(stderrB, `"node":"`+host+`-2"`) {
			t.Errorf("B with the host's id on A's data directory: exit %d, want it working as %s-2:\n%s", codeB, host, stderrB)
		}
	})
}
