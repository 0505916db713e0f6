package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// River job kinds of earlier releases. Until caca282 ("one River job per
// file through both stages") a file had a recognize job, and each of its
// chunks a model job. A database upgraded with such jobs queued keeps
// them; nothing else would ever work them, so their jobs would sit RUNNING
// (or NEW) until the job deadline failed their rows as provider timeouts.
// Each is worked here by handing its file to today's file job, which
// resumes from what is recorded: a file the old binary recognized has its
// PENDING model rows asked, an unrecognized one is recognized. Their args
// keep the old JSON shape. How long they stay: docs/decisions.md.
const (
	QueueRetiredRecognize = "recognize"
	QueueRetiredModel     = "model"
)

// RetiredRecognizeArgs are the args of a file's recognize job before
// caca282.
type RetiredRecognizeArgs struct {
	JobID     string `json:"job_id"`
	FileIndex int    `json:"file_index"`
}

// Kind is the retired River job kind.
func (RetiredRecognizeArgs) Kind() string { return "recognize" }

// InsertOpts are the retired kind's, for tests that queue one as an older
// binary did.
func (RetiredRecognizeArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueRetiredRecognize, MaxAttempts: 5}
}

// RetiredModelArgs are the args of a chunk's model job before caca282.
type RetiredModelArgs struct {
	JobID      string `json:"job_id"`
	FileIndex  int    `json:"file_index"`
	ChunkIndex int    `json:"chunk_index"`
}

// Kind is the retired River job kind.
func (RetiredModelArgs) Kind() string { return "model" }

// InsertOpts are the retired kind's, for tests that queue one as an older
// binary did.
func (RetiredModelArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueRetiredModel, MaxAttempts: 5}
}

// handOffTimeout bounds one hand-off: a transaction of one insert.
const handOffTimeout = time.Minute

// resumedFile is the file job that carries on a retired job's file. It is
// unique by its args (River's default states: until it is discarded or
// cancelled), so a file's recognize job and its hundred model jobs make
// one file job between them, and a hand-off that is run again (it crashed
// after committing) inserts nothing.
func resumedFile(jobID string, fileIndex int) river.InsertManyParams {
	return river.InsertManyParams{Args: FileArgs{JobID: jobID, FileIndex: fileIndex, Resume: true},
		InsertOpts: &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByArgs: true}}}
}

// handOff completes a retired kind's job and inserts the file job that
// carries its file on, in one transaction.
func handOff(ctx context.Context, deps Deps, row *rivertype.JobRow, jobID string, fileIndex int) error {
	return deps.Store.HandOff(ctx, row, []river.InsertManyParams{resumedFile(jobID, fileIndex)})
}

type retiredRecognizeWorker struct {
	river.WorkerDefaults[RetiredRecognizeArgs]
	deps Deps
}

func (w *retiredRecognizeWorker) Timeout(*river.Job[RetiredRecognizeArgs]) time.Duration {
	return handOffTimeout
}

func (w *retiredRecognizeWorker) Work(ctx context.Context, rj *river.Job[RetiredRecognizeArgs]) error {
	a := rj.Args
	if err := handOff(ctx, w.deps, rj.JobRow, a.JobID, a.FileIndex); err != nil {
		return fmt.Errorf("retired recognize %s[%d]: %w", a.JobID, a.FileIndex, err)
	}
	w.deps.Logger.Info("worker: a recognize job of an earlier release handed its file on", "job_id", a.JobID, "file_index", a.FileIndex)
	return nil
}

type retiredModelWorker struct {
	river.WorkerDefaults[RetiredModelArgs]
	deps Deps
}

func (w *retiredModelWorker) Timeout(*river.Job[RetiredModelArgs]) time.Duration {
	return handOffTimeout
}

func (w *retiredModelWorker) Work(ctx context.Context, rj *river.Job[RetiredModelArgs]) error {
	a := rj.Args
	if err := handOff(ctx, w.deps, rj.JobRow, a.JobID, a.FileIndex); err != nil {
		return fmt.Errorf("retired model %s[%d/%d]: %w", a.JobID, a.FileIndex, a.ChunkIndex, err)
	}
	w.deps.Logger.Info("worker: a model job of an earlier release handed its file on", "job_id", a.JobID, "file_index", a.FileIndex, "chunk_index", a.ChunkIndex)
	return nil
}
