package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/riverqueue/river"

	"github.com/docjobs/docjobs/internal/consensus"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/schema"
	"github.com/docjobs/docjobs/internal/store"
)

// Chats opens a model-stage adapter for a slot, model and key.
type Chats interface {
	Chat(slot, model, key string) (provider.Chat, error)
}

// answerFile asks the file's pending model rows at once, within the
// process's Config.ModelWorkers, and records each row as its answer arrives:
// the answer is durable before anything else happens to the file, so a
// retry asks only the rows still pending. A row the provider could not
// answer yet (busy, down) stays pending and its error is returned, for
// River to try the file again later; on the last attempt it fails instead.
//
// The rows are taken in order by at most Config.ModelWorkers goroutines,
// as many as could be asking at once: a goroutine per row parked
// thousands of them, with their calls' state, behind the process's limit.
//
// known is what a rerun read of which rows are pending (nil on the file's
// first run, whose rows no other run can have answered before they were
// recorded): a row's call checks it again when it has aged (pendingRows).
func (w *fileWorker) answerFile(ctx context.Context, rj *river.Job[FileArgs], j *job.Job, rows []job.LLMRow, known *pendingRows, kept *keptGate, out *rowsOut, log *slog.Logger) error {
	if len(j.Prompts) == 0 {
		return nil
	}
	ctx = provider.WithAccount(ctx, j.AccountID)
	final := rj.Attempt >= rj.MaxAttempts
	chat, chatErr := w.chatFor(ctx, j)
	waited := rateLimitWaitOf(rj.JobRow, modelRateLimitKey)
	if chatErr == nil && waited.over(time.Now(), w.cfg.RateLimitPatience) {
		log.Warn("model: the provider has rate limited the file for its whole patience; rows it still limits fail",
			"since", waited.Since, "patience", w.cfg.RateLimitPatience)
		chat = rateLimitsFinal{next: chat}
	}
	errs := make([]error, len(rows))
	askers := max(1, min(len(rows), w.cfg.ModelWorkers))
	sent := make([]func(), len(rows))
	for i := range rows {
		sent[i] = out.row()
		if i >= askers {
			// This row waits for one of the file's own calls to end, not
			// on its way to a first call: other files' work need not wait
			// for it (startLane).
			sent[i]()
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range askers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(rows) {
					return
				}
				if chatErr != nil {
					sent[i]()
					if ctx.Err() != nil {
						// Opening the provider was cut off (its secrets
						// unread), as a call would be: the row stays
						// pending, as answerRow leaves it.
						errs[i] = &rowError{chunk: rows[i].ChunkIndex, err: ctx.Err()}
						continue
					}
					errs[i] = w.finishRow(ctx, j, &rows[i], time.Now(), chatErr, kept, log)
					continue
				}
				errs[i] = w.answerRow(ctx, j, chat, &rows[i], final, known, kept, sent[i], log)
			}
		})
	}
	wg.Wait()
	answered := slices.Contains(errs, nil) // a row recorded in this run
	// One rate-limited row decides how the file waits: a snooze spends no
	// attempt, and the wait is bounded (ratelimit.go).
	if pe := rateLimitedErr(errs); pe != nil {
		log.Warn("model: provider rate limited, snoozing", "retry_after", pe.RetryAfter, "snoozes", waited.Snoozes)
		return waited.snooze(ctx, modelRateLimitKey, pe.RetryAfter, w.cfg.snoozeFloor, w.cfg.RateLimitPatience, answered)
	}
	if err := errors.Join(errs...); err != nil {
		if answered {
			waited.answered(ctx, modelRateLimitKey)
		}
		if ctx.Err() != nil {
			// Stopped from outside: the job ended, the file's recognition
			// was another attempt's to record, or the worker is stopping.
			// Work decides what follows; nothing here needs a warning.
			log.Debug("model: rows stopped", "attempt", rj.Attempt, "err", err)
			return err
		}
		log.Warn("model: rows left for a later attempt", "attempt", rj.Attempt, "err", err)
		return err
	}
	return nil
}

