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

	budget time.Duration // 0: retentionBudget, or the sweep's period; tests set it
	// now reads the clock the budget is spent on; nil is time.Now. Tests
	// step it, so that what a budget holds does not depend on the
	// machine's speed.
	now func() time.Time
}

func (w *retentionWorker) clock() time.Time {
	if w.now != nil {
		return w.now()
	}
	return time.Now()
}

// retentionBudget bounds the time one retention sweep spends (see Work):
// half River's job timeout (a minute by default), past which at most the
// job or upload in hand is finished.
const retentionBudget = 30 * time.Second

// Work deletes expired jobs with their rows, secrets and stored files, and
// expired uploads. A job whose webhook is still being delivered waits for
// the delivery to end. Each kind goes in batches of sweepBatch, oldest
// first, a batch of jobs then one of uploads, and again while a kind's
// last batch was full and wholly deleted, for up to retentionBudget (or
// the sweep's period, when shorter), checked before each job and upload;
// the next sweep takes the rest. While both kinds have more, jobs get half
// of what is left of the budget at each turn, so that a slow storage
// (a job's files are listed and deleted one by one) leaves uploads time.
//
// One batch of each per sweep, as it was, deleted at most 500 jobs and 500
// uploads every 10 minutes (3,000 an hour) in under half a second: past
// that rate of creates the backlog grew for good, and documents were kept
// ever longer past DOCJOBS_RETENTION. A batch with a failure (an upload
// whose bytes the storage refused) ends its kind's sweep, so that a
// storage refusing deletes is not asked the same 500 again and again.
func (w *retentionWorker) Work(ctx context.Context, _ *river.Job[RetentionSweepArgs]) error {
	if w.cfg.Retention <= 0 {
		return nil
	}
	cutoff := w.clock().Add(-w.cfg.Retention)
	// The sweep runs every tenth of the retention, at least every second
	// (PeriodicJobs): it does not run into the next.
	budget := w.budget
	if budget <= 0 {
		budget = min(retentionBudget, max(w.cfg.Retention/10, time.Second))
	}
	stop := w.clock().Add(budget)
	jobs, uploads := true, true
	for (jobs || uploads) && w.clock().Before(stop) {
		if jobs {
			until := stop
			if uploads {
				now := w.clock()
				until = now.Add(stop.Sub(now) / 2)
			}
			more, err := w.deleteJobs(ctx, cutoff, until)
			if err != nil {
				return err
			}
			jobs = more
		}
		if uploads {
			more, err := w.deleteUploads(ctx, cutoff, stop)
			if err != nil {
				return err
			}
			uploads = more
		}
	}
	return nil
}

// deleteJobs deletes a batch of expired jobs, until stop, and reports
// whether there may be more: the batch was full, or stop came first.
func (w *retentionWorker) deleteJobs(ctx context.Context, cutoff, stop time.Time) (bool, error) {
	ids, err := w.deps.Store.ExpiredJobs(ctx, cutoff, sweepBatch)
	if err != nil {
		return false, err
	}
	for _, id := range ids {
		if !w.clock().Before(stop) {
			return true, nil
		}
		// Read first for its account, which every job's log line names
		// and the delete does not return.
		j, err := w.deps.Store.GetJob(ctx, "", id)
		if errors.Is(err, job.ErrNotFound) {
			continue // deleted by its owner since it was listed
		}
		if err != nil {
			return false, err
		}
		keys, err := w.deps.Store.DeleteJob(ctx, "", id)
		if errors.Is(err, job.ErrNotFound) {
			continue
		}
		if err != nil {
			return false, err
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
	return len(ids) == sweepBatch, nil
}

// deleteUploads deletes a batch of uploads made before cutoff, until stop:
// bytes first, then the record, as DELETE /v1/files/{id} does, so that an upload
// whose bytes could not be deleted keeps its record and the next sweep
// tries again. Jobs that read an upload have their own copies, which are
// not touched. It reports whether there may be more: the batch was full,
// or stop came first, and every upload of it so far went.
func (w *retentionWorker) deleteUploads(ctx context.Context, cutoff, stop time.Time) (bool, error) {
	files, err := w.deps.Store.ExpiredUploads(ctx, cutoff, sweepBatch)
	if err != nil {
		return false, err
	}
	kept := false
	for _, f := range files {
		if !w.clock().Before(stop) {
			return !kept, nil
		}
		if w.deps.Bucket != nil {
			if err := w.deps.Bucket.Delete(ctx, f.Key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
				if ctx.Err() != nil {
					return false, fmt.Errorf("delete expired upload %s: %w", f.ID, err)
				}
				w.deps.Logger.Error("expired upload not removed; kept for the next sweep",
					"file_id", f.ID, "account_id", f.AccountID, "key", f.Key, "err", err)
				kept = true
				continue
			}
		}
		if err := w.deps.Store.DeleteUpload(ctx, "", f.ID); err != nil && !errors.Is(err, job.ErrNotFound) {
			return false, fmt.Errorf("delete expired upload %s: %w", f.ID, err)
		}
		if err := fetch.RemoveUploadFolder(w.cfg.StorageDir, f.Key); err != nil {
			w.deps.Logger.Warn("empty upload folder not removed", "file_id", f.ID, "account_id", f.AccountID, "err", err)
		}
		w.deps.Logger.Info("upload deleted by retention", "file_id", f.ID, "account_id", f.AccountID, "retention", w.cfg.Retention.String())
	}
	return len(files) == sweepBatch && !kept, nil
}
