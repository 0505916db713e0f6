package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/riverqueue/river"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// createAtLimit creates j under MaxActiveJobs limit and returns the error.
func createAtLimit(t *testing.T, s Store, j *job.Job, limit int, enqueue ...river.InsertManyParams) (*job.Job, bool, error) {
	t.Helper()
	return s.CreateJob(ctx(t), store.CreateJobParams{Job: j, MaxActiveJobs: limit, Enqueue: enqueue})
}

func testActiveJobsLimit(t *testing.T, s Store) {
	const limit = 3
	var ids []string
	for i := range limit {
		j := newJob("alice", 1)
		_, _, err := createAtLimit(t, s, j, limit, parked(fmt.Sprint("admitted ", i)))
		noErr(t, fmt.Sprintf("create %d of %d", i+1, limit), err)
		ids = append(ids, j.ID)
	}
	// A running job is active as a new one is.
	noErr(t, "MarkRunning", s.MarkRunning(ctx(t), ids[0]))

	refused := newJob("alice", 2)
	_, _, err := createAtLimit(t, s, refused, limit, parked("refused"))
	isErr(t, "the create past the limit", err, store.ErrActiveJobsLimit)
	_, err = s.GetJob(ctx(t), "", refused.ID)
	isErr(t, "the refused job", err, store.ErrNotFound)
	equal(t, "River jobs (the refused create inserts none)", len(parkedNotes(t, s)), limit)

	t.Run("another account is unaffected", func(t *testing.T) {
		_, _, err := createAtLimit(t, s, newJob("bob", 1), limit)
		noErr(t, "bob's create", err)
	})
	t.Run("without a limit the active jobs are not counted", func(t *testing.T) {
		createJob(t, s, newJob("carol", 1), store.CreateJobParams{})
		createJob(t, s, newJob("carol", 1), store.CreateJobParams{})
		_, _, err := createAtLimit(t, s, newJob("carol", 1), 2)
		isErr(t, "carol's create under a limit of 2", err, store.ErrActiveJobsLimit)
	})
	t.Run("a job that ends makes room", func(t *testing.T) {
		_, err := s.CancelJob(ctx(t), "alice", ids[0])
		noErr(t, "CancelJob", err)
		_, _, err = createAtLimit(t, s, newJob("alice", 1), limit)
		noErr(t, "the create after a job ended", err)
		_, _, err = createAtLimit(t, s, newJob("alice", 1), limit)
		isErr(t, "the next create", err, store.ErrActiveJobsLimit)
	})
}

func testActiveJobsLimitReplay(t *testing.T, s Store) {
	const limit = 2
	first := newJob("alice", 1)
	first.IdempotencyKey = "k"
	_, _, err := createAtLimit(t, s, first, limit, parked("first"))
	noErr(t, "first create", err)
	_, _, err = createAtLimit(t, s, newJob("alice", 1), limit, parked("second"))
	noErr(t, "second create", err)

	t.Run("a replay at the limit returns the original job", func(t *testing.T) {
		again := newJob("alice", 1)
		again.IdempotencyKey = "k"
		got, replayed, err := createAtLimit(t, s, again, limit, parked("replay"))
		noErr(t, "replay", err)
		if !replayed || got.ID != first.ID {
			t.Errorf("replayed = %v, id = %s; want true, %s", replayed, got.ID, first.ID)
		}
	})
	t.Run("a reused key with other parameters is still a mismatch", func(t *testing.T) {
		other := newJob("alice", 1)
		other.IdempotencyKey, other.RequestHash = "k", "hash-2"
		_, _, err := createAtLimit(t, s, other, limit)
		isErr(t, "mismatch", err, store.ErrIdempotencyMismatch)
	})
	t.Run("a new key at the limit is refused", func(t *testing.T) {
		fresh := newJob("alice", 1)
		fresh.IdempotencyKey = "k2"
		_, _, err := createAtLimit(t, s, fresh, limit)
		isErr(t, "new key", err, store.ErrActiveJobsLimit)
	})
	equal(t, "River jobs", parkedNotes(t, s), []string{"first", "second"})
}

