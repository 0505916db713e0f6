package worker

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"gocloud.dev/blob"

	"github.com/docjobs/docjobs/internal/blobtest"
	"github.com/docjobs/docjobs/internal/convert"
	"github.com/docjobs/docjobs/internal/fetch"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// putUpload stores an upload of account acct holding text.
func putUpload(t *testing.T, st store.Store, bucket *blob.Bucket, id, acct, text string) {
	t.Helper()
	f := job.File{ID: id, AccountID: acct, Name: id + ".txt", Size: int64(len(text)), ContentType: "text/plain",
		Key: "uploads/" + acct + "/" + id, Created: time.Now().UTC()}
	if err := bucket.WriteAll(context.Background(), f.Key, []byte(text), nil); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateFile(context.Background(), f); err != nil {
		t.Fatal(err)
	}
}

func TestOneUploadListedManyTimesIsStoredOnceForTheJobAndGoesOnceWithIt(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		bucket := startLoggingPipeline(t, st, Config{}, nil, nil, nil, slog.New(slog.DiscardHandler))
		putUpload(t, st, bucket, "up1", "acct", "Invoice 42, total 17.00 EUR")
		putUpload(t, st, bucket, "up2", "acct", "Receipt 7")
		u1, u2 := "http://docjobs.test/v1/files/up1", "http://docjobs.test/v1/files/up2"
		sources := []string{u1, u1, u2, u1 + "?x=1", u1, u1}
		createJob(t, st, "job-a", "acct", sources...)
		res := endOf(t, st, "job-a")
		if res.Job.Status != job.StatusComplete {
			t.Fatalf("job %s, want COMPLETE", res.Job.Status)
		}
		for _, row := range res.OCR {
			want := "Invoice 42, total 17.00 EUR"
			if row.FileIndex == 2 {
				want = "Receipt 7"
			}
			if row.Status != job.RowDone || row.Content != want {
				t.Errorf("file %d: %s %q, want DONE %q", row.FileIndex, row.Status, row.Content, want)
			}
		}
		// Each file has its own URL and record, as before; they name one
		// stored copy per upload.
		if files := slices.Compact(slices.Sorted(slices.Values(res.Job.Files))); len(files) != len(sources) {
			t.Errorf("job files %q, want %d distinct URLs", res.Job.Files, len(sources))
		}
		want := []string{fetch.SharedCopyKey("job-a", "uploads/acct/up1"), fetch.SharedCopyKey("job-a", "uploads/acct/up2")}
		slices.Sort(want)
		if got := blobtest.Keys(t, bucket, fetch.JobKeyPrefix("job-a")); !slices.Equal(got, want) {
			t.Fatalf("the job stored %q, want one copy per upload, %q", got, want)
		}

		keys, err := st.DeleteJob(ctx, "acct", "job-a")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(keys, want) {
			t.Errorf("the delete names %q for removal, want each copy once, %q", keys, want)
		}
		if errs := fetch.RemoveDeletedJob(ctx, bucket, "", st, "job-a", keys); len(errs) > 0 {
			t.Fatalf("removing the job's files: %v", errs)
		}
		if got := blobtest.Keys(t, bucket, fetch.JobKeyPrefix("job-a")); len(got) != 0 {
			t.Errorf("left after the delete: %q", got)
		}
		if pending, err := st.PendingFileRemovals(ctx, time.Now().Add(time.Hour), 10); err != nil || len(pending) != 0 {
			t.Errorf("removals still recorded: %+v (%v)", pending, err)
		}
		if got := blobtest.Keys(t, bucket, "uploads/"); len(got) != 2 {
			t.Errorf("uploads left %q, want both kept", got)
		}
	})
}

func TestASharedCopyGoesOnlyWhenNoFileOfItsEndedJobNamesIt(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		fetcher, bucket := realFetcher(t, st, time.Hour)
		w := newFileWorker(Config{}.withDefaults(), Deps{Store: st, Fetcher: fetcher, Bucket: bucket,
			Convert: convert.New(convert.Config{}).Convert, Logger: slog.New(slog.DiscardHandler)})
		log := slog.New(slog.DiscardHandler)
		putUpload(t, st, bucket, "up1", "acct", "Invoice 42")
		src := "http://docjobs.test/v1/files/up1"
		fetchFile := func(jobID string, i int) fetch.Result {
			t.Helper()
			r, err := fetcher.Fetch(ctx, "acct", jobID, i, src)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		stored := func(r fetch.Result) bool {
			t.Helper()
			ok, err := bucket.Exists(ctx, r.Key)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		cancel := func(jobID string) {
			t.Helper()
			if _, err := st.CancelJob(ctx, "acct", jobID); err != nil {
				t.Fatal(err)
			}
		}

		// job-a: file 0 recorded its copy, file 1's attempt did not.
		createJob(t, st, "job-a", "acct", src, src)
		r0, r1 := fetchFile("job-a", 0), fetchFile("job-a", 1)
		done := store.OCRDone{Row: job.OCRRow{JobID: "job-a", FileIndex: 0, File: r0.URL, Status: job.RowDone, Content: "Invoice 42"}, File: r0.File}
		if applied, err := st.FinishOCR(ctx, done); err != nil || !applied {
			t.Fatalf("FinishOCR: %v, %v", applied, err)
		}
		w.discardUnrecorded(ctx, r1, log)
		if !stored(r0) {
			t.Fatal("a copy another file of the running job recorded was deleted")
		}
		cancel("job-a")
		w.discardUnrecorded(ctx, r1, log)
		if !stored(r0) {
			t.Fatal("a copy another file of the cancelled job recorded was deleted")
		}

		// job-b: no file recorded the copy. While the job runs it stays, and
		// the file's retry reads it; once the job is cancelled it goes.
		createJob(t, st, "job-b", "acct", src)
		first := fetchFile("job-b", 0)
		w.discardUnrecorded(ctx, first, log)
		if !stored(first) {
			t.Fatal("the copy of a running job's file was deleted before its retry")
		}
		retry := fetchFile("job-b", 0)
		if retry.Key != first.Key {
			t.Fatalf("the retry stored %q, want the copy the first attempt made, %q", retry.Key, first.Key)
		}
		cancel("job-b")
		w.discardUnrecorded(ctx, retry, log)
		if stored(retry) {
			t.Error("a copy no file of the cancelled job names was kept")
		}

		// job-c: deleted; everything it left goes.
		createJob(t, st, "job-c", "acct", src)
		left := fetchFile("job-c", 0)
		if _, err := st.DeleteJob(ctx, "acct", "job-c"); err != nil {
			t.Fatal(err)
		}
		w.discardUnrecorded(ctx, left, log)
		if got := blobtest.Keys(t, bucket, fetch.JobKeyPrefix("job-c")); len(got) != 0 {
			t.Errorf("left of a deleted job: %q", got)
		}
		if _, err := st.GetFile(ctx, "acct", "up1"); errors.Is(err, job.ErrNotFound) || !stored(fetch.Result{Key: "uploads/acct/up1"}) {
			t.Error("the upload went with a job's copy")
		}
	})
}
