package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"github.com/docjobs/docjobs/internal/consensus"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/schema"
	"github.com/docjobs/docjobs/internal/store"
)

// QueueModel is the model stage's queue.
const QueueModel = "model"

// modelTimeout bounds one model row: the provider's own per-call timeout
// times its attempts, with room to spare.
const modelTimeout = 10 * time.Minute

// ModelArgs identify one chunk of one file; only the first prompt runs.
type ModelArgs struct {
	JobID      string `json:"job_id"`
	FileIndex  int    `json:"file_index"`
	ChunkIndex int    `json:"chunk_index"`
}

// Kind is the River job kind.
func (ModelArgs) Kind() string { return "model" }

// InsertOpts puts the model stage on its own queue.
func (ModelArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueModel, MaxAttempts: 5}
}

// Chats opens a model-stage adapter for a slot, model and key.
type Chats interface {
	Chat(slot, model, key string) (provider.Chat, error)
}

type modelWorker struct {
	river.WorkerDefaults[ModelArgs]
	deps Deps
}

func (w *modelWorker) Timeout(*river.Job[ModelArgs]) time.Duration { return modelTimeout }

func (w *modelWorker) NextRetry(j *river.Job[ModelArgs]) time.Time { return retryBackoff(j.Attempt) }

func (w *modelWorker) Work(ctx context.Context, rj *river.Job[ModelArgs]) error {
	start := time.Now()
	a := rj.Args
	j, row, err := w.deps.Store.ModelInput(ctx, a.JobID, a.FileIndex, 0, a.ChunkIndex)
	if errors.Is(err, job.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("model %s[%d/%d]: load: %w", a.JobID, a.FileIndex, a.ChunkIndex, err)
	}
	if j.Status.Terminal() || row.Status.Terminal() || len(j.Prompts) == 0 {
		return nil
	}
	log := w.deps.Logger.With("job_id", j.ID, "account_id", j.AccountID, "file_index", a.FileIndex, "chunk_index", a.ChunkIndex)

	ctx = provider.WithAccount(ctx, j.AccountID)
	final := rj.Attempt >= rj.MaxAttempts
	row.Model = j.Neural.Model
	if k := consensusRuns(j.ConsensusMode); k > 1 {
		err = w.vote(ctx, j, &row, k, final)
	} else {
		err = w.answer(ctx, j, &row)
	}
	if pe := (*provider.Error)(nil); errors.As(err, &pe) && pe.Retryable() && !final {
		if pe.Category == provider.CategoryRateLimit {
			log.Warn("model: provider rate limited, snoozing", "retry_after", pe.RetryAfter)
			return river.JobSnooze(max(pe.RetryAfter, 5*time.Second))
		}
		log.Warn("model: provider unavailable, will retry", "attempt", rj.Attempt, "err", err)
		return err
	}
	if err != nil {
		row.Status, row.Error = job.RowFailed, err.Error()
	}
	row.Duration = time.Since(start)
	applied, err := w.deps.Store.FinishLLM(ctx, rj.JobRow, store.LLMDone{Row: row, EnqueueWhenLast: finalizeParams(j.ID)})
	if err != nil {
		return fmt.Errorf("model %s[%d/%d]: finish: %w", j.ID, a.FileIndex, a.ChunkIndex, err)
	}
	observe(w.deps.Observer, "model", string(row.Status), start)
	log.Info("model: chunk done", "status", row.Status, "applied", applied, "duration", row.Duration)
	return nil
}

// answer asks once and fills row with the answer and its verdict. An error
// is the row's failure, unless it is a retryable provider error with
// attempts left: then the row is asked again later.
func (w *modelWorker) answer(ctx context.Context, j *job.Job, row *job.LLMRow) error {
	key := "model/" + strconv.Itoa(row.PromptIndex) + "/" + strconv.Itoa(row.ChunkIndex)
	a, err := remembered(ctx, w.deps.Store, j.ID, row.FileIndex, key, func() (provider.ChatAnswer, error) {
		return w.ask(ctx, j, *row)
	})
	if err != nil {
		return err
	}
	row.Status, row.Content = job.RowDone, a.Content
	row.Request, row.RawData = a.Request, a.RawData
	row.InputTokens, row.OutputTokens = a.InputTokens, a.OutputTokens
	if j.ResponseSchema != "" && row.ChunkTotal == 1 {
		row.SchemaValid, row.SchemaErrors = verdict(j.ResponseSchema, a.Content)
	}
	return nil
}

