// Package worker holds the River job kinds of the pipeline and their workers:
// file (one per source file: fetch, recognize, then answer its chunks) and
// finalize (one per job that merges; any other job ends with its last row).
// Every worker is idempotent, and each stage's fan-in happens in the store
// transaction that marks its row terminal, so a crash neither loses nor
// duplicates a stage.
package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"gocloud.dev/blob"

	"github.com/docjobs/docjobs/internal/convert"
	"github.com/docjobs/docjobs/internal/fetch"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// Queue names; files and finalize steps wait apart, so a job's end is not
// queued behind other jobs' files.
const (
	QueueFile     = "file"
	QueueFinalize = "finalize"
)

// finalizeTimeout bounds the finalize stage; River's 1-minute default does
// not fit document work, so a file's comes from Config.FileTimeout.
const finalizeTimeout = time.Minute

// modelStageTimeout bounds the model rows of one file within its River job.
// A file whose rows take longer is retried with its answered rows kept.
const modelStageTimeout = 10 * time.Minute

// Store is what the workers need from persistence.
type Store interface {
	GetJob(ctx context.Context, accountID, id string) (*job.Job, error)
	// WatchEnd signals a job's end (store.Store.WatchEnd).
	WatchEnd(jobID string) (ended <-chan struct{}, stop func())
	ResultToFinish(ctx context.Context, id string, maxContent int64) (*job.Result, error)
	MarkRunning(ctx context.Context, jobID string) error
	FinishOCR(ctx context.Context, d store.OCRDone) (bool, error)
	FinishJob(ctx context.Context, riverJob *rivertype.JobRow, f store.Finish) (bool, error)
	HandOff(ctx context.Context, riverJob *rivertype.JobRow, enqueue []river.InsertManyParams) error
	NoteRunLimit(ctx context.Context, riverJob *rivertype.JobRow, limit time.Duration) error
	JobSecrets(ctx context.Context, jobID string) ([]job.SealedSecret, error)
	FileModelRows(ctx context.Context, jobID string, fileIndex int) (bool, []job.LLMRow, error)
	FinishLLM(ctx context.Context, d store.LLMDone) (bool, error)
	OverdueJobs(ctx context.Context, cutoff time.Time, limit int) ([]string, error)
	ExpireJob(ctx context.Context, jobID, rowError, jobError string) (bool, error)
	RecordWebhookAttempt(ctx context.Context, a store.WebhookAttempt) (job.WebhookDelivery, error)
	ExpiredJobs(ctx context.Context, cutoff time.Time, limit int) ([]string, error)
	DeleteJob(ctx context.Context, accountID, id string) ([]string, error)
	PendingFileRemovals(ctx context.Context, cutoff time.Time, limit int) ([]store.FileRemoval, error)
	ClearRiverLeftovers(ctx context.Context, limit int) (int, error)
	FileRemovalDone(ctx context.Context, jobID string) error
	GetFile(ctx context.Context, accountID, id string) (job.File, error)
	JobFileKeyRecorded(ctx context.Context, jobID, key string) (bool, error)
	ExpiredUploads(ctx context.Context, cutoff time.Time, limit int) ([]job.File, error)
	RecordedFileIDs(ctx context.Context, ids []string) (map[string]bool, error)
	KnownJobIDs(ctx context.Context, ids []string) (map[string]bool, error)
	ServiceKey(ctx context.Context, name string, sealed []byte) ([]byte, error)
	StoredServiceKey(ctx context.Context, name string) ([]byte, error)
	DeleteUpload(ctx context.Context, accountID, id string) error
	PageCache
}

// Fetcher fetches a job's source file, stores it, and reads it back.
type Fetcher interface {
	Fetch(ctx context.Context, accountID, jobID string, index int, sourceURL string) (fetch.Result, error)
	Save(ctx context.Context, r fetch.Result) error
	// Discard deletes the copy Fetch made for the job, when it was not
	// recorded.
	Discard(ctx context.Context, r fetch.Result) error
	Read(ctx context.Context, key string, max int64) ([]byte, error)
}

