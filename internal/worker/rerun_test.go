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

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/store"
)

// rowReadingStore is a real store that counts its reads of a file's
// pending model rows.
type rowReadingStore struct {
	store.Store
	reads atomic.Int64
}

func (s *rowReadingStore) FileModelRows(ctx context.Context, jobID string, fileIndex int) (bool, []job.LLMRow, error) {
	s.reads.Add(1)
	return s.Store.FileModelRows(ctx, jobID, fileIndex)
}

// TestARerunDoesNotAskARowAnotherRunAnsweredWhileItWaitedForItsSlot: a
// rerun of a file (a reclaim, a rescue, a retry) reads the file's pending
// rows, then waits for the process's slots. Another run of the file that
// records a row's answer meanwhile made the rerun ask that row again when
// its slot came: paid twice, its record dropped (the row was no longer
// PENDING). The slot here is held by another account's call while the
// other run's answer is recorded.
func TestARerunDoesNotAskARowAnotherRunAnsweredWhileItWaitedForItsSlot(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		reading := &rowReadingStore{Store: st}
		j := recognizedJob(t, st, "job-rerun", "a", 2)
		chat := &scriptedChat{}
		// Every re-check due: the wait for the slot is what the test
		// stands for, however short it is here.
		w := newFileWorker(Config{ModelWorkers: 1, JobCheck: 20 * time.Millisecond, pendingRecheck: time.Nanosecond}.withDefaults(),
			Deps{Store: reading, Chats: fixedChats{chat}, Logger: slog.New(slog.DiscardHandler)})
		if err := w.asking.Acquire(ctx, "someone-else"); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- workAttempt(w, j, 2) }()
		waitFor(t, func() bool { return reading.reads.Load() == 1 })

		// The other run's answer to the first chunk lands while this
		// run waits for its slot.
		other := job.LLMRow{JobID: j.ID, ChunkIndex: 0, ChunkTotal: 2, Status: job.RowDone, Content: `{"n":0}`}
		if applied, err := st.FinishLLM(ctx, store.LLMDone{Row: other}); err != nil || !applied {
			t.Fatalf("the other run's answer: applied %v, err %v", applied, err)
		}
		w.asking.Release()
		if err := <-done; err != nil {
			t.Fatal(err)
		}

		if n := chat.calls["part 1 of 2"]; n != 0 {
			t.Errorf("the chunk the other run answered was asked %d times; want 0", n)
		}
		if n := chat.calls["part 2 of 2"]; n != 1 {
			t.Errorf("the chunk still pending was asked %d times; want once", n)
		}
		res, err := st.GetResult(ctx, "", j.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.LLM) != 2 || res.LLM[0].Content != `{"n":0}` || res.LLM[1].Status != job.RowDone {
			t.Errorf("rows = %+v; want the other run's answer and this run's", res.LLM)
		}
	})
}

// TestARerunWhoseCallsStartAtOnceReadsItsRowsOnce: the re-check costs a
// read only when the rows' state has aged past Config.pendingRecheck by
// the time a call can start; a file whose calls go out at once (every
// job's usual path) reads its rows once, as before.
func TestARerunWhoseCallsStartAtOnceReadsItsRowsOnce(t *testing.T) {
	st := openStore(t)
	reading := &rowReadingStore{Store: st}
	j := recognizedJob(t, st, "job-quick", "a", 5)
	chat := &scriptedChat{}
	w := newFileWorker(Config{ModelWorkers: 2, JobCheck: 20 * time.Millisecond, pendingRecheck: time.Hour}.withDefaults(),
		Deps{Store: reading, Chats: fixedChats{chat}, Logger: slog.New(slog.DiscardHandler)})
	if err := workAttempt(w, j, 2); err != nil {
		t.Fatal(err)
	}
	if n := reading.reads.Load(); n != 1 {
		t.Errorf("the file's rows were read %d times; want once", n)
	}
	if chat.total() != 5 {
		t.Errorf("calls = %v; want each chunk once", chat.calls)
	}
}

