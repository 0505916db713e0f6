// Package store declares the persistence contract of docjobs: jobs, rows,
// secrets, uploads, API keys, and the transactional fan-in that moves a job
// from one stage to the next together with its River jobs.
// Implementations live in store/sqlite and store/postgres; store/storetest is
// the suite both must pass.
package store

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/job"
)

// ErrNotFound is returned for a missing job, upload or key, and for one that
// belongs to another account.
var ErrNotFound = job.ErrNotFound

// ErrIdempotencyMismatch is returned by CreateJob when the account already has
// a job under the idempotency key and its request hash differs.
var ErrIdempotencyMismatch = job.ErrIdempotencyMismatch

// ErrTerminal is returned when cancelling a job that already ended.
var ErrTerminal = job.ErrTerminal

// ErrBadPageToken is returned by ListJobs and ListUploads for a corrupt or
// foreign page token, or one of the other listing.
var ErrBadPageToken = errors.New("invalid page token")

// ErrActiveJobsLimit is returned by CreateJob when the account already has
// CreateJobParams.MaxActiveJobs jobs that have not ended.
var ErrActiveJobsLimit = errors.New("account has the most active jobs allowed")

// ErrUploadQuota is returned by CreateUpload when the account's uploads
// would take more than the bytes allowed.
var ErrUploadQuota = errors.New("account uploads would exceed the bytes allowed")

// ErrUnavailable is matched by the errors of a store that could not reach
// its database: the connection was refused, reset or cut, the pool or
// database is closed, or (SQLite) another process held the file's lock past
// the busy timeout. Such an error wraps the cause; a request that met it may
// succeed later unchanged, so the API answers it UNAVAILABLE with a retry
// delay rather than INTERNAL. Errors the database itself answered (a
// constraint, a malformed query) are not ErrUnavailable, nor is the
// caller's own cancel or deadline.
var ErrUnavailable = errors.New("database unavailable")

// ErrNodeHeld is returned by Work when another live process holds
// WorkConfig.ClientID (and no derived id was allowed or free), and passed to
// WorkConfig.OnNodeLost when another process took the id from this one.
var ErrNodeHeld = errors.New("node id is held by another running process")

// ErrNewerSchema is returned by Open when the database holds migrations this
// binary does not know: a newer docjobs migrated it, and this one would
// write its tables by older rules beside it.
var ErrNewerSchema = errors.New("database was migrated by a newer docjobs")

// ErrOtherSchema is returned by Open when a migration the database records
// under a version this binary knows has another name: a build of another
// branch migrated it, and this one's migration of that number was never
// applied (its tables would be missing columns, or it would fail half way).
var ErrOtherSchema = errors.New("database was migrated by another build of docjobs")

// ErrOlderSchema is matched by a *SchemaBehindError: the database lacks
// migrations this binary has (an older docjobs made it, or nothing has yet).
var ErrOlderSchema = errors.New("database is behind this docjobs")

// SchemaBehindError says where a database's migrations stand when some of
// this binary's are missing: the highest version applied and the highest
// this binary knows, of docjobs' own migrations and of River's.
type SchemaBehindError struct {
	Applied, Known           int
	RiverApplied, RiverKnown int
}

func (e *SchemaBehindError) Error() string {
	return fmt.Sprintf("%s: it is at migration %d of %d (River's: %d of %d)", ErrOlderSchema, e.Applied, e.Known, e.RiverApplied, e.RiverKnown)
}

func (e *SchemaBehindError) Is(target error) bool { return target == ErrOlderSchema }

// Empty reports a database without any migration: new, or not docjobs'.
func (e *SchemaBehindError) Empty() bool { return e.Applied == 0 && e.RiverApplied == 0 }

// CreateJobParams is everything one create writes in one transaction.
type CreateJobParams struct {
	Job     *job.Job // ID, AccountID, Created set by the caller; Status NEW
	Secrets []job.SealedSecret
	// Enqueue is inserted into River in the same transaction (the first stage).
	Enqueue []river.InsertManyParams
	// MaxActiveJobs, when positive, refuses the create with
	// ErrActiveJobsLimit if the account already has that many jobs that
	// have not ended. It is checked in the create's transaction, under a
	// lock per account, so concurrent creates never pass it together; an
	// idempotent replay is not a new job and is never refused.
	MaxActiveJobs int
	// LegacyRequestHashes are the request's hashes as earlier releases
	// computed them: a replay of a job created then matches one of them.
	LegacyRequestHashes []string
	// ReplayOnly creates nothing: CreateJob returns the job the idempotency
	// key already names (replayed), ErrIdempotencyMismatch when that job
	// was made by other parameters, or ErrNotFound when the key names no
	// job. For a request that can no longer create its job (an upload it
	// names was deleted since) but may be the replay of one that did.
	ReplayOnly bool
}

