package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/docjobs/docjobs/internal/convert"
	"github.com/docjobs/docjobs/internal/fetch"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/store"
)

// recognition is a file recognized but not yet kept: its OCR row, its
// model rows, and the downloaded source that must be stored first.
type recognition struct {
	done   store.OCRDone
	source fetch.Result
}

// pending are the model rows left to ask.
func (r *recognition) pending() []job.LLMRow {
	var rows []job.LLMRow
	for _, row := range r.done.LLM {
		if row.Status == job.RowPending {
			rows = append(rows, row)
		}
	}
	return rows
}

// recognizeFile fetches and recognizes file rj.Args.FileIndex and splits it
// into model rows; keepRecognition makes that durable. A returned error is
// transient: River tries the file again (or, rate limited, snoozes it).
func (w *fileWorker) recognizeFile(ctx context.Context, rj *river.Job[FileArgs], j *job.Job, log *slog.Logger) (*recognition, error) {
	i := rj.Args.FileIndex
	start := time.Now()
	if j.Status == job.StatusNew {
		if err := w.deps.Store.MarkRunning(ctx, j.ID); err != nil {
			return nil, fmt.Errorf("file %s[%d]: mark running: %w", j.ID, i, err)
		}
	}
	if err := w.recognizing.Acquire(ctx, j.AccountID); err != nil {
		return nil, err
	}
	row, source, err := w.recognize(ctx, j, i)
	w.recognizing.Release()
	if err != nil {
		// Only transient faults reach here. A rate-limited provider snoozes
		// the file without spending an attempt; other faults are retried.
		if busy := (*providerBusyError)(nil); errors.As(err, &busy) && busy.rateLimited() && rj.Attempt < rj.MaxAttempts {
			log.Warn("recognize: provider rate limited, snoozing", "retry_after", busy.snooze(), "err", err)
			return nil, river.JobSnooze(busy.snooze())
		}
		if rj.Attempt < rj.MaxAttempts {
			log.Warn("recognize: transient failure, will retry", "attempt", rj.Attempt, "err", err)
			return nil, err
		}
		row.Status, row.Error = job.RowFailed, err.Error()
	}
	row.Duration = time.Since(start)
	observe(w.deps.Observer, "recognize", string(row.Status), start)
	done := store.OCRDone{Row: row, File: source.File, LLM: w.modelRows(row, j), Name: source.Name}
	for i := range done.LLM {
		done.LLM[i].FileName = source.Name
	}
	done.EndWhenLast, done.EnqueueWhenLast = lastStep(j)
	return &recognition{done: done, source: source}, nil
}

// keepRecognition stores the downloaded source and records the file's
// recognition with its model rows. It reports false when the file is not
// this attempt's to record: the job ended, or another attempt recorded it.
// Answers to the file's rows may already be paid for and wait on this
// record, so a failed write is tried again, as record does.
func (w *fileWorker) keepRecognition(ctx context.Context, j *job.Job, rec *recognition, log *slog.Logger) (bool, error) {
	saved := false
	applied, err := retryWrite(ctx, func(ctx context.Context) (bool, error) {
		if !saved {
			if err := w.deps.Fetcher.Save(ctx, rec.source); err != nil {
				return false, err
			}
			saved = true
		}
		return w.deps.Store.FinishOCR(ctx, rec.done)
	})
	if !applied {
		w.discardUnrecorded(ctx, rec.source, log)
	}
	row := rec.done.Row
	if err != nil {
		return false, fmt.Errorf("file %s[%d]: finish recognition: %w", j.ID, row.FileIndex, err)
	}
	log.Info("recognize: file done", "status", row.Status, "format", row.OutputFormat, "applied", applied, "duration", row.Duration)
	return applied, nil
}

