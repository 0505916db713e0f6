package worker

import (
	"context"
	"encoding/json"
	"maps"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// riverLister lists River jobs by kind; both stores have it.
type riverLister interface {
	RiverJobsByKind(ctx context.Context, kind string) ([]*rivertype.JobRow, error)
}

// riverJobsOf returns the River jobs of kind, failing the test on an error.
func riverJobsOf(t *testing.T, st store.Store, kind string) []*rivertype.JobRow {
	t.Helper()
	rows, err := st.(riverLister).RiverJobsByKind(context.Background(), kind)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// waitAllCompleted waits for every River job of kind to be completed,
// failing the test after a generous while.
func waitAllCompleted(t *testing.T, st store.Store, kind string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		rows := riverJobsOf(t, st, kind)
		left := 0
		for _, rj := range rows {
			if rj.State != rivertype.JobStateCompleted {
				left++
			}
		}
		if len(rows) > 0 && left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d %s jobs not completed", left, len(rows), kind)
		}
	}
}

// oldJob stores a job of one file and prompt as a binary from before
// caca282 left it, queued River jobs of the retired kinds included.
func oldJob(t *testing.T, st store.Store, id, source string, queued ...river.JobArgs) *job.Job {
	t.Helper()
	j := &job.Job{ID: id, AccountID: "acct", Status: job.StatusNew, SourceURLs: []string{source},
		Prompts: []string{"extract"}, ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", Created: time.Now()}
	enqueue := make([]river.InsertManyParams, len(queued))
	for i, a := range queued {
		enqueue[i] = river.InsertManyParams{Args: a}
	}
	if _, _, err := st.CreateJob(context.Background(), store.CreateJobParams{Job: j, Enqueue: enqueue}); err != nil {
		t.Fatal(err)
	}
	return j
}

// An upgrade across caca282 leaves River jobs of kinds nothing works any
// more: a NEW job's recognize job, and a RUNNING job's model jobs, one per
// chunk still pending. Each must hand its file to one file job that carries
// on from what the old binary recorded, asking each pending row once.
func TestRetiredKindsQueuedBeforeAnUpgradeCarryTheirJobsOn(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		// Job "new": created by the old API, its recognize job queued.
		fresh := textSource(t, "alpha beta gamma")
		oldJob(t, st, "job-new", fresh.URL+"/new.txt", RetiredRecognizeArgs{JobID: "job-new", FileIndex: 0})

		// Job "running": recognized by the old binary into three PENDING
		// rows with a model job each; chunk 2 was answered (its model job
		// completed with it) before the old process died. Its source would
		// chunk differently today, so a second recognition would show.
		source := textSource(t, "one two three four five six seven eight")
		running := oldJob(t, st, "job-running", source.URL+"/old.txt",
			RetiredModelArgs{JobID: "job-running", FileIndex: 0, ChunkIndex: 0},
			RetiredModelArgs{JobID: "job-running", FileIndex: 0, ChunkIndex: 2})
		ocr := job.OCRRow{JobID: running.ID, FileIndex: 0, File: running.SourceURLs[0], Status: job.RowDone,
			Content: "recognized by the old binary", OutputFormat: job.FormatPlain}
		rows := make([]job.LLMRow, 3)
		for i := range rows {
			rows[i] = job.LLMRow{JobID: running.ID, File: ocr.File, ChunkIndex: i, ChunkTotal: 3,
				Status: job.RowPending, Input: "old chunk"}
		}
		if _, err := st.FinishOCR(ctx, store.OCRDone{Row: ocr, LLM: rows}); err != nil {
			t.Fatal(err)
		}
		answered := job.LLMRow{JobID: running.ID, ChunkIndex: 1, ChunkTotal: 3, Status: job.RowDone, Content: `{"n":0}`}
		if _, err := st.FinishLLM(ctx, store.LLMDone{Row: answered}); err != nil {
			t.Fatal(err)
		}

		chat := &scriptedChat{}
		startPipeline(t, st, Config{}, fixedChats{chat}, wordChunker{n: 2}, nil)

		for _, id := range []string{"job-new", "job-running"} {
			res := endOf(t, st, id)
			if res.Job.Status != job.StatusComplete {
				t.Fatalf("%s ended %s (%s)", id, res.Job.Status, res.Job.Error)
			}
			for _, r := range res.LLM {
				if r.Status != job.RowDone {
					t.Errorf("%s row %d = %s (%s), want DONE", id, r.ChunkIndex, r.Status, r.Error)
				}
			}
		}
		want := map[string]int{"part 1 of 2": 1, "part 2 of 2": 1, "part 1 of 3": 1, "part 3 of 3": 1}
		chat.mu.Lock()
		calls := maps.Clone(chat.calls)
		chat.mu.Unlock()
		if !maps.Equal(calls, want) {
			t.Errorf("calls = %v, want %v: each pending row once, the answered one never", calls, want)
		}

		// Every old job is handed on: the last of them perhaps after the
		// file job it would have made has ended, which must make no second.
		for _, kind := range []string{RetiredRecognizeArgs{}.Kind(), RetiredModelArgs{}.Kind()} {
			waitAllCompleted(t, st, kind)
		}
		// One file job per file, however many old jobs handed it on.
		files := map[string]int{}
		for _, rj := range riverJobsOf(t, st, FileArgs{}.Kind()) {
			var a FileArgs
			if err := json.Unmarshal(rj.EncodedArgs, &a); err != nil {
				t.Fatal(err)
			}
			files[a.JobID]++
		}
		if want := map[string]int{"job-new": 1, "job-running": 1}; !maps.Equal(files, want) {
			t.Errorf("file jobs per job = %v, want %v", files, want)
		}
		if n := chat.total(); n != 4 {
			t.Errorf("%d calls once every old job was handed on, want still 4", n)
		}
	})
}
