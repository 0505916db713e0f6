package cli

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"gocloud.dev/blob"

	"github.com/docjobs/docjobs/internal/config"
	"github.com/docjobs/docjobs/internal/s3test"
)

// s3:// opens without a word to the server, so the start asks it: a
// bucket that does not exist, or credentials it refuses, stop the start
// naming DOCJOBS_STORAGE_URL instead of failing the first upload.
func TestABucketThatCannotBeUsedStopsTheStart(t *testing.T) {
	srv := s3test.Start(t)
	present := srv.Bucket(t, "present")
	absent := strings.Replace(present, "s3://present?", "s3://absent?", 1)
	tests := []struct {
		name, url, secret, want string
	}{
		{"a bucket that exists opens", present, "", ""},
		// Named as config.Storage shows it: the bucket, no value.
		{"a bucket that does not exist", absent, "", "DOCJOBS_STORAGE_URL: s3://absent?endpoint=…&region=…&use_path_style=…: the bucket does not exist"},
		{"credentials the server refuses", present, "not-the-secret", "DOCJOBS_STORAGE_URL: s3://present?endpoint=…&region=…&use_path_style=…: the bucket cannot be reached: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.secret != "" {
				t.Setenv("AWS_SECRET_ACCESS_KEY", tt.secret)
			}
			b, err := openBucket(context.Background(), config.Config{StorageURL: tt.url})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("openBucket: %v", err)
				}
				b.Close()
				return
			}
			if err == nil {
				b.Close()
				t.Fatalf("openBucket opened %s, want %q", tt.url, tt.want)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to start %q", err, tt.want)
			}
		})
	}
}

// /readyz asks the bucket too: a process whose bucket is gone (or whose
// credentials stopped working) is not ready, though its database answers.
func TestReadinessNeedsTheBucket(t *testing.T) {
	srv := s3test.Start(t)
	present := srv.Bucket(t, "present")
	dir := t.TempDir()
	cfg := config.Config{DatabaseURL: "sqlite://" + filepath.Join(dir, "docjobs.db")}
	st, err := openStore(context.Background(), cfg, slog.New(slog.DiscardHandler), migrateSchema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, tt := range []struct{ name, url, want string }{
		{"a bucket in place is ready", present, ""},
		{"a bucket that is gone is not", strings.Replace(present, "s3://present?", "s3://gone?", 1), "storage: the bucket does not exist"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := blob.OpenBucket(context.Background(), tt.url)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			err = readiness(st, b, "")(context.Background())
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("ready: %v", err)
			case tt.want != "" && (err == nil || err.Error() != tt.want):
				t.Errorf("ready: err = %v, want %q", err, tt.want)
			}
		})
	}
}
