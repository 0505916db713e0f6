package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/jobmerge"
	"github.com/docjobs/docjobs/internal/store"
)

// FinalizeArgs identify the job whose rows are all terminal.
type FinalizeArgs struct {
	JobID string `json:"job_id"`
}

// Kind is the River job kind.
func (FinalizeArgs) Kind() string { return "finalize" }

// InsertOpts make finalize unique per job: the fan-in inserts it once, and
// uniqueness guards against a second insert by an operator or a bug.
func (FinalizeArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueFinalize, MaxAttempts: 10, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

type finalizeWorker struct {
	river.WorkerDefaults[FinalizeArgs]
	deps Deps
}

func (w *finalizeWorker) Timeout(*river.Job[FinalizeArgs]) time.Duration { return finalizeTimeout }

func (w *finalizeWorker) NextRetry(j *river.Job[FinalizeArgs]) time.Time {
	return retryBackoff(j.Attempt)
}

func (w *finalizeWorker) Work(ctx context.Context, rj *river.Job[FinalizeArgs]) error {
	start := time.Now()
	// Answers merge would leave out past its input limit are not read:
	// the limit bounds finalize's memory only if it bounds the load too
	// (audit-merge2 F2).
	res, err := w.deps.Store.ResultToFinish(ctx, rj.Args.JobID, jobmerge.InputBudget)
	if errors.Is(err, job.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("finalize %s: load result: %w", rj.Args.JobID, err)
	}
	if res.Job.Status.Terminal() {
		return nil
	}
	for _, r := range res.OCR {
		if !r.Status.Terminal() {
			return fmt.Errorf("finalize %s: file %d still pending", res.Job.ID, r.FileIndex)
		}
	}
	for _, r := range res.LLM {
		if !r.Status.Terminal() {
			return fmt.Errorf("finalize %s: model row %d/%d still pending", res.Job.ID, r.FileIndex, r.ChunkIndex)
		}
	}
	status, reason := job.FinalStatus(res.OCR)
	log := w.deps.Logger.With("job_id", res.Job.ID, "account_id", res.Job.AccountID)
	merged, err := jobmerge.Answers(res, log)
	if err != nil {
		return fmt.Errorf("finalize %s: %w", res.Job.ID, err)
	}
	applied, err := w.deps.Store.FinishJob(ctx, rj.JobRow, store.Finish{JobID: res.Job.ID, Status: status, Error: reason, Merged: merged})
	if err != nil {
		return fmt.Errorf("finalize %s: %w", res.Job.ID, err)
	}
	observe(w.deps.Observer, "finalize", string(status), start)
	log.Info("job finished", "status", status, "applied", applied)
	return nil
}