// Creates racing for the last places never pass the limit together: the
// count and the insert run under one lock per account.
func testConcurrentCreatesAtTheLimit(t *testing.T, s Store) {
	for round, tt := range []struct {
		limit, before, racing int
	}{
		{limit: 5, before: 4, racing: 2},   // two creates at limit-1
		{limit: 5, before: 4, racing: 16},  // many at limit-1
		{limit: 10, before: 0, racing: 30}, // from empty
	} {
		t.Run(fmt.Sprintf("limit %d, %d active, %d racing", tt.limit, tt.before, tt.racing), func(t *testing.T) {
			account := fmt.Sprint("acct-", round)
			for range tt.before {
				_, _, err := createAtLimit(t, s, newJob(account, 1), tt.limit)
				noErr(t, "create before the race", err)
			}
			var (
				wg               sync.WaitGroup
				mu               sync.Mutex
				admitted, denied int
			)
			start := make(chan struct{})
			for range tt.racing {
				wg.Go(func() {
					<-start
					_, _, err := createAtLimit(t, s, newJob(account, 1), tt.limit)
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						admitted++
					case errors.Is(err, store.ErrActiveJobsLimit):
						denied++
					default:
						t.Errorf("racing create: %v", err)
					}
				})
			}
			close(start)
			wg.Wait()
			equal(t, "admitted", admitted, tt.limit-tt.before)
			equal(t, "denied", denied, tt.racing-(tt.limit-tt.before))
			page, err := s.ListJobs(ctx(t), store.ListParams{AccountID: account, PageSize: 100})
			noErr(t, "ListJobs", err)
			equal(t, "jobs stored", len(page.Jobs), tt.limit)
		})
	}
}

func testUploadQuota(t *testing.T, s Store) {
	const quota = 100
	upload := func(account string, size int64) job.File {
		return job.File{ID: newID("file"), AccountID: account, Name: "u.bin", Size: size, Key: "uploads/" + account + "/" + newID("k")}
	}
	bytesOf := func(account string) int64 {
		t.Helper()
		n, err := s.UploadBytes(ctx(t), account)
		noErr(t, "UploadBytes", err)
		return n
	}
	equal(t, "UploadBytes of an account with none", bytesOf("alice"), 0)

	first := upload("alice", 60)
	noErr(t, "an upload under the quota", s.CreateUpload(ctx(t), first, quota))
	big := upload("alice", 41)
	isErr(t, "an upload past the quota", s.CreateUpload(ctx(t), big, quota), store.ErrUploadQuota)
	_, err := s.GetFile(ctx(t), "", big.ID)
	isErr(t, "the refused upload's record", err, store.ErrNotFound)
	noErr(t, "an upload reaching the quota exactly", s.CreateUpload(ctx(t), upload("alice", 40), quota))
	equal(t, "UploadBytes at the quota", bytesOf("alice"), quota)

	// Job copies go with their job and do not count.
	j := newJob("alice", 1)
	createJob(t, s, j, store.CreateJobParams{})
	noErr(t, "a job's copy", s.CreateFile(ctx(t), job.File{ID: newID("file"), AccountID: "alice", JobID: j.ID, Size: 500, Key: "jobs/x"}))
	equal(t, "UploadBytes with a job copy", bytesOf("alice"), quota)
	if err := s.CreateUpload(ctx(t), job.File{ID: newID("file"), AccountID: "alice", JobID: j.ID, Key: "jobs/y"}, quota); err == nil {
		t.Error("CreateUpload of a job's copy succeeded")
	}

	noErr(t, "another account's upload", s.CreateUpload(ctx(t), upload("bob", quota), quota))
	noErr(t, "any upload without a quota", s.CreateUpload(ctx(t), upload("alice", 1<<40), 0))
	noErr(t, "DeleteUpload", s.DeleteUpload(ctx(t), "alice", first.ID))
	equal(t, "UploadBytes after a delete", bytesOf("alice"), 40+(1<<40))
}

func testConcurrentUploadsAtTheQuota(t *testing.T, s Store) {
	const (
		quota  = 55
		size   = 10
		racing = 50
	)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		admitted int
	)
	start := make(chan struct{})
	for range racing {
		wg.Go(func() {
			<-start
			f := job.File{ID: newID("file"), AccountID: "alice", Size: size, Key: "uploads/alice/" + newID("k")}
			err := s.CreateUpload(ctx(t), f, quota)
			if err != nil && !errors.Is(err, store.ErrUploadQuota) {
				t.Errorf("racing upload: %v", err)
			}
			if err == nil {
				mu.Lock()
				admitted++
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	equal(t, "admitted", admitted, quota/size)
	n, err := s.UploadBytes(ctx(t), "alice")
	noErr(t, "UploadBytes", err)
	equal(t, "bytes stored", n, int64(quota/size*size))
}
