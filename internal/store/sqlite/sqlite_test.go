package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/sqlite"
	"github.com/docjobs/docjobs/internal/store/sqlite/sqlitetest"
	"github.com/docjobs/docjobs/internal/store/storetest"
)

// quiet keeps River's info logs out of test output.
var quiet = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

// open opens the store cfg describes, logging warnings only.
func open(t *testing.T, cfg sqlite.Config) *sqlite.Store {
	t.Helper()
	cfg.Logger = quiet
	s, err := sqlite.Open(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

// TestStore's stores start from a copy of a database migrated once per
// test binary (migrating costs about 0.3 s of CPU under -race, once per
// behaviour otherwise); the migrations have tests of their own here.
func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		path := filepath.Join(t.TempDir(), "docjobs.db")
		sqlitetest.WriteMigrated(t, path)
		return open(t, sqlite.Config{Path: path})
	})
}

func BenchmarkCreateJob(b *testing.B) {
	storetest.BenchmarkCreateJob(b, func(b *testing.B) store.Store {
		s, err := sqlite.Open(b.Context(), sqlite.Config{Path: filepath.Join(b.TempDir(), "docjobs.db"), Logger: quiet})
		if err != nil {
			b.Fatalf("Open: %v", err)
		}
		return s
	})
}

func BenchmarkFinishLLMGroup(b *testing.B) {
	storetest.BenchmarkFinishLLMGroup(b, func(b *testing.B) store.Store {
		s, err := sqlite.Open(b.Context(), sqlite.Config{Path: filepath.Join(b.TempDir(), "docjobs.db"), Logger: quiet})
		if err != nil {
			b.Fatalf("Open: %v", err)
		}
		return s
	})
}

func TestOpenTwiceMigratesOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "docjobs.db")
	s := open(t, sqlite.Config{Path: path})
	j := &job.Job{ID: "job_1", AccountID: "acct", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a"}}
	if _, _, err := s.CreateJob(t.Context(), store.CreateJobParams{Job: j}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, sqlite.Config{Path: path})
	defer s.Close()
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}
	if _, err := s.GetJob(t.Context(), "acct", "job_1"); err != nil {
		t.Fatalf("job after reopening: %v", err)
	}
}

// A database a newer binary migrated is refused, not written by older rules.
func TestADatabaseWithMigrationsThisBinaryDoesNotKnowIsRefused(t *testing.T) {
	err := openAfter(t, `INSERT INTO docjobs_migrations (version, name, applied) VALUES (999, 'from_the_future', '2030-01-01T00:00:00Z')`)
	if want := "migration 999 (from_the_future), this binary knows migrations up to "; !errors.Is(err, store.ErrNewerSchema) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open: %v; want store.ErrNewerSchema naming %q", err, want)
	}
}

// A database a build of another branch migrated, whose migration of a
// number this binary knows is another one, is refused before any of this
// binary's migrations of that number or later runs on it.
func TestADatabaseMigratedByAnotherBuildIsRefused(t *testing.T) {
	err := openAfter(t, `UPDATE docjobs_migrations SET name = 'file_names' WHERE version = 6`)
	if want := "its migration 6 is file_names, this binary's is webhook_signed"; !errors.Is(err, store.ErrOtherSchema) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open: %v; want store.ErrOtherSchema naming %q", err, want)
	}
}

// openAfter migrates a new database, runs stmt on it, and returns the error
// of opening it again, which must not succeed.
func openAfter(t *testing.T, stmt string) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), "docjobs.db")
	if err := open(t, sqlite.Config{Path: path}).Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(stmt); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, Logger: quiet})
	if err == nil {
		s.Close()
		t.Fatalf("Open after %s succeeded; want it refused", stmt)
	}
	return err
}

