package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

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

// finalizeCrashes is how many times a job's finalize may end with its
// process before the job is ended without merging. River fetches a job it
// reclaimed from a dead process whatever its attempts, so a merge that
// takes its process down (at the merge's 64 MiB input limit it peaked at
// about 1.2 GB, and still can at several GB for hostile shapes) was run
// again by every restart, and took every restart
// down with it, the node's other work included. A finalize is over in
// milliseconds as a rule: a crash that is not its own rarely hits it once,
// let alone this often.
const finalizeCrashes = 3

// crashes counts the attempts of a River job that ended with their
// process. River records an error for every attempt that returned one and
// gives a stopped attempt back, so an attempt before this one that left no
// error was reclaimed after its process died (a node restarted with its
// id). On a cluster, River's rescuer records its own error for a job whose
// node never came back: that one is counted too. Only for kinds that never
// snooze (a snooze gives its attempt back and records nothing either, but
// is not a crash).
func crashes(rj *rivertype.JobRow) int {
	n := max(0, rj.Attempt-1-len(rj.Errors))
	for _, e := range rj.Errors {
		if e.Error == riverRescued {
			n++
		}
	}
	return n
}

// riverRescued is the error River's rescuer (v0.47,
// internal/maintenance/job_rescuer.go) records for a job it found still
// running past the rescue horizon.
const riverRescued = "Stuck job rescued by JobRescuer"

// noAnswers is a budget for ResultToFinish that no answer fits in (0 would
// be no limit).
const noAnswers = 1

func (w *finalizeWorker) Work(ctx context.Context, rj *river.Job[FinalizeArgs]) error {
	start := time.Now()
	crashed := crashes(rj.JobRow)
	unmerged := crashed >= finalizeCrashes
	// Answers merge would leave out past its input limit are not read:
	// the limit bounds finalize's memory only if it bounds the load too
	// (audit-merge2 F2). A finalize given up reads none.
	budget := int64(jobmerge.InputBudget)
	if unmerged {
		budget = noAnswers
	}
	res, err := w.deps.Store.ResultToFinish(ctx, rj.Args.JobID, budget)
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
	if unmerged {
		// Every answer is left out, as merge leaves out those past its
		// input limit: merged[] is still there, each chunk in it listed
		// as not merged, and the rows keep every answer.
		for i := range res.LLM {
			if res.LLM[i].Status == job.RowDone {
				res.LLM[i].Content, res.LLM[i].ContentUnread = "", true
			}
		}
		msg := fmt.Sprintf("the answers were not merged: the worker process ended while merging them %d times; each chunk's answer is in its row", crashed)
		if reason == "" {
			reason = msg
		} else {
			reason += "; " + msg
		}
		log.Error("finalize: the job's finalize ended with its process too often; ending the job without merging its answers",
			"crashes", crashed, "attempt", rj.Attempt)
	}
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
