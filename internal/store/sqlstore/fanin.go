package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// FinishOCR records a file's terminal recognition row and what follows from
// it in one transaction. The file's new rows (its stored file and model
// rows) are inserted under the job row's KEY SHARE lock, before it is
// strengthened to the fan-in's lock, so the files of a job insert in
// parallel and serialize only to update; that lock makes exactly one of
// concurrent finishes see no pending row left and insert d.EnqueueWhenLast.
// If the job ended, or another attempt finished the file, meanwhile, the
// transaction is rolled back.
func (s *Store[TTx]) FinishOCR(ctx context.Context, d store.OCRDone) (bool, error) {
	r := d.Row
	if !r.Status.Terminal() {
		return false, fmt.Errorf("finish ocr of job %s file %d: status %q is not terminal", r.JobID, r.FileIndex, r.Status)
	}
	var (
		applied bool
		end     *jobEnd
		woken   []string
	)
	err := s.inTx(ctx, func(tx TTx, q Querier) error {
		applied, end, woken = false, nil, nil // a retried transaction starts over
		// The job row's KEY SHARE first, then the inserts, then NO KEY
		// UPDATE (the lock order, locks.go).
		pending, err := s.lockFileToFinish(ctx, q, r.JobID, r.FileIndex)
		if err != nil {
			return err
		}
		if !pending {
			// Already terminal: a duplicate River job, or a retry racing
			// the attempt that committed. Or the job ended or is gone.
			return nil
		}
		now := s.nowUTC()
		if d.File != nil {
			if err := s.insertFile(ctx, q, *d.File); err != nil {
				return err
			}
		}
		if err := s.insertLLMRows(ctx, q, d.LLM, now); err != nil {
			return err
		}

		j, err := s.lockJobIfLive(ctx, q, r.JobID)
		if err != nil {
			return err
		}
		if j == nil {
			return errFileSettled
		}
		n, err := s.exec(ctx, q, `UPDATE ocr_rows SET file = ?, name = ?, status = ?, content = ?, output_format = ?,
			model = ?, request = ?, raw_data = ?, error = ?, duration_ns = ?, updated = ?
			WHERE job_id = ? AND file_index = ? AND `+isPending,
			r.File, d.Name, string(r.Status), r.Content, r.OutputFormat, r.Model, r.Request, r.RawData, r.Error,
			int64(r.Duration), s.ts(now), r.JobID, r.FileIndex)
		if err != nil {
			return fmt.Errorf("update ocr row: %w", err)
		}
		if n == 0 {
			return errFileSettled
		}
		applied = true

		files := make([]string, len(j.SourceURLs))
		copy(files, j.Files)
		if r.FileIndex >= 0 && r.FileIndex < len(files) {
			files[r.FileIndex] = r.File
		}
		filesJSON, err := jsonText(files)
		if err != nil {
			return err
		}
		status := j.Status
		if status == job.StatusNew {
			status = job.StatusRunning
		}
		if _, err := s.exec(ctx, q, `UPDATE jobs SET files = ?, status = ?, updated = ? WHERE id = ?`,
			filesJSON, string(status), s.ts(now), r.JobID); err != nil {
			return fmt.Errorf("update job: %w", err)
		}
		if d.EndWhenLast || len(d.EnqueueWhenLast) > 0 {
			pending, err := s.anyPending(ctx, q, r.JobID)
			if err != nil {
				return err
			}
			if !pending {
				end, err = s.fanIn(ctx, tx, q, j, d.EndWhenLast, d.EnqueueWhenLast, &woken)
				return err
			}
		}
		return nil
	})
	if errors.Is(err, errFileSettled) {
		applied, end, woken, err = false, nil, nil, nil
	}
	if err != nil {
		return false, fmt.Errorf("finish ocr of job %s file %d: %w", r.JobID, r.FileIndex, err)
	}
	s.afterFanIn(ctx, end, woken)
	return applied, nil
}

