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

	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/postgres"
	"github.com/docjobs/docjobs/internal/store/storetest"
)

// quiet keeps River's info logs out of test output.
var quiet = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

// testURL is the database the tests use; each test gets its own schema in it.
func testURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("DOCJOBS_TEST_POSTGRES_URL")
	if u == "" {
		t.Skip("DOCJOBS_TEST_POSTGRES_URL is not set")
	}
	return u
}

// openSchema opens a store in a fresh schema that is dropped after the test.
func openSchema(t *testing.T) *postgres.Store {
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
	s, err := postgres.Open(t.Context(), postgres.Config{URL: url, Schema: schema, Logger: quiet})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestStore(t *testing.T) {
	testURL(t)
	storetest.Run(t, func(t *testing.T) store.Store { return openSchema(t) })
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
