package storetest

import (
	"encoding/json"
	"testing"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// testAJobEndedEarlyKeepsItsMergedAnswers: a job with merge.enabled that a
// cancel or the deadline ends has merged[] as one that finalize ends does
// (spec: merged[] is "present only when the job set merge.enabled", for
// every terminal status): the DONE answers merged, the chunks that were
// still pending listed in incompleteChunks. It is stored by the
// transaction that ends the job, so no reader sees the job ended without it.
func testAJobEndedEarlyKeepsItsMergedAnswers(t *testing.T, s Store) {
	type ref struct {
		File       string `json:"file"`
		ChunkIndex int    `json:"chunkIndex"`
	}
	type answer struct {
		File             string `json:"file"`
		Format           string `json:"format"`
		Content          string `json:"content"`
		MergeIncomplete  bool   `json:"mergeIncomplete"`
		IncompleteChunks []ref  `json:"incompleteChunks"`
	}
	ends := []struct {
		name string
		end  func(t *testing.T, j *job.Job)
	}{
		{"a cancelled", func(t *testing.T, j *job.Job) {
			_, err := s.CancelJob(ctx(t), j.AccountID, j.ID)
			noErr(t, "CancelJob", err)
		}},
		{"an overdue", func(t *testing.T, j *job.Job) {
			applied, err := s.ExpireJob(ctx(t), j.ID, "timed out", "job deadline exceeded")
			noErr(t, "ExpireJob", err)
			equal(t, "applied", applied, true)
		}},
	}
	tests := []struct {
		name  string
		merge bool
		done  int // of the file's 3 rows, the first done are answered
		want  []answer
	}{
		{
			name: "merge job keeps the answers it had and lists the rest", merge: true, done: 2,
			want: []answer{{Format: "text", Content: "one\n\ntwo", MergeIncomplete: true,
				IncompleteChunks: []ref{{"https://example.com/doca.txt", 2}}}},
		},
		{
			name: "merge job whose rows were all answered before finalize ran keeps them all", merge: true, done: 3,
			want: []answer{{Format: "text", Content: "one\n\ntwo\n\nthree"}},
		},
		{
			name: "merge job with no answer lists every chunk", merge: true, done: 0,
			want: []answer{{Format: "text", MergeIncomplete: true, IncompleteChunks: []ref{
				{"https://example.com/doca.txt", 0}, {"https://example.com/doca.txt", 1}, {"https://example.com/doca.txt", 2}}}},
		},
		{name: "job that does not merge has none", done: 2},
	}
	for _, e := range ends {
		for _, tt := range tests {
			t.Run(e.name+" "+tt.name, func(t *testing.T) {
				j := newJob("acct", 1)
				j.Prompts = []string{"p"}
				j.Merge = job.Merge{Enabled: tt.merge, Scope: "MERGE_SCOPE_JOB", Format: "MERGE_FORMAT_TEXT"}
				createJob(t, s, j, store.CreateJobParams{})
				ocr := job.OCRRow{JobID: j.ID, File: j.SourceURLs[0], Status: job.RowDone, Content: "text", OutputFormat: job.FormatPlain}
				rows := make([]job.LLMRow, 3)
				for c := range rows {
					rows[c] = job.LLMRow{JobID: j.ID, File: ocr.File, ChunkIndex: c, ChunkTotal: 3, Status: job.RowPending, Input: "chunk"}
				}
				_, err := s.FinishOCR(ctx(t), store.OCRDone{Row: ocr, LLM: rows})
				noErr(t, "FinishOCR", err)
				for c, content := range []string{"one", "two", "three"}[:tt.done] {
					r := rows[c]
					r.Status, r.Content = job.RowDone, content
					_, err := s.FinishLLM(ctx(t), store.LLMDone{Row: r}) // finalize is not run
					noErr(t, "FinishLLM", err)
				}

				e.end(t, j)

				res := getResult(t, s, j.ID)
				if !res.Job.Status.Terminal() {
					t.Fatalf("job status %s, want terminal", res.Job.Status)
				}
				if tt.want == nil {
					equal(t, "merged", string(res.Merged), "")
					return
				}
				var got []answer
				if err := json.Unmarshal(res.Merged, &got); err != nil {
					t.Fatalf("merged %q: %v", res.Merged, err)
				}
				equal(t, "merged", got, tt.want)
			})
		}
	}
}
