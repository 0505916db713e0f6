// Package job is the domain of docjobs: jobs, their recognition and model rows,
// statuses and the rules that move them. It imports only the standard library.
package job

import (
	"errors"
	"time"
)

// Status is a job status; the values are the wire enum names.
type Status string

const (
	StatusNew       Status = "JOB_STATUS_NEW"
	StatusRunning   Status = "JOB_STATUS_RUNNING"
	StatusComplete  Status = "JOB_STATUS_COMPLETE"
	StatusFailed    Status = "JOB_STATUS_FAILED"
	StatusCancelled Status = "JOB_STATUS_CANCELLED"
)

// Terminal reports whether no further transition can happen.
func (s Status) Terminal() bool {
	return s == StatusComplete || s == StatusFailed || s == StatusCancelled
}

// RowStatus is the status of an OCR or model row. The wire names carry a
// JOB_OCR_STATUS_ or JOB_LLM_STATUS_ prefix; the store keeps the bare word.
type RowStatus string

const (
	RowPending RowStatus = "PENDING"
	RowSkipped RowStatus = "SKIPPED"
	RowDone    RowStatus = "DONE"
	RowFailed  RowStatus = "FAILED"
)

// Terminal reports whether the row has finished.
func (s RowStatus) Terminal() bool { return s != RowPending }

// Skip reasons of model rows (DESIGN §4).
const (
	SkipNoPrompt        = "no_prompt"
	SkipOCRFailed       = "ocr_failed"
	SkipNoOCRContent    = "no_ocr_content"
	SkipEmptyOCRContent = "empty_ocr_content"
)

// Output formats of recognized text (spec: outputFormat by file type).
const (
	FormatMarkdown = "markdown"
	FormatHTML     = "html"
	FormatXML      = "xml"
	FormatPlain    = "plain"
)

// Extraction modes; the values are the wire enum names.
const (
	ExtractionHybrid    = "EXTRACTION_MODE_HYBRID"
	ExtractionOCRAlways = "EXTRACTION_MODE_OCR_ALWAYS"
)

// Names of sealed secrets; they are also the AEAD associated-data field names.
const (
	SecretNeuralAPIKey   = "neural.apiKey"
	SecretOCRProviderKey = "ocr.providerKey"
	SecretWebhookSecret  = "webhookSecret"
)

// DefaultChunkBudgetTokens is the chunk budget when neural.chunkBudgetTokens is 0.
const DefaultChunkBudgetTokens = 4000

// Sentinel errors callers branch on; the API layer maps them to status codes.
var (
	ErrNotFound            = errors.New("not found")
	ErrIdempotencyMismatch = errors.New("idempotency key reused with different request parameters")
	ErrTerminal            = errors.New("job is already terminal")
)

// Neural is the model configuration without its key.
type Neural struct {
	Type              string // NEURAL_CLIENT_TYPE_PROVIDER_N
	Model             string
	ChunkBudgetTokens int32 // effective value
}

// OCR is the recognition configuration without its key.
type OCR struct {
	Provider string // NEURAL_CLIENT_TYPE_PROVIDER_N
	Model    string
}

// Merge holds the merge options as given; they are ignored while Enabled is false.
type Merge struct {
	Enabled        bool
	Scope          string // MERGE_SCOPE_*
	ConflictPolicy string // MERGE_CONFLICT_POLICY_*
	DedupeBy       []string
	Format         string // MERGE_FORMAT_*
}

// Webhook delivery states.
const (
	WebhookPending   = "pending"   // not sent yet, or waiting to retry
	WebhookDelivered = "delivered" // the receiver answered 2xx
	WebhookFailed    = "failed"    // given up: retries exhausted, refused, or 410 Gone
)

// WebhookDelivery summarizes a job's webhook; State is "" for a job
// without a webhook URL.
type WebhookDelivery struct {
	State         string
	Attempts      int
	LastStatus    int
	LastError     string
	LastAttemptAt time.Time // zero before the first attempt
	DeliveredAt   time.Time // zero until delivered
}

// Job is one caller request and its progress. Secrets live apart, sealed.
type Job struct {
	ID             string
	AccountID      string
	Title          string
	Metadata       map[string]string
	Status         Status
	Error          string
	SourceURLs     []string
	Files          []string // Files[i] is the stored copy of SourceURLs[i], or SourceURLs[i] while it has none
	Prompts        []string
	Neural         Neural
	OCR            OCR
	ExtractionMode string // the mode in effect
	ResponseSchema string
	ConsensusMode  string // CONSENSUS_MODE_*; CONSENSUS_MODE_UNSPECIFIED when off
	Merge          Merge
	WebhookURL     string
	// WebhookSigned: a webhook secret was given at create, so every
	// delivery must be signed; without its secret it is not sent at all.
	// The store sets it from the secrets it is given.
	WebhookSigned  bool
	IdempotencyKey string
	RequestHash    string // canonical hash of the create request, secrets hashed
	Created        time.Time
	Updated        time.Time
	Webhook        WebhookDelivery
}

// SealedSecret is a provider key or webhook secret sealed for one job and field.
type SealedSecret struct {
	Field      string // one of the Secret* names
	Ciphertext []byte
}

// OCRRow is the recognition result of one file.
type OCRRow struct {
	JobID        string
	FileIndex    int
	File         string // stored file URL; the source URL of a file never stored
	Status       RowStatus
	Content      string
	OutputFormat string
	Model        string
	Request      string
	RawData      string
	Error        string
	Duration     time.Duration
	Created      time.Time
	Updated      time.Time
}

// LLMRow is the model answer for one chunk of one file.
type LLMRow struct {
	JobID        string
	FileIndex    int
	File         string
	PromptIndex  int
	ChunkIndex   int
	ChunkTotal   int
	Status       RowStatus
	SkipReason   string
	Content      string
	Model        string
	Request      string
	RawData      string
	Error        string
	Duration     time.Duration
	SchemaValid  *bool
	SchemaErrors []string
	Consensus    []byte // JSON of the consensus block; nil when none
	// InputTokens and OutputTokens are the provider's usage.
	InputTokens  int64
	OutputTokens int64
	// Input is the chunk the row answers; stored for its River job, never
	// returned by GetResult.
	Input string
	// FileName is the file's own name (the upload's, or the download's),
	// which the user message names the chunk by; set on the rows a file's
	// River job asks, never returned by GetResult.
	FileName string
	// Overlap is the source text the chunk repeats from the one before
	// (empty for the first chunk, or when the chunker kept none); merge
	// reads it, the API never returns it.
	Overlap string
	// ContentUnread says Content was not read: the answer would have
	// passed the byte budget of Store.ResultToFinish. Never stored.
	ContentUnread bool
	Created       time.Time
	Updated       time.Time
}

// Result is everything GET /v1/jobs/{id}/result returns.
type Result struct {
	Job *Job
	OCR []OCRRow // by file index
	LLM []LLMRow // by file index, then chunk index
	// Merged is the JSON array of merged answers stored when the job
	// finished; empty before, or when merge was not enabled.
	Merged []byte
}

// File is a stored file: an upload (JobID "") or a job's copy of a source
// URL. Key is its blob key in storage; GET /v1/files/{ID} serves it.
type File struct {
	ID          string
	AccountID   string
	JobID       string // "" for uploads; job copies are deleted with the job
	Name        string
	Size        int64
	ContentType string
	Key         string
	Created     time.Time
}