// fanIn runs in the transaction of the finish that left no row of the
// live job j pending (only j.ID is read unless end is set). It ends the job there when end is set, with the
// status its OCR rows give (job.FinalStatus), and otherwise inserts
// enqueue, the step that will end it. Ending it here spares a job that
// merges nothing a River job and its round trips (docs/decisions.md).
func (s *Store[TTx]) fanIn(ctx context.Context, tx TTx, q Querier, j *job.Job, end bool, enqueue []river.InsertManyParams, woken *[]string) (*jobEnd, error) {
	if !end {
		return nil, s.insertRiverJobs(ctx, tx, enqueue, woken)
	}
	ocr, err := s.ocrRows(ctx, q, j.ID, ocrColumnsLean)
	if err != nil {
		return nil, err
	}
	f := store.Finish{JobID: j.ID}
	f.Status, f.Error = job.FinalStatus(ocr)
	// Its callers found no row pending, under the job row's lock: there
	// are none to fail, and looking for them was three statements of the
	// transaction the job's end waits for (docs/benchmarks.md, sixteenth
	// session).
	erased, err := s.endJob(ctx, tx, q, j, f, false, woken)
	if err != nil {
		return nil, err
	}
	return &jobEnd{jobID: j.ID, accountID: j.AccountID, status: f.Status, erased: erased}, nil
}

// jobEnd is a job a finish ended in its fan-in.
type jobEnd struct {
	jobID, accountID string
	status           job.Status
	erased           bool // secrets were deleted
}

// afterFanIn follows the commit of a finish: it wakes the queues the
// transaction inserted to and, when it ended the job (end is not nil),
// says so and has the erased keys flushed.
func (s *Store[TTx]) afterFanIn(ctx context.Context, end *jobEnd, woken []string) {
	s.wake(ctx, woken)
	if end == nil {
		return
	}
	s.ends.ended(end.jobID)
	s.logger.InfoContext(ctx, "store: job ended with its last row", "job_id", end.jobID, "account_id", end.accountID, "status", end.status)
	if end.erased {
		s.afterErase(ctx, end.jobID)
	}
}

// errFileSettled rolls back a FinishOCR whose job ended, or whose file
// another attempt finished, while it inserted the file's rows.
var errFileSettled = errors.New("file settled meanwhile")

// FinishJob ends a non-terminal job with f.Status and completes riverJob in
// one transaction. Rows still pending (there should be none when finalize
// runs) are failed with the job's error, so no terminal job has pending
// rows. The job's provider keys are erased: no stage needs them any more; the
// webhook secret stays for the webhook. A missing or already terminal job
// only completes riverJob (applied=false).
func (s *Store[TTx]) FinishJob(ctx context.Context, riverJob *rivertype.JobRow, f store.Finish) (bool, error) {
	if !f.Status.Terminal() {
		return false, fmt.Errorf("finish job %s: status %q is not terminal", f.JobID, f.Status)
	}
	var (
		applied, erased bool
		woken           []string
	)
	err := s.inTx(ctx, func(tx TTx, q Querier) error {
		applied, erased, woken = false, false, nil
		j, err := s.lockLiveJob(ctx, tx, q, f.JobID, riverJob)
		if err != nil || j == nil {
			return err
		}
		if erased, err = s.endJob(ctx, tx, q, j, f, true, &woken); err != nil {
			return err
		}
		applied = true
		return s.backend.CompleteRiverJob(ctx, tx, riverJob)
	})
	if err != nil {
		return false, fmt.Errorf("finish job %s: %w", f.JobID, err)
	}
	s.wake(ctx, woken)
	if applied {
		s.ends.ended(f.JobID)
	}
	if erased {
		s.afterErase(ctx, f.JobID)
	}
	return applied, nil
}

// endJob makes the live job j, locked by the transaction, terminal with
// f's status, error and merged answers. Rows still pending are failed with
// f.Error (unless mayBePending is false: the caller found none, under the
// lock), the provider keys are erased, the webhook is enqueued (or its
// secret erased) and f.Enqueue inserted. erased reports a deletion of
// secrets, for the caller to flush once committed.
func (s *Store[TTx]) endJob(ctx context.Context, tx TTx, q Querier, j *job.Job, f store.Finish, mayBePending bool, woken *[]string) (erased bool, err error) {
	now := s.nowUTC()
	if _, err := s.exec(ctx, q, `UPDATE jobs SET status = ?, error = ?, merged = ?, updated = ? WHERE id = ?`,
		string(f.Status), f.Error, string(f.Merged), s.ts(now), j.ID); err != nil {
		return false, fmt.Errorf("update job: %w", err)
	}
	rowErr := f.Error
	if rowErr == "" {
		rowErr = "job ended before this row was processed"
	}
	if mayBePending {
		if err := s.failPendingRows(ctx, q, j, rowErr, now); err != nil {
			return false, err
		}
	}
	if erased, err = s.eraseProviderKeys(ctx, q, j.ID); err != nil {
		return false, err
	}
	webhookErased, err := s.onTerminal(ctx, tx, q, j, woken)
	if err != nil {
		return false, err
	}
	return erased || webhookErased, s.insertRiverJobs(ctx, tx, f.Enqueue, woken)
}

