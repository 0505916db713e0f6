package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

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
	// s3:// opens without asking the server anything: a bucket name that
	// does not exist, or credentials that are missing or refused, showed
	// only as a 500 at the first upload and a FAILED row at the first
	// download ("get credentials" in the log).
	cctx, cancel := context.WithTimeout(ctx, bucketCheckTimeout)
	defer cancel()
	if err := bucketReachable(cctx, b); err != nil {
		b.Close()
		return nil, fmt.Errorf("DOCJOBS_STORAGE_URL: %s: %w", redact(cfg.StorageURL), err)
	}
	return b, nil
}

// bucketCheckTimeout bounds the start's look at the bucket: an endpoint
// that does not answer would otherwise hold the start for the SDK's
// retries.
const bucketCheckTimeout = 30 * time.Second

// bucketReachable says whether b exists and this process may use it; the
// start and /readyz ask it.
func bucketReachable(ctx context.Context, b *blob.Bucket) error {
	ok, err := b.IsAccessible(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("the bucket cannot be reached: %w", err)
	case !ok:
		return errors.New("the bucket does not exist")
	}
	return nil
}

// readiness is /readyz's check: the database answers and the bucket can
// be reached.
func readiness(st store.Store, b *blob.Bucket) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := st.Ping(ctx); err != nil {
			return err
		}
		if err := bucketReachable(ctx, b); err != nil {
			return fmt.Errorf("storage: %w", err)
		}
		return nil
	}
}

// redact keeps only a URL's scheme, enough to say what was configured.
func redact(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		return u[:i+3] + "…"
	}
	return "…"
}
