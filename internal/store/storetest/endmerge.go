package storetest

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// ref and answer are a merged[] entry as the store writes it.
type ref struct {
	File       string `json:"file"`
	ChunkIndex int    `json:"chunkIndex"`
}

type answer struct {
	Format           string `json:"format"`
	Content          string `json:"content"`
	MergeIncomplete  bool   `json:"mergeIncomplete"`
	IncompleteChunks []ref  `json:"incompleteChunks"`
}

// mergingEnd is an ending that merges a merging job's answers, and the
// status it leaves the job in.
type mergingEnd struct {
	name   string
	end    func(t *testing.T, s store.Store, j *job.Job) error
	status job.Status
}

// mergingEnds are the cancel and the deadline.
func mergingEnds() []mergingEnd {
	return []mergingEnd{
		{"cancel", func(t *testing.T, s store.Store, j *job.Job) error {
			_, err := s.CancelJob(ctx(t), j.AccountID, j.ID)
			return err
		}, job.StatusCancelled},
		{"deadline", func(t *testing.T, s store.Store, j *job.Job) error {
			applied, err := s.ExpireJob(ctx(t), j.ID, "timed out", "job deadline exceeded")
			if err == nil && !applied {
				t.Fatal("ExpireJob of a running job: applied = false")
			}
			return err
		}, job.StatusComplete},
	}
}

// EndMerges reads and sets a job's count of tries at merging its answers in
// the cancel or the deadline that ends it (jobs.end_merges), which no
// store method shows: each database's test file does it with SQL.
type EndMerges struct {
	Get func(t *testing.T, jobID string) int
	Set func(t *testing.T, jobID string, n int)
}

// endMergeBound is the store's endMergeCrashes.
const endMergeBound = 3

