// Package api implements docjobs.v1.JobService: it validates requests, seals
// the caller's provider keys, hashes create requests for idempotency, and
// turns store calls and their errors into the wire shapes and status codes
// of the contract. It holds no state of its own; every job lives in the store.
package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/url"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"gocloud.dev/blob"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/auth"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// DefaultUploadMaxBytes is the upload limit when Config.UploadMaxBytes is 0.
const DefaultUploadMaxBytes = 20 << 20

// DefaultMaxResultMessageBytes bounds a unary result (gRPC GetJobResult)
// when Config.MaxResultMessageBytes is 0: what a gRPC client receives by
// default (4 MiB), so that a default client over it gets the service's
// pointer to the streamed REST result rather than grpc-go's generic error,
// and one call holds at most this much plus one row.
const DefaultMaxResultMessageBytes = 4 << 20

// DefaultMaxListPageBytes bounds the jobs of a ListJobs page when
// Config.MaxListPageBytes is 0: half of what a gRPC client receives by
// default (4 MiB), so a default client can page through any account,
// while one list call holds a few MiB rather than 100 jobs of up to ~1.8
// MB each. A page holds at least one job, and one job at every create
// limit (100 source URLs of 2 KiB included) is about 1.8 MB: it fits.
const DefaultMaxListPageBytes = 2 << 20

// Config is what the service needs to know about its deployment.
type Config struct {
	// PublicURL is the address clients reach the service at
	// (DOCJOBS_PUBLIC_URL, for example http://localhost:8080); upload URLs
	// are built on it. Required.
	PublicURL string
	// UploadMaxBytes bounds one uploaded file; 0 means DefaultUploadMaxBytes.
	UploadMaxBytes int64
	// AllowPrivateURLs lets sourceUrls and webhookUrl name loopback, private
	// and link-local addresses (DOCJOBS_ALLOW_PRIVATE_URLS).
	AllowPrivateURLs bool
	// StorageDir is the directory of a file:// bucket ("" for other
	// storage): a deleted job's folder is removed from it.
	StorageDir string
	// AccountMaxActiveJobs bounds the jobs of one account that have not
	// ended (DOCJOBS_ACCOUNT_MAX_ACTIVE_JOBS); a create past it is
	// RESOURCE_EXHAUSTED. 0 means no limit.
	AccountMaxActiveJobs int
	// AccountMaxUploadBytes bounds the bytes of one account's uploads
	// (DOCJOBS_ACCOUNT_MAX_UPLOAD_BYTES); an upload past it is
	// RESOURCE_EXHAUSTED. 0 means no limit.
	AccountMaxUploadBytes int64
	// MaxResultMessageBytes bounds the encoded size of a GetJobResult
	// answer, which is built whole in memory; 0 means
	// DefaultMaxResultMessageBytes. The REST result streams and has no bound.
	MaxResultMessageBytes int
	// MaxListPageBytes bounds the encoded size of the jobs of one ListJobs
	// page, and of the files of one ListFiles page (REST and gRPC); a page
	// ends early, with its nextPageToken, before the job or file that would
	// pass it. 0 means DefaultMaxListPageBytes.
	MaxListPageBytes int
	// KeyRequired reports whether the provider slot named slot
	// (NEURAL_CLIENT_TYPE_PROVIDER_N) refuses calls without a key. A job
	// with prompts on such a slot and no neural.apiKey is refused at
	// create: every one of its model rows would fail. Nil checks none.
	KeyRequired func(slot string) bool
}

// Store is the part of store.Store the service uses.
type Store interface {
	CreateJob(ctx context.Context, p store.CreateJobParams) (j *job.Job, replayed bool, err error)
	GetJob(ctx context.Context, accountID, id string) (*job.Job, error)
	ListJobs(ctx context.Context, p store.ListParams) (store.ListPage, error)
	ResultRows(ctx context.Context, accountID, id string) (*job.Job, iter.Seq2[store.ResultRow, error], error)
	CancelJob(ctx context.Context, accountID, id string) (*job.Job, error)
	DeleteJob(ctx context.Context, accountID, id string) (blobKeys []string, err error)
	FileRemovalDone(ctx context.Context, jobID string) error
	CreateUpload(ctx context.Context, f job.File, maxBytes int64) error
	UploadBytes(ctx context.Context, accountID string) (int64, error)
	GetFile(ctx context.Context, accountID, id string) (job.File, error)
	DeleteUpload(ctx context.Context, accountID, id string) error
	ListUploads(ctx context.Context, p store.UploadListParams) (store.UploadPage, error)
	AccountExtractionMode(ctx context.Context, accountID string) (string, error)
	ServiceKey(ctx context.Context, name string, sealed []byte) ([]byte, error)
}

// Sealer encrypts a secret for one account, job and field, and opens it
// again (internal/secret).
type Sealer interface {
	Seal(plaintext []byte, account, jobID, field string) ([]byte, error)
	Open(ciphertext []byte, account, jobID, field string) ([]byte, error)
}

