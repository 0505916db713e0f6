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

// openStore opens the database DOCJOBS_DATABASE_URL names and applies migrations.
func openStore(ctx context.Context, cfg config.Config, log *slog.Logger) (store.Store, error) {
	if path, ok := cfg.SQLitePath(); ok {
		return sqlite.Open(ctx, sqlite.Config{Path: path, Logger: log})
	}
	switch u := cfg.DatabaseURL; {
	case strings.HasPrefix(u, "postgres://"), strings.HasPrefix(u, "postgresql://"):
		return postgres.Open(ctx, postgres.Config{URL: u, Logger: log})
	default:
		return nil, fmt.Errorf("DOCJOBS_DATABASE_URL: want sqlite://PATH or postgres://…, got scheme of %q", redact(u))
	}
}

func openBucket(ctx context.Context, cfg config.Config) (*blob.Bucket, error) {
	b, err := blob.OpenBucket(ctx, cfg.StorageURL)
	if err != nil {
		return nil, fmt.Errorf("open storage %s: %w", redact(cfg.StorageURL), err)
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
