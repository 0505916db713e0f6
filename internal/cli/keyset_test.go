package cli

import (
	"maps"
	"path/filepath"
	"strings"
	"testing"
)

// The first process to start fixes the database's keyset; a later one with
// another keyset (another machine's default) is refused at start, before it
// fails every job, and one with the same keyset starts.
func TestAProcessWithAnotherKeysetThanTheDatabasesIsRefused(t *testing.T) {
	for _, tt := range []struct {
		name string
		db   func(t *testing.T) nodeDatabase
	}{
		{"sqlite", sqliteNodeDatabase},
		{"postgres", postgresNodeDatabase},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := tt.db(t)
			// The database exists (postgres: its schema, which serve's
			// search_path names) and holds no service key yet.
			if err := db.open(t).Close(); err != nil {
				t.Fatal(err)
			}
			withKeyset := func(path string) map[string]string {
				env := maps.Clone(db.env)
				env["DOCJOBS_MASTER_KEY_FILE"] = path
				return env
			}
			first := filepath.Join(t.TempDir(), "master.keyset")
			other := filepath.Join(t.TempDir(), "master.keyset")

			if code, stderr := serveFor(t, withKeyset(first), nil); code != ExitOK {
				t.Fatalf("first start: exit %d: %s", code, stderr)
			}
			code, stderr := serveFor(t, withKeyset(other), nil)
			for _, want := range []string{
				"DOCJOBS_MASTER_KEY_FILE " + other + " does not open the secrets of the database",
				"Every process sharing the database needs the same keyset file",
			} {
				if code != ExitError || !strings.Contains(stderr, want) {
					t.Fatalf("start with another keyset: exit %d, stderr %q; want %d and %q", code, stderr, ExitError, want)
				}
			}
			if strings.Contains(stderr, "workers started") {
				t.Errorf("the refused process started its workers: %s", stderr)
			}
			if code, stderr := serveFor(t, withKeyset(first), nil); code != ExitOK {
				t.Fatalf("start again with the first keyset: exit %d: %s", code, stderr)
			}
		})
	}
}