// answerRow asks one row and records it. It returns an error, and records
// nothing, when the row is to be asked again: a retryable provider error
// with attempts left, or the River job's context ending. A row another run
// of the file answered since known was read is neither asked nor recorded.
func (w *fileWorker) answerRow(ctx context.Context, j *job.Job, chat provider.Chat, row *job.LLMRow, final bool, known *pendingRows, kept *keptGate, sent func(), log *slog.Logger) error {
	defer sent()
	k := consensusRuns(j.ConsensusMode)
	if k > 1 {
		// Runs are kept as they answer, keyed by chunk: only once the
		// chunks are recorded may they be.
		sent()
		if !kept.wait() {
			return errNotKept
		}
	}
	if err := w.asking.Acquire(ctx, j.AccountID); err != nil {
		return err
	}
	// A place can be handed over as the job ends: then the call must not
	// start (the key it would carry is already erased).
	if err := ctx.Err(); err != nil {
		w.asking.Release()
		return err
	}
	// Looked at once the slot is had: the wait for it is where another
	// run's answer can land.
	if !known.stillPending(ctx, w.deps.Store, j.ID, row, w.cfg.pendingRecheck, log) {
		w.asking.Release()
		log.Info("model: chunk answered by another run of the file meanwhile; not asked again", "chunk_index", row.ChunkIndex)
		return nil
	}
	start := time.Now()
	var err error
	if k > 1 {
		err = w.vote(ctx, j, chat, row, k, final, log)
	} else {
		err = answer(whenWritten(ctx, sent), j, chat, row)
	}
	w.asking.Release()
	sent() // also when the call failed before its request was written
	if waitsForNextAttempt(err, final) {
		return &rowError{chunk: row.ChunkIndex, err: err}
	}
	if cutOff(ctx, err) {
		// A paid 2xx that came as ctx ended is no cut: it is recorded,
		// as a consensus run keeps it, else the next run paid for it
		// again.
		if ctx.Err() != nil {
			return &rowError{chunk: row.ChunkIndex, err: ctx.Err()}
		}
		return &rowError{chunk: row.ChunkIndex, err: err}
	}
	if re := (*rowError)(nil); errors.As(err, &re) {
		return err // a consensus row whose kept runs could not be read
	}
	return w.finishRow(ctx, j, row, start, err, kept, log)
}

// pendingRows is what a rerun of a file (a retry, a reclaim after a crash, a
// rescue) knows of which of its rows are still PENDING, and since when.
// Such a run may overlap another run of the file (a process that lost its
// node id and works on until it notices, a rescued attempt), whose answers
// are recorded while this run's rows wait for their slots; FinishLLM then
// drops this run's answer, but the provider was paid for it. So a row's
// call starts only once its state is at most recheckAfter old: the file's
// pending rows are read again, one read for all its rows. A file whose
// calls start at once (every job's usual path) reads nothing more; one
// whose calls wait reads at most once per recheckAfter.
type pendingRows struct {
	mu     sync.Mutex
	asOf   time.Time    // when the read of chunks began
	chunks map[int]bool // chunk indexes of the first prompt's PENDING rows
}

// newPendingRows is what a read that began at asOf found pending.
func newPendingRows(asOf time.Time, rows []job.LLMRow) *pendingRows {
	p := &pendingRows{asOf: asOf}
	p.set(rows)
	return p
}

func (p *pendingRows) set(rows []job.LLMRow) {
	p.chunks = make(map[int]bool, len(rows))
	for _, r := range rows {
		p.chunks[r.ChunkIndex] = true
	}
}

