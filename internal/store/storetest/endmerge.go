package storetest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

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
	const file = "https://example.com/doca.txt"
	unmergedErr := "the answers were not merged: a process ended while merging them 3 times; each chunk's answer is in its row"
	ends := []struct {
		name   string
		end    func(t *testing.T, s store.Store, j *job.Job) error
		status job.Status
	}{
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