// Chunker splits recognized text into chunks within a token budget,
// counting tokens as the model does. A text that makes more than
// maxChunks chunks gives a *TooManyChunksError; maxChunks 0 is no limit.
type Chunker interface {
	Split(text, format string, budget, maxChunks int, model string) ([]Chunk, error)
}

// TooManyChunksError is a text that makes more chunks than a file may
// have: at least AtLeast chunks of at most Budget tokens, over Limit.
type TooManyChunksError struct {
	AtLeast, Limit, Budget int
}

func (e *TooManyChunksError) Error() string {
	return fmt.Sprintf("too many chunks: the recognized text makes at least %d chunks of at most %d tokens (neural.chunkBudgetTokens), "+
		"more than the limit of %d per file (DOCJOBS_MAX_CHUNKS_PER_FILE); raise neural.chunkBudgetTokens or split the file", e.AtLeast, e.Budget, e.Limit)
}

// Chunk is one piece of a file for the model: Text is sent; Overlap is the
// source text it repeats from the piece before, which merge uses to tell
// the repeat's records from records that really occur twice.
type Chunk struct {
	Text    string
	Overlap string
}

// Observer records stage metrics.
type Observer interface {
	ObserveStage(stage, outcome string, d time.Duration)
}

// Config tunes the workers.
type Config struct {
	// MaxFileBytes bounds what recognition reads of one stored file.
	MaxFileBytes int64
	// RecognizeWorkers is how many files one process recognizes at once
	// (default 16): files mostly wait on fetches and OCR providers, and the
	// local engines bound their own processes by the CPU count.
	RecognizeWorkers int
	// ModelWorkers is how many model rows one process asks at once
	// (default 32). Model calls wait on the provider, whose per-slot limit
	// is the real bound. A file asks its rows with at most this many
	// goroutines, since no more of them could be asking.
	ModelWorkers int
	// MaxChunksPerFile is how many model rows one file may make (default
	// 1000); a file whose text makes more gets one FAILED row saying so,
	// and no provider is called for it.
	MaxChunksPerFile int
	// FetchWorkers is how many sources one process downloads at once
	// (default 16). Downloads have their own limit, apart from
	// RecognizeWorkers, so a source server that stalls holds no place of
	// the recognition that other accounts' files wait for.
	FetchWorkers int
	// FetchTimeout is the fetcher's limit on one download attempt (default
	// fetch.DefaultTimeout); here it only sizes a file's River timeout.
	FetchTimeout time.Duration
	// FetchTotalTimeout bounds a file's downloads with their retries and the
	// waits between them, from the start of the first (default 10m): a
	// source that keeps failing fails its row once it has run out, or once
	// the next retry could only begin after it.
	FetchTotalTimeout time.Duration
	// FileTimeout bounds the recognition of one file once it is downloaded
	// (default 10m).
	FileTimeout time.Duration
	// JobCheck is how often a file's River job reads that its job is still
	// live (default 2s). An end committed in this process, or on PostgreSQL
	// in any, stops the file's provider calls at once; the read is for the
	// ends no signal brings.
	JobCheck time.Duration
	// JobDeadline ends a job that is not terminal this long after it was
	// created: its pending rows fail with category timeout (default 2h).
	JobDeadline time.Duration
	// WebhookRetrySchedule is the wait before each webhook retry (default
	// 5s,5m,30m,2h,5h,10h,10h; at most store.MaxWebhookRetries entries).
	WebhookRetrySchedule []time.Duration
	// PublicURL is the service's base URL, for result_url in webhooks.
	PublicURL string
	// Retention deletes finished jobs this long after they ended, and
	// uploads this long after they were uploaded; 0 keeps them.
	Retention time.Duration
	// StorageDir is the directory of a file:// bucket ("" for other
	// storage): a deleted job's folder is removed from it.
	StorageDir string
	// RemovalGrace is how long the removal sweep leaves a deleted job's
	// files to the request or retention run that deleted it (default 1m).
	RemovalGrace time.Duration
	// RateLimitPatience bounds how long a file's stage waits out a
	// provider's rate limits without any of its calls answered (default
	// DefaultRateLimitPatience); then its calls still rate limited fail
	// their rows (ratelimit.go).
	RateLimitPatience time.Duration
	// runLimitNoteAfter is how long a file's attempt runs before it notes
	// its limit for River's rescuer (half RescueMargin); tests shorten it.
	runLimitNoteAfter time.Duration
	// snoozeFloor is the shortest snooze of a rate-limited file (5s); tests
	// shorten it.
	snoozeFloor time.Duration
	// pendingRecheck is how old a rerun's knowledge of which rows are
	// still PENDING may be when a row's call is about to start before the
	// rows are read again (default 2s, model.go pendingRows); tests set it.
	pendingRecheck time.Duration
}

