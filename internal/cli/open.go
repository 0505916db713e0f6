package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file:// buckets, the embedded default
	_ "gocloud.dev/blob/s3blob"   // s3:// buckets (S3, MinIO, R2) for scale-out

	"github.com/docjobs/docjobs/internal/config"
	"github.com/docjobs/docjobs/internal/fetch"
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
		return nil, fmt.Errorf("DOCJOBS_DATABASE_URL: want sqlite://PATH or postgres://…, got %s", cfg.Database())
	}
}

// openBucket opens the bucket DOCJOBS_STORAGE_URL names and asks it
// whether it can be used. A URL the driver refuses is a configuration
// error (configError, exit 2) named by its variable; gocloud's message
// quotes the whole URL, so it is shown with the URL as config.Storage
// shows it, never as given (audit-ops3 F5).
func openBucket(ctx context.Context, cfg config.Config) (*blob.Bucket, error) {
	b, err := blob.OpenBucket(ctx, cfg.StorageURL)
	if err != nil {
		return nil, &configError{fmt.Errorf("%s: open %s: %s", cfg.StorageVar(), cfg.Storage(), withoutURL(err.Error(), cfg.StorageURL))}
	}
	// s3:// opens without asking the server anything: a bucket name that
	// does not exist, or credentials that are missing or refused, showed
	// only as a 500 at the first upload and a FAILED row at the first
	// download ("get credentials" in the log).
	cctx, cancel := context.WithTimeout(ctx, bucketCheckTimeout)
	defer cancel()
	if err := bucketReachable(cctx, b, fetch.RootDir(cfg.StorageURL)); err != nil {
		b.Close()
		return nil, fmt.Errorf("%s: %s: %w", cfg.StorageVar(), cfg.Storage(), err)
	}
	return b, nil
}

// withoutURL replaces, in a driver's message, the URL it was given in
// the forms gocloud quotes it (as given, re-encoded by net/url, either one
// in Go quotes) by the URL as config.Storage shows it, and a parameter's
// value the driver quotes on its own (`invalid dir_file_mode "…"`) by "…".
func withoutURL(msg, raw string) string {
	forms := []string{raw}
	var values []string
	if u, err := url.Parse(raw); err == nil {
		forms = append(forms, u.String())
		for _, vs := range u.Query() {
			values = append(values, vs...)
		}
	}
	shown := config.ShowURL(raw)
	for _, f := range forms {
		msg = strings.ReplaceAll(msg, strconv.Quote(f), strconv.Quote(shown))
		msg = strings.ReplaceAll(msg, f, shown)
	}
	for _, v := range values {
		if v != "" {
			msg = strings.ReplaceAll(msg, strconv.Quote(v), `"…"`)
		}
	}
	return msg
}

// configError is a configured value that proved unusable only when serve
// used it (a bucket URL its driver refuses, a master key file that cannot
// be made): exit 2, as a value config.Load refuses, since what must change
// is the configuration.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// bucketCheckTimeout bounds the start's look at the bucket: an endpoint
// that does not answer would otherwise hold the start for the SDK's
// retries.
const bucketCheckTimeout = 30 * time.Second

// bucketReachable says whether b exists and this process may use it; the
// start and /readyz ask it. dir is a file:// bucket's directory ("" for
// any other): gocloud calls a file:// bucket accessible whatever becomes of
// its directory (fileblob's listing skips what it cannot read), so the
// directory is looked at instead, a stat and an access(2) (audit-ops3 F8).
func bucketReachable(ctx context.Context, b *blob.Bucket, dir string) error {
	if dir != "" {
		return dirUsable(dir)
	}
	ok, err := b.IsAccessible(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("the bucket cannot be reached: %w", err)
	case !ok:
		return errors.New("the bucket does not exist")
	}
	return nil
}

// dirUsable says whether dir is a directory this process may write in.
func dirUsable(dir string) error {
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the bucket's directory %s does not exist", dir)
	case err != nil:
		return fmt.Errorf("the bucket's directory cannot be read: %w", err)
	case !info.IsDir():
		return fmt.Errorf("the bucket's directory %s is not a directory", dir)
	}
	if err := writable(dir); err != nil {
		return fmt.Errorf("the bucket's directory %s cannot be written: %w", dir, err)
	}
	return nil
}

// readiness is /readyz's check: the database answers and the bucket can
// be reached (dir: a file:// bucket's directory, as bucketReachable).
func readiness(st store.Store, b *blob.Bucket, dir string) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := st.Ping(ctx); err != nil {
			return err
		}
		if err := bucketReachable(ctx, b, dir); err != nil {
			return fmt.Errorf("storage: %w", err)
		}
		return nil
	}
}
