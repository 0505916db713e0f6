package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/docjobs/docjobs/internal/convert"
	"github.com/docjobs/docjobs/internal/fetch"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/store"
)

// RecognizeArgs identify one file of one job. Args carry ids only, never a secret.
type RecognizeArgs struct {
	JobID     string `json:"job_id"`
	FileIndex int    `json:"file_index"`
}

// Kind is the River job kind.
func (RecognizeArgs) Kind() string { return "recognize" }

// InsertOpts puts recognition on its own queue.
func (RecognizeArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueRecognize, MaxAttempts: 5}
}

type recognizeWorker struct {
	river.WorkerDefaults[RecognizeArgs]
	cfg  Config
	deps Deps
}

func (w *recognizeWorker) Timeout(*river.Job[RecognizeArgs]) time.Duration {
	return w.cfg.recognizeTimeout()
}

func (w *recognizeWorker) NextRetry(j *river.Job[RecognizeArgs]) time.Time {
	return retryBackoff(j.Attempt)
}

func (w *recognizeWorker) Work(ctx context.Context, rj *river.Job[RecognizeArgs]) error {
	start := time.Now()
	args := rj.Args
	j, err := w.deps.Store.GetJob(ctx, "", args.JobID)
	if errors.Is(err, job.ErrNotFound) {
		return nil // deleted while queued: nothing left to do
	}
	if err != nil {
		return fmt.Errorf("recognize %s[%d]: load job: %w", args.JobID, args.FileIndex, err)
	}
	if j.Status.Terminal() || args.FileIndex < 0 || args.FileIndex >= len(j.SourceURLs) {
		return nil // cancelled, already finished, or not a file of this job
	}
	log := w.deps.Logger.With("job_id", j.ID, "account_id", j.AccountID, "file_index", args.FileIndex)
	if err := w.deps.Store.MarkRunning(ctx, j.ID); err != nil {
		return fmt.Errorf("recognize %s[%d]: mark running: %w", j.ID, args.FileIndex, err)
	}

	row, file, err := w.recognize(ctx, j, args.FileIndex)
	if err != nil {
		// Only transient faults reach here. A rate-limited provider snoozes
		// the file without spending an attempt; other faults are retried.
		if busy := (*providerBusyError)(nil); errors.As(err, &busy) && busy.rateLimited() && rj.Attempt < rj.MaxAttempts {
			log.Warn("recognize: provider rate limited, snoozing", "retry_after", busy.snooze(), "err", err)
			return river.JobSnooze(busy.snooze())
		}
		if rj.Attempt < rj.MaxAttempts {
			log.Warn("recognize: transient failure, will retry", "attempt", rj.Attempt, "err", err)
			return err
		}
		row.Status, row.Error = job.RowFailed, err.Error()
	}
	row.Duration = time.Since(start)

	done := store.OCRDone{Row: row, File: file, EnqueueWhenLast: finalizeParams(j.ID)}
	done.LLM, done.EnqueueNow = w.modelRows(row, j)
	applied, err := w.deps.Store.FinishOCR(ctx, rj.JobRow, done)
	if err != nil {
		return fmt.Errorf("recognize %s[%d]: finish: %w", j.ID, args.FileIndex, err)
	}
	observe(w.deps.Observer, "recognize", string(row.Status), start)
	log.Info("recognize: file done", "status", row.Status, "format", row.OutputFormat, "applied", applied, "duration", row.Duration)
	return nil
}

