package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/postgres"
	"github.com/docjobs/docjobs/internal/store/postgres/pgtest"
)

// While PostgreSQL cannot be reached (its port closed, every connection
// cut) every kind of call, a read, a result, a transaction, fails with
// store.ErrUnavailable wrapping the cause, and so does a call on a closed
// store; the caller's own cancel stays context.Canceled.
func TestCallsDuringAnOutageAreUnavailable(t *testing.T) {
	raw, schema := pgtest.Schema(t)
	proxied, cut := pgtest.BehindProxy(t, raw)
	s := openConfig(t, postgres.Config{URL: proxied, Schema: schema})
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = s.Close()
		}
	})
	ctx := t.Context()
	j := &job.Job{ID: "job_1", AccountID: "acct", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a"}}
	if _, _, err := s.CreateJob(ctx, store.CreateJobParams{Job: j}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetJob(ctx, "acct", "job_missing"); !errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("GetJob of a missing job, database up: %v", err)
	}
	cut()

	calls := []struct {
		name string
		call func(context.Context) error
	}{
		{"GetJob", func(ctx context.Context) error { _, err := s.GetJob(ctx, "acct", j.ID); return err }},
		{"ResultRows", func(ctx context.Context) error { _, _, err := s.ResultRows(ctx, "acct", j.ID); return err }},
		{"ListJobs", func(ctx context.Context) error {
			_, err := s.ListJobs(ctx, store.ListParams{AccountID: "acct", PageSize: 10})
			return err
		}},
		{"CreateJob", func(ctx context.Context) error {
			j := &job.Job{ID: "job_2", AccountID: "acct", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a"}}
			_, _, err := s.CreateJob(ctx, store.CreateJobParams{Job: j})
			return err
		}},
		{"CancelJob", func(ctx context.Context) error { _, err := s.CancelJob(ctx, "acct", j.ID); return err }},
		{"Ping", s.Ping},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			err := c.call(ctx)
			if !errors.Is(err, store.ErrUnavailable) {
				t.Errorf("database gone: %v, want store.ErrUnavailable", err)
			}
			cancelled, cancel := context.WithCancel(ctx)
			cancel()
			if err := c.call(cancelled); !errors.Is(err, context.Canceled) || errors.Is(err, store.ErrUnavailable) {
				t.Errorf("database gone, call cancelled: %v, want context.Canceled alone", err)
			}
		})
	}

	closed = true
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetJob(ctx, "acct", j.ID); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("store closed: %v, want store.ErrUnavailable", err)
	}
}