// discardUnrecorded deletes the copy this attempt stored of a file whose
// recognition it did not record (the job ended, another attempt recorded the
// file, or the record failed), so that a cancelled job gains no file. The
// store is asked first: a record that committed but reported an error is
// tried again and then finds its row terminal, and its copy must stay. A copy
// left behind (the check or the delete failed) goes with the job's prefix
// when the job is deleted.
func (w *fileWorker) discardUnrecorded(ctx context.Context, source fetch.Result, log *slog.Logger) {
	if source.File == nil {
		return // nothing was stored for the job
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), discardTimeout)
	defer cancel()
	_, err := w.deps.Store.GetFile(ctx, "", source.File.ID)
	if !errors.Is(err, job.ErrNotFound) {
		if err != nil {
			log.Warn("recognize: could not tell whether an unrecorded copy is recorded; kept", "key", source.Key, "err", err)
		}
		return
	}
	if err := w.deps.Fetcher.Discard(ctx, source); err != nil {
		log.Warn("recognize: could not discard an unrecorded copy", "key", source.Key, "err", err)
	}
}

// discardTimeout bounds discardUnrecorded, which outlives the file's context.
const discardTimeout = 10 * time.Second

// recognize fetches and converts one file. A returned error is transient
// (retry); a bad input instead comes back as a FAILED or SKIPPED row.
func (w *fileWorker) recognize(ctx context.Context, j *job.Job, i int) (job.OCRRow, fetch.Result, error) {
	row := job.OCRRow{JobID: j.ID, FileIndex: i, File: j.SourceURLs[i]}
	fetched, err := w.deps.Fetcher.Fetch(ctx, j.AccountID, j.ID, i, j.SourceURLs[i])
	if err != nil {
		return failOrRetry(row, fetch.Result{}, err)
	}
	row.File = fetched.URL
	if fetched.Size == 0 {
		row.Status = job.RowSkipped
		return row, fetched, nil
	}
	data := fetched.Data
	if data == nil {
		if data, err = w.deps.Fetcher.Read(ctx, fetched.Key, w.cfg.MaxFileBytes); err != nil {
			return failOrRetry(row, fetched, err)
		}
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
			return row, fetched, &providerBusyError{err: err, retryAfter: pe.RetryAfter}
		}
		row.Status, row.Error = job.RowFailed, err.Error()
		return row, fetched, nil
	}
	row.Status = job.RowDone
	row.Content, row.OutputFormat, row.Model = out.Content, out.Format, out.Model
	row.Request, row.RawData = out.Request, out.RawData
	return row, fetched, nil
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
func failOrRetry(row job.OCRRow, source fetch.Result, err error) (job.OCRRow, fetch.Result, error) {
	if fe := (*fetch.Error)(nil); !errors.As(err, &fe) || fe.Retryable {
		return row, source, err
	}
	row.Status, row.Error = job.RowFailed, err.Error()
	return row, source, nil
}

// modelRows are the file's model rows after recognition: one SKIPPED row
// when the model does not run (DESIGN §4), else one PENDING row per chunk
// of the recognized text, or one FAILED row when it cannot be chunked
// (over Config.MaxChunksPerFile among others).
func (w *fileWorker) modelRows(ocr job.OCRRow, j *job.Job) []job.LLMRow {
	if reason := job.SkipReasonAfterOCR(ocr, j.Prompts); reason != "" {
		return []job.LLMRow{job.SkippedLLMRow(ocr, reason, j.Neural.Model)}
	}
	failed := func(err error) []job.LLMRow {
		r := job.SkippedLLMRow(ocr, "", j.Neural.Model)
		r.Status, r.Error = job.RowFailed, err.Error()
		return []job.LLMRow{r}
	}
	if w.deps.Chunker == nil {
		return failed(errors.New("the model stage is not configured on this server"))
	}
	chunks, err := w.deps.Chunker.Split(ocr.Content, ocr.OutputFormat, int(j.Neural.ChunkBudgetTokens), w.cfg.MaxChunksPerFile, j.Neural.Model)
	if tooMany := (*TooManyChunksError)(nil); errors.As(err, &tooMany) {
		// One row says why, rather than a thousand rows nobody asked.
		return failed(tooMany)
	}
	if err != nil {
		return failed(fmt.Errorf("chunking: %w", err))
	}
	rows := make([]job.LLMRow, len(chunks))
	for i, c := range chunks {
		rows[i] = job.LLMRow{JobID: j.ID, FileIndex: ocr.FileIndex, File: ocr.File, ChunkIndex: i,
			ChunkTotal: len(chunks), Status: job.RowPending, Model: j.Neural.Model, Input: c.Text, Overlap: c.Overlap}
	}
	return rows
}
