package storetest

import (
	"context"
	"testing"

	"github.com/riverqueue/river"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// progressCounts is a Progress without its time, for comparisons.
type progressCounts struct {
	Status            job.Status
	Error             string
	OCRDone, OCRTotal int
	LLMDone, LLMTotal int
}

func countsOf(p job.Progress) progressCounts {
	return progressCounts{p.Status, p.Error, p.OCRDone, p.OCRTotal, p.LLMDone, p.LLMTotal}
}

func jobProgress(t *testing.T, s store.Store, accountID, id string) job.Progress {
	t.Helper()
	p, err := s.JobProgress(ctx(t), accountID, id)
	noErr(t, "JobProgress", err)
	return p
}

func testJobProgressCountsTerminalRows(t *testing.T, s Store) {
	h := newHarness(t, s, "")
	j := newJob("acct", 3)
	created := createJob(t, s, j, store.CreateJobParams{})

	start := jobProgress(t, s, "acct", j.ID)
	equal(t, "a new job", countsOf(start), progressCounts{Status: job.StatusNew, OCRTotal: 3})
	equal(t, "updated of a new job", start.Updated, created.Updated)
	equal(t, "any account (workers)", countsOf(jobProgress(t, s, "", j.ID)), countsOf(start))
	_, err := s.JobProgress(ctx(t), "other", j.ID)
	isErr(t, "another account's job", err, store.ErrNotFound)
	_, err = s.JobProgress(ctx(t), "acct", newID("job"))
	isErr(t, "an unknown job", err, store.ErrNotFound)

	// File 0 is recognized and waits for two model chunks; file 1 fails and
	// its model row is skipped; file 2 is still pending.
	recognized := doneRow(j, 0, "chunk A chunk B")
	failed := job.OCRRow{JobID: j.ID, FileIndex: 1, Status: job.RowFailed, Error: "fetch failed"}
	h.on("ocr0", func(ctx context.Context, rj *river.Job[stepArgs]) error {
		_, err := s.FinishOCR(ctx, store.OCRDone{Row: recognized, LLM: []job.LLMRow{
			{JobID: j.ID, FileIndex: 0, File: recognized.File, ChunkIndex: 0, ChunkTotal: 2, Status: job.RowPending},
			{JobID: j.ID, FileIndex: 0, File: recognized.File, ChunkIndex: 1, ChunkTotal: 2, Status: job.RowPending},
		}})
		return err
	})
	h.on("ocr1", func(ctx context.Context, rj *river.Job[stepArgs]) error {
		_, err := s.FinishOCR(ctx, store.OCRDone{Row: failed,
			LLM: []job.LLMRow{job.SkippedLLMRow(failed, job.SkipOCRFailed, "")}})
		return err
	})
	// The steps ride on the create of a second job, which ends the test.
	second := createJob(t, s, newJob("acct", 1), store.CreateJobParams{
		Enqueue: []river.InsertManyParams{step("ocr0"), step("ocr1")}})
	for _, run := range h.wait(2) {
		noErr(t, "step "+run.Step, run.Err)
	}

	running := jobProgress(t, s, "acct", j.ID)
	equal(t, "two files recognized, one model row skipped", countsOf(running),
		progressCounts{Status: job.StatusRunning, OCRDone: 2, OCRTotal: 3, LLMDone: 1, LLMTotal: 3})
	if running.Updated.Before(start.Updated) {
		t.Errorf("updated went back: %v after %v", running.Updated, start.Updated)
	}

	// Ending the job fails what was pending: every row is terminal, and
	// the file that was still pending has its skipped model row.
	_, err = s.ExpireJob(ctx(t), j.ID, "timed out", "job deadline exceeded")
	noErr(t, "ExpireJob", err)
	equal(t, "a job ended with a recognized file", countsOf(jobProgress(t, s, "acct", j.ID)),
		progressCounts{Status: job.StatusComplete, OCRDone: 3, OCRTotal: 3, LLMDone: 4, LLMTotal: 4})

	_, err = s.ExpireJob(ctx(t), second.ID, "timed out", "job deadline exceeded")
	noErr(t, "ExpireJob", err)
	equal(t, "a failed job carries its error", countsOf(jobProgress(t, s, "acct", second.ID)),
		progressCounts{Status: job.StatusFailed, Error: "job deadline exceeded", OCRDone: 1, OCRTotal: 1, LLMDone: 1, LLMTotal: 1})
}
