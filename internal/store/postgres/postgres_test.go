package postgres_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/postgres"
	"github.com/docjobs/docjobs/internal/store/postgres/pgtest"
	"github.com/docjobs/docjobs/internal/store/storetest"
)

// quiet keeps River's info logs out of test output.
var quiet = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

// openSchema opens a store in a fresh schema that is dropped after the test.
func openSchema(t testing.TB) *postgres.Store {
	t.Helper()
	s, _ := openNamedSchema(t)
	return s
}

// openNamedSchema is openSchema that also returns the schema's name.
func openNamedSchema(t testing.TB) (*postgres.Store, string) {
	t.Helper()
	url, schema := pgtest.Schema(t)
	// A node id's check every 100 ms: a restarted node reclaims its jobs
	// two checks after it takes its id. A sibling sweep takes an id it saw
	// free 100 ms + 2 × 2 s later.
	return openConfig(t, postgres.Config{URL: url, Schema: schema, NodeCheck: 100 * time.Millisecond,
		NodeCheckTimeout: 2 * time.Second}), schema
}

// openConfig opens the store cfg describes, logging warnings only.
func openConfig(t testing.TB, cfg postgres.Config) *postgres.Store {
	t.Helper()
	cfg.Logger = quiet
	s, err := postgres.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestStore(t *testing.T) {
	pgtest.URL(t)
	storetest.Run(t, func(t *testing.T) store.Store { return openSchema(t) })
}

func BenchmarkCreateJob(b *testing.B) {
	pgtest.URL(b)
	storetest.BenchmarkCreateJob(b, func(b *testing.B) store.Store { return openSchema(b) })
}

func BenchmarkResultRows(b *testing.B) {
	pgtest.URL(b)
	storetest.BenchmarkResultRows(b, func(b *testing.B) store.Store { return openSchema(b) })
}

func BenchmarkFinishLLMGroup(b *testing.B) {
	pgtest.URL(b)
	storetest.BenchmarkFinishLLMGroup(b, func(b *testing.B) store.Store { return openSchema(b) })
}

func BenchmarkCancelMergeJob(b *testing.B) {
	pgtest.URL(b)
	storetest.BenchmarkCancelMergeJob(b, func(b *testing.B) store.Store { return openSchema(b) })
}

func TestMigrateIsIdempotent(t *testing.T) {
	s := openSchema(t)
	defer s.Close()
	for range 2 {
		if err := s.Migrate(t.Context()); err != nil {
			t.Fatalf("Migrate again: %v", err)
		}
	}
}

// A database a newer binary migrated is refused, not written by older rules.
func TestADatabaseWithMigrationsThisBinaryDoesNotKnowIsRefused(t *testing.T) {
	url, schema := pgtest.Schema(t)
	cfg := postgres.Config{URL: url, Schema: schema}
	if err := openConfig(t, cfg).Close(); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	q := `INSERT INTO ` + pgx.Identifier{schema}.Sanitize() + `.docjobs_migrations (version, name, applied) VALUES (999, 'from_the_future', '2030-01-01T00:00:00Z')`
	if _, err := conn.Exec(ctx, q); err != nil {
		t.Fatal(err)
	}

	cfg.Logger = quiet
	s, err := postgres.Open(ctx, cfg)
	if err == nil {
		s.Close()
		t.Fatal("Open of a database with migration 999 succeeded; want it refused")
	}
	if want := "migration 999 (from_the_future), this binary knows migrations up to "; !errors.Is(err, store.ErrNewerSchema) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open: %v; want store.ErrNewerSchema naming %q", err, want)
	}
}

