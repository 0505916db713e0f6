package worker

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

func TestRetentionDeletesExpiredUploadsAndLeavesJobCopies(t *testing.T) {
	forEachBucket(t, func(t *testing.T, bucket *blob.Bucket, _ string) { retentionOfUploads(t, bucket) })
}

func retentionOfUploads(t *testing.T, bucket *blob.Bucket) {
	t.Helper()
	ctx := context.Background()
	st := openStore(t)

	now := time.Now().UTC()
	put := func(f job.File) job.File {
		t.Helper()
		if err := bucket.WriteAll(ctx, f.Key, []byte("confidential"), nil); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateFile(ctx, f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	expired := put(job.File{ID: "up-old", AccountID: "acme", Key: "uploads/acme/up-old", Created: now.Add(-2 * time.Hour)})
	// Recorded, but its bytes are already gone (a sweep that stopped
	// between the two): the record still goes.
	half := job.File{ID: "up-half", AccountID: "acme", Key: "uploads/acme/up-half", Created: now.Add(-3 * time.Hour)}
	if err := st.CreateFile(ctx, half); err != nil {
		t.Fatal(err)
	}
	fresh := put(job.File{ID: "up-new", AccountID: "acme", Key: "uploads/acme/up-new", Created: now.Add(-time.Minute)})
	// A running job's copy of the expired upload, made long ago: it is the
	// job's, and stays as long as the job does.
	j := &job.Job{ID: "job-1", AccountID: "acme", Status: job.StatusNew, SourceURLs: []string{"http://x/v1/files/up-old"},
		RequestHash: "h", Created: now.Add(-2 * time.Hour)}
	if _, _, err := st.CreateJob(ctx, store.CreateJobParams{Job: j}); err != nil {
		t.Fatal(err)
	}
	cp := put(job.File{ID: "copy-1", AccountID: "acme", JobID: j.ID, Key: "jobs/job-1/0-copy-1", Created: now.Add(-2 * time.Hour)})

	w := &retentionWorker{cfg: Config{Retention: time.Hour}, deps: Deps{Store: st, Bucket: bucket, Logger: slog.New(slog.DiscardHandler)}}
	for range 2 { // a second sweep finds nothing more and is fine
		if err := w.Work(ctx, nil); err != nil {
			t.Fatalf("Work: %v", err)
		}
	}

	for _, f := range []job.File{expired, half} {
		if _, err := st.GetFile(ctx, "", f.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("record of expired upload %s: %v, want ErrNotFound", f.ID, err)
		}
		if ok, err := bucket.Exists(ctx, f.Key); ok || err != nil {
			t.Errorf("bytes of expired upload %s: exists %v (%v)", f.ID, ok, err)
		}
	}
	for _, f := range []job.File{fresh, cp} {
		if _, err := st.GetFile(ctx, "", f.ID); err != nil {
			t.Errorf("record of %s: %v, want it kept", f.ID, err)
		}
		if ok, err := bucket.Exists(ctx, f.Key); !ok || err != nil {
			t.Errorf("bytes of %s: exists %v (%v), want them kept", f.ID, ok, err)
		}
	}
	if _, err := st.GetJob(ctx, "", j.ID); err != nil {
		t.Errorf("the running job: %v", err)
	}
}

func TestRetentionOfZeroKeepsUploads(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	old := job.File{ID: "up-old", AccountID: "acme", Key: "uploads/acme/up-old", Created: time.Now().Add(-24 * 365 * time.Hour)}
	if err := st.CreateFile(ctx, old); err != nil {
		t.Fatal(err)
	}
	w := &retentionWorker{cfg: Config{}, deps: Deps{Store: st, Logger: slog.New(slog.DiscardHandler)}}
	if err := w.Work(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetFile(ctx, "", old.ID); err != nil {
		t.Errorf("a year-old upload with retention 0: %v, want it kept", err)
	}
}