// lockLiveJob locks the job row for the rest of the transaction. A job that
// was deleted or has ended meanwhile must not change: then it only completes
// riverJob and returns a nil job.
func (s *Store[TTx]) lockLiveJob(ctx context.Context, tx TTx, q Querier, jobID string, riverJob *rivertype.JobRow) (*job.Job, error) {
	j, err := s.lockJobIfLive(ctx, q, jobID)
	if err != nil || j != nil {
		return j, err
	}
	return nil, s.backend.CompleteRiverJob(ctx, tx, riverJob)
}

// lockIfLive locks the job row for the rest of the transaction, reading
// only its status, and reports whether the job is still live: it is read
// at every group of answers, where decoding the whole job cost more than
// the row update itself.
func (s *Store[TTx]) lockIfLive(ctx context.Context, q Querier, jobID string) (bool, error) {
	var status string
	err := s.queryRow(ctx, q, `SELECT status FROM jobs WHERE id = ?`+s.dialect.ForUpdate, []any{jobID}, &status)
	if errors.Is(err, errNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("lock job %s: %w", jobID, err)
	}
	return !job.Status(status).Terminal(), nil
}

// lockJobIfLive locks the job row for the rest of the transaction and
// returns the job, or nil when it was deleted or has ended.
func (s *Store[TTx]) lockJobIfLive(ctx context.Context, q Querier, jobID string) (*job.Job, error) {
	j, err := s.getJob(ctx, q, "", jobID, s.dialect.ForUpdate)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	case j.Status.Terminal():
		return nil, nil
	}
	return j, nil
}

// FileModelRows returns whether the file's OCR row is terminal and its
// PENDING model rows of the first prompt, in chunk order, inputs and the
// file's name included.
func (s *Store[TTx]) FileModelRows(ctx context.Context, jobID string, fileIndex int) (bool, []job.LLMRow, error) {
	db := s.backend.DB()
	var status, name string
	err := s.queryRow(ctx, db, `SELECT status, name FROM ocr_rows WHERE job_id = ? AND file_index = ?`,
		[]any{jobID, fileIndex}, &status, &name)
	if errors.Is(err, errNoRows) {
		return false, nil, store.ErrNotFound
	}
	if err != nil {
		return false, nil, fmt.Errorf("file %s/%d: %w", jobID, fileIndex, err)
	}
	if !job.RowStatus(status).Terminal() {
		return false, nil, nil
	}
	rows, err := s.query(ctx, db, `SELECT chunk_index, chunk_total, file, model, input FROM llm_rows
		WHERE job_id = ? AND file_index = ? AND prompt_index = 0 AND `+isPending+` ORDER BY chunk_index`,
		jobID, fileIndex)
	if err != nil {
		return true, nil, fmt.Errorf("model rows of %s/%d: %w", jobID, fileIndex, err)
	}
	defer rows.Close()
	var pending []job.LLMRow
	for rows.Next() {
		r := job.LLMRow{JobID: jobID, FileIndex: fileIndex, Status: job.RowPending, FileName: name}
		if err := rows.Scan(&r.ChunkIndex, &r.ChunkTotal, &r.File, &r.Model, &r.Input); err != nil {
			return true, nil, fmt.Errorf("scan model row: %w", err)
		}
		pending = append(pending, r)
	}
	if err := rows.Err(); err != nil {
		return true, nil, fmt.Errorf("model rows of %s/%d: %w", jobID, fileIndex, err)
	}
	return true, pending, nil
}

// HandOff inserts enqueue and completes riverJob in one transaction, so a
// crash either hands the work on and ends riverJob or does neither (and
// River runs riverJob again).
func (s *Store[TTx]) HandOff(ctx context.Context, riverJob *rivertype.JobRow, enqueue []river.InsertManyParams) error {
	var woken []string
	err := s.inTx(ctx, func(tx TTx, _ Querier) error {
		woken = nil
		if err := s.insertRiverJobs(ctx, tx, enqueue, &woken); err != nil {
			return err
		}
		return s.backend.CompleteRiverJob(ctx, tx, riverJob)
	})
	if err != nil {
		return fmt.Errorf("hand off river job %d: %w", riverJob.ID, err)
	}
	s.wake(ctx, woken)
	return nil
}