// ListParams selects a page of an account's jobs, newest first.
type ListParams struct {
	AccountID string
	Status    job.Status // "" = any
	PageSize  int        // already clamped by the caller
	PageToken string     // opaque, from a previous ListPage
	// MaxBytes, above 0, bounds a page by size as well as by PageSize: the
	// page ends before the job that would take the sum of the jobs' sizes
	// past it, and carries NextPageToken as any page followed by more. A
	// page holds at least one job however large, so a client paging on
	// always gets further. The store reads the sizes of the stored text
	// first and reads only the jobs that fit, not PageSize jobs to drop most.
	MaxBytes int
	// Size is a job's share of MaxBytes (the API gives its encoded size in
	// the answer); nil counts the bytes of the job's stored text and a
	// fixed share for its other fields, which is what the store can know
	// before reading the job.
	Size func(*job.Job) int
}

// ListPage is one page of jobs.
type ListPage struct {
	Jobs          []*job.Job
	NextPageToken string // "" on the last page
}

// UploadListParams selects a page of an account's uploads, newest first.
type UploadListParams struct {
	AccountID string
	PageSize  int    // already clamped by the caller
	PageToken string // opaque, from a previous UploadPage
	// MaxBytes, above 0 with Size set, bounds a page by size as well as by
	// PageSize, as ListParams.MaxBytes does: the page ends before the upload
	// that would take the sum of the sizes past it, and holds at least one.
	// An upload's record is small (its name is at most 255 bytes), so the
	// store reads the records as they come, at most one past the page,
	// without reading sizes first as ListJobs does.
	MaxBytes int
	// Size is an upload's share of MaxBytes: the API gives its encoded
	// size in the answer.
	Size func(job.File) int
}

// UploadPage is one page of uploads.
type UploadPage struct {
	Files         []job.File
	NextPageToken string // "" on the last page
}

// ResultRow is one row of a job's result as ResultRows yields it: exactly
// one field is set.
type ResultRow struct {
	OCR *job.OCRRow
	LLM *job.LLMRow
	// Merged is the JSON array of the job's merged answers (job.Result.Merged).
	Merged []byte
}

// OCRDone is the terminal outcome of one file's recognition.
type OCRDone struct {
	Row job.OCRRow // JobID and FileIndex identify the row; Status is terminal
	// LLM rows created for this file in the same transaction.
	LLM []job.LLMRow
	// File is the stored copy to record (nil when the source was an upload of
	// the account, or when the download failed).
	File *job.File
	// Name is the file's own name (the upload's, or the download's), kept
	// with the row for the file's model rows: FileModelRows returns it as
	// their FileName.
	Name string
	// EnqueueWhenLast is inserted only when no OCR and no model row of the job
	// is still pending after this one (the fan-in: typically finalize).
	EnqueueWhenLast []river.InsertManyParams
	// EndWhenLast ends the job in the fan-in's own transaction instead, as
	// FinishJob would with the status job.FinalStatus gives its OCR rows:
	// for a job with nothing left to compute once its rows are terminal.
	EndWhenLast bool
}

// LLMDone is the terminal outcome of one model row.
type LLMDone struct {
	Row job.LLMRow // JobID, FileIndex, PromptIndex and ChunkIndex identify the row
	// EnqueueWhenLast is inserted only when no row of the job is still
	// pending after this one (the fan-in: finalize).
	EnqueueWhenLast []river.InsertManyParams
	// EndWhenLast: as OCRDone.EndWhenLast.
	EndWhenLast bool
}

// Finish is the terminal outcome of a job, written by its finalize step
// (FinishJob) or, for a job that merges nothing, by its last row.
type Finish struct {
	JobID  string
	Status job.Status // COMPLETE or FAILED
	Error  string
	// Merged is the JSON array of the job's merged answers (result.merged),
	// stored with the status; nil when the job does not merge.
	Merged []byte
	// Enqueue is inserted in the same transaction (for example the webhook).
	Enqueue []river.InsertManyParams
}

// APIKey is a stored API key: the SHA-256 hash of the key, never the key.
type APIKey struct {
	Hash      []byte
	AccountID string
	Created   time.Time
}

