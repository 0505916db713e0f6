package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"gocloud.dev/gcerrors"

	"github.com/docjobs/docjobs/internal/fetch"
	"github.com/docjobs/docjobs/internal/job"
)

// RetentionSweepArgs start one sweep for finished jobs and uploads older
// than DOCJOBS_RETENTION.
type RetentionSweepArgs struct{}

// Kind is the River job kind.
func (RetentionSweepArgs) Kind() string { return "retention_sweep" }

// InsertOpts: sweeps are idempotent and only River's leader schedules them.
func (RetentionSweepArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueFinalize, MaxAttempts: 3}
}

type retentionWorker struct {
	river.WorkerDefaults[RetentionSweepArgs]
	cfg  Config
	deps Deps
}

// Work deletes expired jobs with their rows, secrets and stored files, then
// expired uploads. A job whose webhook is still being delivered waits for
// the delivery to end. Each kind goes in batches of sweepBatch, oldest
// first; the next sweep takes the rest.
func (w *retentionWorker) Work(ctx context.Context, _ *river.Job[RetentionSweepArgs]) error {
	if w.cfg.Retention <= 0 {
		return nil
	}
	cutoff := time.Now().Add(-w.cfg.Retention)
	if err := w.deleteJobs(ctx, cutoff); err != nil {
		return err
	}
	return w.deleteUploads(ctx, cutoff)
}

func (w *retentionWorker) deleteJobs(ctx context.Context, cutoff time.Time) error {
	ids, err := w.deps.Store.ExpiredJobs(ctx, cutoff, sweepBatch)
	if err != nil {
		return err
	}
	for _, id := range ids {
		// Read first for its account, which every job's log line names
		// and the delete does not return.
		j, err := w.deps.Store.GetJob(ctx, "", id)
		if errors.Is(err, job.ErrNotFound) {
			continue // deleted by its owner since it was listed
		}
		if err != nil {
			return err
		}
		keys, err := w.deps.Store.DeleteJob(ctx, "", id)
		if errors.Is(err, job.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		// As DELETE /v1/jobs/{id}: the delete recorded the files for
		// removal, and what cannot go now goes with the removal sweep.
		if w.deps.Bucket != nil {
			for _, err := range fetch.RemoveDeletedJob(ctx, w.deps.Bucket, w.cfg.StorageDir, w.deps.Store, id, keys) {
				w.deps.Logger.Warn("stored file of an expired job not removed yet; the sweep will retry", "job_id", id, "account_id", j.AccountID, "err", err)
			}
		}
		w.deps.Logger.Info("job deleted by retention", "job_id", id, "account_id", j.AccountID, "retention", w.cfg.Retention.String())
	}
	return nil
}

// deleteUploads deletes uploads made before cutoff: bytes first, then the
// record, as DELETE /v1/files/{id} does, so that an upload whose bytes
// could not be deleted keeps its record and the next sweep tries again.
// Jobs that read an upload have their own copies, which are not touched.
func (w *retentionWorker) deleteUploads(ctx context.Context, cutoff time.Time) error {
	files, err := w.deps.Store.ExpiredUploads(ctx, cutoff, sweepBatch)
	if err != nil {
		return err
	}
	for _, f := range files {
		if w.deps.Bucket != nil {
			if err := w.deps.Bucket.Delete(ctx, f.Key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
				if ctx.Err() != nil {
					return fmt.Errorf("delete expired upload %s: %w", f.ID, err)
				}
				w.deps.Logger.Error("expired upload not removed; kept for the next sweep",
					"file_id", f.ID, "account_id", f.AccountID, "key", f.Key, "err", err)
				continue
			}
		}
		if err := w.deps.Store.DeleteUpload(ctx, "", f.ID); err != nil && !errors.Is(err, job.ErrNotFound) {
			return fmt.Errorf("delete expired upload %s: %w", f.ID, err)
		}
		if err := fetch.RemoveUploadFolder(w.cfg.StorageDir, f.Key); err != nil {
			w.deps.Logger.Warn("empty upload folder not removed", "file_id", f.ID, "account_id", f.AccountID, "err", err)
		}
		w.deps.Logger.Info("upload deleted by retention", "file_id", f.ID, "account_id", f.AccountID, "retention", w.cfg.Retention.String())
	}
	return nil
}
