package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/sqlite"
)

// A write that meets the file locked by another process past the busy
// timeout, and any call on a closed store, fail with store.ErrUnavailable
// (the request may succeed later); what the database answered about the
// statement itself does not.
func TestALockedOrClosedDatabaseIsUnavailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "docjobs.db")
	s := open(t, sqlite.Config{Path: path, BusyTimeout: 50 * time.Millisecond})
	ctx := t.Context()
	newJob := func(id string) store.CreateJobParams {
		return store.CreateJobParams{Job: &job.Job{ID: id, AccountID: "acct", Status: job.StatusNew,
			SourceURLs: []string{"https://example.com/a"}}}
	}
	if _, _, err := s.CreateJob(ctx, newJob("job_1")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetJob(ctx, "acct", "job_missing"); !errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("GetJob of a missing job: %v, want store.ErrNotFound alone", err)
	}

	// Another process holds the write lock.
	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateJob(ctx, newJob("job_2")); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("CreateJob while another process holds the lock: %v, want store.ErrUnavailable", err)
	}
	// Reads go on beside it (WAL).
	if _, err := s.GetJob(ctx, "acct", "job_1"); err != nil {
		t.Errorf("GetJob while another process holds the lock: %v", err)
	}
	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()
	if _, _, err := s.CreateJob(ctx, newJob("job_2")); err != nil {
		t.Errorf("CreateJob once the lock is released: %v", err)
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"GetJob", func() error { _, err := s.GetJob(ctx, "acct", "job_1"); return err }},
		{"ResultRows", func() error { _, _, err := s.ResultRows(ctx, "acct", "job_1"); return err }},
		{"CreateJob", func() error { _, _, err := s.CreateJob(ctx, newJob("job_3")); return err }},
		{"Ping", func() error { return s.Ping(context.Background()) }},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s on a closed store: %v, want store.ErrUnavailable", c.name, err)
		}
	}
}
