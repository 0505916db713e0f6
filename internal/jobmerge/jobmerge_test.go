package jobmerge

import (
	"encoding/json"
	"log/slog"
	"reflect"
	"testing"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/logtest"
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
		IncompleteChunks      []ChunkRef
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
				{urls[3], "json", "null", &no, true, []ChunkRef{{File: urls[3]}}},
			},
		},
		{
			name: "without a schema: empty text for files without an answer",
			want: []entry{
				{urls[0], "json", `{"total":5}`, nil, false, nil},
				{urls[1], "text", "", nil, false, nil},
				{urls[2], "text", "", nil, false, nil},
				{urls[3], "text", "", nil, true, []ChunkRef{{File: urls[3]}}},
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
			raw, err := Answers(res, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			var answers []Answer
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
	raw, err := Answers(res, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var answers []Answer
	if err := json.Unmarshal(raw, &answers); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	if len(answers) != 1 || answers[0].Content != "A.\n\nC." || !answers[0].MergeIncomplete ||
		!reflect.DeepEqual(answers[0].IncompleteChunks, []ChunkRef{{File: url, ChunkIndex: 1}}) {
		t.Errorf("merged[] %s, want A. and C. with chunk 1 listed", raw)
	}
}

// TestAnswersOfAJobWithoutPrompts: a job that set merge.enabled and sent
// no prompt has merged[] too (spec: "present only when the job set
// merge.enabled"; MERGE_SCOPE_FILE "one merged entry per file"), with
// nothing in it: its no_prompt rows lost nothing, as the rows of a file
// without text, and the row says why. A file whose recognition failed is
// still listed as missing.
func TestAnswersOfAJobWithoutPrompts(t *testing.T) {
	urls := []string{"https://x/a.txt", "https://x/b.txt", "https://x/missing.txt"}
	rows := []job.LLMRow{
		{FileIndex: 0, File: urls[0], ChunkTotal: 1, Status: job.RowSkipped, SkipReason: job.SkipNoPrompt},
		{FileIndex: 1, File: urls[1], ChunkTotal: 1, Status: job.RowSkipped, SkipReason: job.SkipNoPrompt},
		{FileIndex: 2, ChunkTotal: 1, Status: job.RowSkipped, SkipReason: job.SkipOCRFailed},
	}
	tests := []struct {
		name  string
		scope string
		rows  []job.LLMRow
		want  []Answer
	}{
		{
			name: "one empty entry per file at MERGE_SCOPE_FILE", scope: "MERGE_SCOPE_FILE", rows: rows[:2],
			want: []Answer{{File: urls[0], Format: "text"}, {File: urls[1], Format: "text"}},
		},
		{
			name: "one empty entry at MERGE_SCOPE_JOB", scope: "MERGE_SCOPE_JOB", rows: rows[:2],
			want: []Answer{{Format: "text"}},
		},
		{
			name: "a file whose recognition failed is listed", scope: "MERGE_SCOPE_JOB", rows: rows,
			want: []Answer{{Format: "text", MergeIncomplete: true, IncompleteChunks: []ChunkRef{{File: urls[2]}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := &job.Result{
				Job: &job.Job{SourceURLs: urls, Merge: job.Merge{Enabled: true, Scope: tt.scope}},
				LLM: tt.rows,
			}
			raw, err := Answers(res, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			var got []Answer
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatalf("%v: %q", err, raw)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("merged[] %s, want %+v", raw, tt.want)
			}
		})
	}
}

// TestAnswersLogRowsWithoutAnAnswerOnceWhenThereAreMany: a cancel fails
// every pending row and merges inside its transaction, so thousands of
// rows without an answer are one log line, not one each; a few are still
// named one by one.
func TestAnswersLogRowsWithoutAnAnswerOnceWhenThereAreMany(t *testing.T) {
	tests := []struct {
		name      string
		failed    int
		wantLines int
	}{
		{"a few are logged one by one", maxLoggedChunks - 1, maxLoggedChunks - 1},
		{"many are one line", 5000, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := "https://x/a.txt"
			rows := []job.LLMRow{{File: url, ChunkTotal: tt.failed + 1, Status: job.RowDone, Content: "A."}}
			for i := 1; i <= tt.failed; i++ {
				rows = append(rows, job.LLMRow{File: url, ChunkIndex: i, ChunkTotal: tt.failed + 1, Status: job.RowFailed})
			}
			var buf logtest.Buffer
			res := &job.Result{Job: &job.Job{SourceURLs: []string{url}, Prompts: []string{"p"},
				Merge: job.Merge{Enabled: true, Format: "MERGE_FORMAT_TEXT"}}, LLM: rows}
			raw, err := Answers(res, slog.New(slog.NewJSONHandler(&buf, nil)))
			if err != nil {
				t.Fatal(err)
			}
			var got []Answer
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || len(got[0].IncompleteChunks) != tt.failed {
				t.Fatalf("merged[] lists %d chunks, want %d", len(got[0].IncompleteChunks), tt.failed)
			}
			if n := len(buf.Records(t)); n != tt.wantLines {
				t.Errorf("%d log lines, want %d", n, tt.wantLines)
			}
		})
	}
}