// Deps are the service's collaborators.
type Deps struct {
	Store  Store        // required
	Sealer Sealer       // required
	Bucket *blob.Bucket // required; holds uploads
	// FirstStage returns the River jobs that start a new job with the given
	// number of files; they are inserted in the create transaction. Required.
	FirstStage func(jobID string, files int) []river.InsertManyParams
	Logger     *slog.Logger // default slog.Default()
	// NewID makes job and file ids; default a UUIDv7 string. An id it
	// makes must pass PossibleID, or it is never found again.
	NewID func() string
}

// Service implements docjobsv1.JobServiceServer, and the upload and
// download operations the HTTP layer streams through (StoreUpload, OpenFile).
type Service struct {
	docjobsv1.UnimplementedJobServiceServer

	cfg       Config
	publicURL *url.URL
	store     Store
	sealer    Sealer
	bucket    *blob.Bucket
	first     func(jobID string, files int) []river.InsertManyParams
	log       *slog.Logger
	newID     func() string

	hashKeyMu sync.Mutex
	hashKey   []byte // the request hash's key, once loaded (requestHashKey)
}

var _ docjobsv1.JobServiceServer = (*Service)(nil)

// New returns a Service, or an error naming the missing or invalid setting.
func New(cfg Config, deps Deps) (*Service, error) {
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	pub, err := url.Parse(cfg.PublicURL)
	if err != nil || (pub.Scheme != "http" && pub.Scheme != "https") || pub.Host == "" {
		return nil, fmt.Errorf("api: PublicURL %q is not an absolute http or https URL", cfg.PublicURL)
	}
	if cfg.UploadMaxBytes < 0 {
		return nil, fmt.Errorf("api: UploadMaxBytes must not be negative, got %d", cfg.UploadMaxBytes)
	}
	if cfg.UploadMaxBytes == 0 {
		cfg.UploadMaxBytes = DefaultUploadMaxBytes
	}
	if cfg.AccountMaxActiveJobs < 0 || cfg.AccountMaxUploadBytes < 0 {
		return nil, fmt.Errorf("api: account limits must not be negative, got %d jobs and %d bytes",
			cfg.AccountMaxActiveJobs, cfg.AccountMaxUploadBytes)
	}
	if cfg.MaxResultMessageBytes < 0 {
		return nil, fmt.Errorf("api: MaxResultMessageBytes must not be negative, got %d", cfg.MaxResultMessageBytes)
	}
	if cfg.MaxResultMessageBytes == 0 {
		cfg.MaxResultMessageBytes = DefaultMaxResultMessageBytes
	}
	if cfg.MaxListPageBytes < 0 {
		return nil, fmt.Errorf("api: MaxListPageBytes must not be negative, got %d", cfg.MaxListPageBytes)
	}
	if cfg.MaxListPageBytes == 0 {
		cfg.MaxListPageBytes = DefaultMaxListPageBytes
	}
	switch {
	case deps.Store == nil:
		return nil, errors.New("api: Deps.Store is required")
	case deps.Sealer == nil:
		return nil, errors.New("api: Deps.Sealer is required")
	case deps.Bucket == nil:
		return nil, errors.New("api: Deps.Bucket is required")
	case deps.FirstStage == nil:
		return nil, errors.New("api: Deps.FirstStage is required")
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.NewID == nil {
		deps.NewID = func() string { return uuid.Must(uuid.NewV7()).String() }
	}
	return &Service{
		cfg:       cfg,
		publicURL: pub,
		store:     deps.Store,
		sealer:    deps.Sealer,
		bucket:    deps.Bucket,
		first:     deps.FirstStage,
		log:       deps.Logger,
		newID:     deps.NewID,
	}, nil
}

// account returns the authenticated account of ctx, or Unauthenticated.
func account(ctx context.Context) (string, error) {
	a, ok := auth.Account(ctx)
	if !ok {
		return "", status.Error(codes.Unauthenticated, "missing or invalid API key")
	}
	return a, nil
}

// internal hides err from the client: it is logged under a fresh error id,
// and the client gets only that id to quote. An error of a database that
// could not be reached (store.ErrUnavailable) is returned as it is, with
// op, for the edge to answer UNAVAILABLE with a retry delay, and to log
// under the id it names: the request may succeed later unchanged.
func (s *Service) internal(ctx context.Context, op string, err error, attrs ...slog.Attr) error {
	if errors.Is(err, store.ErrUnavailable) {
		return fmt.Errorf("%s: %w", op, err)
	}
	id := newErrorID()
	attrs = append(attrs, slog.String("op", op), slog.String("error_id", id), slog.String("error", err.Error()))
	if a, ok := auth.Account(ctx); ok {
		attrs = append(attrs, slog.String("account_id", a))
	}
	s.log.LogAttrs(ctx, slog.LevelError, "internal error", attrs...)
	return status.Error(codes.Internal, "internal error (id="+id+")")
}

// errJobNotFound answers for a job that does not exist or is another
// account's.
var errJobNotFound = status.Error(codes.NotFound, "job not found")

// jobError maps a store error about one job to the client's status.
func (s *Service) jobError(ctx context.Context, op, jobID string, err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errJobNotFound
	case errors.Is(err, store.ErrTerminal):
		return status.Error(codes.FailedPrecondition, "job already ended")
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "request canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "deadline exceeded")
	}
	return s.internal(ctx, op, err, slog.String("job_id", jobID))
}

func newErrorID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b)
}
