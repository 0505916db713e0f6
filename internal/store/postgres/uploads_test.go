package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/postgres/pgtest"
	"github.com/docjobs/docjobs/internal/store/storetest"
)

// Migration 12's index may be built beforehand with CREATE INDEX
// CONCURRENTLY, which blocks no write to a large files table, as
// docs/decisions.md tells an operator to: the migration then finds it and
// the upgrade goes on.
func TestMigration12TakesTheIndexBuiltConcurrentlyBeforehand(t *testing.T) {
	s, schema := openNamedSchema(t)
	defer s.Close()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	in := pgx.Identifier{schema}.Sanitize()
	// Back to the schema before migration 12, then the operator's index.
	for _, q := range []string{
		`DROP INDEX ` + in + `.files_uploads_account_created`,
		`DELETE FROM ` + in + `.docjobs_migrations WHERE version = 12`,
		`CREATE INDEX CONCURRENTLY IF NOT EXISTS files_uploads_account_created ON ` + in +
			`.files (account_id, created DESC, id DESC) WHERE job_id IS NULL`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}

	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate with the index built beforehand: %v", err)
	}
	var name string
	if err := conn.QueryRow(ctx, `SELECT name FROM `+in+`.docjobs_migrations WHERE version = 12`).Scan(&name); err != nil || name != "upload_list" {
		t.Fatalf("migration 12 recorded as %q (%v), want upload_list", name, err)
	}
	if _, err := s.ListUploads(ctx, store.UploadListParams{AccountID: "acct", PageSize: 10}); err != nil {
		t.Fatalf("ListUploads after the upgrade: %v", err)
	}
}

// Migration 14 takes away the consensus runs a stop cut off that older
// binaries kept as unusable outcomes (audit-crash F1), and nothing else.
func TestMigration14DropsTheRunsAStopCutOff(t *testing.T) {
	s, schema := openNamedSchema(t)
	defer s.Close()
	storetest.MigrationDropsCutRuns(t, s, func(t *testing.T) store.Store {
		conn, err := pgx.Connect(t.Context(), pgtest.URL(t))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(t.Context())
		if _, err := conn.Exec(t.Context(), `DELETE FROM `+pgx.Identifier{schema}.Sanitize()+`.docjobs_migrations WHERE version = 14`); err != nil {
			t.Fatal(err)
		}
		if err := s.Migrate(t.Context()); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		return s
	})
}
