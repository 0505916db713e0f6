package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/fair"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// FileArgs identify one file of one job. Args carry ids only, never a secret.
type FileArgs struct {
	JobID     string `json:"job_id"`
	FileIndex int    `json:"file_index"`
	// Resume is set on the file job that carries on a River job of a
	// retired kind (retired.go): an older binary may have recognized the
	// file already, which a file job's first run does not otherwise look
	// for.
	Resume bool `json:"resume,omitempty"`
}

// Kind is the River job kind.
func (FileArgs) Kind() string { return "file" }

// InsertOpts put files on their own queue.
func (FileArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueFile, MaxAttempts: 5}
}

// fileWorker carries one file through the pipeline in one River job: fetch
// and recognize it, record the result with the file's model rows, then ask
// those rows and record each answer as it arrives. Each step is durable
// before the next begins, so a retried or reclaimed job resumes where the
// last one stopped and pays no provider twice. One River job per file, not
// per chunk, because River's own bookkeeping of a job per chunk cost more
// than the rest of the pipeline's overhead together (docs/decisions.md).
type fileWorker struct {
	river.WorkerDefaults[FileArgs]
	cfg  Config
	deps Deps
	// fetching, recognizing and asking bound, per process, the sources
	// being downloaded (Config.FetchWorkers), the files being recognized
	// (Config.RecognizeWorkers) and the model rows being asked
	// (Config.ModelWorkers), taking turns between accounts: River hands
	// out files first come, first served, and one account's thousand
	// chunks must not keep another's one chunk waiting for all of them.
	fetching    *fair.Sem
	recognizing *fair.Sem
	asking      *fair.Sem
	// starting holds the files on their way to their first calls.
	starting *startLane
	// marks shares one MarkRunning among a job's files starting together.
	marks *runningMarks
}

func newFileWorker(cfg Config, deps Deps) *fileWorker {
	return &fileWorker{cfg: cfg, deps: deps, fetching: fair.NewSem(cfg.FetchWorkers),
		recognizing: fair.NewSem(cfg.RecognizeWorkers), asking: fair.NewSem(cfg.ModelWorkers), starting: &startLane{},
		marks: &runningMarks{}}
}

// Timeout is this process's limit on a file's attempt, or, asked by River's
// rescuer about another process's attempt, that attempt's own limit when it
// noted a longer one (Work): the rescuer runs on the client leading the
// queue, and a worker configured for longer files than the leader
// (DOCJOBS_FILE_TIMEOUT, DOCJOBS_FETCH_TIMEOUT raised on some nodes, or
// on the new ones of a rolling restart) had its files rescued while they
// ran, and each run again beside the first, its rows asked twice.
func (w *fileWorker) Timeout(rj *river.Job[FileArgs]) time.Duration {
	return max(w.cfg.fileTimeout(), store.RunLimitOf(rj.JobRow))
}

// noteRunLimitLater notes the attempt's limit for River's rescuer once the
// attempt has run cfg.runLimitNoteAfter: the rescuer's leader judges the
// attempt by its own configuration unless the attempt says how long it may
// take (Timeout). No leader takes an attempt for stuck before RescueMargin
// has passed, so a note at half of it is in time, and the files that end
// sooner, nearly all of them, make no write for it: written at each
// attempt's start it was one more write of SQLite's single writer on every
// job's way to its first provider call. A note that cannot be written
// leaves the file to the leader's judgement, as before. The returned func
// stops the note, or waits for one being written.
func (w *fileWorker) noteRunLimitLater(ctx context.Context, rj *river.Job[FileArgs], log *slog.Logger) (stop func()) {
	done := make(chan struct{})
	t := time.AfterFunc(w.cfg.runLimitNoteAfter, func() {
		defer close(done)
		if err := w.deps.Store.NoteRunLimit(ctx, rj.JobRow, w.cfg.fileTimeout()+RescueMargin); err != nil && ctx.Err() == nil {
			log.Warn("file: cannot note the attempt's time limit for River's rescuer", "err", err)
		}
	})
	return func() {
		if !t.Stop() {
			<-done
		}
	}
}

func (w *fileWorker) NextRetry(j *river.Job[FileArgs]) time.Time { return retryBackoff(j.Attempt) }

