package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/docjobs/docjobs/internal/job"
)

// DeadlineSweepArgs start one sweep for jobs past their deadline.
type DeadlineSweepArgs struct{}

// Kind is the River job kind.
func (DeadlineSweepArgs) Kind() string { return "deadline_sweep" }

// InsertOpts: sweeps are idempotent and only River's leader schedules them.
func (DeadlineSweepArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueFinalize, MaxAttempts: 3}
}

// deadlineRowError is what a row still pending at the deadline says.
const deadlineRowError = "provider error (category=timeout, status=0)"

// sweepBatch bounds one sweep; the next one takes the rest.
const sweepBatch = 500

type deadlineWorker struct {
	river.WorkerDefaults[DeadlineSweepArgs]
	cfg  Config
	deps Deps
}

func (w *deadlineWorker) Work(ctx context.Context, _ *river.Job[DeadlineSweepArgs]) error {
	ids, err := w.deps.Store.OverdueJobs(ctx, time.Now().Add(-w.cfg.JobDeadline), sweepBatch)
	if err != nil {
		return err
	}
	jobErr := fmt.Sprintf("the job did not finish within its deadline of %s", w.cfg.JobDeadline)
	// A job whose end fails is passed, not waited on: the sweep returned at
	// the first, and one job that kept failing (oldest first, it heads
	// every list) held every overdue job behind it past its deadline. The
	// sweep's error names the ones that failed; River retries it, and the
	// next sweep takes them again.
	var failed []error
	for _, id := range ids {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Read first for its account, which every job's log line names.
		j, err := w.deps.Store.GetJob(ctx, "", id)
		if errors.Is(err, job.ErrNotFound) {
			continue // deleted since it was listed
		}
		if err != nil {
			failed = append(failed, fmt.Errorf("job %s: %w", id, err))
			continue
		}
		applied, err := w.deps.Store.ExpireJob(ctx, id, deadlineRowError, jobErr)
		if err != nil {
			w.deps.Logger.Error("job past its deadline not ended", "job_id", id, "account_id", j.AccountID, "error", err.Error())
			failed = append(failed, fmt.Errorf("end job %s: %w", id, err))
			continue
		}
		if applied {
			w.deps.Logger.Warn("job ended by its deadline", "job_id", id, "account_id", j.AccountID, "deadline", w.cfg.JobDeadline.String())
		}
	}
	return errors.Join(failed...)
}

// PeriodicJobs are the pipeline's periodic River jobs: the deadline sweep,
// often enough that a job ends within a quarter of its deadline (at most a
// minute) after it; the sweep of deleted jobs' files, every minute; and the
// retention sweep when retention is set.
func PeriodicJobs(cfg Config) []*river.PeriodicJob {
	cfg = cfg.withDefaults()
	every := min(time.Minute, max(cfg.JobDeadline/4, time.Second))
	jobs := []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(every),
			func() (river.JobArgs, *river.InsertOpts) { return DeadlineSweepArgs{}, nil },
			&river.PeriodicJobOpts{RunOnStart: true}),
		// Whatever the retention: a deleted job's files are removed by
		// whoever deleted it, and by this sweep if that one died first.
		river.NewPeriodicJob(river.PeriodicInterval(removalSweepEvery),
			func() (river.JobArgs, *river.InsertOpts) { return FileRemovalSweepArgs{}, nil },
			&river.PeriodicJobOpts{RunOnStart: true}),
	}
	if cfg.Retention > 0 {
		// Expired jobs and uploads go within a tenth of the retention, at
		// least every 10 minutes.
		every := min(10*time.Minute, max(cfg.Retention/10, time.Second))
		jobs = append(jobs, river.NewPeriodicJob(river.PeriodicInterval(every),
			func() (river.JobArgs, *river.InsertOpts) { return RetentionSweepArgs{}, nil },
			&river.PeriodicJobOpts{RunOnStart: true}))
	}
	return jobs
}