// stillPending reports whether row is still to be asked, reading the
// file's pending rows again when what p knows is older than recheckAfter.
// A nil p knows nothing to the contrary. A read that fails asks the row,
// as before the check: the record guards the row (only a PENDING row is
// written), the read only saves a call.
func (p *pendingRows) stillPending(ctx context.Context, st interface {
	FileModelRows(ctx context.Context, jobID string, fileIndex int) (bool, []job.LLMRow, error)
}, jobID string, row *job.LLMRow, recheckAfter time.Duration, log *slog.Logger) bool {
	if p == nil {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.asOf) > recheckAfter {
		readAt := time.Now()
		_, rows, err := st.FileModelRows(ctx, jobID, row.FileIndex)
		switch {
		case errors.Is(err, job.ErrNotFound):
			rows = nil // gone with its job: nothing to answer
		case err != nil:
			if ctx.Err() == nil {
				log.Warn("model: cannot read again which rows are pending; asking", "chunk_index", row.ChunkIndex, "err", err)
			}
			return true
		}
		p.asOf = readAt
		p.set(rows)
	}
	return p.chunks[row.ChunkIndex]
}

// waitsForNextAttempt reports whether a call that failed with err is asked
// again by the file's next attempt rather than failing its row: a provider
// that could not answer (busy, down, slow), unless this is the last attempt
// or the provider did answer. A 200 without a usable answer (no choices, no
// tool call) was paid for, each of the adapter's tries, and would be as
// unusable on the next attempt.
func waitsForNextAttempt(err error, final bool) bool {
	pe := (*provider.Error)(nil)
	return !final && errors.As(err, &pe) && pe.Retryable() && pe.Status/100 != 2
}

// cutOff reports whether a call that failed with err was cut off from
// this side before a paid answer: it waited for a slot or was abandoned as
// its context ended (the worker stopping, the job ending, the file's time
// running out). Such a run has no outcome: nothing is kept and its row
// stays PENDING, for the next run to ask it as a stopped single-run row is
// asked again. Kept as an unusable outcome, as it was, the next attempt
// voted on it and the row ended FAILED ("no votable run") or DONE from
// fewer runs. A 2xx answer that could not be used was paid for, and
// stays an outcome even when the context ended as it came.
func cutOff(ctx context.Context, err error) bool {
	if err == nil {
		return false
	}
	if pe := (*provider.Error)(nil); errors.As(err, &pe) && pe.Status/100 == 2 {
		return false
	}
	return ctx.Err() != nil || errors.Is(err, provider.ErrCallAbandoned) || errors.Is(err, provider.ErrSlotWait)
}

// finishRow records row as answered, or as FAILED with failure, once the
// file's recognition is kept.
func (w *fileWorker) finishRow(ctx context.Context, j *job.Job, row *job.LLMRow, start time.Time, failure error, kept *keptGate, log *slog.Logger) error {
	row.Model = j.Neural.Model
	if failure != nil {
		row.Status, row.Error = job.RowFailed, failure.Error()
	}
	row.Duration = time.Since(start)
	if !kept.wait() {
		return errNotKept
	}
	d := store.LLMDone{Row: *row}
	d.EndWhenLast, d.EnqueueWhenLast = lastStep(j)
	applied, err := w.record(ctx, d)
	if err != nil {
		return &rowError{chunk: row.ChunkIndex, err: fmt.Errorf("finish: %w", err)}
	}
	observe(w.deps.Observer, "model", string(row.Status), start)
	log.Info("model: chunk done", "chunk_index", row.ChunkIndex, "status", row.Status, "applied", applied, "duration", row.Duration)
	return nil
}

// rowError is why one model row was left PENDING; were it the file's last
// attempt, the row fails with it (fileWorker.giveUp).
type rowError struct {
	chunk int
	err   error
}

func (e *rowError) Error() string { return fmt.Sprintf("model row %d: %v", e.chunk, e.err) }
func (e *rowError) Unwrap() error { return e.err }

// recordWaits are the pauses before each further try to record a row. The
// record is the only copy of a paid answer: if it is lost, the file's next
// attempt asks the provider again, so a failed write is tried again first,
// also after the River job's own context has ended.
var recordWaits = [...]time.Duration{100 * time.Millisecond, time.Second, 5 * time.Second}

// unreachableWait is the pause between further tries, once recordWaits
// are spent, while the database cannot be reached (store.ErrUnavailable):
// a failover or a restart of PostgreSQL takes longer than recordWaits'
// six seconds, and giving up then threw every answer in flight away, to be
// asked again. Short, so that the record follows the database's return.
var unreachableWait = 2 * time.Second

