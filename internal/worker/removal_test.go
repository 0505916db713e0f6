package worker

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
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

// documentKeys lists the keys of the bucket but the storage's owner
// marker (StorageOwnerKey), which the sweep writes.
func documentKeys(t *testing.T, bucket *blob.Bucket) []string {
	t.Helper()
	return slices.DeleteFunc(blobtest.Keys(t, bucket, ""), func(k string) bool { return k == StorageOwnerKey })
}

// wantNothingLeftOf fails unless job id has no stored file, no folder in
// dir (a file:// bucket's; "" for s3://) and no removal record.
func wantNothingLeftOf(t *testing.T, st Store, bucket *blob.Bucket, dir, id string) {
	t.Helper()
	if keys := documentKeys(t, bucket); len(keys) != 0 {
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
			if keys := documentKeys(t, bucket); len(keys) != 2 {
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

// sweepAt runs a removal sweep as a fresh process's first, its clock at now.
func sweepAt(t *testing.T, st Store, bucket *blob.Bucket, dir string, now time.Time) {
	t.Helper()
	w := &removalWorker{cfg: Config{StorageDir: dir}.withDefaults(), now: func() time.Time { return now },
		deps: Deps{Store: st, Bucket: bucket, Logger: slog.New(slog.DiscardHandler)}}
	if err := w.Work(context.Background(), nil); err != nil {
		t.Fatalf("sweep: %v", err)
	}
}

// stage starts a write of key to a file:// bucket and leaves it as a crash
// does, staged under fileblob's name for it, last written at mtime; the
// staged file's path is returned.
func stage(t *testing.T, bucket *blob.Bucket, dir, key string, mtime time.Time) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	// A content type opens the file at once (else the first 512 bytes
	// wait to be sniffed).
	w, err := bucket.NewWriter(ctx, key, &blob.WriterOptions{ContentType: "application/pdf"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = w.Close() })
	if _, err := w.Write([]byte("the first part of a user's document")); err != nil {
		t.Fatal(err)
	}
	staged, err := filepath.Glob(filepath.Join(dir, filepath.FromSlash(key)) + ".*.tmp")
	if err != nil || len(staged) != 1 {
		t.Fatalf("staged files of %s: %v (%v), want one", key, staged, err)
	}
	if err := os.Chtimes(staged[0], mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return staged[0]
}

// A partial upload a crash cut off (fileblob's <key>.<hex>.tmp) is named by
// no record: the sweep removes it once nothing has written to it for an
// hour, and its account's folder if that leaves it empty. One still being
// written, stored uploads and a job's staged copies (which go with their
// job) stay.
func TestTheSweepRemovesAPartialUploadACrashCutOff(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		bucket, dir := fileBucket(t)
		now := time.Now()
		cut := stage(t, bucket, dir, "uploads/acme/u1", now.Add(-2*time.Hour))
		writing := stage(t, bucket, dir, "uploads/bob/u2", now.Add(-time.Minute))
		jobs := stage(t, bucket, dir, "jobs/job-1/0-f1", now.Add(-2*time.Hour))
		if err := bucket.WriteAll(context.Background(), "uploads/carol/u3", []byte("stored"), nil); err != nil {
			t.Fatal(err)
		}
		old := now.Add(-48 * time.Hour)
		if err := os.Chtimes(filepath.Join(dir, "uploads", "carol", "u3"), old, old); err != nil {
			t.Fatal(err)
		}

		sweepAt(t, st, bucket, dir, now)
		if _, err := os.Stat(cut); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the partial upload untouched for 2h: %v, want it removed", err)
		}
		if _, err := os.Stat(filepath.Join(dir, "uploads", "acme")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("acme's upload folder: %v, want it removed once empty", err)
		}
		for _, kept := range []string{writing, jobs, filepath.Join(dir, "uploads", "carol", "u3")} {
			if _, err := os.Stat(kept); err != nil {
				t.Errorf("%s: %v, want it kept", kept, err)
			}
		}
	})
}

