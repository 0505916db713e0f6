package worker

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"

	"github.com/docjobs/docjobs/internal/job"
)

// BenchmarkSweepUploads is the hourly sweep's look for uploads a crash left
// unrecorded (sweepUploads) over a file:// storage opened as serve opens
// it (no metadata sidecars, writes staged beside their file) holding
// recorded uploads spread over 100 accounts, as a steady state leaves it:
// nothing to remove, every key listed and its id looked up. fileblob walks the whole
// tree for every page of a listing of all of uploads/; see
// docs/benchmarks.md.
func BenchmarkSweepUploads(b *testing.B) {
	for _, uploads := range []int{10_000, 30_000} {
		b.Run(fmt.Sprintf("uploads=%d/accounts=100", uploads), func(b *testing.B) {
			ctx := context.Background()
			dir := b.TempDir()
			bucket, err := fileblob.OpenBucket(dir, &fileblob.Options{NoTempDir: true, Metadata: fileblob.MetadataDontWrite})
			if err != nil {
				b.Fatal(err)
			}
			defer bucket.Close()
			st := openStore(b)
			since, err := ClaimStorage(ctx, st, bucket)
			if err != nil {
				b.Fatal(err)
			}
			for i := range uploads {
				acct := fmt.Sprintf("account-%03d", i%100)
				id := newFileID()
				key := "uploads/" + acct + "/" + id
				if err := bucket.WriteAll(ctx, key, []byte("PRIVATE CONTENT of a user document"), &blob.WriterOptions{ContentType: "text/plain"}); err != nil {
					b.Fatal(err)
				}
				if err := st.CreateUpload(ctx, job.File{ID: id, AccountID: acct, Name: "a.txt", Size: 34, Key: key, Created: time.Now()}, 0); err != nil {
					b.Fatal(err)
				}
			}
			w := &removalWorker{cfg: Config{StorageDir: dir}.withDefaults(),
				deps: Deps{Store: st, Bucket: bucket, Logger: slog.New(slog.DiscardHandler)}}
			cutoff := time.Now().Add(time.Hour)
			for b.Loop() {
				if err := w.sweepUploads(ctx, cutoff, since, true); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			left, err := os.ReadDir(filepath.Join(dir, "uploads", "account-000"))
			if err != nil || len(left) != uploads/100 {
				b.Fatalf("account-000 after the sweeps: %d entries (%v), want its %d recorded uploads kept", len(left), err, uploads/100)
			}
		})
	}
}
