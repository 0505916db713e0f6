package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/docjobs/docjobs/internal/logtest"
	"github.com/docjobs/docjobs/internal/s3test"
)

// fileStorage is a file:// storage URL in dir, as serve's default makes it.
func fileStorage(dir string) string {
	return "file://" + filepath.Join(dir, "files") + "?create_dir=true&metadata=skip&no_tmp_dir=true"
}

// The removal sweep deletes uploads no record of its database names, so a
// storage belongs to one database: a serve with another database on it
// (two deployments started from one directory, sharing ./data's storage)
// refuses to start, saying how to resolve it without costing the other
// deployment its uploads, and the owner still starts.
func TestAStorageServesOneDatabase(t *testing.T) {
	dir := t.TempDir()
	env := func(db string) map[string]string {
		return map[string]string{"DOCJOBS_DATA_DIR": filepath.Join(dir, db), "DOCJOBS_STORAGE_URL": fileStorage(dir),
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
		!strings.Contains(stderr, "once no other deployment writes to it, delete docjobs-storage-owner") {
		t.Errorf("another database on the storage: exit %d, want a refusal:\n%s", code, stderr)
	}
	if code, stderr := serveFor(t, env("a"), nil); code != ExitOK {
		t.Errorf("the owner again: exit %d\n%s", code, stderr)
	}
}

// The prefixes of one bucket (a directory here) are storages of their
// own: two databases share it under a prefix each, the folder of which
// need not exist before the first start. A process given another prefix
// than the rest of its deployment (a typo) is refused, saying that every
// process needs the same URL and how a deployment moves, and claims
// nothing; the deployment's own still starts.
func TestADatabaseServesOnePrefixOfASharedStorage(t *testing.T) {
	dir := t.TempDir()
	env := func(db, prefix string) map[string]string {
		return map[string]string{"DOCJOBS_DATA_DIR": filepath.Join(dir, db), "DOCJOBS_STORAGE_URL": fileStorage(dir) + "&prefix=" + prefix,
			"DOCJOBS_DATABASE_URL": "sqlite://" + filepath.Join(dir, db+".db")}
	}
	for _, start := range []struct{ db, prefix string }{{"a", "dep-a/"}, {"b", "dep-b/"}} {
		if code, stderr := serveFor(t, env(start.db, start.prefix), nil); code != ExitOK {
			t.Fatalf("database %s on %s: exit %d\n%s", start.db, start.prefix, code, stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "files", start.prefix, "docjobs-storage-owner")); err != nil {
			t.Errorf("%s names no owner: %v", start.prefix, err)
		}
	}
	code, stderr := serveFor(t, env("a", "dep-a-typo/"), nil)
	for _, want := range []string{"docjobs: DOCJOBS_STORAGE_URL: this database already owns another storage",
		"every process of a deployment needs the same DOCJOBS_STORAGE_URL",
		"to move a deployment to a new storage, copy docjobs-storage-owner with its files"} {
		if code != ExitError || !strings.Contains(stderr, want) {
			t.Errorf("database a on another prefix: exit %d, want %d and %q:\n%s", code, ExitError, want, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "files", "dep-a-typo", "docjobs-storage-owner")); !os.IsNotExist(err) {
		t.Errorf("the other prefix's marker: %v, want none", err)
	}
	if code, stderr := serveFor(t, env("a", "dep-a/"), nil); code != ExitOK {
		t.Errorf("database a on its own prefix again: exit %d\n%s", code, stderr)
	}
}

// A start that cannot tell whether its database owns the storage does not
// serve: a process not owning its storage would never learn that another
// database claimed it, and the bucket answered the start a moment before.
// (A marker that cannot be read stands for a storage that cannot be
// reached for the claim.)
func TestAStartThatCannotCheckTheStoragesOwnerIsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "files", "docjobs-storage-owner", "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	code, stderr := serveFor(t, map[string]string{"DOCJOBS_DATA_DIR": filepath.Join(dir, "data"),
		"DOCJOBS_STORAGE_URL": fileStorage(dir)}, nil)
	if want := "docjobs: DOCJOBS_STORAGE_URL: the storage's owner could not be checked: "; code != ExitError || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, want %d and %q:\n%s", code, ExitError, want, stderr)
	}
}

// A running process whose storage another database claimed (an operator
// deleted the marker and started another deployment there) exits within
// a check, on every role and storage: the newcomer's sweep would delete,
// an hour on, every upload and copy it went on writing there. A supervisor
// restarts it, and its start is refused saying why.
func TestAServeWhoseStorageAnotherDatabaseClaimedExits(t *testing.T) {
	for _, tt := range []struct {
		name, role string
		s3         bool
		started    string // the line that says the start is over
	}{
		{"a worker on file://", "worker", false, `"msg":"workers started"`},
		{"an api on file://", "api", false, "Created API key"},
		{"all roles on s3://", "all", true, `"msg":"workers started"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			storage := fileStorage(dir)
			if tt.s3 {
				storage = s3test.Start(t).Bucket(t, "docjobs")
			}
			vars := map[string]string{"DOCJOBS_DATA_DIR": filepath.Join(dir, "data"), "DOCJOBS_STORAGE_URL": storage,
				"DOCJOBS_ADDR": "127.0.0.1:0"}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var out, errb logtest.Buffer
			exits := make(chan int, 1)
			env := &environment{stdin: strings.NewReader(""), stdout: &out, stderr: &errb,
				getenv: func(k string) string { return vars[k] }, exit: func(code int) { exits <- code },
				storageCheckEvery: 20 * time.Millisecond}
			done := make(chan int, 1)
			go func() { done <- runIn(ctx, env, []string{"serve", "--role=" + tt.role}) }()
			defer func() {
				cancel()
				<-done
			}()
			for !strings.Contains(errb.String()+out.String(), tt.started) {
				select {
				case code := <-done:
					done <- code
					t.Fatalf("serve exited %d before it started: %s", code, errb.String())
				case <-time.After(10 * time.Millisecond):
				}
			}
			select {
			case code := <-exits:
				t.Fatalf("exit(%d) while the storage is its own: %s", code, errb.String())
			case <-time.After(200 * time.Millisecond): // ten checks
			}

			bucket, err := blob.OpenBucket(t.Context(), storage)
			if err != nil {
				t.Fatal(err)
			}
			defer bucket.Close()
			if err := bucket.WriteAll(t.Context(), "docjobs-storage-owner", []byte("0123456789abcdef0123456789abcdef"), nil); err != nil {
				t.Fatal(err)
			}
			var code int
			select {
			case code = <-exits:
			case returned := <-done:
				done <- returned
				// exit is called before serve returns: a test that comes
				// to the select above late (a loaded machine) finds both
				// ready, and select picks either.
				select {
				case code = <-exits:
				default:
					t.Fatalf("serve returned %d instead of exiting at once: %s", returned, errb.String())
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("serve went on with its storage claimed by another database: %s", errb.String())
			}
			if code != ExitError {
				t.Errorf("exit(%d), want %d", code, ExitError)
			}
			for _, want := range []string{
				"docjobs: DOCJOBS_STORAGE_URL: the storage belongs to another docjobs database",
				`"level":"ERROR","msg":"the storage belongs to another database now: exiting at once, writing nothing more there"`,
			} {
				if !strings.Contains(errb.String(), want) {
					t.Errorf("stderr lacks %s:\n%s", want, errb.String())
				}
			}
		})
	}
}
