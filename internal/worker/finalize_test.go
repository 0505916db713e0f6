package worker

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/jobmerge"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/sqlite"
)

// finishingStore keeps the Finish a finalize asks for instead of writing
// it: FinishJob completes the River job in its transaction, and the tests
// below have none.
type finishingStore struct {
	*sqlite.Store
	finish   *store.Finish
	maxReads []int64 // the answer budgets ResultToFinish was asked for
}

func (s *finishingStore) ResultToFinish(ctx context.Context, id string, maxContent int64) (*job.Result, error) {
	s.maxReads = append(s.maxReads, maxContent)
	return s.Store.ResultToFinish(ctx, id, maxContent)
}

func (s *finishingStore) FinishJob(_ context.Context, _ *rivertype.JobRow, f store.Finish) (bool, error) {
	s.finish = &f
	return true, nil
}

// answeredMergeJob stores a merging job of one recognized file whose two
// chunks are answered, as its last row's finish leaves it for finalize.
func answeredMergeJob(t *testing.T, st *sqlite.Store) *job.Job {
	t.Helper()
	ctx := context.Background()
	j := &job.Job{ID: "job-merge", AccountID: "acct", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a.txt"},
		Prompts: []string{"extract"}, ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", Created: time.Now(),
		Merge: job.Merge{Enabled: true, Scope: "MERGE_SCOPE_FILE", Format: "MERGE_FORMAT_JSON"}}
	if _, _, err := st.CreateJob(ctx, store.CreateJobParams{Job: j}); err != nil {
		t.Fatal(err)
	}
	ocr := job.OCRRow{JobID: j.ID, File: j.SourceURLs[0], Status: job.RowDone, Content: "text", OutputFormat: job.FormatPlain}
	rows := []job.LLMRow{
		{JobID: j.ID, File: ocr.File, ChunkIndex: 0, ChunkTotal: 2, Status: job.RowPending, Input: "chunk 0"},
		{JobID: j.ID, File: ocr.File, ChunkIndex: 1, ChunkTotal: 2, Status: job.RowPending, Input: "chunk 1"},
	}
	if _, err := st.FinishOCR(ctx, store.OCRDone{Row: ocr, LLM: rows}); err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		r.Status, r.Content = job.RowDone, `{"items":[{"n":`+string(rune('1'+i))+`}]}`
		if _, err := st.FinishLLM(ctx, store.LLMDone{Row: r}); err != nil {
			t.Fatal(err)
		}
	}
	return j
}

// TestAFinalizeThatKeepsEndingWithItsProcessEndsTheJobUnmerged: River
// fetches a reclaimed job whatever its attempts, so a finalize whose merge
// takes its process down (a merge at its 64 MiB input limit peaked at
// about 1.2 GB) was run again at every restart, and took every restart down
// with it. An attempt that ended with its process is one River recorded
// nothing for: no error (a failed attempt), no attempt given back (a
// stop). Once a job's finalize has ended with its process
// finalizeCrashes times, the job ends without its answers read or merged:
// merged[] lists every chunk as not merged, and the job's error says why.
// Failed attempts and fewer crashes still merge.
func TestAFinalizeThatKeepsEndingWithItsProcessEndsTheJobUnmerged(t *testing.T) {
	failed := func(n int) []rivertype.AttemptError {
		errs := make([]rivertype.AttemptError, n)
		for i := range errs {
			errs[i] = rivertype.AttemptError{Attempt: i + 1, Error: "finalize: load result: database is locked"}
		}
		return errs
	}
	rescued := func(n int) []rivertype.AttemptError {
		errs := make([]rivertype.AttemptError, n)
		for i := range errs {
			errs[i] = rivertype.AttemptError{Attempt: i + 1, Error: "Stuck job rescued by JobRescuer"}
		}
		return errs
	}
	tests := []struct {
		name    string
		attempt int
		errors  []rivertype.AttemptError
		merged  bool
	}{
		{"a first attempt merges", 1, nil, true},
		{"after crashes short of the bound it merges", finalizeCrashes, nil, true},
		{"after failed attempts it merges", 9, failed(8), true},
		{"after failed attempts and crashes short of the bound it merges", 9, failed(9 - finalizeCrashes), true},
		{"after as many crashes as the bound it gives up merging", finalizeCrashes + 1, nil, false},
		{"crashes among failed attempts count", 6, failed(5 - finalizeCrashes), false},
		{"reclaimed past its last attempt after crashes it gives up merging", 11, failed(10 - finalizeCrashes), false},
		{"rescues by River's rescuer count as crashes", finalizeCrashes + 1, rescued(finalizeCrashes), false},
		{"fewer rescues than the bound still merge", finalizeCrashes, rescued(finalizeCrashes - 1), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &finishingStore{Store: openStore(t)}
			j := answeredMergeJob(t, st.Store)
			w := &finalizeWorker{deps: Deps{Store: st, Logger: slog.New(slog.DiscardHandler)}}
			err := w.Work(context.Background(), &river.Job[FinalizeArgs]{
				JobRow: &rivertype.JobRow{Attempt: tt.attempt, MaxAttempts: 10, Errors: tt.errors}, Args: FinalizeArgs{JobID: j.ID}})
			if err != nil {
				t.Fatalf("Work = %v", err)
			}
			if st.finish == nil {
				t.Fatal("the job was not ended")
			}
			if st.finish.Status != job.StatusComplete {
				t.Errorf("status %s, want COMPLETE (its file was recognized)", st.finish.Status)
			}
			var merged []jobmerge.Answer
			if err := json.Unmarshal(st.finish.Merged, &merged); err != nil || len(merged) != 1 {
				t.Fatalf("merged %s (%v); want one entry", st.finish.Merged, err)
			}
			m := merged[0]
			if tt.merged {
				if m.MergeIncomplete || !strings.Contains(m.Content, `"n":1`) || !strings.Contains(m.Content, `"n":2`) || st.finish.Error != "" {
					t.Errorf("merged %+v, error %q; want both answers merged and no error", m, st.finish.Error)
				}
				if st.maxReads[0] != jobmerge.InputBudget {
					t.Errorf("answers read within %d bytes, want the merge's input budget %d", st.maxReads[0], jobmerge.InputBudget)
				}
				return
			}
			if !m.MergeIncomplete || len(m.IncompleteChunks) != 2 || strings.Contains(m.Content, `"n"`) {
				t.Errorf("merged %+v; want no answer merged and both chunks listed as not merged", m)
			}
			const want = "the answers were not merged: the worker process ended while merging them"
			if !strings.HasPrefix(st.finish.Error, want) {
				t.Errorf("job error %q, want it to begin %q", st.finish.Error, want)
			}
			if st.maxReads[0] >= 64 {
				t.Errorf("answers read within %d bytes; want none read", st.maxReads[0])
			}
		})
	}
}