// EndingMergesAreBounded: a cancel and the deadline merge a merging job's
// answers in the transaction that ends it, so a merge that takes its
// process down rolls the ending back, and the deadline sweep, which runs
// at every start, took every start down with it (hunt-endings F2). Each
// try is counted before that transaction, in one of its own. A job whose
// count is at the bound ends without its answers read or merged: merged[]
// is there with every answered chunk listed as not merged, the rows keep
// the answers and the job's error says why. Below the bound it merges as
// before. A job that does not merge counts nothing, and a try whose ending
// failed with an error (not a crash) is given back.
//
// open returns a fresh, empty, migrated store and the access to its
// counts; the test closes the store.
func EndingMergesAreBounded(t *testing.T, open func(t *testing.T) (store.Store, EndMerges)) {
	const file = "https://example.com/doca.txt"
	unmergedErr := "the answers were not merged: a process ended while merging them 3 times; each chunk's answer is in its row"
	ends := mergingEnds()
	tests := []struct {
		name       string
		merge      bool
		scope      string // MERGE_SCOPE_JOB unless set
		tries      int    // counted before the end
		wantErr    bool   // the end fails
		wantTries  int    // counted after the end
		wantError  string // the job's
		wantMerged []answer
	}{
		{
			name: "a job whose tries reached the bound ends unmerged", merge: true, tries: endMergeBound,
			wantTries: endMergeBound, wantError: unmergedErr,
			wantMerged: []answer{{Format: "text", MergeIncomplete: true,
				IncompleteChunks: []ref{{file, 0}, {file, 1}, {file, 2}}}},
		},
		{
			name: "a job past the bound ends unmerged too", merge: true, tries: endMergeBound + 2,
			wantTries: endMergeBound + 2, wantError: strings.Replace(unmergedErr, "3 times", "5 times", 1),
			wantMerged: []answer{{Format: "text", MergeIncomplete: true,
				IncompleteChunks: []ref{{file, 0}, {file, 1}, {file, 2}}}},
		},
		{
			name: "a job one try below the bound merges as before", merge: true, tries: endMergeBound - 1,
			wantTries: endMergeBound,
			wantMerged: []answer{{Format: "text", Content: "one\n\ntwo", MergeIncomplete: true,
				IncompleteChunks: []ref{{file, 2}}}},
		},
		{
			name: "a job's first end counts its try and merges", merge: true,
			wantTries: 1,
			wantMerged: []answer{{Format: "text", Content: "one\n\ntwo", MergeIncomplete: true,
				IncompleteChunks: []ref{{file, 2}}}},
		},
		{name: "a job that does not merge counts nothing"},
		{
			name: "a try whose end failed is given back", merge: true, scope: "MERGE_SCOPE_BOGUS", tries: 1,
			wantErr: true, wantTries: 1,
		},
	}
	for _, e := range ends {
		for _, tt := range tests {
			t.Run(e.name+": "+tt.name, func(t *testing.T) {
				s, counts := open(t)
				t.Cleanup(func() {
					if err := s.Close(); err != nil {
						t.Errorf("close: %v", err)
					}
				})
				j := newJob("acct", 1)
				j.Prompts = []string{"p"}
				if tt.merge {
					j.Merge = job.Merge{Enabled: true, Scope: "MERGE_SCOPE_JOB", Format: "MERGE_FORMAT_TEXT"}
					if tt.scope != "" {
						j.Merge.Scope = tt.scope
					}
				}
				createJob(t, s, j, store.CreateJobParams{})
				ocr := job.OCRRow{JobID: j.ID, File: file, Status: job.RowDone, Content: "text", OutputFormat: job.FormatPlain}
				rows := make([]job.LLMRow, 3)
				for c := range rows {
					rows[c] = job.LLMRow{JobID: j.ID, File: file, ChunkIndex: c, ChunkTotal: 3, Status: job.RowPending, Input: "chunk"}
				}
				_, err := s.FinishOCR(ctx(t), store.OCRDone{Row: ocr, LLM: rows})
				noErr(t, "FinishOCR", err)
				for c, content := range []string{"one", "two"} {
					r := rows[c]
					r.Status, r.Content = job.RowDone, content
					_, err := s.FinishLLM(ctx(t), store.LLMDone{Row: r})
					noErr(t, "FinishLLM", err)
				}
				if tt.tries > 0 {
					counts.Set(t, j.ID, tt.tries)
				}

				err = e.end(t, s, j)
				equal(t, "tries counted after the end", counts.Get(t, j.ID), tt.wantTries)
				if tt.wantErr {
					if err == nil {
						t.Fatal("the end of a job whose merge fails succeeded")
					}
					equal(t, "status after a failed end", getJob(t, s, j.ID).Status, job.StatusRunning)
					return
				}
				noErr(t, "the end", err)
				res := getResult(t, s, j.ID)
				equal(t, "status", res.Job.Status, e.status)
				equal(t, "error", res.Job.Error, tt.wantError)
				// The rows keep their answers whether merged or not.
				var contents []string
				for _, r := range res.LLM {
					contents = append(contents, string(r.Status)+" "+r.Content)
				}
				equal(t, "model rows", contents, []string{"DONE one", "DONE two", "FAILED "})
				if tt.wantMerged == nil {
					equal(t, "merged", string(res.Merged), "")
					return
				}
				var got []answer
				if err := json.Unmarshal(res.Merged, &got); err != nil {
					t.Fatalf("merged %q: %v", res.Merged, err)
				}
				equal(t, "merged", got, tt.wantMerged)
			})
		}
	}
}

// endMergeOutsideTries is the store's endMergeOutside: how many merges a
// cancel or the deadline makes before its transaction, redoing one that
// rows moved under, before it merges inside the transaction.
const endMergeOutsideTries = 2

// hookWait bounds a write a merge hook makes: held behind the merge, it
// would otherwise wait for a merge that waits for it. Not a measure of
// speed: the write takes milliseconds once nothing holds it.
const hookWait = 10 * time.Second

