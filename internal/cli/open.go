package cli

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file:// buckets, the embedded default
	_ "gocloud.dev/blob/s3blob"   // s3:// buckets (S3, MinIO, R2) for scale-out

	"github.com/docjobs/docjobs/internal/config"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/postgres"
	"github.com/docjobs/docjobs/internal/store/sqlite"
)

// schemaUse says what openStore does with the database's schema.
type schemaUse int

const (
	// migrateSchema applies the migrations the database lacks (serve,
	// migrate, and an admin command on a database it has just created).
	migrateSchema schemaUse = iota
	// checkSchema writes nothing: a database behind this binary is
	// refused with a *store.SchemaBehindError.
	checkSchema
)

// openStore opens the database DOCJOBS_DATABASE_URL names, applying its
// migrations or only checking them (use).
func openStore(ctx context.Context, cfg config.Config, log *slog.Logger, use schemaUse) (store.Store, error) {
	check := use == checkSchema
	if path, ok := cfg.SQLitePath(); ok {
		return sqlite.Open(ctx, sqlite.Config{Path: path, Logger: log, CheckSchema: check})
	}
	switch u := cfg.DatabaseURL; {
	case strings.HasPrefix(u, "postgres://"), strings.HasPrefix(u, "postgresql://"):
		return postgres.Open(ctx, postgres.Config{URL: u, Logger: log, CheckSchema: check})
	default: // config.Load refuses it first
		return nil, fmt.Errorf("DOCJOBS_DATABASE_URL: want sqlite://PATH or postgres://…, got scheme of %q", redact(u))
	}
}

func openBucket(ctx context.Context, cfg config.Config) (*blob.Bucket, error) {
	b, err := blob.OpenBucket(ctx, cfg.StorageURL)
	if err != nil {
		return nil, fmt.Errorf("DOCJOBS_STORAGE_URL: open %s: %w", redact(cfg.StorageURL), err)
	}
	return b, nil
}

// redact keeps only a URL's scheme, enough to say what was configured.
func redact(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		return u[:i+3] + "…"
	}
	return "…"
}
