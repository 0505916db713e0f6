package job

import "time"

// Progress is how far a job has come, as the database knows it: its status
// and how many of its rows have finished. It is what live progress streams
// (GET /v1/jobs/{id}/events) report, so every process that can reach the
// database can answer it, whichever process works the job.
type Progress struct {
	Status Status
	Error  string // job-level error, as in Job.Error
	// OCRDone and LLMDone count terminal rows (DONE, FAILED or SKIPPED) out
	// of the job's OCR and model rows. Model rows appear as files finish
	// recognition, so LLMTotal grows while the job runs.
	OCRDone, OCRTotal int
	LLMDone, LLMTotal int
	// Updated is the latest change of the job or of any of its rows.
	Updated time.Time
}