// MaxDerivedClientIDs bounds the ids WorkConfig.DeriveClientID tries.
const MaxDerivedClientIDs = 32

// FileRemoval is a deleted job whose stored files may not all be removed
// yet: the blob keys its file records named, and whatever else is under the
// job's prefix (a copy stored after the delete read the records).
type FileRemoval struct {
	JobID     string
	AccountID string
	Keys      []string
	Deleted   time.Time
}

// WorkConfig configures the River client that works jobs in this process.
type WorkConfig struct {
	Workers      *river.Workers
	Queues       map[string]river.QueueConfig
	PeriodicJobs []*river.PeriodicJob
	// ClientID is stable across restarts of one node, so that a restarted
	// node reclaims the River jobs its previous incarnation held. Work holds
	// it exclusively while the client runs (a session advisory lock on
	// PostgreSQL, a file lock on SQLite) and reclaims only once it holds
	// it: a live process's running jobs are never taken. "" runs without
	// a node id (River picks one) and reclaims nothing.
	ClientID string
	// DeriveClientID lets Work, when a live process holds ClientID, work as
	// the first free of ClientID-2, ClientID-3, … (up to MaxDerivedClientIDs)
	// instead of failing with ErrNodeHeld. For a ClientID nobody chose (the
	// host name), so that two processes on one host just work.
	DeriveClientID bool
	// ClaimNode, when set, is called once Work holds an id in the
	// database, before any of its jobs is reclaimed or worked: for the id
	// this process works under (a derived id is tried for each candidate),
	// and for an id of the host's that the sibling sweep takes to reclaim
	// its jobs. It claims what the id owns outside the database (serve:
	// the id's conversion folder, DOCJOBS_DATA_DIR/tmp/<id>, flock'ed and
	// emptied) and returns what gives that up. An error wrapping
	// ErrNodeHeld says another process (of another database) holds it:
	// the id is then held for this process too (a derived one moves on,
	// a configured one fails Work with that error), and a sibling's jobs
	// are reclaimed with its folder left alone. Another error fails Work.
	ClaimNode func(id string) (release func(), err error)
	// OnClientID, when set, is told the node id the client works under
	// once it has started: ClientID, or the derived one.
	OnClientID func(id string)
	// OnNodeLost, when set, is called once, from another goroutine, if the
	// process loses its hold on the node id while working: its database
	// connection dropped, and another process holds the id or took it
	// meanwhile, and may have handed this process's running jobs back to
	// the queue. It is called before anything is stopped and should end
	// the process without returning: stopping the River client hands the
	// jobs it cancels back as available (their attempt undone) and
	// completes those that return, by job id, over whichever process runs
	// them now. If it returns, the client is stopped so, its jobs
	// cancelled. It must not call the stop Work returned, which waits for
	// it.
	OnNodeLost func(error)
	// SiblingSweepEvery is how often a process with DeriveClientID looks
	// for its host's other ids that no process holds and reclaims their
	// running jobs (default a minute).
	SiblingSweepEvery time.Duration
	// HardStopWait bounds how long stop waits for jobs it cancelled to
	// return (default 10s); the node id is released after it.
	HardStopWait time.Duration
	// RescueStuckJobsAfter sits just above the longest stage timeout.
	RescueStuckJobsAfter time.Duration
	FetchPollInterval    time.Duration
	// FetchCooldown is the shortest time between two fetches of one queue;
	// every stage hand-off waits up to it (River's default is 100ms).
	FetchCooldown time.Duration
}