// Migration 6 flags the jobs created before it that hold a webhook secret,
// so their deliveries are never sent unsigned after the upgrade.
func TestUpgradingFlagsTheJobsHoldingAWebhookSecret(t *testing.T) {
	path := filepath.Join(t.TempDir(), "docjobs.db")
	s := open(t, sqlite.Config{Path: path})
	for _, j := range []struct {
		id     string
		secret string
	}{{"job_signed", job.SecretWebhookSecret}, {"job_unsigned", job.SecretNeuralAPIKey}} {
		_, _, err := s.CreateJob(t.Context(), store.CreateJobParams{
			Job:     &job.Job{ID: j.id, AccountID: "acct", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a"}},
			Secrets: []job.SealedSecret{{Field: j.secret, Ciphertext: []byte("sealed")}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Back to the schema before migration 6, the jobs kept.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`ALTER TABLE jobs DROP COLUMN webhook_signed`, `DELETE FROM docjobs_migrations WHERE version = 6`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, sqlite.Config{Path: path})
	defer s.Close()
	for id, want := range map[string]bool{"job_signed": true, "job_unsigned": false} {
		j, err := s.GetJob(t.Context(), "acct", id)
		if err != nil {
			t.Fatal(err)
		}
		if j.WebhookSigned != want {
			t.Errorf("%s: WebhookSigned = %v after the upgrade, want %v", id, j.WebhookSigned, want)
		}
	}
}

// Deleted secrets must not survive in the database file or its WAL.
func TestErasedSecretsLeaveNoBytesOnDisk(t *testing.T) {
	tests := []struct {
		name  string
		delay time.Duration
		// settle ends the test's wait for the bytes to go.
		settle func(t *testing.T, s *sqlite.Store, path string, marker []byte)
	}{
		{"within the flush delay", 20 * time.Millisecond, func(t *testing.T, s *sqlite.Store, path string, marker []byte) {
			for deadline := time.Now().Add(10 * time.Second); onDisk(t, path, marker); time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("erased secret bytes are still in the database files")
				}
			}
		}},
		{"at the latest when the store closes", time.Hour, func(t *testing.T, s *sqlite.Store, path string, marker []byte) {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if onDisk(t, path, marker) {
				t.Fatal("erased secret bytes are still in the database files after Close")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "docjobs.db")
			s := open(t, sqlite.Config{Path: path, FlushDelay: tt.delay})
			defer s.Close()
			marker := []byte("SEALED-SECRET-MARKER-7f3a9c")
			for _, id := range []string{"job_deleted", "job_cancelled"} {
				j := &job.Job{ID: id, AccountID: "acct", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a"}}
				_, _, err := s.CreateJob(ctx, store.CreateJobParams{Job: j, Secrets: []job.SealedSecret{
					{Field: job.SecretNeuralAPIKey, Ciphertext: append(append([]byte{}, marker...), id...)},
				}})
				if err != nil {
					t.Fatal(err)
				}
			}
			if !onDisk(t, path, marker) {
				t.Fatal("test is broken: the secret is not on disk before erasing")
			}
			if _, err := s.DeleteJob(ctx, "acct", "job_deleted"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.CancelJob(ctx, "acct", "job_cancelled"); err != nil {
				t.Fatal(err)
			}
			tt.settle(t, s, path, marker)
		})
	}
}

// onDisk reports whether any file of the database contains b.
func onDisk(t *testing.T, path string, b []byte) bool {
	t.Helper()
	matches, err := filepath.Glob(path + "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range matches {
		data, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(data, b) {
			return true
		}
	}
	return false
}

// The erase itself does not truncate the write-ahead log: that waits for
// the flush delay, so that the transaction ending a job does not hold the
// one writer connection for a checkpoint.
func TestErasingLeavesTheLogToTheFlusher(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "docjobs.db")
	s := open(t, sqlite.Config{Path: path, FlushDelay: time.Hour})
	defer s.Close()
	j := &job.Job{ID: "job_cancelled", AccountID: "acct", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a"}}
	if _, _, err := s.CreateJob(ctx, store.CreateJobParams{Job: j, Secrets: []job.SealedSecret{
		{Field: job.SecretNeuralAPIKey, Ciphertext: []byte("sealed")},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CancelJob(ctx, "acct", j.ID); err != nil {
		t.Fatal(err)
	}
	if walSize(t, path) == 0 {
		t.Fatal("the erase truncated the write-ahead log at once")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := walSize(t, path); n != 0 {
		t.Fatalf("write-ahead log holds %d bytes after Close, want it truncated", n)
	}
}

func walSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path + "-wal")
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// Processes started together on a new database file must all come up:
// they migrate it one at a time, River's migrations included.
func TestStoresOpeningTogetherOnANewFileAllStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "docjobs.db")
	const processes = 4
	errs := make([]error, processes)
	var wg sync.WaitGroup
	for i := range processes {
		wg.Go(func() {
			s, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, Logger: slog.New(slog.DiscardHandler)})
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

func BenchmarkResultRows(b *testing.B) {
	storetest.BenchmarkResultRows(b, func(b *testing.B) store.Store {
		s, err := sqlite.Open(b.Context(), sqlite.Config{Path: filepath.Join(b.TempDir(), "docjobs.db"), Logger: quiet})
		if err != nil {
			b.Fatalf("Open: %v", err)
		}
		return s
	})
}

// Migration 14 takes away the consensus runs a stop cut off that older
// binaries kept as unusable outcomes (audit-crash F1), and nothing else.
func TestMigration14DropsTheRunsAStopCutOff(t *testing.T) {
	path := filepath.Join(t.TempDir(), "docjobs.db")
	s := open(t, sqlite.Config{Path: path})
	storetest.MigrationDropsCutRuns(t, s, func(t *testing.T) store.Store {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`DELETE FROM docjobs_migrations WHERE version = 14`); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		s = open(t, sqlite.Config{Path: path})
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func BenchmarkCancelMergeJob(b *testing.B) {
	storetest.BenchmarkCancelMergeJob(b, func(b *testing.B) store.Store {
		s, err := sqlite.Open(b.Context(), sqlite.Config{Path: filepath.Join(b.TempDir(), "docjobs.db"), Logger: quiet})
		if err != nil {
			b.Fatalf("Open: %v", err)
		}
		return s
	})
}
