package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/docjobs/docjobs/internal/fetch"
)

// FileRemovalSweepArgs start one sweep for deleted jobs whose stored files
// are still recorded as to be removed.
type FileRemovalSweepArgs struct{}

// Kind is the River job kind.
func (FileRemovalSweepArgs) Kind() string { return "file_removal_sweep" }

// InsertOpts: sweeps are idempotent and only River's leader schedules them.
func (FileRemovalSweepArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueFinalize, MaxAttempts: 3}
}

// removalSweepEvery is how often the sweep runs: a deleted job's files
// outlive a crash of the process that deleted it by about this plus
// Config.RemovalGrace.
const removalSweepEvery = time.Minute

type removalWorker struct {
	river.WorkerDefaults[FileRemovalSweepArgs]
	cfg  Config
	deps Deps
}

// Work removes the stored files of jobs deleted more than
// Config.RemovalGrace ago whose removal is still recorded: the process that
// deleted them died before it was done, or the storage refused. A job whose
// files still cannot be removed keeps its record for the next sweep.
func (w *removalWorker) Work(ctx context.Context, _ *river.Job[FileRemovalSweepArgs]) error {
	if w.deps.Bucket == nil {
		return nil // nothing is stored here to remove
	}
	pending, err := w.deps.Store.PendingFileRemovals(ctx, time.Now().Add(-w.cfg.RemovalGrace), sweepBatch)
	if err != nil {
		return err
	}
	for _, r := range pending {
		errs := fetch.RemoveDeletedJob(ctx, w.deps.Bucket, w.cfg.StorageDir, w.deps.Store, r.JobID, r.Keys)
		if err := errors.Join(errs...); err != nil {
			if ctx.Err() != nil {
				return err
			}
			w.deps.Logger.Warn("stored files of a deleted job not removed; kept for the next sweep",
				"job_id", r.JobID, "account_id", r.AccountID, "err", err)
			continue
		}
		w.deps.Logger.Info("stored files of a deleted job removed by the sweep",
			"job_id", r.JobID, "account_id", r.AccountID, "deleted", r.Deleted)
	}
	return nil
}

// removeLeftovers removes what is stored under the prefix of job jobID,
// which no longer exists, and its folder: a copy an attempt stored after
// the delete had removed the job's files, or while it did. Such a copy was
// never recorded, so the file's River job is what still names it: an error
// here is the River job's, and its retry tries again.
func (w *fileWorker) removeLeftovers(ctx context.Context, jobID string) error {
	if w.deps.Bucket == nil {
		return nil
	}
	if err := errors.Join(fetch.RemoveDeletedJob(ctx, w.deps.Bucket, w.cfg.StorageDir, w.deps.Store, jobID, nil)...); err != nil {
		return fmt.Errorf("file of deleted job %s: remove what was stored: %w", jobID, err)
	}
	return nil
}
