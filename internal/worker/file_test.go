package worker

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/convert"
	"github.com/docjobs/docjobs/internal/fetch"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/sqlite"
)

// sendingChat behaves like a provider adapter over HTTP: each call's
// request is written (the context's trace hears of it), then the answer
// comes once release is closed.
type sendingChat struct {
	started atomic.Int64
	release chan struct{}
	onCall  func()
}

func (c *sendingChat) Complete(ctx context.Context, _ provider.ChatRequest) (provider.ChatAnswer, error) {
	c.started.Add(1)
	if c.onCall != nil {
		c.onCall()
	}
	if trace := httptrace.ContextClientTrace(ctx); trace != nil && trace.WroteRequest != nil {
		trace.WroteRequest(httptrace.WroteRequestInfo{})
	}
	select {
	case <-c.release:
	case <-ctx.Done():
		return provider.ChatAnswer{}, ctx.Err()
	}
	return provider.ChatAnswer{Content: `{"n":1}`}, nil
}

// keepingStore is a real store that notes what had happened when a file's
// recognition was recorded, and can refuse the first try.
type keepingStore struct {
	*sqlite.Store
	chat       *sendingChat
	source     *savingFetcher
	refuseOnce atomic.Bool
	// lostOnce commits the first record but reports an error, as a
	// connection lost after the commit does.
	lostOnce atomic.Bool

	mu          sync.Mutex
	callsAtKeep []int64
	savedAtKeep []bool
	afterFinish func()
}

func (s *keepingStore) FinishOCR(ctx context.Context, d store.OCRDone) (bool, error) {
	s.mu.Lock()
	s.callsAtKeep = append(s.callsAtKeep, s.chat.started.Load())
	s.savedAtKeep = append(s.savedAtKeep, s.source.saved.Load())
	s.mu.Unlock()
	if s.refuseOnce.CompareAndSwap(true, false) {
		return false, errors.New("connection reset")
	}
	applied, err := s.Store.FinishOCR(ctx, d)
	if err != nil {
		return applied, err
	}
	if s.lostOnce.CompareAndSwap(true, false) {
		return false, errors.New("connection reset after the commit")
	}
	if s.afterFinish != nil {
		s.afterFinish()
	}
	return applied, err
}

// savingFetcher downloads text into memory and notes when it is stored
// and which copies are discarded.
type savingFetcher struct {
	data  string
	saved atomic.Bool

	mu        sync.Mutex
	discarded []string
}

func (f *savingFetcher) Fetch(_ context.Context, _, jobID string, i int, _ string) (fetch.Result, error) {
	return fetch.Result{URL: "http://dj/v1/files/f1", Key: "jobs/" + jobID + "/0-f1", Name: "a.txt", Size: int64(len(f.data)),
		File: &job.File{ID: "f1", AccountID: "a", JobID: jobID, Key: "jobs/" + jobID + "/0-f1", Name: "a.txt", Size: int64(len(f.data)), Created: time.Now()},
		Data: []byte(f.data)}, nil
}

func (f *savingFetcher) Save(context.Context, fetch.Result) error { f.saved.Store(true); return nil }

func (f *savingFetcher) Discard(_ context.Context, r fetch.Result) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.discarded = append(f.discarded, r.Key)
	return nil
}

func (f *savingFetcher) discards() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.discarded)
}

func (f *savingFetcher) Read(context.Context, string, int64) ([]byte, error) {
	return nil, errors.New("a download is recognized from memory")
}

// newFile stores a NEW job of one text file of three two-word chunks and
// returns a worker that fetches it through source and asks chat.
func newFile(t *testing.T, chat *sendingChat) (*fileWorker, *keepingStore, *job.Job) {
	t.Helper()
	source := &savingFetcher{data: "one two three four five six"}
	st := &keepingStore{Store: openStore(t), chat: chat, source: source}
	return textFileWorker(st, source, chat), st, newTextFileJob(t, st)
}

