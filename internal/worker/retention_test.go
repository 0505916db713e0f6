package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
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

// expireMany stores n uploads made two hours ago and n cancelled jobs,
// each with a stored copy; upload keys end with suffix.
func expireMany(t *testing.T, st store.Store, bucket *blob.Bucket, n int, suffix string) {
	t.Helper()
	ctx := context.Background()
	old := time.Now().UTC().Add(-2 * time.Hour)
	for i := range n {
		up := job.File{ID: fmt.Sprintf("up-%d", i), AccountID: "acme", Key: fmt.Sprintf("uploads/acme/up-%d%s", i, suffix), Created: old}
		if err := st.CreateFile(ctx, up); err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("job-%d", i)
		j := &job.Job{ID: id, AccountID: "acme", Status: job.StatusNew, SourceURLs: []string{"http://x/a"}, RequestHash: "h", Created: old}
		if _, _, err := st.CreateJob(ctx, store.CreateJobParams{Job: j}); err != nil {
			t.Fatal(err)
		}
		cp := job.File{ID: "copy-" + id, AccountID: "acme", JobID: id, Key: "jobs/" + id + "/0-a"}
		if err := bucket.WriteAll(ctx, cp.Key, []byte("confidential"), nil); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateFile(ctx, cp); err != nil {
			t.Fatal(err)
		}
		if _, err := st.CancelJob(ctx, "acme", id); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Millisecond) // ended before the cutoff
}

// A sweep takes batch after batch while they come back full: with one
// batch (500) of each per sweep, every 10 minutes at most, retention kept
// up with no more than 3,000 jobs and 3,000 uploads an hour, and past that
// the backlog, and what it keeps past the retention, only grew.
func TestRetentionTakesEveryExpiredJobAndUploadOfABacklogInOneSweep(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	bucket, dir := fileBucket(t)
	const n = 2*sweepBatch + 100
	expireMany(t, st, bucket, n, "")

	// The budget of an hour's retention and more (a millisecond's is a
	// second, which a loaded machine may need for this backlog).
	w := &retentionWorker{cfg: Config{Retention: time.Millisecond, StorageDir: dir}, budget: retentionBudget,
		deps: Deps{Store: st, Bucket: bucket, Logger: slog.New(slog.DiscardHandler)}}
	start := time.Now()
	if err := w.Work(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d jobs and %d uploads in %v", n, n, time.Since(start))
	if left, err := st.ExpiredJobs(ctx, time.Now(), 10*n); err != nil || len(left) != 0 {
		t.Errorf("expired jobs left after one sweep: %d (%v), want 0", len(left), err)
	}
	if left, err := st.ExpiredUploads(ctx, time.Now(), 10*n); err != nil || len(left) != 0 {
		t.Errorf("expired uploads left after one sweep: %d (%v), want 0", len(left), err)
	}
	if keys := documentKeys(t, bucket); len(keys) != 0 {
		t.Errorf("stored files left: %d, want none", len(keys))
	}
}

// errorCount counts the records logged at ERROR.
type errorCount struct{ n atomic.Int64 }

func (c *errorCount) Enabled(context.Context, slog.Level) bool { return true }
func (c *errorCount) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		c.n.Add(1)
	}
	return nil
}
func (c *errorCount) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *errorCount) WithGroup(string) slog.Handler      { return c }