// LongestStageTimeout is what River's rescuer must wait beyond before it
// declares a running job stuck: a file's River job.
func (c Config) LongestStageTimeout() time.Duration {
	return c.withDefaults().fileTimeout()
}

// RescueMargin is how long past a River job's timeout River's rescuer
// waits before it takes the job for stuck: the attempt's context has
// ended by then, and what it still does (a last attempt failing its rows
// takes up to a minute) is over. Serve's RescueStuckJobsAfter is
// LongestStageTimeout plus this.
const RescueMargin = time.Minute

// fileTimeout is one attempt's download, the converter's own per-file
// limit, a minute for the store, then the model stage's limit.
func (c Config) fileTimeout() time.Duration {
	return c.FetchTimeout + c.FileTimeout + time.Minute + modelStageTimeout
}

func (c Config) withDefaults() Config {
	if c.MaxFileBytes <= 0 {
		c.MaxFileBytes = 100 << 20
	}
	if c.RecognizeWorkers <= 0 {
		c.RecognizeWorkers = 16
	}
	if c.FetchWorkers <= 0 {
		c.FetchWorkers = 16
	}
	if c.FetchTimeout <= 0 {
		c.FetchTimeout = fetch.DefaultTimeout
	}
	if c.FetchTotalTimeout <= 0 {
		c.FetchTotalTimeout = 10 * time.Minute
	}
	if c.ModelWorkers <= 0 {
		c.ModelWorkers = 32
	}
	if c.MaxChunksPerFile <= 0 {
		c.MaxChunksPerFile = DefaultMaxChunksPerFile
	}
	if len(c.WebhookRetrySchedule) == 0 {
		c.WebhookRetrySchedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute,
			2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}
	}
	if len(c.WebhookRetrySchedule) > store.MaxWebhookRetries {
		c.WebhookRetrySchedule = c.WebhookRetrySchedule[:store.MaxWebhookRetries]
	}
	if c.FileTimeout <= 0 {
		c.FileTimeout = 10 * time.Minute
	}
	if c.JobDeadline <= 0 {
		c.JobDeadline = 2 * time.Hour
	}
	if c.JobCheck <= 0 {
		c.JobCheck = 2 * time.Second
	}
	if c.RemovalGrace <= 0 {
		c.RemovalGrace = time.Minute
	}
	if c.RateLimitPatience <= 0 {
		c.RateLimitPatience = DefaultRateLimitPatience
	}
	if c.runLimitNoteAfter <= 0 {
		c.runLimitNoteAfter = RescueMargin / 2
	}
	if c.snoozeFloor <= 0 {
		c.snoozeFloor = 5 * time.Second
	}
	if c.pendingRecheck <= 0 {
		c.pendingRecheck = 2 * time.Second
	}
	return c
}

// DefaultMaxChunksPerFile is Config.MaxChunksPerFile's default: about
// what one file's attempt answers at the default provider concurrency
// within its model stage (docs/decisions.md).
const DefaultMaxChunksPerFile = 1000