// runOutcome is what one consensus run left: an answer, or why it cannot
// vote. Both are kept, so a retried row asks only the runs that have neither.
type runOutcome struct {
	Answer   provider.ChatAnswer `json:"answer"`
	Unusable string              `json:"unusable,omitempty"`
}

// vote asks the chunk k times at once and fills row with the agreed answer
// and its consensus block. Each run is kept the moment it ends; a
// retryable failure of any run (unless final) returns, to be asked again
// with the runs that answered already kept.
func (w *modelWorker) vote(ctx context.Context, j *job.Job, row *job.LLMRow, k int, final bool) error {
	outcomes := make([]runOutcome, k)
	errs := make([]error, k)
	var wg sync.WaitGroup
	for r := range k {
		wg.Go(func() {
			key := fmt.Sprintf("model/%d/%d/run/%d", row.PromptIndex, row.ChunkIndex, r)
			outcomes[r], errs[r] = remembered(ctx, w.deps.Store, j.ID, row.FileIndex, key, func() (runOutcome, error) {
				a, err := w.ask(ctx, j, *row)
				if pe := (*provider.Error)(nil); errors.As(err, &pe) && pe.Retryable() && !final {
					return runOutcome{}, err
				}
				if err != nil {
					return runOutcome{Unusable: err.Error()}, nil
				}
				return runOutcome{Answer: a}, nil
			})
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
		return fmt.Errorf("consensus runs: %w", err)
	}

	runs := make([]consensus.Run, k)
	for r, o := range outcomes {
		runs[r] = consensus.Run{Answer: o.Answer.Content, Unusable: o.Unusable}
		row.InputTokens += o.Answer.InputTokens
		row.OutputTokens += o.Answer.OutputTokens
		if row.Request == "" && o.Unusable == "" {
			row.Request, row.RawData = o.Answer.Request, o.Answer.RawData
		}
	}
	res, err := consensus.Vote(runs, consensus.Limits{})
	if err != nil {
		return err
	}
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

// ask sends the chunk with the first prompt. Callers keep the answer the
// moment it arrives, so a retried or restarted row never pays twice.
func (w *modelWorker) ask(ctx context.Context, j *job.Job, row job.LLMRow) (provider.ChatAnswer, error) {
	chat, err := w.chatFor(ctx, j)
	if err != nil {
		return provider.ChatAnswer{}, err
	}
	return chat.Complete(ctx, chatRequest(j, row))
}

func (w *modelWorker) chatFor(ctx context.Context, j *job.Job) (provider.Chat, error) {
	if w.deps.Chats == nil {
		return nil, errors.New("no model providers are configured on this server")
	}
	key, err := openSecret(ctx, w.deps, j, job.SecretNeuralAPIKey)
	if err != nil && !errors.Is(err, errNoSecret) {
		return nil, err
	}
	chat, err := w.deps.Chats.Chat(j.Neural.Type, j.Neural.Model, key)
	if err != nil {
		return nil, fmt.Errorf("neural: %w", err)
	}
	return chat, nil
}

// chatRequest is the first prompt as the system message and the chunk, with
// its position, as the user message.
func chatRequest(j *job.Job, row job.LLMRow) provider.ChatRequest {
	system := j.Prompts[0]
	if j.ResponseSchema != "" {
		system += "\n\nAnswer with a single JSON value that conforms to the given JSON Schema, and nothing else."
	}
	user := fmt.Sprintf("Document %q, part %d of %d:\n\n%s", path.Base(row.File), row.ChunkIndex+1, row.ChunkTotal, row.Input)
	return provider.ChatRequest{System: system, User: user, Schema: j.ResponseSchema}
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