// A batch of uploads whose bytes the storage refuses ends the sweep's
// uploads: the same batch is not asked again for the rest of the budget.
// (fileblob refuses any key ending in .attrs, its sidecars' suffix.)
func TestRetentionDoesNotAskAgainForUploadsTheStorageRefused(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	bucket, dir := fileBucket(t)
	expireMany(t, st, bucket, sweepBatch+100, ".attrs")

	errs := &errorCount{}
	// An hour's retention: a sweep's budget of 30 s (its jobs, ended
	// just now, are not expired).
	w := &retentionWorker{cfg: Config{Retention: time.Hour, StorageDir: dir},
		deps: Deps{Store: st, Bucket: bucket, Logger: slog.New(errs)}}
	start := time.Now()
	if err := w.Work(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the sweep took %v", took)
	}
	if n := errs.n.Load(); n != sweepBatch {
		t.Errorf("refused deletes logged: %d, want %d (one batch)", n, sweepBatch)
	}
	if left, err := st.ExpiredUploads(ctx, time.Now(), 10*sweepBatch); err != nil || len(left) != sweepBatch+100 {
		t.Errorf("expired uploads kept: %d (%v), want all %d", len(left), err, sweepBatch+100)
	}
}

// A sweep stops at its budget, before the next job or upload, and leaves
// the rest to the next sweeps; while both kinds have more, jobs take half
// of what is left, so uploads are deleted in the same sweep. The sweep's
// clock moves a step at each read, so the budget holds the same number of
// jobs and uploads however fast the machine is (a real 500 ms deleted
// nothing on a loaded one).
func TestRetentionStopsAtItsBudgetAndGivesUploadsTheirTurn(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	bucket, dir := fileBucket(t)
	const n = 2*sweepBatch + 100
	// The clock is read once before each job and upload, and a few times
	// per turn: 600 steps are some of each, short of the 1100 of each.
	const step, steps = time.Millisecond, 600
	const budget = steps * step
	expireMany(t, st, bucket, n, "")

	clock := &steppedClock{at: time.Now(), step: step}
	w := &retentionWorker{cfg: Config{Retention: time.Millisecond, StorageDir: dir}, budget: budget, now: clock.now,
		deps: Deps{Store: st, Bucket: bucket, Logger: slog.New(slog.DiscardHandler)}}
	left := func() (jobs, uploads int) {
		t.Helper()
		j, err := st.ExpiredJobs(ctx, time.Now(), 10*n)
		if err != nil {
			t.Fatal(err)
		}
		u, err := st.ExpiredUploads(ctx, time.Now(), 10*n)
		if err != nil {
			t.Fatal(err)
		}
		return len(j), len(u)
	}
	if err := w.Work(ctx, nil); err != nil {
		t.Fatal(err)
	}
	jobs, uploads := left()
	t.Logf("one sweep of %d steps: %d reads of the clock, %d jobs and %d uploads left of %d", steps, clock.reads(), jobs, uploads, n)
	if jobs == n || uploads == n {
		t.Errorf("left after one sweep: %d jobs, %d uploads of %d: want some of each deleted", jobs, uploads, n)
	}
	// Each job and upload deleted took a read within the budget: more
	// would be work past it. Jobs had half of it while uploads waited.
	if deleted := 2*n - jobs - uploads; deleted > steps {
		t.Errorf("one sweep of %d steps deleted %d jobs and uploads: it went on past its budget", steps, deleted)
	}
	if deleted := n - jobs; deleted > steps/2 {
		t.Errorf("one sweep of %d steps deleted %d jobs: more than half of it while uploads had more", steps, deleted)
	}
	if jobs == 0 && uploads == 0 {
		t.Errorf("one sweep of %d steps deleted all %d jobs and %d uploads: want the rest left to the next sweeps", steps, n, n)
	}
	// Every sweep makes progress until none is left.
	for sweeps := 1; jobs+uploads > 0; sweeps++ {
		if err := w.Work(ctx, nil); err != nil {
			t.Fatal(err)
		}
		j, u := left()
		if j+u >= jobs+uploads {
			t.Fatalf("sweep %d deleted nothing: %d jobs and %d uploads left", sweeps+1, j, u)
		}
		jobs, uploads = j, u
	}
}

// steppedClock is a clock that moves by step at each read.
type steppedClock struct {
	mu   sync.Mutex
	at   time.Time
	step time.Duration
	n    int
}

func (c *steppedClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = c.at.Add(c.step)
	c.n++
	return c.at
}

func (c *steppedClock) reads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
