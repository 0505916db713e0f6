package worker

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/convert"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/store"
)

func TestAFileOverTheChunkLimitGetsOneFailedRowAndNoCalls(t *testing.T) {
	chat := &scriptedChat{}
	source := &savingFetcher{data: "one two three four five six"} // three chunks of two words
	st := openStore(t)
	w := newFileWorker(Config{JobCheck: 20 * time.Millisecond, MaxChunksPerFile: 2}.withDefaults(), Deps{
		Store: st, Fetcher: source, Convert: convert.New(convert.Config{}).Convert,
		Chunker: wordChunker{n: 2}, Chats: fixedChats{chat}, Logger: slog.New(slog.DiscardHandler),
	})
	j := &job.Job{ID: "job-1", AccountID: "a", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a.txt"},
		Prompts: []string{"extract"}, Neural: job.Neural{Model: "m", ChunkBudgetTokens: 1500},
		ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", Created: time.Now()}
	if _, _, err := st.CreateJob(context.Background(), store.CreateJobParams{Job: j}); err != nil {
		t.Fatal(err)
	}

	if err := workAttempt(w, j, 1); err != nil {
		t.Fatal(err)
	}
	if n := chat.total(); n != 0 {
		t.Fatalf("%d provider calls, want none", n)
	}
	res, err := st.GetResult(context.Background(), "", j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.OCR) != 1 || res.OCR[0].Status != job.RowDone {
		t.Fatalf("OCR rows %+v, want the recognition DONE", res.OCR)
	}
	if len(res.LLM) != 1 {
		t.Fatalf("%d model rows, want one", len(res.LLM))
	}
	row := res.LLM[0]
	if row.Status != job.RowFailed || row.ChunkIndex != 0 || row.ChunkTotal != 1 {
		t.Fatalf("model row %+v, want FAILED chunk 0 of 1", row)
	}
	for _, want := range []string{"at least 3 chunks", "1500 tokens", "limit of 2 per file (DOCJOBS_MAX_CHUNKS_PER_FILE)", "raise neural.chunkBudgetTokens", "split the file"} {
		if !strings.Contains(row.Error, want) {
			t.Errorf("row error %q does not say %q", row.Error, want)
		}
	}
	if res.Job.Status != job.StatusComplete {
		t.Fatalf("job %s, want COMPLETE: its rows are terminal and its file recognized", res.Job.Status)
	}
}

// countingChat answers after a moment, noting the most calls in flight at
// once and the most model rows found waiting for the process's places.
type countingChat struct {
	w                        *fileWorker
	inFlight, peak, waitPeak atomic.Int64
	calls                    atomic.Int64
}

func raise(peak *atomic.Int64, n int64) {
	for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
	}
}

func (c *countingChat) Complete(ctx context.Context, _ provider.ChatRequest) (provider.ChatAnswer, error) {
	c.calls.Add(1)
	raise(&c.peak, c.inFlight.Add(1))
	defer c.inFlight.Add(-1)
	raise(&c.waitPeak, int64(c.w.asking.Waiting()))
	select {
	case <-time.After(time.Millisecond):
	case <-ctx.Done():
		return provider.ChatAnswer{}, ctx.Err()
	}
	return provider.ChatAnswer{Content: `{"n":1}`}, nil
}

func TestAFileOfManyRowsHoldsNoMoreRowsThanTheProcessAsksAtOnce(t *testing.T) {
	chat := &countingChat{}
	st := openStore(t)
	j := recognizedJob(t, st, "job-1", "a", 40)
	w := newFileWorker(Config{ModelWorkers: 3, JobCheck: 20 * time.Millisecond}.withDefaults(),
		Deps{Store: st, Chats: fixedChats{chat}, Logger: slog.New(slog.DiscardHandler)})
	chat.w = w

	if err := workAttempt(w, j, 2); err != nil {
		t.Fatal(err)
	}
	if chat.calls.Load() != 40 {
		t.Fatalf("%d calls, want one per row", chat.calls.Load())
	}
	if p := chat.peak.Load(); p > 3 {
		t.Fatalf("%d calls in flight at once, want at most 3", p)
	}
	// Rows parked behind the process's limit would wait at it: a file's
	// rows are taken by as many goroutines as there are places.
	if p := chat.waitPeak.Load(); p != 0 {
		t.Fatalf("%d rows waited for a place, want none", p)
	}
	for i, s := range llmStatuses(t, st, j.ID) {
		if s != job.RowDone {
			t.Fatalf("row %d %s, want every row answered", i, s)
		}
	}
}

func TestAFileLeavesTheStartLaneOnceTheRowsItCanAskAreOut(t *testing.T) {
	chat := &sendingChat{release: make(chan struct{})}
	st := openStore(t)
	j := recognizedJob(t, st, "job-1", "a", 10)
	w := newFileWorker(Config{ModelWorkers: 2, JobCheck: 20 * time.Millisecond}.withDefaults(),
		Deps{Store: st, Chats: fixedChats{chat}, Logger: slog.New(slog.DiscardHandler)})
	_, pending, err := st.FileModelRows(context.Background(), j.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var left atomic.Bool
	out := newRowsOut(len(pending), func() { left.Store(true) })
	rj := &river.Job[FileArgs]{JobRow: &rivertype.JobRow{Attempt: 1, MaxAttempts: 5}, Args: FileArgs{JobID: j.ID}}
	answered := make(chan error, 1)
	go func() {
		answered <- w.answerFile(context.Background(), rj, j, pending, nil, nil, out, slog.New(slog.DiscardHandler))
	}()

	// Two calls are written and held; the eight rows behind them wait for
	// those to end, and other files' work must not wait for them too.
	waitFor(t, func() bool { return chat.started.Load() == 2 && left.Load() })
	close(chat.release)
	if err := <-answered; err != nil {
		t.Fatal(err)
	}
	if n := chat.started.Load(); n != 10 {
		t.Fatalf("%d calls, want one per row", n)
	}
}