// recordPatience is the least time retryWrite waits out an unreachable
// database, and the longest one try of a write may take: a write begun as
// its attempt ends (a last attempt failing its rows) still has it, and a
// try hung on a connection lost without a word is cut off and tried again.
// A var so that tests can shorten it.
var recordPatience = time.Minute

func (w *fileWorker) record(ctx context.Context, d store.LLMDone) (bool, error) {
	return retryWrite(ctx, func(ctx context.Context) (bool, error) { return w.deps.Store.FinishLLM(ctx, d) })
}

// retryWrite runs write, and again after each of recordWaits while it
// fails, and after that every unreachableWait while it fails because the
// database cannot be reached, until ctx's deadline (the River attempt's
// end, before which no other process runs it: River's rescuer waits longer
// still), and at least recordPatience, past ctx's cancellation. A fixed
// minute threw away every answer recorded during a longer outage, to be
// paid again by the next attempt. An error the database answered (it
// refused the write) is not waited out past recordWaits: it would come
// back the same.
func retryWrite(ctx context.Context, write func(context.Context) (bool, error)) (bool, error) {
	ctx, cancel := recordContext(ctx)
	defer cancel()
	applied, err := tryWrite(ctx, write)
	for try := 0; err != nil; try++ {
		wait := unreachableWait
		switch {
		case try < len(recordWaits):
			wait = recordWaits[try]
		case !errors.Is(err, store.ErrUnavailable):
			return applied, err
		}
		select {
		case <-ctx.Done():
			return false, err
		case <-time.After(wait):
		}
		applied, err = tryWrite(ctx, write)
	}
	return applied, err
}

// recordContext is the time a record has: until ctx's deadline, and at
// least recordPatience, past ctx's cancellation.
func recordContext(ctx context.Context) (context.Context, context.CancelFunc) {
	until := time.Now().Add(recordPatience)
	if d, ok := ctx.Deadline(); ok && d.After(until) {
		until = d
	}
	return context.WithDeadline(context.WithoutCancel(ctx), until)
}

// tryWrite runs write once, within recordPatience: a try that takes that
// long waits on a connection that died without a word (a failover whose
// old server vanished), and is taken for an unreachable database, to be
// tried again on a new connection.
func tryWrite(ctx context.Context, write func(context.Context) (bool, error)) (bool, error) {
	tctx, cancel := context.WithTimeout(ctx, recordPatience)
	defer cancel()
	applied, err := write(tctx)
	if err != nil && tctx.Err() != nil && ctx.Err() == nil {
		err = fmt.Errorf("%w: no answer within %s: %w", store.ErrUnavailable, recordPatience, err)
	}
	return applied, err
}

// answer asks once and fills row with the answer and its verdict. The
// caller records the row the moment this returns; that record is what keeps
// a retried file from asking the row again. A failed call fills what it
// left too (the request; a 2xx body and its usage): a FAILED row is where a
// user looks for why an answer was cut off, and a truncated answer is
// billed in full.
func answer(ctx context.Context, j *job.Job, chat provider.Chat, row *job.LLMRow) error {
	a, err := chat.Complete(ctx, chatRequest(j, *row))
	row.Request, row.RawData = a.Request, a.RawData
	row.InputTokens, row.OutputTokens = a.InputTokens, a.OutputTokens
	if err != nil {
		return err
	}
	row.Status, row.Content = job.RowDone, a.Content
	if j.ResponseSchema != "" && row.ChunkTotal == 1 {
		row.SchemaValid, row.SchemaErrors = verdict(j.ResponseSchema, a.Content)
	}
	return nil
}

// runOutcome is what one consensus run left: an answer, or why it cannot
// vote with what the failed call left (its request; a 2xx body and its
// usage). Both are kept, so a retried row asks only the runs that have
// neither.
type runOutcome struct {
	Answer   provider.ChatAnswer `json:"answer"`
	Unusable string              `json:"unusable,omitempty"`
}