// newTextFileJob stores a NEW job of one text file with a prompt.
func newTextFileJob(t *testing.T, st interface {
	CreateJob(context.Context, store.CreateJobParams) (*job.Job, bool, error)
}) *job.Job {
	t.Helper()
	j := &job.Job{ID: "job-1", AccountID: "a", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a.txt"},
		Prompts: []string{"extract"}, ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", Created: time.Now()}
	if _, _, err := st.CreateJob(context.Background(), store.CreateJobParams{Job: j}); err != nil {
		t.Fatal(err)
	}
	return j
}

// textFileWorker fetches text through source, cuts it into chunks of two
// words and asks chat.
func textFileWorker(st Store, source Fetcher, chat provider.Chat) *fileWorker {
	return newFileWorker(Config{JobCheck: 20 * time.Millisecond}.withDefaults(), Deps{
		Store: st, Fetcher: source, Convert: convert.New(convert.Config{}).Convert,
		Chunker: wordChunker{n: 2}, Chats: fixedChats{chat}, Logger: slog.New(slog.DiscardHandler),
	})
}

func TestAFilesCallsGoOutBeforeItsRecognitionIsRecorded(t *testing.T) {
	chat := &sendingChat{release: make(chan struct{})}
	w, st, j := newFile(t, chat)
	st.afterFinish = func() { close(chat.release) }
	if err := workAttempt(w, j, 1); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.callsAtKeep, []int64{3}) {
		t.Fatalf("calls started when the recognition was recorded = %v, want all 3 rows asked first", st.callsAtKeep)
	}
	if !slices.Equal(st.savedAtKeep, []bool{true}) {
		t.Fatal("the recognition was recorded before its source file was stored")
	}
	if got := llmStatuses(t, st.Store, j.ID); !slices.Equal(got, []job.RowStatus{job.RowDone, job.RowDone, job.RowDone}) {
		t.Fatalf("rows = %v, want every answer recorded after the recognition", got)
	}
}

func TestAnswersWaitForARecognitionRecordThatFailsOnce(t *testing.T) {
	chat := &sendingChat{release: make(chan struct{})}
	close(chat.release) // the answers arrive before the recognition is recorded
	w, st, j := newFile(t, chat)
	st.refuseOnce.Store(true)
	if err := workAttempt(w, j, 1); err != nil {
		t.Fatal(err)
	}
	if len(st.callsAtKeep) != 2 || chat.started.Load() != 3 {
		t.Fatalf("recorded in %d tries after %d calls; want the record tried again and each row asked once",
			len(st.callsAtKeep), chat.started.Load())
	}
	if got := llmStatuses(t, st.Store, j.ID); !slices.Equal(got, []job.RowStatus{job.RowDone, job.RowDone, job.RowDone}) {
		t.Fatalf("rows = %v, want the paid answers recorded", got)
	}
}