// recognize fetches and converts one file. A returned error is transient
// (retry); a bad input instead comes back as a FAILED or SKIPPED row.
func (w *recognizeWorker) recognize(ctx context.Context, j *job.Job, i int) (job.OCRRow, *job.File, error) {
	row := job.OCRRow{JobID: j.ID, FileIndex: i, File: j.SourceURLs[i]}
	fetched, err := w.deps.Fetcher.Fetch(ctx, j.AccountID, j.ID, i, j.SourceURLs[i])
	if err != nil {
		return failOrRetry(row, nil, err)
	}
	row.File = fetched.URL
	if fetched.Size == 0 {
		row.Status = job.RowSkipped
		return row, fetched.File, nil
	}
	data, err := w.deps.Fetcher.Read(ctx, fetched.Key, w.cfg.MaxFileBytes)
	if err != nil {
		return failOrRetry(row, fetched.File, err)
	}
	convertCtx, cancel := context.WithTimeout(ctx, w.cfg.FileTimeout)
	defer cancel()
	out, err := w.deps.Convert(convertCtx, convert.Input{
		Name: fetched.Name, ContentType: fetched.ContentType, Data: data, Mode: j.ExtractionMode,
		OCR: w.ocrFor(j, i),
	})
	if err != nil {
		if convertCtx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("recognition took longer than the %s limit per file", w.cfg.FileTimeout)
		}
		// A provider that is rate limiting or down after the in-process
		// retries: River tries the file again later; the pages already
		// read are kept and not paid for again.
		if pe := (*provider.Error)(nil); errors.As(err, &pe) && pe.Retryable() {
			return row, fetched.File, &providerBusyError{err: err, retryAfter: pe.RetryAfter}
		}
		row.Status, row.Error = job.RowFailed, err.Error()
		return row, fetched.File, nil
	}
	row.Status = job.RowDone
	row.Content, row.OutputFormat, row.Model = out.Content, out.Format, out.Model
	row.Request, row.RawData = out.Request, out.RawData
	return row, fetched.File, nil
}

// providerBusyError is a provider failure that may pass with time.
type providerBusyError struct {
	err        error
	retryAfter time.Duration
}

func (e *providerBusyError) Error() string { return e.err.Error() }
func (e *providerBusyError) Unwrap() error { return e.err }

func (e *providerBusyError) rateLimited() bool {
	pe := (*provider.Error)(nil)
	return errors.As(e.err, &pe) && pe.Category == provider.CategoryRateLimit
}

// snooze honours the provider's Retry-After, at least a few seconds.
func (e *providerBusyError) snooze() time.Duration {
	return max(e.retryAfter, 5*time.Second)
}

// failOrRetry turns a fetch error into a FAILED row, or returns it for River
// to retry when trying again may succeed (5xx, 429, timeouts, network).
func failOrRetry(row job.OCRRow, file *job.File, err error) (job.OCRRow, *job.File, error) {
	if fe := (*fetch.Error)(nil); !errors.As(err, &fe) || fe.Retryable {
		return row, file, err
	}
	row.Status, row.Error = job.RowFailed, err.Error()
	return row, file, nil
}

// modelRows are the file's model rows after recognition: one SKIPPED row
// when the model does not run (DESIGN §4), else one PENDING row per chunk
// of the recognized text, each with the River job that answers it.
func (w *recognizeWorker) modelRows(ocr job.OCRRow, j *job.Job) ([]job.LLMRow, []river.InsertManyParams) {
	if reason := job.SkipReasonAfterOCR(ocr, j.Prompts); reason != "" {
		return []job.LLMRow{job.SkippedLLMRow(ocr, reason, j.Neural.Model)}, nil
	}
	failed := func(err error) ([]job.LLMRow, []river.InsertManyParams) {
		r := job.SkippedLLMRow(ocr, "", j.Neural.Model)
		r.Status, r.Error = job.RowFailed, err.Error()
		return []job.LLMRow{r}, nil
	}
	if w.deps.Chunker == nil {
		return failed(errors.New("the model stage is not configured on this server"))
	}
	chunks, err := w.deps.Chunker.Split(ocr.Content, ocr.OutputFormat, int(j.Neural.ChunkBudgetTokens), j.Neural.Model)
	if err != nil {
		return failed(fmt.Errorf("chunking: %w", err))
	}
	rows := make([]job.LLMRow, len(chunks))
	params := make([]river.InsertManyParams, len(chunks))
	for i, c := range chunks {
		rows[i] = job.LLMRow{JobID: j.ID, FileIndex: ocr.FileIndex, File: ocr.File, ChunkIndex: i,
			ChunkTotal: len(chunks), Status: job.RowPending, Model: j.Neural.Model, Input: c.Text, Overlap: c.Overlap}
		params[i] = river.InsertManyParams{Args: ModelArgs{JobID: j.ID, FileIndex: ocr.FileIndex, ChunkIndex: i}}
	}
	return rows, params
}