// stoppingChat answers every call truncated (a 2xx the vendor bills) and
// stops the River job's context as the answer comes: a worker's stop, or
// the file's time running out, arriving with the answer.
type stoppingChat struct {
	cutChat
	stop context.CancelFunc
}

func (c *stoppingChat) Complete(ctx context.Context, req provider.ChatRequest) (provider.ChatAnswer, error) {
	c.stop()
	return c.cutChat.Complete(ctx, req)
}

// TestAPaidAnswerThatCameAsTheRunStoppedIsNotAskedAgain: a single-run
// row whose call came back with a paid 2xx that cannot be used (truncated,
// refused) just as the River job's context ended was left PENDING, as a
// call cut off before any answer is, and the file's next run paid for it
// again. A consensus run keeps such an outcome (cutOff); the row now does
// too: it is recorded FAILED with what the call left.
func TestAPaidAnswerThatCameAsTheRunStoppedIsNotAskedAgain(t *testing.T) {
	chat := &stoppingChat{cutChat: cutChat{cut: func(int64) bool { return true }}}
	w, st, j := recognizedFile(t, 1, chat)
	ctx, cancel := context.WithCancel(context.Background())
	chat.stop = cancel
	// The run's own outcome (a stop hands the file back) is not what
	// this test is about; what the row keeps is.
	_ = w.Work(ctx, &river.Job[FileArgs]{JobRow: &rivertype.JobRow{Attempt: 2, MaxAttempts: 5}, Args: FileArgs{JobID: j.ID}})
	chat.stop = func() {}
	if err := workAttempt(w, j, 3); err != nil {
		t.Fatal(err)
	}
	if n := chat.calls.Load(); n != 1 {
		t.Errorf("the vendor was asked %d times for the chunk; want once", n)
	}
	res, err := st.GetResult(context.Background(), "", j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r := res.LLM[0]; r.Status != job.RowFailed || !strings.Contains(r.Error, "category=truncated") || r.OutputTokens != 500 {
		t.Errorf("row = %s %q, %d output tokens; want FAILED truncated with the paid call's 500", r.Status, r.Error, r.OutputTokens)
	}
}

// BenchmarkPendingRowsRecheck is what one re-check of a rerun's rows costs
// when it is due (its state older than Config.pendingRecheck): one read of
// the file's pending rows, their chunk texts included, shared by all of
// them. A file of 100 pending chunks of 16 KiB (the default budget's
// text) on SQLite.
func BenchmarkPendingRowsRecheck(b *testing.B) {
	st := openStore(b)
	ctx := context.Background()
	j := &job.Job{ID: "job-b", AccountID: "a", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a.txt"},
		Prompts: []string{"extract"}, ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", Created: time.Now()}
	if _, _, err := st.CreateJob(ctx, store.CreateJobParams{Job: j}); err != nil {
		b.Fatal(err)
	}
	rows := make([]job.LLMRow, 100)
	for i := range rows {
		rows[i] = job.LLMRow{JobID: j.ID, File: "f", ChunkIndex: i, ChunkTotal: len(rows), Status: job.RowPending,
			Input: strings.Repeat("word ", 16<<10/5)}
	}
	ocr := job.OCRRow{JobID: j.ID, File: "f", Status: job.RowDone, Content: "text", OutputFormat: job.FormatPlain}
	if _, err := st.FinishOCR(ctx, store.OCRDone{Row: ocr, LLM: rows}); err != nil {
		b.Fatal(err)
	}
	p := newPendingRows(time.Now(), rows)
	row := &rows[0]
	log := slog.New(slog.DiscardHandler)
	b.ReportAllocs()
	for b.Loop() {
		if !p.stillPending(ctx, st, j.ID, row, -1, log) {
			b.Fatal("the row is pending")
		}
	}
}