// EndingMergesLeaveTheWriterFree: a cancel and the deadline merged a
// merging job's answers inside the transaction that ends the job, so for
// as long as the merge took (seconds at the merge's input limit) they held
// the job row, and on SQLite the one writer: no other write of the
// process committed (hunt mergetx). The merge now runs before that
// transaction, which stores it only if none of the job's rows moved
// meanwhile; an answer that lands during the merge is merged by a redo,
// and once answers have landed during endMergeOutsideTries merges the
// last merge runs inside the transaction, as before.
//
// Each case's hook makes writes while the merge runs (setHook installs it
// on the store): they must commit before the merge ends, and the job's
// merged[] must hold what its rows hold once it has ended. open returns a
// fresh, empty, migrated store; the test closes it.
func EndingMergesLeaveTheWriterFree(t *testing.T, open func(t *testing.T) (s store.Store, setHook func(fn func(jobID string)))) {
	const file = "https://example.com/doca.txt"
	ends := mergingEnds()
	// Each case's job has one file of four chunks, the first two answered
	// ("one", "two") before the end.
	tests := []struct {
		name string
		// during runs at the hook's n-th call (from 1): the writes that
		// must commit while that merge runs.
		during     func(t *testing.T, ctx context.Context, s store.Store, j *job.Job, answer func(chunk int, content string) error, n int) error
		wantMerges int
		wantRows   []string
		wantMerged answer
	}{
		{
			name: "another job is created while the merge runs",
			during: func(t *testing.T, ctx context.Context, s store.Store, _ *job.Job, _ func(int, string) error, n int) error {
				if n > 1 {
					return nil
				}
				other := newJob("acct", 1)
				_, _, err := s.CreateJob(ctx, store.CreateJobParams{Job: other})
				return err
			},
			wantMerges: 1,
			wantRows:   []string{"DONE one", "DONE two", "FAILED ", "FAILED "},
			wantMerged: answer{Format: "text", Content: "one\n\ntwo", MergeIncomplete: true,
				IncompleteChunks: []ref{{file, 2}, {file, 3}}},
		},
		{
			name: "an answer that lands while the merge runs is merged",
			during: func(t *testing.T, ctx context.Context, _ store.Store, _ *job.Job, answer func(int, string) error, n int) error {
				if n > 1 {
					return nil
				}
				return answer(2, "three")
			},
			wantMerges: 2,
			wantRows:   []string{"DONE one", "DONE two", "DONE three", "FAILED "},
			wantMerged: answer{Format: "text", Content: "one\n\ntwo\n\nthree", MergeIncomplete: true,
				IncompleteChunks: []ref{{file, 3}}},
		},
		{
			name: "answers that keep landing are merged inside the ending",
			during: func(t *testing.T, ctx context.Context, _ store.Store, _ *job.Job, answer func(int, string) error, n int) error {
				switch n {
				case 1:
					return answer(2, "three")
				case 2:
					return answer(3, "four")
				}
				return nil // inside the transaction: a write would wait for it
			},
			wantMerges: endMergeOutsideTries + 1,
			wantRows:   []string{"DONE one", "DONE two", "DONE three", "DONE four"},
			wantMerged: answer{Format: "text", Content: "one\n\ntwo\n\nthree\n\nfour"},
		},
	}
	for _, e := range ends {
		for _, tt := range tests {
			t.Run(e.name+": "+tt.name, func(t *testing.T) {
				s, setHook := open(t)
				t.Cleanup(func() {
					if err := s.Close(); err != nil {
						t.Errorf("close: %v", err)
					}
				})
				j := newJob("acct", 1)
				j.Prompts = []string{"p"}
				j.Merge = job.Merge{Enabled: true, Scope: "MERGE_SCOPE_JOB", Format: "MERGE_FORMAT_TEXT"}
				createJob(t, s, j, store.CreateJobParams{})
				ocr := job.OCRRow{JobID: j.ID, File: file, Status: job.RowDone, Content: "text", OutputFormat: job.FormatPlain}
				rows := make([]job.LLMRow, 4)
				for c := range rows {
					rows[c] = job.LLMRow{JobID: j.ID, File: file, ChunkIndex: c, ChunkTotal: len(rows), Status: job.RowPending, Input: "chunk"}
				}
				_, err := s.FinishOCR(ctx(t), store.OCRDone{Row: ocr, LLM: rows})
				noErr(t, "FinishOCR", err)
				answerIn := func(ctx context.Context) func(int, string) error {
					return func(c int, content string) error {
						r := rows[c]
						r.Status, r.Content = job.RowDone, content
						_, err := s.FinishLLM(ctx, store.LLMDone{Row: r})
						return err
					}
				}
				for c, content := range []string{"one", "two"} {
					noErr(t, "FinishLLM", answerIn(ctx(t))(c, content))
				}

				merges := 0
				setHook(func(jobID string) {
					if jobID != j.ID {
						return
					}
					merges++
					wctx, cancel := context.WithTimeout(ctx(t), hookWait)
					defer cancel()
					// In a goroutine: a write held behind the merge (FinishLLM
					// waits for the job row whatever its context) would hang
					// the test rather than fail it.
					done := make(chan error, 1)
					go func(n int) { done <- tt.during(t, wctx, s, j, answerIn(wctx), n) }(merges)
					select {
					case err := <-done:
						if err != nil {
							t.Errorf("a write during merge %d failed: %v", merges, err)
						}
					case <-wctx.Done():
						t.Errorf("a write during merge %d did not commit while the merge ran", merges)
					}
				})
				noErr(t, "the end", e.end(t, s, j))
				equal(t, "merges", merges, tt.wantMerges)
				res := getResult(t, s, j.ID)
				equal(t, "status", res.Job.Status, e.status)
				var contents []string
				for _, r := range res.LLM {
					contents = append(contents, string(r.Status)+" "+r.Content)
				}
				equal(t, "model rows", contents, tt.wantRows)
				var got []answer
				if err := json.Unmarshal(res.Merged, &got); err != nil {
					t.Fatalf("merged %q: %v", res.Merged, err)
				}
				equal(t, "merged", got, []answer{tt.wantMerged})
			})
		}
	}
}

