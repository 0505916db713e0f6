package worker

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"

	"github.com/docjobs/docjobs/internal/blobtest"
	"github.com/docjobs/docjobs/internal/convert"
	"github.com/docjobs/docjobs/internal/fetch"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/outbound"
	"github.com/docjobs/docjobs/internal/s3test"
	"github.com/docjobs/docjobs/internal/store"
)

// fileBucket opens a file:// bucket as serve does (writes staged beside
// their file) and returns it with its directory.
func fileBucket(t *testing.T) (*blob.Bucket, string) {
	t.Helper()
	dir := t.TempDir()
	bucket, err := fileblob.OpenBucket(dir, &fileblob.Options{NoTempDir: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bucket.Close() })
	return bucket, dir
}

// s3Bucket opens a bucket of a real S3 server (versitygw, internal/s3test)
// by its s3:// URL, as serve does; an s3:// bucket has no directory.
func s3Bucket(t *testing.T) (*blob.Bucket, string) {
	t.Helper()
	return s3test.OpenBucket(t, "docjobs"), ""
}

// forEachBucket runs test on a file:// bucket and on an s3:// one: removal
// lists and deletes by key prefix, and a file:// bucket's folders are its
// own concern on top.
func forEachBucket(t *testing.T, test func(t *testing.T, bucket *blob.Bucket, dir string)) {
	t.Helper()
	for _, b := range []struct {
		name string
		open func(t *testing.T) (*blob.Bucket, string)
	}{{"file", fileBucket}, {"s3", s3Bucket}} {
		t.Run(b.name, func(t *testing.T) {
			bucket, dir := b.open(t)
			test(t, bucket, dir)
		})
	}
}

