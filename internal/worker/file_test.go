package worker

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptrace"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	if s.afterFinish != nil {
		s.afterFinish()
	}
	return applied, err
}

// savingFetcher downloads text into memory and notes when it is stored.
type savingFetcher struct {
	data  string
	saved atomic.Bool
}

func (f *savingFetcher) Fetch(_ context.Context, _, jobID string, i int, _ string) (fetch.Result, error) {
	return fetch.Result{URL: "http://dj/v1/files/f1", Key: "jobs/" + jobID + "/0-f1", Name: "a.txt", Size: int64(len(f.data)),
		File: &job.File{ID: "f1", AccountID: "a", JobID: jobID, Key: "jobs/" + jobID + "/0-f1", Name: "a.txt", Size: int64(len(f.data)), Created: time.Now()},
		Data: []byte(f.data)}, nil
}

func (f *savingFetcher) Save(context.Context, fetch.Result) error { f.saved.Store(true); return nil }

func (f *savingFetcher) Read(context.Context, string, int64) ([]byte, error) {
	return nil, errors.New("a download is recognized from memory")
}

// newFile stores a NEW job of one text file of three two-word chunks and
// returns a worker that fetches it through source and asks chat.
func newFile(t *testing.T, chat *sendingChat) (*fileWorker, *keepingStore, *job.Job) {
	t.Helper()
	source := &savingFetcher{data: "one two three four five six"}
	st := &keepingStore{Store: openStore(t), chat: chat, source: source}
	j := &job.Job{ID: "job-1", AccountID: "a", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a.txt"},
		Prompts: []string{"extract"}, ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", Created: time.Now()}
	if _, _, err := st.CreateJob(context.Background(), store.CreateJobParams{Job: j}); err != nil {
		t.Fatal(err)
	}
	w := newFileWorker(Config{JobCheck: 20 * time.Millisecond}.withDefaults(), Deps{
		Store: st, Fetcher: source, Convert: convert.New(convert.Config{}).Convert,
		Chunker: wordChunker{n: 2}, Chats: fixedChats{chat}, Logger: slog.New(slog.DiscardHandler),
	})
	return w, st, j
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