func (w *fileWorker) Work(ctx context.Context, rj *river.Job[FileArgs]) error {
	args := rj.Args
	// Watch before the first read, so an end between the two is not missed.
	workCtx, ended, stop := w.untilJobEnds(ctx, args.JobID)
	defer stop()
	j, err := w.deps.Store.GetJob(ctx, "", args.JobID)
	if errors.Is(err, job.ErrNotFound) {
		// Deleted while queued, or while an earlier attempt ran: nothing is
		// left to do but remove what that attempt may have stored after the
		// delete removed the job's files (it died before it could).
		return w.removeLeftovers(ctx, args.JobID)
	}
	if err != nil {
		return fmt.Errorf("file %s[%d]: load job: %w", args.JobID, args.FileIndex, err)
	}
	if j.Status.Terminal() || args.FileIndex < 0 || args.FileIndex >= len(j.SourceURLs) {
		return nil // cancelled, already finished, or not a file of this job
	}
	log := w.deps.Logger.With("job_id", j.ID, "account_id", j.AccountID, "file_index", args.FileIndex)
	stopNote := w.noteRunLimitLater(ctx, rj, log)
	defer stopNote()
	if rj.Attempt > rj.MaxAttempts && !w.pastRecognition(ctx, rj, j, log) {
		// Reclaimed after its last attempt ended with its process (a crash,
		// an out-of-memory kill) while the file was not yet recognized. The
		// file may be what killed it, and River fetches a reclaimed job
		// whatever its attempts: running it again could take down every
		// restart.
		w.giveUp(ctx, rj, j, errProcessEnded, log)
		return nil
	}

	err = w.process(workCtx, rj, j, log)
	if errors.Is(err, errJobGone) {
		return nil
	}
	if err != nil && ended.Load() {
		log.Info("file: the job ended while the file was in progress")
		return nil
	}
	if err != nil && stopped(ctx) {
		// River's client is stopping (the graceful stop's budget ran out,
		// or the node id was lost) and cancelled the file mid-way. Nothing
		// is the file's fault, on its last attempt too: returned with
		// River's own cause, it is a soft stop, which makes the file
		// available again with its attempt given back, and the next run
		// resumes from what was recorded.
		log.Info("file: the worker stopped while the file was in progress; it goes back to the queue", "attempt", rj.Attempt, "err", err)
		return fmt.Errorf("file %s[%d]: %w", j.ID, args.FileIndex, context.Cause(ctx))
	}
	if snooze := (*river.JobSnoozeError)(nil); err != nil && !errors.As(err, &snooze) && rj.Attempt >= rj.MaxAttempts {
		w.giveUp(ctx, rj, j, err, log)
	}
	return err
}

// stopped reports whether ctx, a file's River context or one made from it,
// was cancelled from outside the file: its River client stopping, or (for
// a context made by untilJobEnds) its job ending. Its own time running out
// (DeadlineExceeded) is not a stop, nor is River's remote cancel of the
// job, which River ends for good. River cancels the work of a client that
// stops with its internal ErrStop, which cannot be matched, hence the test
// by what it is not.
func stopped(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.Canceled) && !errors.Is(context.Cause(ctx), rivertype.ErrJobCancelledRemotely)
}

// modelStageCrashes is how many more times than its River attempts a file
// whose recognition is recorded is run again after its process ended with
// it (River counts an attempt for each such end, and reclaims the job
// past its last).
const modelStageCrashes = 15

// pastRecognition reports whether a file reclaimed after its last attempt
// ended with its process is run again: its recognition is recorded, so
// what is left is asking its model rows, which no run of it does again
// (process resumes from the record), and waiting on a provider cannot
// have taken the process down. A crash loop with nothing to do with the
// file (a supervisor restarting a process something else kills) gave up
// files whose rows only waited on answers (audit-crash F2). Within a
// bound still, so that it ends; a file that cannot be read as recognized
// is given up as before.
func (w *fileWorker) pastRecognition(ctx context.Context, rj *river.Job[FileArgs], j *job.Job, log *slog.Logger) bool {
	if rj.Attempt > rj.MaxAttempts+modelStageCrashes {
		return false
	}
	recognized, _, err := w.deps.Store.FileModelRows(ctx, j.ID, rj.Args.FileIndex)
	if err != nil || !recognized {
		return false
	}
	log.Info("file: reclaimed after its last attempt ended with its process; its recognition is recorded, so its rows are asked",
		"attempt", rj.Attempt, "max_attempts", rj.MaxAttempts)
	return true
}

// errProcessEnded is the fault of a file whose last attempt did not return.
var errProcessEnded = errors.New("the worker process ended while the file was in progress")