// EndingMergesSeeTheRowsTheEndingLeaves: the merge a cancel or the deadline
// makes before its transaction takes the job's rows as that transaction
// leaves them, as the merge inside it read them: the pending ones failed,
// and a file still being recognized given its ocr_failed row, so it is
// listed as not merged. open returns a fresh, empty, migrated store; the
// test closes it.
func EndingMergesSeeTheRowsTheEndingLeaves(t *testing.T, open func(t *testing.T) store.Store) {
	for _, e := range mergingEnds() {
		t.Run(e.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			})
			// Three files: the first recognized (two chunks, the first
			// answered), the second still being recognized, the third
			// recognized with nothing answered yet.
			j := newJob("acct", 3)
			j.Prompts = []string{"p"}
			j.Merge = job.Merge{Enabled: true, Scope: "MERGE_SCOPE_JOB", Format: "MERGE_FORMAT_TEXT"}
			createJob(t, s, j, store.CreateJobParams{})
			var first []job.LLMRow
			for _, f := range []int{0, 2} {
				ocr := job.OCRRow{JobID: j.ID, FileIndex: f, File: j.SourceURLs[f], Status: job.RowDone, Content: "text", OutputFormat: job.FormatPlain}
				rows := make([]job.LLMRow, 2)
				for c := range rows {
					rows[c] = job.LLMRow{JobID: j.ID, FileIndex: f, File: ocr.File, ChunkIndex: c, ChunkTotal: len(rows), Status: job.RowPending, Input: "chunk"}
				}
				_, err := s.FinishOCR(ctx(t), store.OCRDone{Row: ocr, LLM: rows})
				noErr(t, "FinishOCR", err)
				if f == 0 {
					first = rows
				}
			}
			r := first[0]
			r.Status, r.Content = job.RowDone, "one"
			_, err := s.FinishLLM(ctx(t), store.LLMDone{Row: r})
			noErr(t, "FinishLLM", err)

			noErr(t, e.name, e.end(t, s, j))
			res := getResult(t, s, j.ID)
			var got []answer
			if err := json.Unmarshal(res.Merged, &got); err != nil {
				t.Fatalf("merged %q: %v", res.Merged, err)
			}
			equal(t, "merged", got, []answer{{Format: "text", Content: "one", MergeIncomplete: true,
				IncompleteChunks: []ref{{j.SourceURLs[0], 1}, {j.SourceURLs[1], 0}, {j.SourceURLs[2], 0}, {j.SourceURLs[2], 1}}}})
		})
	}
}