// Listing uploads/ is not free: a process looks for staged writes once an
// hour, not at every (minutely) removal sweep.
func TestTheSweepLooksForPartialUploadsOnceAnHour(t *testing.T) {
	st := openStore(t)
	bucket, dir := fileBucket(t)
	clock := time.Now()
	w := &removalWorker{cfg: Config{StorageDir: dir}.withDefaults(), now: func() time.Time { return clock },
		deps: Deps{Store: st, Bucket: bucket, Logger: slog.New(slog.DiscardHandler)}}
	sweep := func() {
		t.Helper()
		if err := w.Work(context.Background(), nil); err != nil {
			t.Fatalf("sweep: %v", err)
		}
	}
	sweep()
	cut := stage(t, bucket, dir, "uploads/acme/u1", clock.Add(-2*time.Hour))
	clock = clock.Add(59 * time.Minute)
	sweep()
	if _, err := os.Stat(cut); err != nil {
		t.Fatalf("a sweep 59 minutes after the last look: %v, want the partial upload left to the next look", err)
	}
	clock = clock.Add(time.Minute)
	sweep()
	if _, err := os.Stat(cut); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a sweep an hour after the last look: %v, want the partial upload removed", err)
	}
}

// multipartUploads lists the unfinished multipart uploads of the test's
// S3 bucket by key.
func multipartUploads(t *testing.T, client *s3.Client) []string {
	t.Helper()
	out, err := client.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String("docjobs")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, u := range out.Uploads {
		keys = append(keys, aws.ToString(u.Key))
	}
	slices.Sort(keys)
	return keys
}

// An s3:// write past 16 MiB is a multipart upload, unseen by listings and
// billed until completed or aborted: the sweep aborts those of the
// service's prefixes begun over a day ago (a process killed mid-upload or
// mid-download), and leaves younger ones and other prefixes alone.
func TestTheSweepAbortsMultipartUploadsACrashLeft(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		bucket, _ := s3Bucket(t)
		var client *s3.Client
		if !bucket.As(&client) {
			t.Fatal("no S3 client behind the bucket")
		}
		ctx := context.Background()
		for _, key := range []string{"uploads/acme/u1", "jobs/job-1/0-f1", "elsewhere/x"} {
			up, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("docjobs"), Key: aws.String(key)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := client.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("docjobs"), Key: aws.String(key),
				UploadId: up.UploadId, PartNumber: aws.Int32(1), Body: strings.NewReader("the first part of a user's document")}); err != nil {
				t.Fatal(err)
			}
		}
		all := []string{"elsewhere/x", "jobs/job-1/0-f1", "uploads/acme/u1"}

		sweepAt(t, st, bucket, "", time.Now().Add(time.Hour))
		if got := multipartUploads(t, client); !slices.Equal(got, all) {
			t.Errorf("after a sweep an hour on: %q, want all kept %q", got, all)
		}
		sweepAt(t, st, bucket, "", time.Now().Add(25*time.Hour))
		if got := multipartUploads(t, client); !slices.Equal(got, []string{"elsewhere/x"}) {
			t.Errorf("after a sweep a day on: %q, want only elsewhere/x kept", got)
		}
	})
}

// Under a storage URL's prefix=… the service owns only its prefix: the
// sweep leaves the multipart uploads of the rest of the bucket alone.
func TestTheSweepAbortsOnlyTheMultipartUploadsOfItsPrefix(t *testing.T) {
	whole, _ := s3Bucket(t)
	var client *s3.Client
	if !whole.As(&client) {
		t.Fatal("no S3 client behind the bucket")
	}
	ctx := context.Background()
	for _, key := range []string{"svc/uploads/acme/u1", "uploads/acme/u1"} {
		if _, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("docjobs"), Key: aws.String(key)}); err != nil {
			t.Fatal(err)
		}
	}
	sweepAt(t, openStore(t), blob.PrefixedBucket(whole, "svc/"), "", time.Now().Add(25*time.Hour))
	if got := multipartUploads(t, client); !slices.Equal(got, []string{"uploads/acme/u1"}) {
		t.Errorf("after a sweep of svc/ a day on: %q, want only the upload outside svc/ kept", got)
	}
}