func TestAnswersOfAFileWhoseJobEndedMeanwhileAreNotRecorded(t *testing.T) {
	chat := &sendingChat{release: make(chan struct{})}
	w, st, j := newFile(t, chat)
	var cancelled sync.Once
	chat.onCall = func() {
		cancelled.Do(func() {
			if _, err := st.CancelJob(context.Background(), j.AccountID, j.ID); err != nil {
				t.Error(err)
			}
			close(chat.release)
		})
	}
	if err := workAttempt(w, j, 1); err != nil {
		t.Fatalf("err = %v; a file of an ended job has nothing left to retry", err)
	}
	res, err := st.GetResult(context.Background(), "", j.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The cancel found the file unrecognized: its one model row is the
	// SKIPPED ocr_failed row, none of the answers.
	if res.Job.Status != job.StatusCancelled || len(res.LLM) != 1 || res.LLM[0].SkipReason != job.SkipOCRFailed {
		t.Fatalf("job %s with model rows %+v, want it cancelled with no answer recorded", res.Job.Status, res.LLM)
	}
}

// faultyStore is a real store whose writes of answers (FinishLLM of a DONE
// row) or of recognitions (FinishOCR of a DONE row) always fail, as when
// a database refuses what a row carries; failures are written.
type faultyStore struct {
	*sqlite.Store
	refuseAnswers, refuseRecognitions bool
}

func (s *faultyStore) FinishLLM(ctx context.Context, d store.LLMDone) (bool, error) {
	if s.refuseAnswers && d.Row.Status == job.RowDone {
		return false, errors.New("disk I/O error\nat page 7")
	}
	return s.Store.FinishLLM(ctx, d)
}

func (s *faultyStore) FinishOCR(ctx context.Context, d store.OCRDone) (bool, error) {
	if s.refuseRecognitions && d.Row.Status == job.RowDone {
		return false, errors.New("disk I/O error")
	}
	return s.Store.FinishOCR(ctx, d)
}

// quickRecordRetries shortens the waits between tries to record a row.
func quickRecordRetries(t *testing.T) {
	t.Helper()
	saved := recordWaits
	recordWaits = [len(recordWaits)]time.Duration{time.Millisecond, time.Millisecond, time.Millisecond}
	t.Cleanup(func() { recordWaits = saved })
}

// River does not run a file again after its last attempt: whatever that
// attempt left PENDING fails with the fault, through the usual fan-in, so
// the job ends at once instead of at its deadline as a timeout.
func TestAFilesFailedLastAttemptFailsWhatIsLeftWithItsFault(t *testing.T) {
	quickRecordRetries(t)
	tests := []struct {
		name       string
		setUp      func(t *testing.T) (*fileWorker, *sqlite.Store, *job.Job)
		timeout    time.Duration // River's, for the attempt; 0 for none
		wantJob    job.Status
		wantOCR    job.RowStatus
		wantLLM    []job.RowStatus
		wantReason string // the skip reason of the one model row
		wantError  string
	}{
		{
			name: "answers that cannot be recorded",
			setUp: func(t *testing.T) (*fileWorker, *sqlite.Store, *job.Job) {
				_, st, j := recognizedFile(t, 2, &scriptedChat{})
				w := newFileWorker(Config{}.withDefaults(), Deps{Store: &faultyStore{Store: st, refuseAnswers: true},
					Chats: fixedChats{&scriptedChat{}}, Logger: slog.New(slog.DiscardHandler)})
				return w, st, j
			},
			wantJob: job.StatusComplete, wantOCR: job.RowDone, wantLLM: []job.RowStatus{job.RowFailed, job.RowFailed},
			wantError: "the file's last attempt (5 of 5) failed: finish: disk I/O error at page 7",
		},
		{
			name: "River's timeout",
			setUp: func(t *testing.T) (*fileWorker, *sqlite.Store, *job.Job) {
				return recognizedFile(t, 2, blockingChat{started: make(chan struct{}, 8)})
			},
			timeout: 200 * time.Millisecond,
			wantJob: job.StatusComplete, wantOCR: job.RowDone, wantLLM: []job.RowStatus{job.RowFailed, job.RowFailed},
			// A download attempt (5m), recognition (10m), the store (1m), the model stage (10m).
			wantError: "the file's last attempt (5 of 5) failed: the file took longer than its 26m0s limit",
		},
		{
			name: "a recognition that cannot be recorded",
			setUp: func(t *testing.T) (*fileWorker, *sqlite.Store, *job.Job) {
				chat := &sendingChat{release: make(chan struct{})}
				close(chat.release)
				w, st, j := newFile(t, chat)
				w.deps.Store = &faultyStore{Store: st.Store, refuseRecognitions: true}
				return w, st.Store, j
			},
			wantJob: job.StatusFailed, wantOCR: job.RowFailed, wantLLM: []job.RowStatus{job.RowSkipped}, wantReason: job.SkipOCRFailed,
			wantError: "the file's last attempt (5 of 5) failed: file job-1[0]: finish recognition: disk I/O error",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, st, j := tt.setUp(t)
			attempt := func(n int) error {
				ctx := context.Background()
				if tt.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.timeout)
					defer cancel()
				}
				return w.Work(ctx, &river.Job[FileArgs]{
					JobRow: &rivertype.JobRow{Attempt: n, MaxAttempts: 5}, Args: FileArgs{JobID: j.ID}})
			}
			if err := attempt(4); err == nil {
				t.Fatal("attempt 4 of 5 succeeded")
			}
			if res := result(t, st, j.ID); res.Job.Status.Terminal() || res.OCR[0].Status == job.RowFailed {
				t.Fatalf("after attempt 4 of 5 the job is %s, its OCR row %s; want the file left for River's next attempt",
					res.Job.Status, res.OCR[0].Status)
			}

			if err := attempt(5); err == nil {
				t.Fatal("the last attempt succeeded; River should record its error")
			}
			res := result(t, st, j.ID)
			var llm []job.RowStatus
			for _, r := range res.LLM {
				llm = append(llm, r.Status)
			}
			if res.Job.Status != tt.wantJob || res.OCR[0].Status != tt.wantOCR || !slices.Equal(llm, tt.wantLLM) {
				t.Fatalf("job %s, OCR row %s, model rows %v; want %s, %s, %v", res.Job.Status, res.OCR[0].Status, llm,
					tt.wantJob, tt.wantOCR, tt.wantLLM)
			}
			if tt.wantOCR == job.RowFailed {
				if res.OCR[0].Error != tt.wantError || res.LLM[0].SkipReason != tt.wantReason {
					t.Errorf("OCR row error %q, model row skipped for %q; want %q and %q",
						res.OCR[0].Error, res.LLM[0].SkipReason, tt.wantError, tt.wantReason)
				}
				return
			}
			for _, r := range res.LLM {
				if r.Error != tt.wantError {
					t.Errorf("row %d error = %q, want %q", r.ChunkIndex, r.Error, tt.wantError)
				}
			}
		})
	}
}

