package worker

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strconv"
	"time"

	"github.com/riverqueue/river"

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

	answer, err := w.ask(provider.WithAccount(ctx, j.AccountID), j, row)
	row.Model = j.Neural.Model
	if err != nil {
		if pe := (*provider.Error)(nil); errors.As(err, &pe) && pe.Retryable() && rj.Attempt < rj.MaxAttempts {
			if pe.Category == provider.CategoryRateLimit {
				log.Warn("model: provider rate limited, snoozing", "retry_after", pe.RetryAfter)
				return river.JobSnooze(max(pe.RetryAfter, 5*time.Second))
			}
			log.Warn("model: provider unavailable, will retry", "attempt", rj.Attempt, "err", err)
			return err
		}
		row.Status, row.Error = job.RowFailed, err.Error()
	} else {
		row.Status, row.Content = job.RowDone, answer.Content
		row.Request, row.RawData = answer.Request, answer.RawData
		row.InputTokens, row.OutputTokens = answer.InputTokens, answer.OutputTokens
		if j.ResponseSchema != "" && row.ChunkTotal == 1 {
			row.SchemaValid, row.SchemaErrors = verdict(j.ResponseSchema, answer.Content)
		}
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

// ask sends the chunk with the first prompt, or returns the answer kept
// from an earlier attempt: an answer is stored the moment it arrives, so a
// retried or restarted row never pays the provider twice.
func (w *modelWorker) ask(ctx context.Context, j *job.Job, row job.LLMRow) (provider.ChatAnswer, error) {
	key := "model/" + strconv.Itoa(row.PromptIndex) + "/" + strconv.Itoa(row.ChunkIndex)
	return remembered(ctx, w.deps.Store, j.ID, row.FileIndex, key, func() (provider.ChatAnswer, error) {
		chat, err := w.chatFor(ctx, j)
		if err != nil {
			return provider.ChatAnswer{}, err
		}
		return chat.Complete(ctx, chatRequest(j, row))
	})
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