// Migration 6 flags the jobs created before it that hold a webhook secret,
// so their deliveries are never sent unsigned after the upgrade.
func TestUpgradingFlagsTheJobsHoldingAWebhookSecret(t *testing.T) {
	s, schema := openNamedSchema(t)
	defer s.Close()
	ctx := t.Context()
	for _, j := range []struct {
		id     string
		secret string
	}{{"job_signed", job.SecretWebhookSecret}, {"job_unsigned", job.SecretNeuralAPIKey}} {
		_, _, err := s.CreateJob(ctx, store.CreateJobParams{
			Job:     &job.Job{ID: j.id, AccountID: "acct", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a"}},
			Secrets: []job.SealedSecret{{Field: j.secret, Ciphertext: []byte("sealed")}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Back to the schema before migration 6, the jobs kept.
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	in := pgx.Identifier{schema}.Sanitize()
	for _, q := range []string{`ALTER TABLE ` + in + `.jobs DROP COLUMN webhook_signed`, `DELETE FROM ` + in + `.docjobs_migrations WHERE version = 6`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	for id, want := range map[string]bool{"job_signed": true, "job_unsigned": false} {
		j, err := s.GetJob(ctx, "acct", id)
		if err != nil {
			t.Fatal(err)
		}
		if j.WebhookSigned != want {
			t.Errorf("%s: WebhookSigned = %v after the upgrade, want %v", id, j.WebhookSigned, want)
		}
	}
}

// TestATransactionPostgreSQLAbortsForADeadlockIsRunAgain deadlocks a
// DeleteJob with another session on purpose, and has PostgreSQL choose the
// DeleteJob as the victim: the store runs the transaction again once the
// other session let go, and the delete succeeds.
func TestATransactionPostgreSQLAbortsForADeadlockIsRunAgain(t *testing.T) {
	s, schema := openNamedSchema(t)
	defer s.Close()
	ctx := t.Context()
	j := &job.Job{ID: "job-deadlock", AccountID: "acct", Status: job.StatusNew, RequestHash: "h",
		SourceURLs: []string{"https://example.com/a.txt"}, Created: time.Now()}
	if _, _, err := s.CreateJob(ctx, store.CreateJobParams{Job: j}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateFile(ctx, job.File{ID: "file-1", AccountID: "acct", JobID: j.ID, Key: "jobs/job-deadlock/0"}); err != nil {
		t.Fatal(err)
	}

	other, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.WithoutCancel(ctx))
	// The other session checks for deadlocks long after the store's
	// session (1 s), so that PostgreSQL aborts the store's transaction.
	for _, q := range []string{"SET search_path TO " + pgx.Identifier{schema}.Sanitize(), "SET deadlock_timeout = '60s'"} {
		if _, err := other.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var xid int64
	if err := tx.QueryRow(ctx, `SELECT txid_current()`).Scan(&xid); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM files WHERE job_id = $1 FOR UPDATE`, j.ID); err != nil {
		t.Fatal(err)
	}

	deleted := make(chan error, 1)
	go func() {
		_, err := s.DeleteJob(ctx, "acct", j.ID)
		deleted <- err
	}()
	// DeleteJob holds the job row and waits for the file row.
	for {
		var waiting bool
		err := other.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'transactionid'
			AND transactionid::text::bigint = $1 AND NOT granted)`, xid).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case err := <-deleted:
			t.Fatalf("DeleteJob returned before waiting for the file row: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	// The other session now waits for the job row: a deadlock, which
	// PostgreSQL breaks by aborting DeleteJob's first run.
	if _, err := tx.Exec(ctx, `SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE`, j.ID); err != nil {
		t.Fatalf("the other session was chosen as the victim: %v", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-deleted; err != nil {
		t.Fatalf("DeleteJob = %v, want nil after running its transaction again", err)
	}
	if _, err := s.GetJob(ctx, "", j.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetJob after the delete: %v, want not found", err)
	}
}

// Processes started together on a new database (replicas deployed at once)
// must all come up: they create the schema and migrate it one at a time,
// River's migrations included.
func TestStoresOpeningTogetherOnANewSchemaAllStart(t *testing.T) {
	url, schema := pgtest.Schema(t)
	const processes = 4
	errs := make([]error, processes)
	var wg sync.WaitGroup
	for i := range processes {
		wg.Go(func() {
			s, err := postgres.Open(t.Context(), postgres.Config{URL: url, Schema: schema, Logger: quiet})
			if err == nil {
				err = s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("process %d: %v", i, err)
		}
	}
}

// CheckSchema opens without migrating: a new schema and one a migration
// behind are reported as such (store.SchemaBehindError) and left as they
// were, a current one opens. The admin commands open so.
func TestCheckSchemaReportsWhereTheSchemaStandsAndWritesNothing(t *testing.T) {
	url, schema := pgtest.Schema(t)
	ctx := t.Context()
	_, err := postgres.Open(ctx, postgres.Config{URL: url, Schema: schema, Logger: quiet, CheckSchema: true})
	var behind *store.SchemaBehindError
	if !errors.As(err, &behind) || !behind.Empty() || behind.Known == 0 || behind.RiverKnown == 0 {
		t.Fatalf("CheckSchema of a new schema: %v; want an empty SchemaBehindError", err)
	}
	if err := openConfig(t, postgres.Config{URL: url, Schema: schema}).Close(); err != nil {
		t.Fatal(err)
	}
	s, err := postgres.Open(ctx, postgres.Config{URL: url, Schema: schema, Logger: quiet, CheckSchema: true})
	if err != nil {
		t.Fatalf("CheckSchema of a current schema: %v", err)
	}
	s.Close()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	in := pgx.Identifier{schema}.Sanitize()
	if _, err := conn.Exec(ctx, `DELETE FROM `+in+`.docjobs_migrations WHERE version = (SELECT max(version) FROM `+in+`.docjobs_migrations)`); err != nil {
		t.Fatal(err)
	}
	_, err = postgres.Open(ctx, postgres.Config{URL: url, Schema: schema, Logger: quiet, CheckSchema: true})
	if !errors.As(err, &behind) || behind.Empty() || behind.Applied != behind.Known-1 || !errors.Is(err, store.ErrOlderSchema) {
		t.Fatalf("CheckSchema a migration behind: %v; want a SchemaBehindError one short", err)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM `+in+`.docjobs_migrations`).Scan(&n); err != nil || n != behind.Known-1 {
		t.Fatalf("%d migrations recorded after the check (%v), want %d", n, err, behind.Known-1)
	}
}
