package job

import "testing"

func TestSkipReasonAfterOCR(t *testing.T) {
	tests := []struct {
		name    string
		ocr     OCRRow
		prompts []string
		want    string
	}{
		{"failed recognition", OCRRow{Status: RowFailed}, []string{"p"}, SkipOCRFailed},
		{"failed recognition without prompts", OCRRow{Status: RowFailed}, nil, SkipOCRFailed},
		{"skipped recognition", OCRRow{Status: RowSkipped}, []string{"p"}, SkipNoOCRContent},
		{"whitespace only", OCRRow{Status: RowDone, Content: " \n\t"}, []string{"p"}, SkipEmptyOCRContent},
		{"no prompts", OCRRow{Status: RowDone, Content: "text"}, nil, SkipNoPrompt},
		{"whitespace only without prompts is no_prompt", OCRRow{Status: RowDone, Content: " \n\t"}, nil, SkipNoPrompt},
		{"skipped recognition without prompts", OCRRow{Status: RowSkipped}, nil, SkipNoOCRContent},
		{"model runs", OCRRow{Status: RowDone, Content: "text"}, []string{"p"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SkipReasonAfterOCR(tt.ocr, tt.prompts); got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFinalStatus(t *testing.T) {
	tests := []struct {
		name       string
		rows       []OCRRow
		want       Status
		wantReason string
	}{
		{"one file recognized is enough", []OCRRow{{Status: RowFailed}, {Status: RowDone}}, StatusComplete, ""},
		{"nothing recognized", []OCRRow{{Status: RowFailed}, {Status: RowSkipped}}, StatusFailed, "no file could be recognized"},
		{"single failure names its cause", []OCRRow{{Status: RowFailed, Error: "404"}}, StatusFailed, "no file could be recognized: 404"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := FinalStatus(tt.rows)
			if got != tt.want || reason != tt.wantReason {
				t.Fatalf("got %s %q, want %s %q", got, reason, tt.want, tt.wantReason)
			}
		})
	}
}

func TestSkippedRowIsChunkZeroOfOne(t *testing.T) {
	r := SkippedLLMRow(OCRRow{JobID: "j", FileIndex: 2, File: "f"}, SkipNoPrompt, "m")
	if r.ChunkIndex != 0 || r.ChunkTotal != 1 || r.Status != RowSkipped || r.FileIndex != 2 || r.Model != "m" {
		t.Fatalf("%+v", r)
	}
}