// Deps are the workers' collaborators.
type Deps struct {
	Store   Store
	Fetcher Fetcher
	Convert func(context.Context, convert.Input) (convert.Output, error)
	// Providers and Secrets open the job's OCR provider; without them files
	// that need one fail their row.
	Providers Providers
	Secrets   SecretOpener
	// Chats opens the model-stage provider; Chunker splits recognized text
	// into chunks within the job's budget.
	Chats   Chats
	Chunker Chunker
	// Webhooks sends job webhooks; without it deliveries fail.
	Webhooks WebhookSender
	// Bucket holds stored files, removed with the jobs and uploads that
	// retention deletes.
	Bucket   *blob.Bucket
	Observer Observer // optional
	Logger   *slog.Logger
}

// Register adds every worker of the pipeline to workers and returns the
// queues they run on.
func Register(workers *river.Workers, cfg Config, deps Deps) (map[string]river.QueueConfig, error) {
	if deps.Store == nil || deps.Fetcher == nil || deps.Convert == nil {
		return nil, fmt.Errorf("worker: Store, Fetcher and Convert are required")
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	cfg = cfg.withDefaults()
	if err := river.AddWorkerSafely(workers, newFileWorker(cfg, deps)); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &finalizeWorker{deps: deps}); err != nil {
		return nil, err
	}
	// Kinds of earlier releases, for their jobs queued before an upgrade.
	if err := river.AddWorkerSafely(workers, &retiredRecognizeWorker{deps: deps}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &retiredModelWorker{deps: deps}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &deadlineWorker{cfg: cfg, deps: deps}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &retentionWorker{cfg: cfg, deps: deps}); err != nil {
		return nil, err
	}
	if err := river.AddWorkerSafely(workers, &removalWorker{cfg: cfg, deps: deps}); err != nil {
		return nil, err
	}
	if deps.Webhooks == nil {
		return nil, fmt.Errorf("worker: Webhooks is required")
	}
	if err := river.AddWorkerSafely(workers, newWebhookWorker(cfg, deps, webhookPlaces)); err != nil {
		return nil, err
	}
	return map[string]river.QueueConfig{
		// A file holds its River slot through download, recognition and
		// its model rows; each has its own limit inside (fileWorker), so
		// files waiting on a source server or on model answers do not keep
		// others from being recognized.
		QueueFile:          {MaxWorkers: cfg.FetchWorkers + cfg.RecognizeWorkers + cfg.ModelWorkers},
		QueueFinalize:      {MaxWorkers: 4},
		store.QueueWebhook: webhookQueue(webhookPlaces),
		// The retired kinds' queues: each of their jobs is one short
		// transaction handing its file on.
		QueueRetiredRecognize: {MaxWorkers: 1},
		QueueRetiredModel:     {MaxWorkers: 1},
	}, nil
}

// FirstStage is the River work a new job starts with: one file job per file.
func FirstStage(jobID string, files int) []river.InsertManyParams {
	params := make([]river.InsertManyParams, files)
	for i := range files {
		params[i] = river.InsertManyParams{Args: FileArgs{JobID: jobID, FileIndex: i}}
	}
	return params
}

// lastStep is what the finish of j's last pending row does: a job that
// merges enqueues its finalize step, which computes the merged answers;
// any other job ends in that finish's own transaction, its status given by
// its rows alone (docs/decisions.md).
func lastStep(j *job.Job) (end bool, enqueue []river.InsertManyParams) {
	if j.Merge.Enabled {
		return false, []river.InsertManyParams{{Args: FinalizeArgs{JobID: j.ID}}}
	}
	return true, nil
}

// retryBackoff is short: attempts fail on transient network faults, not on
// bad input (bad input ends the row instead of retrying).
func retryBackoff(attempt int) time.Time {
	return time.Now().Add(time.Duration(attempt*attempt) * 2 * time.Second)
}

func observe(o Observer, stage, outcome string, start time.Time) {
	if o != nil {
		o.ObserveStage(stage, outcome, time.Since(start))
	}
}
