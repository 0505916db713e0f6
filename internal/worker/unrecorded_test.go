package worker

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"gocloud.dev/blob"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/s3test"
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
	forEachStoreAndBucket(t, func(t *testing.T, st store.Store, bucket *blob.Bucket, dir string) {
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
}

// The sweep reads accounts first and lists each one's uploads, looking
// ids up a batch at a time across accounts: orphans in any account, past
// the first batch, and in the folder of an account whose name is escaped
// in its key (api.StoreUpload) are removed, recorded uploads of every
// account stay, on file:// and S3.
func TestTheSweepFindsUnrecordedUploadsInEveryAccount(t *testing.T) {
	forEachBucket(t, func(t *testing.T, bucket *blob.Bucket, dir string) {
		ctx := context.Background()
		st := openStore(t)
		if _, err := ClaimStorage(ctx, st, bucket); err != nil {
			t.Fatal(err)
		}
		var kept, orphans []string
		accounts := []string{"acme", "bob", url.PathEscape("carol smith"), "dave"}
		for i := range unrecordedBatch + 200 {
			acct := accounts[i%len(accounts)]
			id := newFileID()
			key := "uploads/" + acct + "/" + id
			putDocument(t, bucket, key)
			if i%97 == 0 {
				orphans = append(orphans, key)
				continue
			}
			kept = append(kept, key)
			name, err := url.PathUnescape(acct)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.CreateUpload(ctx, job.File{ID: id, AccountID: name, Name: "a.txt", Size: 34,
				Key: key, Created: time.Now()}, 0); err != nil {
				t.Fatal(err)
			}
		}
		sweepAt(t, st, bucket, dir, time.Now().Add(2*time.Hour))
		slices.Sort(kept)
		if got := documentKeys(t, bucket); !slices.Equal(got, kept) {
			t.Errorf("after the sweep %d keys, want the %d recorded kept and the %d orphans %q removed",
				len(got), len(kept), len(orphans), orphans)
		}
	})
}

// What a storage held before this database claimed it, and everything in
// a storage another database claimed, is not this database's to judge:
// two deployments sharing one storage would otherwise delete each other's
// uploads and job copies.
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
			theirs, theirJob := "uploads/acme/"+newFileID(), "jobs/"+newFileID()+"/0-x"
			putDocument(t, bucket, theirs)
			putDocument(t, bucket, theirJob)
			sweepAt(t, st, bucket, dir, time.Now().Add(2*time.Hour))
			if got := documentKeys(t, bucket); !slices.Equal(got, []string{theirJob, theirs}) {
				t.Errorf("after the sweep: %q, want the other database's upload and job copy kept", got)
			}
		})
	})
	t.Run("written before the claim", func(t *testing.T) {
		bucket, dir := fileBucket(t)
		before, beforeJob := "uploads/acme/"+newFileID(), "jobs/"+newFileID()+"/0-x"
		old := time.Now().Add(-3 * time.Hour)
		for _, k := range []string{before, beforeJob} {
			putDocument(t, bucket, k)
			if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(k)), old, old); err != nil {
				t.Fatal(err)
			}
		}
		st := openStore(t)
		sweepAt(t, st, bucket, dir, time.Now().Add(2*time.Hour))
		if got := documentKeys(t, bucket); !slices.Equal(got, []string{beforeJob, before}) {
			t.Errorf("after the sweep: %q, want the upload and job copy older than the claim kept", got)
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

// What is stored under jobs/<id>/ goes with its job (a delete, retention,
// a removal the sweep finishes). For a job id the database does not know,
// what a reset database's jobs or a crash after a delete left, nothing
// else would ever remove it: the sweep removes it an hour on, with its
// folder. A job's files, a deleted job's whose removal is pending, younger
// ones and keys not of a job's layout stay, on file:// and S3.
func TestTheSweepRemovesTheFilesOfAJobNoRecordNames(t *testing.T) {
	forEachStoreAndBucket(t, func(t *testing.T, st store.Store, bucket *blob.Bucket, dir string) {
		ctx := context.Background()
		if _, err := ClaimStorage(ctx, st, bucket); err != nil {
			t.Fatal(err)
		}
		live, pending, unknown := newFileID(), newFileID(), newFileID()
		createJob(t, st, live, "acme", "https://example.com/a.txt")
		createJob(t, st, pending, "acme", "https://example.com/a.txt")
		if _, err := st.DeleteJob(ctx, "acme", pending); err != nil {
			t.Fatal(err)
		}
		orphans := []string{"jobs/" + unknown + "/0-" + newFileID(), "jobs/" + unknown + "/src-0123456789abcdef0123456789abcdef"}
		kept := []string{
			"jobs/" + live + "/0-" + newFileID(),
			"jobs/" + pending + "/0-" + newFileID(),
			"jobs/job-1/0-" + newFileID(),
			"jobs/" + newFileID(),
			"jobs/" + strings.ToUpper(newFileID()) + "/0-x",
			"elsewhere/" + unknown + "/0-x",
		}
		for _, k := range append(slices.Clone(orphans), kept...) {
			putDocument(t, bucket, k)
		}
		all := append(slices.Clone(orphans), kept...)
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
			if _, err := os.Stat(filepath.Join(dir, "jobs", unknown)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the unknown job's folder: %v, want it removed once empty", err)
			}
		}
	})
}