// giveUp ends what is left of a file whose last attempt failed with cause
// (a record that kept failing, River's timeout, a shutdown): River will not
// run it again, and rows left PENDING would keep the job RUNNING until its
// deadline, then blame a provider timeout. An unrecognized file gets a
// FAILED OCR row (with its SKIPPED ocr_failed model row), a recognized one
// FAILED model rows, each saying what went wrong, through the usual
// finishes: the last row ends the job and enqueues its webhook. If even
// that cannot be written, the deadline remains.
func (w *fileWorker) giveUp(riverCtx context.Context, rj *river.Job[FileArgs], j *job.Job, cause error, log *slog.Logger) {
	msg := lastAttemptError(riverCtx, cause, rj.Attempt, rj.MaxAttempts, w.cfg.fileTimeout())
	log.Error("file: the last attempt failed, failing the file's rows", "attempt", rj.Attempt, "err", cause)
	// River's context may have ended: this is the file's last word.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(riverCtx), time.Minute)
	defer cancel()
	i := rj.Args.FileIndex
	recognized, pending, err := w.deps.Store.FileModelRows(ctx, j.ID, i)
	if errors.Is(err, job.ErrNotFound) {
		return
	}
	if err != nil {
		log.Error("file: cannot read the rows left; the job deadline will end them", "err", err)
		return
	}
	end, enqueue := lastStep(j)
	if !recognized {
		row := job.OCRRow{JobID: j.ID, FileIndex: i, File: j.SourceURLs[i], Status: job.RowFailed, Error: msg}
		done := store.OCRDone{Row: row, LLM: w.modelRows(row, j), EndWhenLast: end, EnqueueWhenLast: enqueue}
		if _, err := retryWrite(ctx, func(ctx context.Context) (bool, error) { return w.deps.Store.FinishOCR(ctx, done) }); err != nil {
			log.Error("file: cannot fail the recognition; the job deadline will end it", "err", err)
		}
		return
	}
	// A row that failed on its own says so; the others share the cause.
	own := map[int]string{}
	for _, e := range joined(cause) {
		if re := (*rowError)(nil); errors.As(e, &re) {
			own[re.chunk] = lastAttemptError(riverCtx, re.err, rj.Attempt, rj.MaxAttempts, w.cfg.fileTimeout())
		}
	}
	errs := make([]error, len(pending))
	var wg sync.WaitGroup
	for k, row := range pending {
		row.Status, row.Error, row.Model = job.RowFailed, msg, j.Neural.Model
		if m, ok := own[row.ChunkIndex]; ok {
			row.Error = m
		}
		wg.Go(func() {
			_, errs[k] = w.record(ctx, store.LLMDone{Row: row, EndWhenLast: end, EnqueueWhenLast: enqueue})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		log.Error("file: cannot fail the rows left; the job deadline will end them", "err", err)
	}
}

// joined returns the errors err joins (errors.Join), or err alone.
func joined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// maxFaultBytes bounds the error a file's failed last attempt leaves on its
// rows, as schema errors are bounded.
const maxFaultBytes = 512

// lastAttemptError is the row error of a file whose last attempt failed
// with cause, riverCtx being that attempt's context: on one line, at most
// maxFaultBytes of whole characters. Errors of this process never carry a
// key (provider errors are classified; keys are opened only into calls).
func lastAttemptError(riverCtx context.Context, cause error, attempt, attempts int, limit time.Duration) string {
	what := cause.Error()
	switch {
	case errors.Is(riverCtx.Err(), context.DeadlineExceeded):
		what = fmt.Sprintf("the file took longer than its %s limit", limit)
	case riverCtx.Err() != nil:
		what = "the worker stopped while the file was in progress"
	}
	msg := strings.Join(strings.Fields(fmt.Sprintf("the file's last attempt (%d of %d) failed: %s", min(attempt, attempts), attempts, what)), " ")
	if len(msg) > maxFaultBytes {
		cut := maxFaultBytes
		for !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut]
	}
	return msg
}

// process carries the file on from where an earlier run left it.
func (w *fileWorker) process(ctx context.Context, rj *river.Job[FileArgs], j *job.Job, log *slog.Logger) error {
	// Only the file's first run knows it is still unrecognized. A snooze
	// (a rate-limited provider) spends no attempt, so the run after one has
	// the attempt number of the run before it; nor does a run cut off by
	// its client's shutdown (River gives the attempt back), but every run
	// adds its client to AttemptedBy. A file handed on by a retired kind's
	// job may have been recognized by an older binary.
	if rj.Attempt > 1 || snoozed(rj.JobRow) || len(rj.AttemptedBy) > 1 || rj.Args.Resume {
		if recognized, err := w.resume(ctx, rj, j, log); recognized || err != nil {
			return err
		}
	}
	leave := w.starting.enter()
	defer leave()
	rec, err := w.recognizeFile(ctx, rj, j, log)
	if err != nil {
		return err
	}
	pending := rec.pending()
	if len(pending) == 0 || len(j.Prompts) == 0 {
		leave()
		_, err := w.keepRecognition(ctx, j, rec, log)
		return err
	}

	// The rows are asked before the recognition is kept, and their answers
	// recorded only once it is. Keeping it stores the source file and takes
	// the database's writer, and it waits until this process's files on
	// their way to their first calls, this one included, have their
	// requests out (startLane). A crash in between loses only calls in
	// flight, as a crash at any time does.
	askCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	kept := &keptGate{done: make(chan struct{})}
	out := newRowsOut(len(pending), leave)
	answered := make(chan error, 1)
	go func() { answered <- w.answerFile(askCtx, rj, j, pending, nil, kept, out, log) }()
	w.starting.wait(ctx, keepWaitLimit)
	applied, keepErr := w.keepRecognition(ctx, j, rec, log)
	kept.ok = keepErr == nil && applied
	close(kept.done)
	if !kept.ok {
		cancel() // the answers would have nowhere to go
	}
	err = <-answered
	if keepErr != nil {
		return keepErr
	}
	if !kept.ok {
		// An earlier run recorded the file (or the job ended): its rows,
		// chunked from that run's recognition, are the ones to ask.
		_, err := w.resume(ctx, rj, j, log)
		return err
	}
	return err
}

// snoozed reports whether River snoozed the job before (JobSnooze counts
// its snoozes in the job's metadata).
func snoozed(rj *rivertype.JobRow) bool {
	var md struct {
		Snoozes int `json:"snoozes"`
	}
	return json.Unmarshal(rj.Metadata, &md) == nil && md.Snoozes > 0
}

// resume asks the pending rows of a file an earlier run recorded, and says
// whether there was one.
func (w *fileWorker) resume(ctx context.Context, rj *river.Job[FileArgs], j *job.Job, log *slog.Logger) (bool, error) {
	readAt := time.Now()
	recognized, pending, err := w.deps.Store.FileModelRows(ctx, j.ID, rj.Args.FileIndex)
	if errors.Is(err, job.ErrNotFound) {
		return true, nil // gone with its job
	}
	if err != nil {
		return false, fmt.Errorf("file %s[%d]: load rows: %w", j.ID, rj.Args.FileIndex, err)
	}
	if !recognized {
		return false, nil
	}
	return true, w.answerFile(ctx, rj, j, pending, newPendingRows(readAt, pending), nil, nil, log)
}

// keepWaitLimit bounds how long a file's recognition waits for other files'
// first calls before it is kept.
const keepWaitLimit = 50 * time.Millisecond

// keptGate holds a file's answers until its recognition is kept: a row's
// answer is recorded only against a recorded row. A nil gate is open.
type keptGate struct {
	done chan struct{}
	ok   bool // set before done closes: the recognition was kept
}

// wait blocks until the recognition is kept or has failed to be, and tells
// which.
func (g *keptGate) wait() bool {
	if g == nil {
		return true
	}
	<-g.done
	return g.ok
}

// errNotKept stops a row whose file's recognition was not recorded.
var errNotKept = errors.New("the file's recognition was not recorded")

// untilJobEnds returns a context cancelled once the job has ended or is
// gone, so that a cancelled, deleted or expired job stops its provider
// calls and starts no more. The store signals an end the moment it commits,
// in this process, and soon after in any other (WatchEnd); the job is also
// read every Config.JobCheck, for ends no signal brings (a listener
// reconnecting, a check that failed). ended tells a cancellation for that
// reason from River's own (timeout, shutdown).
func (w *fileWorker) untilJobEnds(ctx context.Context, jobID string) (context.Context, *atomic.Bool, func()) {
	ctx, cancel := context.WithCancel(ctx)
	ended := &atomic.Bool{}
	signal, unwatch := w.deps.Store.WatchEnd(jobID)
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(w.cfg.JobCheck)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-signal:
				ended.Store(true)
				cancel()
				return
			case <-tick.C:
			}
			j, err := w.deps.Store.GetJob(ctx, "", jobID)
			if errors.Is(err, job.ErrNotFound) || (err == nil && j.Status.Terminal()) {
				ended.Store(true)
				cancel()
				return
			}
		}
	}()
	return ctx, ended, func() { close(done); cancel(); unwatch() }
}
