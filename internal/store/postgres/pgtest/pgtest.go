// Package pgtest gives a test its own schema of the PostgreSQL database that
// DOCJOBS_TEST_POSTGRES_URL names, dropped when the test ends, so tests of
// every package share one database without seeing each other.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// URL returns DOCJOBS_TEST_POSTGRES_URL, and skips the test when it is
// unset (CI sets it).
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("DOCJOBS_TEST_POSTGRES_URL")
	if u == "" {
		t.Skip("DOCJOBS_TEST_POSTGRES_URL is not set")
	}
	return u
}

// Schema returns the database URL and the name of a schema no other test
// uses, dropped with everything in it after the test.
func Schema(t testing.TB) (url, schema string) {
	t.Helper()
	url = URL(t)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema = "docjobs_test_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return url, schema
}
