package worker

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/docjobs/docjobs/internal/fetch"
)

// RetentionSweepArgs start one sweep for finished jobs older than
// DOCJOBS_RETENTION.
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

// Work deletes expired jobs with their rows, secrets and stored files. A
// job whose webhook is still being delivered waits for the delivery to end.
func (w *retentionWorker) Work(ctx context.Context, _ *river.Job[RetentionSweepArgs]) error {
	if w.cfg.Retention <= 0 {
		return nil
	}
	ids, err := w.deps.Store.ExpiredJobs(ctx, time.Now().Add(-w.cfg.Retention), sweepBatch)
	if err != nil {
		return err
	}
	for _, id := range ids {
		keys, err := w.deps.Store.DeleteJob(ctx, "", id)
		if err != nil {
			return err
		}
		if w.deps.Bucket != nil {
			for _, err := range fetch.RemoveJobFiles(ctx, w.deps.Bucket, id, keys) {
				w.deps.Logger.Error("stored file of an expired job not removed", "job_id", id, "err", err)
			}
		}
		w.deps.Logger.Info("job deleted by retention", "job_id", id, "retention", w.cfg.Retention)
	}
	return nil
}