func TestAFileReclaimedAfterItsLastAttemptDiedIsNotRunAgain(t *testing.T) {
	chat := &sendingChat{release: make(chan struct{})}
	close(chat.release)
	w, st, j := newFile(t, chat)
	// What River hands out when a node restarts after its process died in
	// the file's fifth and last attempt: the job again, as attempt 6.
	err := w.Work(context.Background(), &river.Job[FileArgs]{
		JobRow: &rivertype.JobRow{Attempt: 6, MaxAttempts: 5}, Args: FileArgs{JobID: j.ID}})
	if err != nil {
		t.Fatalf("Work = %v, want nil so that River completes the job", err)
	}
	if st.source.saved.Load() || chat.started.Load() != 0 {
		t.Fatal("the file was fetched or its rows asked again")
	}
	res := result(t, st.Store, j.ID)
	const want = "the file's last attempt (5 of 5) failed: the worker process ended while the file was in progress"
	if res.Job.Status != job.StatusFailed || res.OCR[0].Status != job.RowFailed || res.OCR[0].Error != want {
		t.Fatalf("job %s, OCR row %s %q; want the job FAILED by its FAILED row %q",
			res.Job.Status, res.OCR[0].Status, res.OCR[0].Error, want)
	}
	if len(res.LLM) != 1 || res.LLM[0].SkipReason != job.SkipOCRFailed {
		t.Fatalf("model rows %+v, want one SKIPPED %s", res.LLM, job.SkipOCRFailed)
	}
}

func TestTheLastAttemptsErrorIsOneBoundedLine(t *testing.T) {
	cause := errors.New("write: " + strings.Repeat("ü", 400) + "\n\tcaused by: refused")
	got := lastAttemptError(context.Background(), cause, 5, 5, time.Minute)
	if len(got) > maxFaultBytes || !utf8.ValidString(got) || strings.ContainsAny(got, "\n\t") ||
		!strings.HasPrefix(got, "the file's last attempt (5 of 5) failed: write: üü") {
		t.Fatalf("error of %d bytes: %q", len(got), got)
	}
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	if got := lastAttemptError(stopped, context.Canceled, 5, 5, time.Minute); !strings.Contains(got, "the worker stopped") {
		t.Errorf("a shutdown gives %q", got)
	}
}