// A process must stop writing to a storage another database has claimed
// (its sweep deletes what its records do not name): the guard's check
// tells a lost storage from one it cannot reach, which is no loss, and
// claims a storage whose marker was deleted again.
func TestTheStorageGuardTellsALostStorageFromOneItCannotReach(t *testing.T) {
	forEachBucket(t, func(t *testing.T, bucket *blob.Bucket, dir string) {
		ctx := context.Background()
		st := openStore(t)
		lost := make(chan error, 1)
		guard, err := GuardStorage(ctx, StorageGuardConfig{Keys: st, Bucket: bucket, Every: 10 * time.Millisecond,
			Lost: func(err error) { lost <- err }})
		if err != nil {
			t.Fatal(err)
		}
		ours, err := bucket.ReadAll(ctx, StorageOwnerKey)
		if err != nil {
			t.Fatal(err)
		}
		if err := guard.Check(ctx); err != nil {
			t.Errorf("check of its own storage: %v", err)
		}

		// The marker deleted: claimed again, and still ours.
		if err := bucket.Delete(ctx, StorageOwnerKey); err != nil {
			t.Fatal(err)
		}
		if err := guard.Check(ctx); err != nil {
			t.Errorf("check of a storage whose marker was deleted: %v", err)
		}
		if again, err := bucket.ReadAll(ctx, StorageOwnerKey); err != nil || string(again) != string(ours) {
			t.Errorf("the marker after the check: %q, %v; want %q again", again, err, ours)
		}

		// The storage cannot be reached: no loss, and Run goes on.
		unreachable := unreachableStorage(t, ours, dir, func(err error) { lost <- err })
		if err := unreachable.Check(ctx); err == nil || errors.Is(err, ErrStorageOwned) {
			t.Errorf("check of a storage it cannot reach = %v, want an error other than ErrStorageOwned", err)
		}
		runCtx, stop := context.WithCancel(ctx)
		ran := make(chan struct{})
		go func() { defer close(ran); unreachable.Run(runCtx) }()
		select {
		case err := <-lost:
			t.Errorf("Lost(%v) for a storage it cannot reach", err)
		case <-time.After(200 * time.Millisecond):
		}
		stop()
		<-ran

		// Another database claimed it: Run calls Lost and returns.
		if err := bucket.WriteAll(ctx, StorageOwnerKey, []byte("0123456789abcdef0123456789abcdef"), nil); err != nil {
			t.Fatal(err)
		}
		if err := guard.Check(ctx); !errors.Is(err, ErrStorageOwned) {
			t.Errorf("check of a storage another database claimed = %v, want ErrStorageOwned", err)
		}
		ran = make(chan struct{})
		go func() { defer close(ran); guard.Run(ctx) }()
		select {
		case err := <-lost:
			if !errors.Is(err, ErrStorageOwned) {
				t.Errorf("Lost(%v), want ErrStorageOwned", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Lost was not called for a storage another database claimed")
		}
		<-ran
	})
}

// A storage whose reads take longer than the guard's interval (a distant
// bucket; a loaded machine, in tests that check every few milliseconds)
// is still watched: each check's read was given Every to finish, was cut
// off every time, and the guard never learnt that another database had
// claimed the storage.
func TestTheStorageGuardLearnsOfALossOnAStorageSlowerThanItsChecks(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t)
	direct, err := blob.OpenBucket(ctx, srv.Bucket(t, "docjobs"))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	slow := slowS3Bucket(t, srv, "docjobs", 50*time.Millisecond)
	lost := make(chan error, 1)
	guard, err := GuardStorage(ctx, StorageGuardConfig{Keys: openStore(t), Bucket: slow, Every: 10 * time.Millisecond,
		Lost: func(err error) { lost <- err }})
	if err != nil {
		t.Fatal(err)
	}
	if err := direct.WriteAll(ctx, StorageOwnerKey, []byte("0123456789abcdef0123456789abcdef"), nil); err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	runCtx, stop := context.WithCancel(ctx)
	defer func() { stop(); <-ran }()
	go func() { defer close(ran); guard.Run(runCtx) }()
	select {
	case err := <-lost:
		if !errors.Is(err, ErrStorageOwned) {
			t.Errorf("Lost(%v), want ErrStorageOwned", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Lost was not called for a slow storage another database claimed")
	}
}

// slowS3Bucket opens bucket of srv through a proxy that holds each
// request for delay before passing it on. The proxy keeps the Host the
// client signed, so the gateway accepts the signatures.
func slowS3Bucket(t *testing.T, srv *s3test.Server, bucket string, delay time.Duration) *blob.Bucket {
	t.Helper()
	target, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	q := url.Values{"endpoint": {front.URL}, "region": {s3test.Region}, "use_path_style": {"true"}}
	b, err := blob.OpenBucket(context.Background(), "s3://"+bucket+"?"+q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// unreachableStorage is a guard of the same database (ours) on a storage
// it cannot reach: on file:// a directory that became a file (a mount gone
// bad), on S3 an endpoint where nothing listens.
func unreachableStorage(t *testing.T, ours []byte, dir string, lost func(error)) *StorageGuard {
	t.Helper()
	var b *blob.Bucket
	if dir != "" {
		b, dir = fileBucket(t)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dir, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	} else {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if b, err = blob.OpenBucket(context.Background(), "s3://docjobs?endpoint=http://"+addr+"&region=us-east-1&use_path_style=true"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
	}
	return &StorageGuard{cfg: StorageGuardConfig{Bucket: b, Every: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
		Lost: lost}, ours: ours}
}
