package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/postgres"
	"github.com/docjobs/docjobs/internal/store/storetest"
)

// quiet keeps River's info logs out of test output.
var quiet = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

// testURL is the database the tests use; each test gets its own schema in it.
func testURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("DOCJOBS_TEST_POSTGRES_URL")
	if u == "" {
		t.Skip("DOCJOBS_TEST_POSTGRES_URL is not set")
	}
	return u
}

// openSchema opens a store in a fresh schema that is dropped after the test.
func openSchema(t testing.TB) *postgres.Store {
	t.Helper()
	s, _ := openNamedSchema(t)
	return s
}

// openNamedSchema is openSchema that also returns the schema's name.
func openNamedSchema(t testing.TB) (*postgres.Store, string) {
	t.Helper()
	url := testURL(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "docjobs_test_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop schema: %v", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema: %v", err)
		}
	})
	return openConfig(t, postgres.Config{URL: url, Schema: schema}), schema
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
	testURL(t)
	storetest.Run(t, func(t *testing.T) store.Store { return openSchema(t) })
}

func BenchmarkCreateJob(b *testing.B) {
	testURL(b)
	storetest.BenchmarkCreateJob(b, func(b *testing.B) store.Store { return openSchema(b) })
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
	conn, err := pgx.Connect(ctx, testURL(t))
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