// wantNothingLeftOf fails unless job id has no stored file, no folder in
// dir (a file:// bucket's; "" for s3://) and no removal record.
func wantNothingLeftOf(t *testing.T, st Store, bucket *blob.Bucket, dir, id string) {
	t.Helper()
	if keys := blobtest.Keys(t, bucket, ""); len(keys) != 0 {
		t.Errorf("stored files left: %q", keys)
	}
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "jobs", id)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the job's folder: %v, want it gone", err)
		}
	}
	pending, err := st.PendingFileRemovals(context.Background(), time.Now().Add(time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 0 {
		t.Errorf("removals still recorded: %+v", pending)
	}
}

// storeJobFiles stores a job of two files as the workers leave it: one
// copy recorded, one a crash left unrecorded.
func storeJobFiles(t *testing.T, st store.Store, bucket *blob.Bucket, id string) {
	t.Helper()
	ctx := context.Background()
	createJob(t, st, id, "acme", "https://example.com/a.txt", "https://example.com/b.txt")
	for _, key := range []string{"jobs/" + id + "/0-f1", "jobs/" + id + "/1-f2"} {
		if err := bucket.WriteAll(ctx, key, []byte("confidential"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CreateFile(ctx, job.File{ID: "f1", AccountID: "acme", JobID: id, Key: "jobs/" + id + "/0-f1", Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

func TestTheSweepRemovesTheFilesOfADeleteThatDiedBeforeRemovingThem(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		forEachBucket(t, func(t *testing.T, bucket *blob.Bucket, dir string) {
			ctx := context.Background()
			storeJobFiles(t, st, bucket, "job-1")
			// The delete commits and its process dies before removing a file.
			if _, err := st.DeleteJob(ctx, "acme", "job-1"); err != nil {
				t.Fatal(err)
			}
			sweep := func(grace time.Duration) {
				t.Helper()
				w := &removalWorker{cfg: Config{StorageDir: dir, RemovalGrace: grace}.withDefaults(),
					deps: Deps{Store: st, Bucket: bucket, Logger: slog.New(slog.DiscardHandler)}}
				if err := w.Work(ctx, nil); err != nil {
					t.Fatalf("sweep: %v", err)
				}
			}

			sweep(time.Hour) // a fresh delete is its request's to finish
			if keys := blobtest.Keys(t, bucket, ""); len(keys) != 2 {
				t.Fatalf("a sweep within the grace removed files: %q left", keys)
			}

			// Something the listing does not show (a folder being written into)
			// keeps the job's folder: the record stays for the next sweep. An
			// s3:// bucket has no folders.
			if dir != "" {
				blocker := filepath.Join(dir, "jobs", "job-1", "being-written")
				if err := os.MkdirAll(blocker, 0o755); err != nil {
					t.Fatal(err)
				}
				sweep(time.Nanosecond)
				if pending, err := st.PendingFileRemovals(ctx, time.Now().Add(time.Hour), 10); err != nil || len(pending) != 1 {
					t.Fatalf("removals after a sweep that could not finish = %+v (%v), want the job's kept", pending, err)
				}
				if err := os.Remove(blocker); err != nil {
					t.Fatal(err)
				}
			}

			sweep(time.Nanosecond)
			wantNothingLeftOf(t, st, bucket, dir, "job-1")
		})
	})
}

func TestRetentionRemovesAnExpiredJobsFilesAndItsRecord(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		forEachBucket(t, func(t *testing.T, bucket *blob.Bucket, dir string) {
			ctx := context.Background()
			storeJobFiles(t, st, bucket, "job-1")
			if _, err := st.CancelJob(ctx, "acme", "job-1"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond) // ended before the cutoff
			w := &retentionWorker{cfg: Config{Retention: time.Nanosecond, StorageDir: dir},
				deps: Deps{Store: st, Bucket: bucket, Logger: slog.New(slog.DiscardHandler)}}
			if err := w.Work(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := st.GetJob(ctx, "", "job-1"); !errors.Is(err, job.ErrNotFound) {
				t.Fatalf("the expired job: %v, want it deleted", err)
			}
			wantNothingLeftOf(t, st, bucket, dir, "job-1")
		})
	})
}

// racingFetcher is the real fetcher, with a delete of the job let in at
// the moment the worker stores its copy.
type racingFetcher struct {
	*fetch.Fetcher
	beforeSave, afterSave func()
	savedErr              atomic.Pointer[error]
}

func (f *racingFetcher) Save(ctx context.Context, r fetch.Result) error {
	if f.beforeSave != nil {
		f.beforeSave()
	}
	err := f.Fetcher.Save(ctx, r)
	f.savedErr.CompareAndSwap(nil, &err)
	if f.afterSave != nil {
		f.afterSave()
	}
	return err
}

func TestADeleteRacingTheStoreOfAFileLeavesNothing(t *testing.T) {
	tests := []struct {
		name string
		race func(f *racingFetcher, del func(fastPath bool))
	}{
		// The request removed the job's files and its folder, then the
		// worker wrote its copy into a folder it made anew.
		{"the copy is written after the delete removed the job's files", func(f *racingFetcher, del func(bool)) {
			f.beforeSave = func() { del(true) }
		}},
		// The delete committed while the copy was written, and its process
		// died before removing anything.
		{"the copy is written while a delete that died commits", func(f *racingFetcher, del func(bool)) {
			f.afterSave = func() { del(false) }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, st store.Store) {
				forEachBucket(t, func(t *testing.T, bucket *blob.Bucket, dir string) {
					ctx := context.Background()
					src := textSource(t, "a confidential text")
					var ids atomic.Int64
					direct, err := fetch.New(fetch.Config{PublicURL: "http://docjobs.test"}, fetch.Deps{
						Client: outbound.NewClient(outbound.Config{AllowPrivate: true}), Bucket: bucket, Files: st,
						NewID: func() string { return "f" + strconv.FormatInt(ids.Add(1), 10) },
					})
					if err != nil {
						t.Fatal(err)
					}
					fetcher := &racingFetcher{Fetcher: direct}
					createJob(t, st, "job-1", "acme", src.URL+"/a.txt")
					j, err := st.GetJob(ctx, "", "job-1")
					if err != nil {
						t.Fatal(err)
					}
					tt.race(fetcher, func(fastPath bool) {
						keys, err := st.DeleteJob(ctx, "acme", "job-1")
						if err != nil {
							t.Error(err)
							return
						}
						if fastPath { // as DELETE /v1/jobs/{id} does
							if errs := fetch.RemoveDeletedJob(ctx, bucket, dir, st, "job-1", keys); len(errs) != 0 {
								t.Error(errs)
							}
						}
					})
					w := newFileWorker(Config{StorageDir: dir}.withDefaults(), Deps{Store: st, Fetcher: fetcher, Bucket: bucket,
						Convert: convert.New(convert.Config{}).Convert, Logger: slog.New(slog.DiscardHandler)})
					if err := workAttempt(w, j, 1); err != nil {
						t.Fatal(err)
					}
					if saved := fetcher.savedErr.Load(); saved == nil || *saved != nil {
						t.Fatalf("the copy was not written (%v): the race was not run", saved)
					}
					wantNothingLeftOf(t, st, bucket, dir, "job-1")
				})
			})
		})
	}
}

func TestAFileOfADeletedJobRemovesWhatAnEarlierAttemptStored(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		forEachBucket(t, func(t *testing.T, bucket *blob.Bucket, dir string) {
			ctx := context.Background()
			createJob(t, st, "job-1", "acme", "https://example.com/a.txt")
			if _, err := st.DeleteJob(ctx, "acme", "job-1"); err != nil {
				t.Fatal(err)
			}
			// An attempt stored its copy after the delete, then its process died.
			if err := bucket.WriteAll(ctx, "jobs/job-1/0-f9", []byte("confidential"), nil); err != nil {
				t.Fatal(err)
			}
			w := newFileWorker(Config{StorageDir: dir}.withDefaults(), Deps{Store: st, Bucket: bucket, Logger: slog.New(slog.DiscardHandler)})
			if err := workAttempt(w, &job.Job{ID: "job-1"}, 2); err != nil {
				t.Fatal(err)
			}
			wantNothingLeftOf(t, st, bucket, dir, "job-1")
		})
	})
}
