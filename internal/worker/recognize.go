package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/convert"
	"github.com/docjobs/docjobs/internal/fetch"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/outbound"
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

// errJobGone ends a file whose job was deleted while the file started: Work
// returns nil for it, so that River completes the file's job.
var errJobGone = errors.New("the job is gone")

// recognizeFile fetches and recognizes file rj.Args.FileIndex and splits it
// into model rows; keepRecognition makes that durable. A returned error is
// transient: River tries the file again (or, rate limited, snoozes it).
func (w *fileWorker) recognizeFile(ctx context.Context, rj *river.Job[FileArgs], j *job.Job, log *slog.Logger) (*recognition, error) {
	i := rj.Args.FileIndex
	start := time.Now()
	if j.Status == job.StatusNew {
		err := w.marks.mark(ctx, j.ID, func(ctx context.Context) error { return w.deps.Store.MarkRunning(ctx, j.ID) })
		if errors.Is(err, job.ErrNotFound) {
			// Deleted since Work loaded it: as a job deleted while queued,
			// nothing is left to do, and no attempt is spent on it.
			log.Info("recognize: the job was deleted before its file started")
			return nil, errJobGone
		}
		if err != nil {
			return nil, fmt.Errorf("file %s[%d]: mark running: %w", j.ID, i, err)
		}
	}
	row, source, err := w.recognize(ctx, j, i, downloadsSoFar(rj.JobRow))
	if (err != nil || row.Status == job.RowFailed) && stopped(ctx) {
		// Cut off from outside: the worker is stopping, or the job ended.
		// Whatever failed (a provider call abandoned, a wait for a slot,
		// a download) failed because of it, and says nothing about the
		// file: nothing is recorded, and the next run recognizes it again,
		// the pages already paid for read from the page cache (Work hands
		// the file back to River).
		if err == nil {
			err = errors.New(row.Error)
		}
		return nil, fmt.Errorf("file %s[%d]: recognition stopped: %w", j.ID, i, err)
	}
	if errors.Is(err, errDownloadsQueued) {
		// Neither an attempt spent nor a fault: River hands the slot
		// this file would wait in to the next file, maybe another
		// account's.
		log.Debug("recognize: the account's downloads are queued already, stepping back", "for", downloadStepBack)
		return nil, river.JobSnooze(downloadStepBack)
	}
	if dl := (*downloadError)(nil); errors.As(err, &dl) && ctx.Err() == nil {
		if msg, over := w.downloadsOver(dl, rj.Attempt); over {
			log.Warn("recognize: giving up on the source's downloads", "err", err)
			row.Status, row.Error, err = job.RowFailed, msg, nil
		} else if rj.Attempt < rj.MaxAttempts {
			// The next attempt counts from the same start, and can say why
			// this one failed should its time run out before it downloads
			// (waiting for a place). Outside River (tests) there is nowhere
			// to keep them, and nothing to keep them for.
			_ = river.MetadataSet(ctx, downloadsBeganKey, dl.began)
			if msg := rowMessage(dl.err); msg != "" {
				_ = river.MetadataSet(ctx, lastDownloadErrorKey, msg)
			}
		}
	}
	if err != nil {
		// Only transient faults reach here. A rate-limited provider snoozes
		// the file without spending an attempt, until the file has waited
		// for its patience without a page answered (ratelimit.go); other
		// faults are retried.
		busy := (*providerBusyError)(nil)
		isBusy := errors.As(err, &busy)
		waited := rateLimitWaitOf(rj.JobRow, ocrRateLimitKey)
		limited := isBusy && busy.rateLimited() && rj.Attempt < rj.MaxAttempts
		if limited && (busy.answered || !waited.over(time.Now(), w.cfg.RateLimitPatience)) {
			log.Warn("recognize: provider rate limited, snoozing", "retry_after", busy.retryAfter, "snoozes", waited.Snoozes, "err", err)
			return nil, waited.snooze(ctx, ocrRateLimitKey, busy.retryAfter, w.cfg.snoozeFloor, w.cfg.RateLimitPatience, busy.answered)
		}
		if limited {
			log.Warn("recognize: the provider has rate limited the file for its whole patience; failing it",
				"since", waited.Since, "patience", w.cfg.RateLimitPatience, "err", err)
		} else if rj.Attempt < rj.MaxAttempts {
			if isBusy && busy.answered {
				waited.answered(ctx, ocrRateLimitKey)
			}
			log.Warn("recognize: transient failure, will retry", "attempt", rj.Attempt, "err", err)
			return nil, err
		}
		row.Status, row.Error = job.RowFailed, err.Error()
	}
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
	// The copy is stored within the record's time, not one try's: a large
	// source's upload that takes longer than recordPatience is progress,
	// not a database gone quiet, and cut off it would start over at every
	// try until the attempt ended.
	saveCtx, cancel := recordContext(ctx)
	defer cancel()
	saved := false
	applied, err := retryWrite(ctx, func(ctx context.Context) (bool, error) {
		if !saved {
			if err := w.deps.Fetcher.Save(saveCtx, rec.source); err != nil {
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
// when the job is deleted. When the job is deleted already, its folder goes
// too: the delete removed the job's files before (or while) this copy was
// written, and the store writes a copy into a folder it makes for it.
func (w *fileWorker) discardUnrecorded(ctx context.Context, source fetch.Result, log *slog.Logger) {
	if source.File == nil {
		return // nothing was stored for the job
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), discardTimeout)
	defer cancel()
	if source.Shared {
		w.discardShared(ctx, source, log)
		return
	}
	_, err := w.deps.Store.GetFile(ctx, "", source.File.ID)
	if !errors.Is(err, job.ErrNotFound) {
		if err != nil {
			log.Warn("recognize: could not tell whether an unrecorded copy is recorded; kept", "key", source.Key, "err", err)
		}
		return
	}
	if err := w.deps.Fetcher.Discard(ctx, source); err != nil {
		log.Warn("recognize: could not discard an unrecorded copy", "key", source.Key, "err", err)
		return
	}
	if _, err := w.deps.Store.GetJob(ctx, "", source.File.JobID); !errors.Is(err, job.ErrNotFound) {
		return // the job lives on (cancelled, or recorded by another attempt), and so does its folder
	}
	if err := w.removeLeftovers(ctx, source.File.JobID); err != nil {
		log.Warn("recognize: could not remove what is left of a deleted job", "err", err)
	}
}

// discardShared is discardUnrecorded for a copy the job's other files may
// read and name too (fetch.SharedCopyKey). While the job lives another
// file may still record it, after any check made here, so it stays, for
// them and for this file's retry, which finds it; it goes with the job's
// prefix if nothing ever names it. Once the job ended no file can record
// it any more, and it goes unless a record names it already.
func (w *fileWorker) discardShared(ctx context.Context, source fetch.Result, log *slog.Logger) {
	jobID := source.File.JobID
	j, err := w.deps.Store.GetJob(ctx, "", jobID)
	if errors.Is(err, job.ErrNotFound) {
		if err := w.removeLeftovers(ctx, jobID); err != nil {
			log.Warn("recognize: could not remove what is left of a deleted job", "err", err)
		}
		return
	}
	if err != nil {
		log.Warn("recognize: could not tell whether an unrecorded copy is still needed; kept", "key", source.Key, "err", err)
		return
	}
	if !j.Status.Terminal() {
		return
	}
	recorded, err := w.deps.Store.JobFileKeyRecorded(ctx, jobID, source.Key)
	if err != nil {
		log.Warn("recognize: could not tell whether an unrecorded copy is recorded; kept", "key", source.Key, "err", err)
		return
	}
	if recorded {
		return
	}
	if err := w.deps.Fetcher.Discard(ctx, source); err != nil {
		log.Warn("recognize: could not discard an unrecorded copy", "key", source.Key, "err", err)
	}
}

// discardTimeout bounds discardUnrecorded, which outlives the file's context.
const discardTimeout = 10 * time.Second

// recognize fetches and converts one file, its downloads counted from
// sofar.began (zero: from this attempt's). A returned error is transient
// (retry), a *downloadError when getting the source failed; a bad input
// instead comes back as a FAILED or SKIPPED row.
//
// The source is fetched under a download place and converted under a
// recognition place, never both: a source server that stalls or fails
// keeps only downloads waiting, not the recognition of files already here.
//
// The row's Duration is the time this attempt worked the file: its
// download, from the moment it had a download place, and its recognition,
// from the moment it had a recognition place. The waits for the places
// are queueing behind other files, other accounts' too, not work on this
// one: a 41-byte text file waiting 29 s for a place held by a stalled
// source is not a 29 s file.
func (w *fileWorker) recognize(ctx context.Context, j *job.Job, i int, sofar downloads) (row job.OCRRow, fetched fetch.Result, err error) {
	row = job.OCRRow{JobID: j.ID, FileIndex: i, File: j.SourceURLs[i]}
	var worked time.Duration
	defer func() { row.Duration = worked }()
	fetched, data, took, err := w.download(ctx, j, i, sofar)
	worked = took
	if err != nil {
		return failOrRetry(row, fetched, err)
	}
	row.File = fetched.URL
	if fetched.Size == 0 {
		row.Status = job.RowSkipped
		return row, fetched, nil
	}
	if err := w.recognizing.Acquire(ctx, j.AccountID); err != nil {
		return row, fetched, err
	}
	defer w.recognizing.Release()
	converting := time.Now()
	defer func() { worked += time.Since(converting) }() // before Duration is set: defers run last first
	convertCtx, cancel := context.WithTimeout(ctx, w.cfg.FileTimeout)
	defer cancel()
	ocr := w.ocrFor(j, i)
	out, err := w.deps.Convert(convertCtx, convert.Input{
		Name: fetched.Name, ContentType: fetched.ContentType, Data: data, Mode: j.ExtractionMode,
		OCR: ocr,
	})
	if err != nil {
		if convertCtx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("recognition took longer than the %s limit per file", w.cfg.FileTimeout)
		}
		// A provider that is rate limiting or down after the in-process
		// retries: River tries the file again later; the pages already
		// read are kept and not paid for again.
		if pe := (*provider.Error)(nil); errors.As(err, &pe) && pe.Retryable() {
			return row, fetched, &providerBusyError{err: err, retryAfter: pe.RetryAfter, answered: ocr.answered.Load() > 0}
		}
		// The page cache could not be read or written (a failover, a cut
		// connection): that says nothing about the file, which River tries
		// again. As a FAILED row it ended the job FAILED, "no file could be
		// recognized", with the database's error as its reason.
		if errors.Is(err, store.ErrUnavailable) {
			return row, fetched, err
		}
		row.Status, row.Error = job.RowFailed, err.Error()
		return row, fetched, nil
	}
	row.Status = job.RowDone
	row.Content, row.OutputFormat, row.Model = out.Content, out.Format, out.Model
	row.Request, row.RawData = out.Request, out.RawData
	return row, fetched, nil
}

// download fetches file i of j and reads its bytes, under a download
// place of the process taken in turn with other accounts. Its time counts
// against Config.FetchTotalTimeout from sofar.began, or from now if that
// is zero; the wait for the place does not. A failure that may pass with
// time comes back as a *downloadError. took is the time from the moment
// it had the place, the wait for it left out.
func (w *fileWorker) download(ctx context.Context, j *job.Job, i int, sofar downloads) (_ fetch.Result, _ []byte, took time.Duration, _ error) {
	// At most FetchWorkers files of an account wait for a place: the rest
	// step back out of River's hands (errDownloadsQueued), or one account's
	// sources, stalled, would fill the file queue and River would hand out
	// no other account's file until they had all passed.
	ok, err := w.fetching.AcquireQueued(ctx, j.AccountID, w.cfg.FetchWorkers)
	if err != nil {
		return fetch.Result{}, nil, 0, err
	}
	if !ok {
		return fetch.Result{}, nil, 0, errDownloadsQueued
	}
	defer w.fetching.Release()
	placed := time.Now()
	began := sofar.began
	if began.IsZero() {
		began = placed
	}
	deadline := began.Add(w.cfg.FetchTotalTimeout)
	fail := func(fetched fetch.Result, err error) (fetch.Result, []byte, time.Duration, error) {
		if fe := (*fetch.Error)(nil); errors.As(err, &fe) && !fe.Retryable {
			return fetched, nil, time.Since(placed), err
		}
		// Past the deadline, whatever the error says (a cut-off read, a
		// timeout of the client's own), the bound is what ended it.
		ranOut := ctx.Err() == nil && !time.Now().Before(deadline)
		return fetched, nil, time.Since(placed), &downloadError{err: err, began: began, ranOut: ranOut, before: sofar.lastError}
	}
	if !time.Now().Before(deadline) {
		// The time ran out while the file waited (for a place, or for
		// River's retry): the last try's failure is why it never
		// downloaded, and what the row says.
		msg := fmt.Sprintf("download of %s was not tried again", outbound.DisplayString(j.SourceURLs[i]))
		if sofar.lastError != "" {
			msg = sofar.lastError
		}
		err := &fetch.Error{Msg: msg, Retryable: true, Err: errDownloadsRanOut}
		return fetch.Result{}, nil, time.Since(placed), &downloadError{err: err, began: began, ranOut: true, untried: true}
	}
	dctx, cancel := context.WithDeadlineCause(ctx, deadline, errDownloadsRanOut)
	defer cancel()
	// The fetch stage is one download attempt, a stored copy's read-back
	// included: what a slow source server costs a file.
	start := time.Now()
	fetched, err := w.deps.Fetcher.Fetch(dctx, j.AccountID, j.ID, i, j.SourceURLs[i])
	if err != nil {
		observe(w.deps.Observer, "fetch", string(job.RowFailed), start)
		return fail(fetch.Result{}, err)
	}
	data := fetched.Data
	if data == nil && fetched.Size > 0 {
		// A copy of a stored file: read back within the same bound.
		if data, err = w.deps.Fetcher.Read(dctx, fetched.Key, w.cfg.MaxFileBytes); err != nil {
			observe(w.deps.Observer, "fetch", string(job.RowFailed), start)
			return fail(fetched, err)
		}
	}
	observe(w.deps.Observer, "fetch", string(job.RowDone), start)
	return fetched, data, time.Since(placed), nil
}

// errDownloadsQueued stops a file whose account has FetchWorkers files
// waiting for a download place already; the file steps back for
// downloadStepBack.
var errDownloadsQueued = errors.New("the account's downloads are queued already")

// downloadStepBack is how long a file whose account's downloads are queued
// already waits outside River's hands before it looks again.
const downloadStepBack = 5 * time.Second

// errDownloadsRanOut is the cause of a download cut off by
// Config.FetchTotalTimeout.
var errDownloadsRanOut = errors.New("the file's time for downloads ran out")

// downloadsBeganKey is the River metadata under which a file's job keeps
// when its downloads began, so that its retries count against one
// Config.FetchTotalTimeout. River merges it into the job row when the
// failed attempt ends; a download that succeeds at once writes nothing.
const downloadsBeganKey = "docjobs_downloads_began"

// lastDownloadErrorKey is the River metadata under which a file's job
// keeps the row message of its last failed download, for the row of an
// attempt whose time runs out before it downloads. It is a *fetch.Error's
// message, fit for the row: no credentials (a source URL with user
// information is refused, and outbound.Display leaves out query values), the
// URL as the row shows it. River keeps it for a day after the file's job
// ends, however soon the job is deleted.
const lastDownloadErrorKey = "docjobs_last_download_error"

// downloads is what earlier attempts of a file left of its downloads.
type downloads struct {
	began     time.Time // when they began, zero before the first failed
	lastError string    // the row message of the last failure, "" if none
}

// downloadsSoFar reads what earlier attempts of the file whose River job
// is rj kept of its downloads.
func downloadsSoFar(rj *rivertype.JobRow) downloads {
	var md struct {
		Began     time.Time `json:"docjobs_downloads_began"`
		LastError string    `json:"docjobs_last_download_error"`
	}
	if rj == nil || json.Unmarshal(rj.Metadata, &md) != nil {
		return downloads{}
	}
	return downloads{began: md.Began, lastError: md.LastError}
}

// rowMessage is the message of a failed download fit to keep for a later
// row: a *fetch.Error's, "" for any other error, which may carry more.
func rowMessage(err error) string {
	if fe := (*fetch.Error)(nil); errors.As(err, &fe) {
		return fe.Msg
	}
	return ""
}

// downloadError is a failure to get a file's source that may pass with
// time.
type downloadError struct {
	err     error
	began   time.Time // when the file's downloads began
	ranOut  bool      // cut off by Config.FetchTotalTimeout
	untried bool      // the time ran out before this attempt could download; err is the last try's
	before  string    // the row message of the try before this one, "" if none
}

func (e *downloadError) Error() string { return e.err.Error() }
func (e *downloadError) Unwrap() error { return e.err }

// downloadsOver reports whether a file whose download failed with dl in
// attempt must give up now, and the row error saying why: the bound on its
// downloads ran out, or would before the next attempt.
func (w *fileWorker) downloadsOver(dl *downloadError, attempt int) (string, bool) {
	limit := fmt.Sprintf("the %s limit on a file's downloads, retries included,", w.cfg.FetchTotalTimeout)
	switch deadline := dl.began.Add(w.cfg.FetchTotalTimeout); {
	case dl.untried:
		return fmt.Sprintf("%s; gave up: %s ran out before the next try", dl.err, limit), true
	case dl.ranOut && dl.before != "" && dl.before != dl.err.Error():
		// This try was cut short by the bound; the one before says why
		// the file had not been downloaded by then.
		return fmt.Sprintf("%s; gave up: %s ran out; the try before: %s", dl.err, limit, dl.before), true
	case dl.ranOut:
		return fmt.Sprintf("%s; gave up: %s ran out", dl.err, limit), true
	case retryBackoff(attempt).After(deadline):
		return fmt.Sprintf("%s; gave up: %s would run out before the next try", dl.err, limit), true
	}
	return "", false
}

// providerBusyError is a provider failure that may pass with time.
type providerBusyError struct {
	err        error
	retryAfter time.Duration
	// answered: the provider answered a page of the file in this run.
	answered bool
}

func (e *providerBusyError) Error() string { return e.err.Error() }
func (e *providerBusyError) Unwrap() error { return e.err }

func (e *providerBusyError) rateLimited() bool {
	pe := (*provider.Error)(nil)
	return errors.As(e.err, &pe) && pe.Category == provider.CategoryRateLimit
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