func result(t *testing.T, st *sqlite.Store, jobID string) *job.Result {
	t.Helper()
	res, err := st.GetResult(context.Background(), "", jobID)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestTheStoredCopyOfAFileGoesUnlessItsRecognitionIsRecorded(t *testing.T) {
	tests := []struct {
		name    string
		arrange func(t *testing.T, st *keepingStore, chat *sendingChat, j *job.Job)
		discard bool
	}{
		{"a copy whose job was cancelled before the record is discarded", func(t *testing.T, st *keepingStore, chat *sendingChat, j *job.Job) {
			var cancelled sync.Once
			chat.onCall = func() {
				cancelled.Do(func() {
					if _, err := st.CancelJob(context.Background(), j.AccountID, j.ID); err != nil {
						t.Error(err)
					}
					close(chat.release)
				})
			}
		}, true},
		{"a recorded copy is kept", func(_ *testing.T, _ *keepingStore, chat *sendingChat, _ *job.Job) {
			close(chat.release)
		}, false},
		{"a copy whose record committed but reported an error is kept", func(_ *testing.T, st *keepingStore, chat *sendingChat, _ *job.Job) {
			st.lostOnce.Store(true)
			close(chat.release)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chat := &sendingChat{release: make(chan struct{})}
			w, st, j := newFile(t, chat)
			tt.arrange(t, st, chat, j)
			if err := workAttempt(w, j, 1); err != nil {
				t.Fatal(err)
			}
			var want []string
			if tt.discard {
				want = []string{"jobs/" + j.ID + "/0-f1"}
			}
			if got := st.source.discards(); !slices.Equal(got, want) {
				t.Fatalf("discarded %q, want %q", got, want)
			}
		})
	}
}

// River's snooze spends no attempt: the run after a rate limit has the
// attempt number of the one before it, and must still know the file is
// recognized and ask its rows, not recognize the file again and leave them.
func TestAFileSnoozedByARateLimitAsksItsRowsWhenItResumes(t *testing.T) {
	limited := atomic.Bool{}
	limited.Store(true)
	chat := &scriptedChat{fail: func(string, int) error {
		if limited.Load() {
			return &provider.Error{Category: provider.CategoryRateLimit, Status: 429, RetryAfter: time.Second}
		}
		return nil
	}}
	st := openStore(t)
	j := newTextFileJob(t, st)
	w := textFileWorker(st, &savingFetcher{data: "one two three four five six"}, chat)

	snooze := (*river.JobSnoozeError)(nil)
	if err := workAttempt(w, j, 1); !errors.As(err, &snooze) {
		t.Fatalf("first run: %v, want a snooze", err)
	}
	if calls := chat.total(); calls != 3 {
		t.Fatalf("first run made %d calls, want one per row (3)", calls)
	}
	limited.Store(false)
	err := w.Work(context.Background(), &river.Job[FileArgs]{
		JobRow: &rivertype.JobRow{Attempt: 1, MaxAttempts: 5, Metadata: []byte(`{"snoozes":1}`)}, Args: FileArgs{JobID: j.ID}})
	if err != nil {
		t.Fatalf("run after the snooze: %v", err)
	}
	if got := llmStatuses(t, st, j.ID); !slices.Equal(got, []job.RowStatus{job.RowDone, job.RowDone, job.RowDone}) {
		t.Fatalf("rows = %v, want every row answered after the snooze", got)
	}
	if calls := chat.total(); calls != 6 {
		t.Errorf("%d calls in all, want each row asked once more (6)", calls)
	}
}

// Should a run take a file for unrecognized that an earlier run recorded,
// it asks the recorded rows rather than leave them pending.
func TestAFirstRunOfARecordedFileAsksTheRecordedRows(t *testing.T) {
	chat := &scriptedChat{}
	st := openStore(t)
	j := recognizedJob(t, st, "job-1", "a", 3)
	w := textFileWorker(st, &savingFetcher{data: "one two three four five six seven eight"}, chat)
	if err := workAttempt(w, j, 1); err != nil {
		t.Fatal(err)
	}
	if got := llmStatuses(t, st, j.ID); !slices.Equal(got, []job.RowStatus{job.RowDone, job.RowDone, job.RowDone}) {
		t.Fatalf("rows = %v, want the three recorded rows answered", got)
	}
	// The recorded rows were asked with their own chunks (this run's
	// calls, out before it found the file recorded, were cancelled).
	sent := strings.Join(chat.users, "\n")
	for _, want := range []string{"chunk 0", "chunk 1", "chunk 2"} {
		if !strings.Contains(sent, want) {
			t.Errorf("no call carried %q: %q", want, sent)
		}
	}
	if res := result(t, st, j.ID); res.Job.Status != job.StatusComplete {
		t.Errorf("job %s, want COMPLETE with its rows answered", res.Job.Status)
	}
}

// A worker stopping for good (a deploy) cancels its files after its grace
// period, and River gives the interrupted run its attempt back: the next
// run, on another worker, has attempt 1 again and must still find the
// rows the interrupted run answered, not recognize the file afresh and
// pay for every chunk before it learns the file was recorded.
func TestARunAfterAnInterruptedOneAsksOnlyTheRowsStillPending(t *testing.T) {
	chat := &scriptedChat{}
	st := openStore(t)
	j := recognizedJob(t, st, "job-1", "a", 3)
	answered := job.LLMRow{JobID: j.ID, ChunkIndex: 1, ChunkTotal: 3, Status: job.RowDone, Content: `{"n":0}`}
	if _, err := st.FinishLLM(context.Background(), store.LLMDone{Row: answered}); err != nil {
		t.Fatal(err)
	}
	w := textFileWorker(st, &savingFetcher{data: "one two three four five six seven eight"}, chat)
	err := w.Work(context.Background(), &river.Job[FileArgs]{
		JobRow: &rivertype.JobRow{Attempt: 1, MaxAttempts: 5, AttemptedBy: []string{"worker-a", "worker-b"}},
		Args:   FileArgs{JobID: j.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if got := llmStatuses(t, st, j.ID); !slices.Equal(got, []job.RowStatus{job.RowDone, job.RowDone, job.RowDone}) {
		t.Fatalf("rows = %v, want every row done", got)
	}
	if sent := strings.Join(chat.users, "\n"); chat.total() != 2 || strings.Contains(sent, "chunk 1") {
		t.Errorf("%d calls (%q), want chunks 0 and 2 asked once each and nothing else", chat.total(), sent)
	}
}

// deletingStore deletes the job right before MarkRunning, as an API process
// does to a job whose file job has just loaded it.
type deletingStore struct{ *sqlite.Store }

func (s deletingStore) MarkRunning(ctx context.Context, jobID string) error {
	if _, err := s.DeleteJob(ctx, "", jobID); err != nil {
		return err
	}
	return s.Store.MarkRunning(ctx, jobID)
}

func TestAFileWhoseJobIsDeletedAsItStartsEndsWithoutAnError(t *testing.T) {
	chat := &sendingChat{release: make(chan struct{})}
	close(chat.release)
	source := &savingFetcher{data: "one two three four five six"}
	st := deletingStore{openStore(t)}
	j := newTextFileJob(t, st)
	w := textFileWorker(st, source, chat)
	if err := workAttempt(w, j, 1); err != nil {
		t.Fatalf("Work = %v, want nil so that River completes the file's job without an attempt spent", err)
	}
	if source.saved.Load() || chat.started.Load() != 0 {
		t.Fatal("the deleted job's file was fetched or its rows asked")
	}
}

// slowSavingFetcher stores its copy in longer than one try of a record
// may take, and counts the saves begun and those cut off.
type slowSavingFetcher struct {
	savingFetcher
	takes       time.Duration
	saves, cuts atomic.Int32
}

func (f *slowSavingFetcher) Save(ctx context.Context, r fetch.Result) error {
	f.saves.Add(1)
	select {
	case <-ctx.Done():
		f.cuts.Add(1)
		return ctx.Err()
	case <-time.After(f.takes):
	}
	return f.savingFetcher.Save(ctx, r)
}

// A large source's copy may take longer to store than one try of the
// record is given (recordPatience): that is an upload in progress, not a
// database gone quiet, and cutting it off started it over at every try
// until the attempt ran out.
func TestASourceCopySlowerThanOneTryIsStoredOnce(t *testing.T) {
	shortRecordPatience(t, 20*time.Millisecond)
	st := openStore(t)
	j := newTextFileJob(t, st)
	source := &slowSavingFetcher{savingFetcher: savingFetcher{data: "one two three four five six"}, takes: 200 * time.Millisecond}
	w := textFileWorker(st, source, &scriptedChat{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := w.Work(ctx, &river.Job[FileArgs]{JobRow: &rivertype.JobRow{Attempt: 1, MaxAttempts: 5}, Args: FileArgs{JobID: j.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if saves, cuts := source.saves.Load(), source.cuts.Load(); saves != 1 || cuts != 0 {
		t.Fatalf("saves = %d, cut off = %d; want the copy stored in one save", saves, cuts)
	}
	if got := llmStatuses(t, st, j.ID); !slices.Equal(got, []job.RowStatus{job.RowDone, job.RowDone, job.RowDone}) {
		t.Fatalf("rows = %v, want the recognition recorded and every row answered", got)
	}
}
