package s3test_test

import (
	"context"
	"testing"

	"gocloud.dev/blob"

	"github.com/docjobs/docjobs/internal/s3test"
)

// TestBucketRoundTripsAnObjectThroughS3Blob checks the harness itself: the
// URL it hands out opens with gocloud.dev's s3blob, as docjobs opens
// DOCJOBS_STORAGE_URL, and what is written there is on the server.
func TestBucketRoundTripsAnObjectThroughS3Blob(t *testing.T) {
	srv := s3test.Start(t)
	u := srv.Bucket(t, "roundtrip")
	ctx := context.Background()
	b, err := blob.OpenBucket(ctx, u)
	if err != nil {
		t.Fatalf("open %s: %v", u, err)
	}
	defer b.Close()
	if err := b.WriteAll(ctx, "a/b.txt", []byte("hello"), nil); err != nil {
		t.Fatalf("write: %v", err)
	}
	got, err := b.ReadAll(ctx, "a/b.txt")
	if err != nil || string(got) != "hello" {
		t.Fatalf("read = %q, %v; want hello", got, err)
	}
	if keys := srv.Keys(t, "roundtrip"); len(keys) != 1 || keys[0] != "a/b.txt" {
		t.Fatalf("keys = %v, want [a/b.txt]", keys)
	}
	if err := b.Delete(ctx, "a/b.txt"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if keys := srv.Keys(t, "roundtrip"); len(keys) != 0 {
		t.Fatalf("keys after delete = %v, want none", keys)
	}
}