// EndHooks installs a store's test hooks: merge runs just before each
// merge of a job's answers for a cancel or the deadline, wait when one of
// those endings waits for another of the same job to end first.
type EndHooks func(merge, wait func(jobID string))

// ConcurrentEndingsOfAJobMergeOnce: inside the ending transaction, a
// second cancel (or the deadline) of a merging job waited for the first at
// the job row and then found the job ended, so the job was merged once.
// Merged before that transaction, concurrent endings each merged at once,
// each up to the merge's peak memory (about 1.2 GB at its input limit).
// Endings of one job in one process now take turns: the second waits
// while the first merges, and then finds the job ended without merging.
// open returns a fresh, empty, migrated store; the test closes it.
func ConcurrentEndingsOfAJobMergeOnce(t *testing.T, open func(t *testing.T) (store.Store, EndHooks)) {
	s, hooks := open(t)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	const file = "https://example.com/doca.txt"
	j := newJob("acct", 1)
	j.Prompts = []string{"p"}
	j.Merge = job.Merge{Enabled: true, Scope: "MERGE_SCOPE_JOB", Format: "MERGE_FORMAT_TEXT"}
	createJob(t, s, j, store.CreateJobParams{})
	ocr := job.OCRRow{JobID: j.ID, File: file, Status: job.RowDone, Content: "text", OutputFormat: job.FormatPlain}
	rows := make([]job.LLMRow, 2)
	for c := range rows {
		rows[c] = job.LLMRow{JobID: j.ID, File: file, ChunkIndex: c, ChunkTotal: len(rows), Status: job.RowPending, Input: "chunk"}
	}
	_, err := s.FinishOCR(ctx(t), store.OCRDone{Row: ocr, LLM: rows})
	noErr(t, "FinishOCR", err)

	var (
		merges       int
		second       = make(chan error, 1) // the deadline's end
		secondMerged = make(chan struct{})
		secondWaits  = make(chan struct{})
		mergedOnce   sync.Once
		waitsOnce    sync.Once
		mu           sync.Mutex
	)
	hooks(func(jobID string) {
		mu.Lock()
		merges++
		n := merges
		mu.Unlock()
		if n > 1 {
			mergedOnce.Do(func() { close(secondMerged) })
			return
		}
		// The first merge (the cancel's): the deadline ends the job now,
		// and either merges too or waits for the cancel.
		go func() {
			_, err := s.ExpireJob(ctx(t), j.ID, "timed out", "job deadline exceeded")
			second <- err
		}()
		select {
		case <-secondMerged:
			t.Error("the deadline merged the job's answers while its cancel merged them")
		case <-secondWaits:
		}
	}, func(string) {
		waitsOnce.Do(func() { close(secondWaits) })
	})
	_, err = s.CancelJob(ctx(t), j.AccountID, j.ID)
	noErr(t, "CancelJob", err)
	noErr(t, "ExpireJob after the cancel", <-second)
	equal(t, "merges", merges, 1)
	equal(t, "status", getJob(t, s, j.ID).Status, job.StatusCancelled)
}
