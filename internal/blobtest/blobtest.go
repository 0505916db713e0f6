// Package blobtest reads a storage bucket for tests, through gocloud's own
// listing rather than the code under test.
package blobtest

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"gocloud.dev/blob"
)

// Keys lists the keys of bucket that start with prefix ("" for all), in
// the bucket's order.
func Keys(t testing.TB, bucket *blob.Bucket, prefix string) []string {
	t.Helper()
	var keys []string
	it := bucket.List(nil)
	for {
		obj, err := it.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return keys
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(obj.Key, prefix) {
			keys = append(keys, obj.Key)
		}
	}
}
