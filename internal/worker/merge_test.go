package worker

import (
	"encoding/json"
	"log/slog"
	"reflect"
	"testing"

	"github.com/docjobs/docjobs/internal/job"
)

// TestMergeAnswersOneEntryPerFile: at MERGE_SCOPE_FILE merged[] has one
// entry per file, in file order, files without text included (the spec:
// "one merged entry per file"); such a file's entry is the empty answer
// with nothing listed, a failed file's is listed as incomplete.
func TestMergeAnswersOneEntryPerFile(t *testing.T) {
	urls := []string{"https://x/a.txt", "https://x/empty.txt", "https://x/blank.txt", "https://x/missing.txt"}
	rows := []job.LLMRow{
		{FileIndex: 0, File: urls[0], ChunkTotal: 1, Status: job.RowDone, Content: `{"total":5}`},
		{FileIndex: 1, File: urls[1], ChunkTotal: 1, Status: job.RowSkipped, SkipReason: job.SkipNoOCRContent},
		{FileIndex: 2, File: urls[2], ChunkTotal: 1, Status: job.RowSkipped, SkipReason: job.SkipEmptyOCRContent},
		{FileIndex: 3, ChunkTotal: 1, Status: job.RowSkipped, SkipReason: job.SkipOCRFailed}, // never stored: no File
	}
	type entry struct {
		File, Format, Content string
		SchemaValid           *bool
		Incomplete            bool
		IncompleteChunks      []chunkRef
	}
	yes, no := true, false
	tests := []struct {
		name   string
		schema string
		want   []entry
	}{
		{
			name:   "with a schema: JSON entries, null for files without an answer",
			schema: `{"type":"object","properties":{"total":{"type":"number"}},"required":["total"]}`,
			want: []entry{
				{urls[0], "json", `{"total":5}`, &yes, false, nil},
				{urls[1], "json", "null", &no, false, nil},
				{urls[2], "json", "null", &no, false, nil},
				{urls[3], "json", "null", &no, true, []chunkRef{{File: urls[3]}}},
			},
		},
		{
			name: "without a schema: empty text for files without an answer",
			want: []entry{
				{urls[0], "json", `{"total":5}`, nil, false, nil},
				{urls[1], "text", "", nil, false, nil},
				{urls[2], "text", "", nil, false, nil},
				{urls[3], "text", "", nil, true, []chunkRef{{File: urls[3]}}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &job.Result{
				Job: &job.Job{SourceURLs: urls, Prompts: []string{"extract"}, ResponseSchema: tt.schema,
					Merge: job.Merge{Enabled: true, Scope: "MERGE_SCOPE_FILE"}},
				LLM: rows,
			}
			raw, err := mergeAnswers(res, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			var answers []mergedAnswer
			if err := json.Unmarshal(raw, &answers); err != nil {
				t.Fatalf("%v: %s", err, raw)
			}
			var got []entry
			for _, a := range answers {
				got = append(got, entry{a.File, a.Format, a.Content, a.SchemaValid, a.MergeIncomplete, a.IncompleteChunks})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("merged[]\n%s\nwant one entry per file: %+v", raw, tt.want)
			}
		})
	}
}

// TestMergeAnswersListsAnswersLeftUnread: an answer ResultToFinish did not
// read, as it would have passed the merge's input limit, is listed as not
// merged, like one merge leaves out for that limit (audit-merge2 F2); the
// answers around it are merged. In text, where an empty answer is no
// error, the chunk would otherwise vanish without a word.
func TestMergeAnswersListsAnswersLeftUnread(t *testing.T) {
	url := "https://x/a.txt"
	res := &job.Result{
		Job: &job.Job{SourceURLs: []string{url}, Prompts: []string{"extract"},
			Merge: job.Merge{Enabled: true, Format: "MERGE_FORMAT_TEXT"}},
		LLM: []job.LLMRow{
			{File: url, ChunkIndex: 0, ChunkTotal: 3, Status: job.RowDone, Content: "A."},
			{File: url, ChunkIndex: 1, ChunkTotal: 3, Status: job.RowDone, ContentUnread: true},
			{File: url, ChunkIndex: 2, ChunkTotal: 3, Status: job.RowDone, Content: "C.", Overlap: "x"},
		},
	}
	raw, err := mergeAnswers(res, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var answers []mergedAnswer
	if err := json.Unmarshal(raw, &answers); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	if len(answers) != 1 || answers[0].Content != "A.\n\nC." || !answers[0].MergeIncomplete ||
		!reflect.DeepEqual(answers[0].IncompleteChunks, []chunkRef{{File: url, ChunkIndex: 1}}) {
		t.Errorf("merged[] %s, want A. and C. with chunk 1 listed", raw)
	}
}