// vote asks the chunk k times at once and fills row with the agreed answer
// and its consensus block. Each run is kept the moment it ends; a
// retryable failure of any run (unless final) returns, to be asked again
// with the runs that answered already kept. Why runs did not vote, and why
// a vote degraded, are logged: the block only counts them.
func (w *fileWorker) vote(ctx context.Context, j *job.Job, chat provider.Chat, row *job.LLMRow, k int, final bool, log *slog.Logger) error {
	outcomes := make([]runOutcome, k)
	errs := make([]error, k)
	var wg sync.WaitGroup
	for r := range k {
		wg.Go(func() {
			key := fmt.Sprintf("model/%d/%d/run/%d", row.PromptIndex, row.ChunkIndex, r)
			answered := false
			outcomes[r], errs[r] = remembered(ctx, w.deps.Store, j.ID, row.FileIndex, key, func() (runOutcome, error) {
				a, err := chat.Complete(ctx, chatRequest(j, *row))
				if waitsForNextAttempt(err, final) || cutOff(ctx, err) {
					return runOutcome{}, err
				}
				answered = true
				if err != nil {
					return runOutcome{Answer: a, Unusable: err.Error()}, nil
				}
				return runOutcome{Answer: a}, nil
			})
			if answered && errs[r] != nil {
				// The outcome is in hand but could not be kept: it votes
				// all the same, and the row's record (written with
				// retries) keeps what it paid for. Failing the row
				// with the store's error threw away every run's answer.
				log.Warn("model: a consensus run's outcome could not be kept; it votes from memory",
					"chunk_index", row.ChunkIndex, "run", r+1, "err", errs[r])
				errs[r] = nil
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		// The first retryable provider error decides how the row waits.
		for _, e := range errs {
			if pe := (*provider.Error)(nil); errors.As(e, &pe) && pe.Retryable() {
				return pe
			}
		}
		// Else a run was cut off (answerRow leaves the row pending for
		// it), or its kept outcome could not be read: the row waits for
		// the file's next attempt, as one whose record failed does, and
		// fails only if that was the last (giveUp). It failed at once
		// with the store's error, its kept runs paid for in vain
		// (hunt-consensus F3).
		return &rowError{chunk: row.ChunkIndex, err: fmt.Errorf("consensus runs: %w", err)}
	}

	// Every run that reached the vendor is billed, so every run counts in
	// the row's usage: truncated and refused ones as invalid-JSON ones do.
	// The row shows the first usable run's exchange, else the first failed
	// one's.
	runs := make([]consensus.Run, k)
	for r, o := range outcomes {
		runs[r] = consensus.Run{Answer: o.Answer.Content, Unusable: o.Unusable}
		row.InputTokens = provider.AddTokens(row.InputTokens, o.Answer.InputTokens)
		row.OutputTokens = provider.AddTokens(row.OutputTokens, o.Answer.OutputTokens)
		if row.Request == "" && o.Unusable == "" {
			row.Request, row.RawData = o.Answer.Request, o.Answer.RawData
		}
	}
	for _, o := range outcomes {
		if row.Request == "" && row.RawData == "" {
			row.Request, row.RawData = o.Answer.Request, o.Answer.RawData
		}
	}
	res, err := consensus.Vote(runs, consensus.Limits{})
	if err != nil {
		return err
	}
	logVote(log, row.ChunkIndex, res)
	block, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("consensus block: %w", err)
	}
	row.Status, row.Content, row.Consensus = job.RowDone, string(res.Agreed), block
	if j.ResponseSchema != "" && row.ChunkTotal == 1 {
		row.SchemaValid, row.SchemaErrors = verdict(j.ResponseSchema, row.Content)
	}
	return nil
}

// logVote says why a DONE row's vote is incomplete: which runs did not
// vote and why (truncated, refused, not JSON), and why a vote degraded (a
// limit of consensus.Limits). The row's block has only runsVotable,
// incomplete and a minAgreement of 0 for them, so without this line
// nothing told an operator why (hunt-consensus F2). Reasons are the
// provider's redacted errors and JSON syntax errors, never answer text.
func logVote(log *slog.Logger, chunk int, res consensus.Result) {
	if len(res.Unvotable) == 0 && res.Degraded == "" {
		return
	}
	unvotable := make([]string, len(res.Unvotable))
	for i, u := range res.Unvotable {
		unvotable[i] = u.String()
	}
	attrs := []any{"chunk_index", chunk, "k", res.K, "runs_votable", res.RunsVotable,
		"unvotable", strings.Join(unvotable, "; ")}
	if res.Degraded != "" {
		log.Warn("model: consensus vote degraded to the first votable answer", append(attrs, "reason", res.Degraded)...)
		return
	}
	log.Info("model: consensus runs left out of the vote", attrs...)
}

// consensusRuns is k of a consensus mode; 1 when consensus is off.
func consensusRuns(mode string) int {
	switch mode {
	case "CONSENSUS_MODE_TWO_RUNS":
		return 2
	case "CONSENSUS_MODE_THREE_RUNS":
		return 3
	case "CONSENSUS_MODE_FIVE_RUNS":
		return 5
	}
	return 1
}

// chatFor opens the job's model provider, once per file.
func (w *fileWorker) chatFor(ctx context.Context, j *job.Job) (provider.Chat, error) {
	if w.deps.Chats == nil {
		return nil, errors.New("no model providers are configured on this server")
	}
	keys, err := openJobKeys(ctx, w.deps, j)
	if err != nil {
		return nil, err
	}
	key, _ := keys.secret(job.SecretNeuralAPIKey) // a slot without keys takes none
	chat, err := w.deps.Chats.Chat(j.Neural.Type, j.Neural.Model, key)
	if err != nil {
		return nil, fmt.Errorf("neural: %w", err)
	}
	return provider.RedactChat(chat, keys.redact), nil
}

// chatRequest is the first prompt as the system message and the chunk, with
// its position (the file's name, part i of n), as the user message.
func chatRequest(j *job.Job, row job.LLMRow) provider.ChatRequest {
	system := j.Prompts[0]
	if j.ResponseSchema != "" {
		system += "\n\nAnswer with a single JSON value that conforms to the given JSON Schema, and nothing else."
	}
	user := fmt.Sprintf("Document %q, part %d of %d:\n\n%s", fileLabel(j, row), row.ChunkIndex+1, row.ChunkTotal, row.Input)
	return provider.ChatRequest{System: system, User: user, Schema: j.ResponseSchema}
}

// maxLabelBytes bounds the file name in a user message, as uploads and
// downloads bound the names they store.
const maxLabelBytes = 255

// fileLabel is how the user message names the chunk's file: its own name
// (the upload's, or the download's), else the last segment of its source
// URL's path (rows recorded before names were kept), never the stored
// file's id, which tells the model nothing. The name comes from whoever
// uploaded or served the file, so only printable characters are kept, at
// most maxLabelBytes of them, cut on a character boundary: a name can
// neither crowd out the chunk nor break the message's first line to pass
// for an instruction (the message quotes it, too).
func fileLabel(j *job.Job, row job.LLMRow) string {
	name := row.FileName
	if name == "" && row.FileIndex >= 0 && row.FileIndex < len(j.SourceURLs) {
		if u, err := url.Parse(j.SourceURLs[row.FileIndex]); err == nil {
			name = path.Base(u.Path)
		}
	}
	name = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(name, ""))
	name = strings.Join(strings.Fields(name), " ")
	if len(name) > maxLabelBytes {
		cut := maxLabelBytes
		for !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut]
	}
	if name == "" || name == "." || name == "/" {
		return "document"
	}
	return name
}

// verdict judges an answer; a schema that no longer compiles (it was
// checked at create) judges nothing.
func verdict(schemaText, answer string) (*bool, []string) {
	s, err := schema.Compile(schemaText)
	if err != nil {
		return nil, nil
	}
	valid, errs := schema.Verdict(s, answer)
	return &valid, errs
}
