package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/fetch"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/sqlite"
)

// markingStore is a real store that counts MarkRunning calls and holds
// the first one until hold returns.
type markingStore struct {
	*sqlite.Store
	calls atomic.Int64
	hold  func()
}

func (s *markingStore) MarkRunning(ctx context.Context, jobID string) error {
	if s.calls.Add(1) == 1 && s.hold != nil {
		s.hold()
	}
	return s.Store.MarkRunning(ctx, jobID)
}

// filesFetcher is a savingFetcher whose files are apart.
type filesFetcher struct{ *savingFetcher }

func (f filesFetcher) Fetch(ctx context.Context, accountID, jobID string, i int, url string) (fetch.Result, error) {
	r, err := f.savingFetcher.Fetch(ctx, accountID, jobID, i, url)
	id := fmt.Sprintf("f%d", i)
	r.URL, r.Key = "http://dj/v1/files/"+id, fmt.Sprintf("jobs/%s/%d-%s", jobID, i, id)
	file := *r.File
	file.ID, file.Key = id, r.Key
	r.File = &file
	return r, err
}

// eventually polls cond until it holds or a few seconds have passed.
func eventually(cond func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}

func TestTheFilesOfAJobStartingTogetherMarkItRunningOnce(t *testing.T) {
	const files = 5
	chat := &sendingChat{release: make(chan struct{})}
	close(chat.release)
	source := filesFetcher{&savingFetcher{data: "one two three four five six"}}
	st := &markingStore{Store: openStore(t)}
	j := &job.Job{ID: "job-1", AccountID: "a", Status: job.StatusNew, Prompts: []string{"extract"},
		ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", Created: time.Now()}
	for i := range files {
		j.SourceURLs = append(j.SourceURLs, fmt.Sprintf("https://example.com/%d.txt", i))
	}
	if _, _, err := st.CreateJob(context.Background(), store.CreateJobParams{Job: j}); err != nil {
		t.Fatal(err)
	}
	w := textFileWorker(st, source, chat)
	// The first mark is held until the other files wait for it, as they do
	// when River starts a job's files at once.
	st.hold = func() { eventually(func() bool { return w.marks.waiting(j.ID) == files-1 }) }

	errs := make([]error, files)
	var wg sync.WaitGroup
	for i := range files {
		wg.Go(func() {
			errs[i] = w.Work(context.Background(), &river.Job[FileArgs]{
				JobRow: &rivertype.JobRow{Attempt: 1, MaxAttempts: 5}, Args: FileArgs{JobID: j.ID, FileIndex: i}})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if n := st.calls.Load(); n != 1 {
		t.Errorf("MarkRunning called %d times for %d files starting together, want once", n, files)
	}
	if got := getJobStatus(t, st.Store, j.ID); got != job.StatusComplete {
		t.Errorf("job %s, want %s", got, job.StatusComplete)
	}
}

func getJobStatus(t *testing.T, st *sqlite.Store, id string) job.Status {
	t.Helper()
	j, err := st.GetJob(context.Background(), "", id)
	if err != nil {
		t.Fatal(err)
	}
	return j.Status
}

func TestAMarkInFlightIsSharedByTheFilesWaitingForIt(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		// outcome is the first call's result; the waiters' calls succeed.
		outcome    error
		leaderCtx  context.Context
		wantCalls  int64
		wantWaiter error
	}{
		{name: "a job moved on is moved on for every waiter", outcome: nil, leaderCtx: context.Background(),
			wantCalls: 1, wantWaiter: nil},
		{name: "a deleted job is gone for every waiter", outcome: job.ErrNotFound, leaderCtx: context.Background(),
			wantCalls: 1, wantWaiter: job.ErrNotFound},
		{name: "a failed write fails every waiter, whose River job retries", outcome: errors.New("disk I/O error"),
			leaderCtx: context.Background(), wantCalls: 1, wantWaiter: errors.New("disk I/O error")},
		{name: "a waiter marks the job itself when the marking file was cut off", outcome: context.Canceled,
			leaderCtx: canceled, wantCalls: 1 + 3, wantWaiter: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const waiters = 3
			m := &runningMarks{}
			var calls atomic.Int64
			release := make(chan struct{})
			leaderDone := make(chan error, 1)
			go func() {
				leaderDone <- m.mark(tt.leaderCtx, "job-1", func(context.Context) error {
					calls.Add(1)
					<-release
					return tt.outcome
				})
			}()
			if !eventually(func() bool { return calls.Load() == 1 }) {
				t.Fatal("the first mark never started")
			}
			errs := make(chan error, waiters)
			for range waiters {
				go func() {
					errs <- m.mark(context.Background(), "job-1", func(context.Context) error { calls.Add(1); return nil })
				}()
			}
			if !eventually(func() bool { return m.waiting("job-1") == waiters }) {
				t.Fatalf("%d files wait for the mark in flight, want %d", m.waiting("job-1"), waiters)
			}
			close(release)
			if err := <-leaderDone; !sameError(err, tt.outcome) {
				t.Errorf("first mark = %v, want %v", err, tt.outcome)
			}
			for range waiters {
				if err := <-errs; !sameError(err, tt.wantWaiter) {
					t.Errorf("waiter's mark = %v, want %v", err, tt.wantWaiter)
				}
			}
			if n := calls.Load(); n != tt.wantCalls {
				t.Errorf("%d calls, want %d", n, tt.wantCalls)
			}
		})
	}
}

func sameError(got, want error) bool {
	if got == nil || want == nil {
		return got == want
	}
	return errors.Is(got, want) || got.Error() == want.Error()
}

func TestAMarkThatEndedIsNotKept(t *testing.T) {
	m := &runningMarks{}
	var calls int
	for range 2 {
		if err := m.mark(context.Background(), "job-1", func(context.Context) error { calls++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 2 {
		t.Errorf("%d calls for two marks one after the other, want 2: a file starting later reads the job anew", calls)
	}
	if n := m.waiting("job-1"); n != 0 {
		t.Errorf("%d waiting after the marks ended, want 0", n)
	}
}