// Store is the persistence contract. Methods taking an accountID return
// ErrNotFound for another account's data; workers pass "" to mean any account.
type Store interface {
	// Jobs.
	// CreateJob inserts the job, its PENDING OCR rows (one per source URL), its
	// sealed secrets and p.Enqueue atomically. Until a file is stored, its
	// job.Files entry and its rows' File are its source URL. When the account already has a
	// job under p.Job.IdempotencyKey it returns that job and replayed=true if
	// the request hashes match, else ErrIdempotencyMismatch; concurrent creates
	// with one key produce one job (a unique index decides, not a read).
	CreateJob(ctx context.Context, p CreateJobParams) (j *job.Job, replayed bool, err error)
	GetJob(ctx context.Context, accountID, id string) (*job.Job, error)
	ListJobs(ctx context.Context, p ListParams) (ListPage, error)
	// GetResult returns the job with all its rows, read whole, as one
	// snapshot.
	GetResult(ctx context.Context, accountID, id string) (*job.Result, error)
	// ResultRows is GetResult one row at a time: it reads the job (so an
	// unknown job or another account's is ErrNotFound before any row) and
	// returns the job's rows in GetResult's order, OCR rows, then model
	// rows, then the merged answers when the job has some. The job and its
	// rows are one snapshot, the database as it was when ResultRows was
	// called, however long the caller takes: no row committed later, no
	// row's later state, and never a job that says RUNNING beside a row
	// that ended after it was read (GetResult is one snapshot too). Yet
	// neither the whole result nor a transaction is held while the caller
	// handles rows: rows are read as the sequence asks for them, a few at a
	// time (about a megabyte of text, or one larger row), each batch by a
	// query closed before its rows are yielded. A job deleted while its
	// rows are read ends the sequence with an error matching ErrNotFound,
	// never with a shorter result. The sequence reads with ctx and ends
	// after yielding an error.
	ResultRows(ctx context.Context, accountID, id string) (*job.Job, iter.Seq2[ResultRow, error], error)
	// ResultToFinish is GetResult of any account's job without what ending
	// a job never reads: OCR rows come without content, request and raw
	// data, model rows without request and raw data, and there is no
	// merged answer. DONE model rows keep their content, which merge reads,
	// within maxContent bytes (<= 0: no limit): in row order, an answer is
	// read while the answers read and it stay within the budget; one that
	// would pass it is not read at all and has ContentUnread set, and a
	// later, smaller one still is (merge.Limits.MaxTotalBytes's rule, so
	// what is not read is exactly what merge would leave out). Other rows'
	// content is not read.
	ResultToFinish(ctx context.Context, id string, maxContent int64) (*job.Result, error)
	// JobProgress returns the job's status and its counts of terminal OCR
	// and model rows in one cheap read, for live progress polled by the API
	// process; ErrNotFound for an unknown job or another account's.
	JobProgress(ctx context.Context, accountID, id string) (job.Progress, error)
	// WatchEnd returns a channel closed once the job is made terminal or
	// deleted, and a stop to call when no longer waiting. Ends committed by
	// this process are signalled, and on PostgreSQL those of every process
	// (LISTEN/NOTIFY); on SQLite another process's end is not: read the job
	// to see it.
	WatchEnd(jobID string) (ended <-chan struct{}, stop func())
	// CancelJob marks a non-terminal job CANCELLED and its pending rows FAILED
	// with error "job cancelled"; ErrTerminal when it already ended. The job's
	// provider keys are erased with it (the webhook secret stays).
	CancelJob(ctx context.Context, accountID, id string) (*job.Job, error)
	// DeleteJob removes the job, its rows, secrets and file records (JobID =
	// id), and returns the blob keys of those files for the caller to delete.
	// In the same transaction it records a FileRemoval for the job, which
	// stays until FileRemovalDone: a caller that dies before the blobs are
	// gone leaves it for the sweep (PendingFileRemovals). River's finished
	// rows of the job go in the same transaction; those River has not
	// finished are recorded for ClearRiverLeftovers.
	DeleteJob(ctx context.Context, accountID, id string) (blobKeys []string, err error)
	// ClearRiverLeftovers deletes the River rows River finished since of up
	// to limit deleted jobs whose rows were not all finished at their
	// delete, and forgets the jobs none is left of (how many it returns).
	ClearRiverLeftovers(ctx context.Context, limit int) (int, error)
	// PendingFileRemovals lists up to limit FileRemovals of jobs deleted
	// before cutoff, oldest first.
	PendingFileRemovals(ctx context.Context, cutoff time.Time, limit int) ([]FileRemoval, error)
	// FileRemovalDone clears the FileRemoval of a job whose stored files are
	// all removed; clearing one that is not there is no error.
	FileRemovalDone(ctx context.Context, jobID string) error
	JobSecrets(ctx context.Context, jobID string) ([]job.SealedSecret, error)

	// Workers' fan-in. Each method runs in one transaction, so a crash
	// either keeps all of it or none. A file's River job carries the file
	// through recognition and its model rows and completes when they are
	// terminal (DESIGN §1, docs/decisions.md); FinishJob also completes
	// riverJob (River's JobCompleteTx).
	// FinishOCR writes a terminal OCR row only if it is still PENDING and the
	// job is not terminal (else it records nothing, d.File included, and
	// returns applied=false), records d.File and sets job.Files[FileIndex] to
	// d.Row.File, moves the job NEW→RUNNING and inserts d.LLM; when no row of
	// the job is left pending it ends the job (d.EndWhenLast) or inserts
	// d.EnqueueWhenLast. A deleted job is applied=false.
	FinishOCR(ctx context.Context, d OCRDone) (applied bool, err error)
	// FileModelRows reports whether a file's OCR row is terminal and returns
	// the file's model rows still PENDING (first prompt, chunk order, Input
	// and the OCRDone.Name recorded with the file as FileName included):
	// what a retried file job has left to answer. ErrNotFound when the job
	// or the file is gone.
	FileModelRows(ctx context.Context, jobID string, fileIndex int) (recognized bool, pending []job.LLMRow, err error)
	// FinishLLM writes a terminal model row only if it is still PENDING and
	// the job is live and, when it was the job's last pending row, ends the
	// job (d.EndWhenLast) or inserts d.EnqueueWhenLast.
	FinishLLM(ctx context.Context, d LLMDone) (applied bool, err error)
	// FinishJob sets the final status of a non-terminal job whose rows are all
	// terminal (any row still PENDING is failed with f.Error) and erases the
	// job's provider keys (the webhook secret stays for the webhook);
	// applied=false when it was already terminal or deleted.
	FinishJob(ctx context.Context, riverJob *rivertype.JobRow, f Finish) (applied bool, err error)
	// NoteRunLimit records on riverJob, a running River job, how long its
	// current attempt may run before River's rescuer may take it for stuck
	// (the attempt's own timeout and the rescue margin), for the process
	// that leads the queue, whose own configuration may allow less. It
	// writes nothing once the attempt is over (the job ran on, or was
	// handed back).
	NoteRunLimit(ctx context.Context, riverJob *rivertype.JobRow, limit time.Duration) error
	// HandOff inserts enqueue and completes riverJob in one transaction: a
	// River job that passes its work on to others (a retired kind's job
	// handing its file to today's). A unique job among enqueue that exists
	// already is skipped, as River's inserts skip it.
	HandOff(ctx context.Context, riverJob *rivertype.JobRow, enqueue []river.InsertManyParams) error
	// OverdueJobs lists up to limit non-terminal jobs created before cutoff.
	OverdueJobs(ctx context.Context, cutoff time.Time, limit int) ([]string, error)
	// ExpireJob ends a job past its deadline: pending rows FAIL with
	// rowError, the job ends COMPLETE when a file was recognized, else
	// FAILED with jobError; applied=false when it had already ended.
	ExpireJob(ctx context.Context, jobID, rowError, jobError string) (applied bool, err error)

	// Webhooks and retention. Every transaction that makes a job with a
	// webhook URL terminal also inserts its WebhookArgs delivery (and one
	// without a URL erases its webhook secret).
	// RecordWebhookAttempt records an attempt and the delivery's new state;
	// a final state erases the webhook secret in the same transaction.
	// Recording the last attempt again (same At) changes nothing.
	RecordWebhookAttempt(ctx context.Context, a WebhookAttempt) (job.WebhookDelivery, error)
	// ExpiredJobs lists up to limit terminal jobs last changed before cutoff
	// whose webhook is not still being delivered.
	ExpiredJobs(ctx context.Context, cutoff time.Time, limit int) ([]string, error)
	// MarkRunning moves a NEW job to RUNNING (a stage started); other
	// statuses are left alone; ErrNotFound when the job was deleted.
	MarkRunning(ctx context.Context, jobID string) error

	// Provider answers per page of a job's file, kept as they arrive so a
	// retried recognition does not pay for them again. GetOCRPage returns
	// ErrNotFound for a page not kept; PutOCRPage keeps the first answer.
	PutOCRPage(ctx context.Context, jobID string, fileIndex int, key string, value []byte) error
	GetOCRPage(ctx context.Context, jobID string, fileIndex int, key string) ([]byte, error)

	// Files (uploads and job copies).
	CreateFile(ctx context.Context, f job.File) error
	// CreateUpload records an upload (f.JobID "") unless the account's
	// uploads with it would take more than maxBytes (0 = no limit), in which
	// case it records nothing and returns ErrUploadQuota. The sum is taken
	// in the insert's transaction under the same lock per account as
	// CreateJob's limit, so concurrent uploads never pass it together.
	CreateUpload(ctx context.Context, f job.File, maxBytes int64) error
	// UploadBytes is the total size of the account's uploads (job copies
	// not counted).
	UploadBytes(ctx context.Context, accountID string) (int64, error)
	// ServiceKey returns the sealed key stored under name, storing sealed
	// first when there is none: whichever process stores first, every
	// process gets the same key.
	ServiceKey(ctx context.Context, name string, sealed []byte) ([]byte, error)
	// StoredServiceKey returns the key stored under name, without storing
	// one; ErrNotFound when there is none.
	StoredServiceKey(ctx context.Context, name string) ([]byte, error)
	GetFile(ctx context.Context, accountID, id string) (job.File, error)
	// JobFileKeyRecorded reports whether a file record of job jobID names
	// the blob key; the files of a job that read one stored file share
	// its copy (fetch.SharedCopyKey).
	JobFileKeyRecorded(ctx context.Context, jobID, key string) (bool, error)
	// DeleteUpload removes the record of an upload (JobID "") of accountID;
	// ErrNotFound for a missing file, another account's, or a job's copy,
	// which goes only with its job (DeleteJob). The caller deletes the blob.
	DeleteUpload(ctx context.Context, accountID, id string) error
	// ListUploads returns a page of the account's uploads (JobID ""),
	// newest first, by keyset on (created, id) as ListJobs; a job's copies
	// are never listed. A token minted for another account, or by ListJobs,
	// is ErrBadPageToken.
	ListUploads(ctx context.Context, p UploadListParams) (UploadPage, error)
	// ExpiredUploads lists up to limit uploads created before cutoff, oldest
	// first, for retention; job copies are never listed.
	ExpiredUploads(ctx context.Context, cutoff time.Time, limit int) ([]job.File, error)
	// RecordedFileIDs reports which of ids name a file record, an upload or
	// a job's copy, of any account: the removal sweep's test of whether
	// stored bytes are an upload a crash left unrecorded.
	RecordedFileIDs(ctx context.Context, ids []string) (map[string]bool, error)
	// KnownJobIDs reports which of ids name a job, a pending removal of a
	// deleted job's files, or a file record of a job: the removal sweep's
	// test of whether what is stored under jobs/<id>/ is anyone's.
	KnownJobIDs(ctx context.Context, ids []string) (map[string]bool, error)

	// Accounts and API keys; only SHA-256 hashes of keys are stored.
	// PutAPIKey stores a key hash for an account, creating the account;
	// putting a hash again moves it to accountID.
	PutAPIKey(ctx context.Context, accountID string, keyHash []byte) error
	AccountByKeyHash(ctx context.Context, keyHash []byte) (accountID string, err error)
	HasAPIKeys(ctx context.Context) (bool, error)
	// ListAPIKeys lists the stored keys of accountID ("" = every account),
	// by account, then creation, then hash.
	ListAPIKeys(ctx context.Context, accountID string) ([]APIKey, error)
	// DeleteAPIKey removes the stored key with exactly this hash and returns
	// the account it opened; ErrNotFound when no key has it. The account,
	// its settings and its jobs stay. AccountByKeyHash reads the table on
	// every call, so the key opens nothing from the delete's commit on.
	DeleteAPIKey(ctx context.Context, keyHash []byte) (accountID string, err error)
	// AccountExists reports whether the account was ever made here: it has
	// a row (a key was stored for it, or its mode set), a job or an upload.
	// An account known only from DOCJOBS_API_KEYS has none of these until
	// it makes a job or an upload.
	AccountExists(ctx context.Context, accountID string) (bool, error)
	// AccountExtractionMode is the account's default, EXTRACTION_MODE_HYBRID unless set.
	AccountExtractionMode(ctx context.Context, accountID string) (string, error)
	SetAccountExtractionMode(ctx context.Context, accountID, mode string) error

	// Queue.
	// Work starts a River client that works cfg.Workers in this process after
	// taking the node id cfg.ClientID for the process (ErrNodeHeld when a
	// live process holds it) and returning to available the River jobs still
	// marked running by an earlier incarnation with that id. The client runs
	// until stop (ctx only scopes start-up): stop waits for running jobs
	// until its ctx ends, then cancels them and returns the ctx's error; it
	// releases the node id last.
	Work(ctx context.Context, cfg WorkConfig) (stop func(context.Context) error, err error)
	// JobCountsByStatus feeds the docjobs_jobs gauge.
	JobCountsByStatus(ctx context.Context) (map[job.Status]int, error)

	Ping(ctx context.Context) error
	Close() error
}
