package worker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"gocloud.dev/blob"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// putDocument stores bytes under key as an upload's Close leaves them.
func putDocument(t *testing.T, bucket *blob.Bucket, key string) {
	t.Helper()
	if err := bucket.WriteAll(context.Background(), key, []byte("PRIVATE CONTENT of a user document"), &blob.WriterOptions{ContentType: "text/plain"}); err != nil {
		t.Fatal(err)
	}
}

func newFileID() string { return uuid.Must(uuid.NewV7()).String() }

// A process killed between an upload's bytes and its record leaves a whole
// document no record names: the sweep removes it once it is an hour old
// (an upload and its record take at most 32 minutes), and its account's
// folder if that leaves it empty. Recorded uploads, younger ones, keys of
// another layout (not an upload of this service's making) and keys
// outside uploads/ stay, on file:// and S3.
func TestTheSweepRemovesAnUploadACrashLeftUnrecorded(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		forEachBucket(t, func(t *testing.T, bucket *blob.Bucket, dir string) {
			ctx := context.Background()
			if _, err := ClaimStorage(ctx, st, bucket); err != nil {
				t.Fatal(err)
			}
			orphan, lone, recorded := "uploads/acme/"+newFileID(), "uploads/bob/"+newFileID(), newFileID()
			kept := []string{
				"uploads/acme/" + recorded,
				"uploads/acme/not-an-id",
				"uploads/acme/" + newFileID() + "/x",
				"uploads/acme/" + newFileID() + "-",
				"uploads/" + newFileID(),
				"elsewhere/" + newFileID(),
				"jobs/job-1/0-" + newFileID(),
			}
			for _, k := range append([]string{orphan, lone}, kept...) {
				putDocument(t, bucket, k)
			}
			if err := st.CreateUpload(ctx, job.File{ID: recorded, AccountID: "acme", Name: "a.txt", Size: 34,
				Key: "uploads/acme/" + recorded, Created: time.Now()}, 0); err != nil {
				t.Fatal(err)
			}
			all := append([]string{orphan, lone}, kept...)
			slices.Sort(all)

			sweepAt(t, st, bucket, dir, time.Now().Add(50*time.Minute))
			if got := documentKeys(t, bucket); !slices.Equal(got, all) {
				t.Errorf("after a sweep 50 minutes on: %q, want all kept %q", got, all)
			}

			sweepAt(t, st, bucket, dir, time.Now().Add(2*time.Hour))
			want := slices.Clone(kept)
			slices.Sort(want)
			if got := documentKeys(t, bucket); !slices.Equal(got, want) {
				t.Errorf("after a sweep 2 hours on: %q, want %q", got, want)
			}
			if dir != "" {
				if _, err := os.Stat(filepath.Join(dir, "uploads", "bob")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("bob's upload folder: %v, want it removed once empty", err)
				}
			}
		})
	})
}

// What a storage held before this database claimed it, and everything in
// a storage another database claimed, is not this database's to judge:
// two deployments sharing one storage would otherwise delete each other's
// uploads.
func TestTheSweepLeavesUploadsItCannotTellAreOrphans(t *testing.T) {
	t.Run("another database owns the storage", func(t *testing.T) {
		forEachBucket(t, func(t *testing.T, bucket *blob.Bucket, dir string) {
			ctx := context.Background()
			if _, err := ClaimStorage(ctx, openStore(t), bucket); err != nil {
				t.Fatal(err)
			}
			st := openStore(t)
			if _, err := ClaimStorage(ctx, st, bucket); !errors.Is(err, ErrStorageOwned) {
				t.Fatalf("ClaimStorage of a storage another database owns = %v, want ErrStorageOwned", err)
			}
			theirs := "uploads/acme/" + newFileID()
			putDocument(t, bucket, theirs)
			sweepAt(t, st, bucket, dir, time.Now().Add(2*time.Hour))
			if got := documentKeys(t, bucket); !slices.Equal(got, []string{theirs}) {
				t.Errorf("after the sweep: %q, want the other database's upload kept", got)
			}
		})
	})
	t.Run("written before the claim", func(t *testing.T) {
		bucket, dir := fileBucket(t)
		before := "uploads/acme/" + newFileID()
		putDocument(t, bucket, before)
		old := time.Now().Add(-3 * time.Hour)
		if err := os.Chtimes(filepath.Join(dir, "uploads", "acme", filepath.Base(before)), old, old); err != nil {
			t.Fatal(err)
		}
		st := openStore(t)
		sweepAt(t, st, bucket, dir, time.Now().Add(2*time.Hour))
		if got := documentKeys(t, bucket); !slices.Equal(got, []string{before}) {
			t.Errorf("after the sweep: %q, want the upload older than the claim kept", got)
		}
	})
}

// Of two databases claiming one new storage at once, exactly one owns it.
func TestOneDatabaseClaimsAStorage(t *testing.T) {
	forEachBucket(t, func(t *testing.T, bucket *blob.Bucket, _ string) {
		stores := []Store{openStore(t), openStore(t), openStore(t), openStore(t)}
		errs := make([]error, len(stores))
		done := make(chan struct{})
		for i, st := range stores {
			go func() {
				defer func() { done <- struct{}{} }()
				_, errs[i] = ClaimStorage(context.Background(), st, bucket)
			}()
		}
		for range stores {
			<-done
		}
		owners := 0
		for _, err := range errs {
			switch {
			case err == nil:
				owners++
			case !errors.Is(err, ErrStorageOwned):
				t.Errorf("ClaimStorage = %v", err)
			}
		}
		if owners != 1 {
			t.Errorf("%d databases own the storage, want 1 (%v)", owners, errs)
		}
		// The owner claims it again at every sweep and start.
		for i, st := range stores {
			if errs[i] == nil {
				if _, err := ClaimStorage(context.Background(), st, bucket); err != nil {
					t.Errorf("the owner's second claim = %v", err)
				}
			}
		}
	})
}
