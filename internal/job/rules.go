package job

import "strings"

// SkipReasonAfterOCR says whether a file's model rows are skipped after
// recognition, and why (DESIGN §4). An empty reason means the model runs.
// A failed or skipped recognition names itself first; after a successful
// one, missing prompts come before blank content (spec, POST /v1/jobs
// rule 1: every row of a job without prompts is no_prompt).
func SkipReasonAfterOCR(ocr OCRRow, prompts []string) string {
	switch {
	case ocr.Status == RowFailed:
		return SkipOCRFailed
	case ocr.Status == RowSkipped:
		return SkipNoOCRContent
	case len(prompts) == 0:
		return SkipNoPrompt
	case strings.TrimSpace(ocr.Content) == "":
		return SkipEmptyOCRContent
	}
	return ""
}

// SkippedLLMRow is the single model row of a file whose model stage does not run.
func SkippedLLMRow(ocr OCRRow, reason, model string) LLMRow {
	return LLMRow{
		JobID:      ocr.JobID,
		FileIndex:  ocr.FileIndex,
		File:       ocr.File,
		ChunkIndex: 0,
		ChunkTotal: 1,
		Status:     RowSkipped,
		SkipReason: reason,
		Model:      model,
	}
}

// FinalStatus is the status of a job whose rows are all terminal: COMPLETE
// when at least one file was recognized, else FAILED with the reason.
func FinalStatus(ocr []OCRRow) (Status, string) {
	for _, r := range ocr {
		if r.Status == RowDone {
			return StatusComplete, ""
		}
	}
	if len(ocr) == 1 && ocr[0].Error != "" {
		return StatusFailed, "no file could be recognized: " + ocr[0].Error
	}
	return StatusFailed, "no file could be recognized"
}
