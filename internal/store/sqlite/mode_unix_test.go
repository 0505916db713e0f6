//go:build unix

package sqlite_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/sqlite"
)

// withUmask sets the process umask for the test. The umask is the
// process's, so a test using it must not run in parallel.
func withUmask(t *testing.T, mask int) {
	t.Helper()
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

// The database holds every job's text and answers: its files are the
// owner's only, even in a data dir that already existed and under a umask
// that would leave them open to everyone.
func TestTheDatabaseFilesAreTheOwnersOnly(t *testing.T) {
	withUmask(t, 0)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "docjobs.db")
	s := open(t, sqlite.Config{Path: path})
	defer s.Close()
	j := &job.Job{ID: "job_1", AccountID: "acct", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a"}}
	if _, _, err := s.CreateJob(t.Context(), store.CreateJobParams{Job: j}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		info, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if perm := info.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s has mode %04o, want 0600", filepath.Base(name), perm)
		}
	}
}
