package api

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/fetch"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// List page sizes (DESIGN §4).
const (
	defaultPageSize = 50
	maxPageSize     = 100
)

// CreateJob validates the request, seals its secrets and creates the job
// together with its first River jobs. A replayed idempotency key with the
// same parameters returns the original job.
func (s *Service) CreateJob(ctx context.Context, req *docjobsv1.CreateJobRequest) (*docjobsv1.Job, error) {
	acct, err := account(ctx)
	if err != nil {
		return nil, err
	}
	uploads, err := validateCreate(req, createRules{publicURL: s.publicURL, allowPrivate: s.cfg.AllowPrivateURLs, keyRequired: s.cfg.KeyRequired})
	if err != nil {
		return nil, err
	}
	// A job may use only its own account's stored files. A missing one
	// refuses the create, unless the request replays a job created while
	// it existed (the client may delete an upload once its job read it).
	missing, err := s.missingUpload(ctx, acct, uploads)
	if err != nil {
		return nil, err
	}
	if missing != nil && req.GetIdempotencyKey() == "" {
		return nil, missing
	}

	mode := req.GetExtractionMode().String()
	if req.GetExtractionMode() == docjobsv1.ExtractionMode_EXTRACTION_MODE_UNSPECIFIED {
		if mode, err = s.store.AccountExtractionMode(ctx, acct); err != nil {
			return nil, s.internal(ctx, "CreateJob", fmt.Errorf("account extraction mode: %w", err))
		}
	}

	now := time.Now().UTC()
	j := newJob(req, s.newID(), acct, mode, now)
	secrets, err := s.seal(req, acct, j.ID)
	if err != nil {
		return nil, s.internal(ctx, "CreateJob", err, slog.String("job_id", j.ID))
	}
	key, err := s.requestHashKey(ctx)
	if err != nil {
		return nil, s.internal(ctx, "CreateJob", err, slog.String("job_id", j.ID))
	}
	if j.RequestHash, err = requestHash(req, keyedDigest(key)); err != nil {
		return nil, s.internal(ctx, "CreateJob", err, slog.String("job_id", j.ID))
	}
	// Jobs created by earlier releases hold the hash as those computed it;
	// only a create with an idempotency key can replay one.
	var legacy []string
	if j.IdempotencyKey != "" {
		if legacy, err = legacyRequestHashes(req, keyedDigest(key)); err != nil {
			return nil, s.internal(ctx, "CreateJob", err, slog.String("job_id", j.ID))
		}
	}

	created, replayed, err := s.store.CreateJob(ctx, store.CreateJobParams{
		Job:                 j,
		Secrets:             secrets,
		Enqueue:             s.first(j.ID, len(j.SourceURLs)),
		MaxActiveJobs:       s.cfg.AccountMaxActiveJobs,
		LegacyRequestHashes: legacy,
		ReplayOnly:          missing != nil,
	})
	if missing != nil && errors.Is(err, store.ErrNotFound) {
		return nil, missing // not a replay: the upload is what is wrong
	}
	if errors.Is(err, store.ErrIdempotencyMismatch) {
		return nil, status.Error(codes.InvalidArgument, job.ErrIdempotencyMismatch.Error())
	}
	if errors.Is(err, store.ErrActiveJobsLimit) {
		s.log.LogAttrs(ctx, slog.LevelInfo, "job refused: active jobs limit",
			slog.String("account_id", acct), slog.Int("limit", s.cfg.AccountMaxActiveJobs))
		return nil, s.activeJobsLimit()
	}
	if err != nil {
		return nil, s.jobError(ctx, "CreateJob", j.ID, err)
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "job created",
		slog.String("job_id", created.ID), slog.String("account_id", acct),
		slog.Int("files", len(created.SourceURLs)), slog.Bool("replayed", replayed))
	return toJob(created), nil
}

// missingUpload returns the InvalidArgument naming the first source among
// uploads that is not a stored file of acct, or nil when all are. An id
// the service cannot have made is not looked up.
func (s *Service) missingUpload(ctx context.Context, acct string, uploads []uploadRef) (missing, err error) {
	for _, u := range uploads {
		notFound := invalid(fmt.Sprintf("sourceUrls[%d]", u.index), "file not found")
		if !PossibleID(u.id) {
			return notFound, nil
		}
		if _, err := s.store.GetFile(ctx, acct, u.id); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return notFound, nil
			}
			return nil, s.internal(ctx, "CreateJob", fmt.Errorf("look up upload %s: %w", u.id, err))
		}
	}
	return nil, nil
}

// activeJobsRetryAfter is the Retry-After of a create refused for the
// account's active jobs. When some of them end is unknown; most jobs take
// seconds to minutes, so half a minute neither hammers the service nor
// leaves a client idle long after a place is free.
const activeJobsRetryAfter = 30 * time.Second

// activeJobsLimit is the answer to a create past AccountMaxActiveJobs:
// RESOURCE_EXHAUSTED (HTTP 429) with a RetryInfo, which REST turns into
// Retry-After and gRPC clients read from the status details.
func (s *Service) activeJobsLimit() error {
	st := status.Newf(codes.ResourceExhausted,
		"account has %d jobs in progress, the most allowed (DOCJOBS_ACCOUNT_MAX_ACTIVE_JOBS); retry when some finish",
		s.cfg.AccountMaxActiveJobs)
	withRetry, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(activeJobsRetryAfter)})
	if err != nil {
		return st.Err() // RetryInfo always marshals; the message is what matters
	}
	return withRetry.Err()
}

// newJob is the job a valid request describes, with effective defaults.
func newJob(req *docjobsv1.CreateJobRequest, id, acct, extractionMode string, now time.Time) *job.Job {
	budget := req.GetNeural().GetChunkBudgetTokens()
	if budget == 0 {
		budget = job.DefaultChunkBudgetTokens
	}
	j := &job.Job{
		ID:         id,
		AccountID:  acct,
		Title:      req.GetTitle(),
		Metadata:   maps.Clone(req.GetMetadata()),
		Status:     job.StatusNew,
		SourceURLs: slices.Clone(req.GetSourceUrls()),
		Prompts:    slices.Clone(req.GetPrompts()),
		Neural: job.Neural{
			Type:              req.GetNeural().GetType().String(),
			Model:             req.GetNeural().GetModel(),
			ChunkBudgetTokens: budget,
		},
		OCR: job.OCR{
			Provider: req.GetOcr().GetProvider().String(),
			Model:    req.GetOcr().GetModel(),
		},
		ExtractionMode: extractionMode,
		ResponseSchema: req.GetResponseSchema(),
		ConsensusMode:  consensusMode(req.GetConsensus()).String(),
		WebhookURL:     req.GetWebhookUrl(),
		IdempotencyKey: req.GetIdempotencyKey(),
		Created:        now,
		Updated:        now,
	}
	// While merge is off the spec ignores every other merge field, and so
	// do the request hash (normalized) and the job: what would be stored
	// and echoed was checked only for its count (validateMerge), so its
	// names could carry NUL and C0 controls, six JSON bytes each, past
	// every size bound (audit-api3 F3).
	if m := req.GetMerge(); m.GetEnabled() {
		j.Merge = job.Merge{
			Enabled:        m.GetEnabled(),
			Scope:          orDefault(m.GetScope(), docjobsv1.MergeScope_MERGE_SCOPE_FILE).String(),
			ConflictPolicy: orDefault(m.GetConflictPolicy(), docjobsv1.MergeConflictPolicy_MERGE_CONFLICT_POLICY_FIRST_NON_NULL).String(),
			DedupeBy:       slices.Clone(m.GetDedupeBy()),
			Format:         orDefault(m.GetFormat(), docjobsv1.MergeFormat_MERGE_FORMAT_AUTO).String(),
		}
	}
	return j
}

// orDefault replaces an enum's UNSPECIFIED (0) with the documented default.
func orDefault[E ~int32](v, def E) E {
	if v == 0 {
		return def
	}
	return v
}

// seal encrypts each secret the request carries for this account, job and
// field, so a ciphertext copied to another job does not open.
func (s *Service) seal(req *docjobsv1.CreateJobRequest, acct, jobID string) ([]job.SealedSecret, error) {
	var out []job.SealedSecret
	for _, sec := range []struct{ field, value string }{
		{job.SecretNeuralAPIKey, req.GetNeural().GetApiKey()},
		{job.SecretOCRProviderKey, req.GetOcr().GetProviderKey()},
		{job.SecretWebhookSecret, webhookSecretInEffect(req)},
	} {
		if sec.value == "" {
			continue
		}
		ct, err := s.sealer.Seal([]byte(sec.value), acct, jobID, sec.field)
		if err != nil {
			return nil, fmt.Errorf("seal %s: %w", sec.field, err)
		}
		out = append(out, job.SealedSecret{Field: sec.field, Ciphertext: ct})
	}
	return out, nil
}

// webhookSecretInEffect is the request's webhook secret in effect: none without a
// webhookUrl, as nothing would ever be signed with it (the REST edge names
// it in Docjobs-Warning as ignored).
func webhookSecretInEffect(req *docjobsv1.CreateJobRequest) string {
	if req.GetWebhookUrl() == "" {
		return ""
	}
	return req.GetWebhookSecret()
}

// requestHash is the hex SHA-256 of the request's deterministic protobuf
// encoding, with each secret replaced by digest(secret), so that the stored
// hash tells requests apart without holding a secret. The service's digest
// is keyedDigest: a plain SHA-256 of a guessable webhook secret could be
// tested offline against a copy of the database; sha256Hex only recomputes
// the hashes of jobs created before (legacyRequestHashes).
// Spellings of one request hash alike: a default given explicitly or left
// out, merge options while merge is off, a consensus object without a mode
// in effect, a webhook secret without a webhook URL, and unknown fields
// (at any depth) present or not: they are ignored like REST's unknown JSON
// fields, which never reach the hash, so a create sent by a client built on
// a newer proto replays through either transport. A request without unknown
// fields hashes as before they were dropped.
func requestHash(req *docjobsv1.CreateJobRequest, digest func(string) string) (string, error) {
	c := normalized(req)
	discardUnknown(c.ProtoReflect())
	return hashAsGiven(c, digest)
}

// hashWithUnknown is requestHash as it was before unknown fields were
// dropped: they entered the hash as the client encoded them.
func hashWithUnknown(req *docjobsv1.CreateJobRequest, digest func(string) string) (string, error) {
	return hashAsGiven(normalized(req), digest)
}

// normalized is a copy of req with the spellings requestHash does not tell
// apart written one way.
func normalized(req *docjobsv1.CreateJobRequest) *docjobsv1.CreateJobRequest {
	c := proto.CloneOf(req)
	if n := c.GetNeural(); n != nil && n.GetChunkBudgetTokens() == 0 {
		n.ChunkBudgetTokens = job.DefaultChunkBudgetTokens
	}
	if m := c.GetMerge(); m.GetEnabled() {
		m.Scope = orDefault(m.GetScope(), docjobsv1.MergeScope_MERGE_SCOPE_FILE)
		m.ConflictPolicy = orDefault(m.GetConflictPolicy(), docjobsv1.MergeConflictPolicy_MERGE_CONFLICT_POLICY_FIRST_NON_NULL)
		m.Format = orDefault(m.GetFormat(), docjobsv1.MergeFormat_MERGE_FORMAT_AUTO)
	} else {
		c.Merge = nil
	}
	if consensusMode(c.GetConsensus()) == docjobsv1.ConsensusMode_CONSENSUS_MODE_UNSPECIFIED {
		c.Consensus = nil
	}
	c.WebhookSecret = webhookSecretInEffect(c)
	return c
}

// discardUnknown drops the unknown fields of m and of every message it
// holds.
func discardUnknown(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := range v.List().Len() {
				discardUnknown(v.List().Get(i).Message())
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, e protoreflect.Value) bool {
				discardUnknown(e.Message())
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			discardUnknown(v.Message())
		}
		return true
	})
	if m.GetUnknown() != nil {
		m.SetUnknown(nil)
	}
}

// hashAsGiven is the hex SHA-256 of c's deterministic protobuf encoding
// with each secret replaced by digest(secret), c taken as it is spelled.
// It changes c.
func hashAsGiven(c *docjobsv1.CreateJobRequest, digest func(string) string) (string, error) {
	if n := c.GetNeural(); n.GetApiKey() != "" {
		n.ApiKey = digest(n.GetApiKey())
	}
	if o := c.GetOcr(); o.GetProviderKey() != "" {
		o.ProviderKey = digest(o.GetProviderKey())
	}
	if c.GetWebhookSecret() != "" {
		c.WebhookSecret = digest(c.GetWebhookSecret())
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("encode request for hashing: %w", err)
	}
	return sha256Hex(string(b)), nil
}

// legacyRequestHashes are the hashes earlier releases stored for req, so
// that a client retrying a create across an upgrade gets its job back
// rather than a 400 that it may answer with a new key and a second paid
// job. Until 2026-11-24 01:12 secrets entered as plain SHA-256 (sha256Hex);
// until 2026-11-23 22:00 the request was also hashed as spelled, without
// the normalisation requestHash applies, so a create that left the chunk
// budget out hashed differently from the same create today. Until
// 2026-11-24 (CHANGELOG: unknown fields and the idempotency hash) unknown
// fields entered the hash too (hashWithUnknown): all of these keep them, as
// those releases did, so a request carrying the same unknown fields as then
// replays its job; digest is the service's.
func legacyRequestHashes(req *docjobsv1.CreateJobRequest, digest func(string) string) ([]string, error) {
	plain, err := hashWithUnknown(req, sha256Hex)
	if err != nil {
		return nil, err
	}
	spelled, err := hashAsGiven(proto.CloneOf(req), sha256Hex)
	if err != nil {
		return nil, err
	}
	// Without unknown fields this is requestHash's own hash again.
	keyed, err := hashWithUnknown(req, digest)
	if err != nil {
		return nil, err
	}
	return []string{plain, spelled, keyed}, nil
}

// requestHashKeyName names the request hash's key among the service keys.
const requestHashKeyName = "request-hash"

// requestHashKey returns the key secrets enter the request hash under
// (RequestHashKey). It is loaded once; a failure is not remembered.
func (s *Service) requestHashKey(ctx context.Context) ([]byte, error) {
	s.hashKeyMu.Lock()
	defer s.hashKeyMu.Unlock()
	if s.hashKey != nil {
		return s.hashKey, nil
	}
	key, err := RequestHashKey(ctx, s.store, s.sealer)
	if err != nil {
		return nil, err
	}
	s.hashKey = key
	return key, nil
}

// ServiceKeys is the part of the store that keeps the service's own keys.
type ServiceKeys interface {
	ServiceKey(ctx context.Context, name string, sealed []byte) ([]byte, error)
}

// RequestHashKey returns the key secrets enter the request hash under. The
// first process to need it makes it and stores it sealed (Store.ServiceKey),
// so every API process keys alike and replays work across them. serve calls
// it at start in every role: the stored key opens only with the keyset that
// sealed it, so a process given another keyset than the rest (whose sealed
// provider keys it could not open either) finds out before taking work. An
// error wraps secret.ErrOpen when the keyset is the wrong one.
func RequestHashKey(ctx context.Context, keys ServiceKeys, sealer Sealer) ([]byte, error) {
	fresh := make([]byte, 32)
	_, _ = rand.Read(fresh) // never fails (crypto/rand)
	sealed, err := sealer.Seal(fresh, "", "", requestHashKeyName)
	if err != nil {
		return nil, fmt.Errorf("request hash key: %w", err)
	}
	stored, err := keys.ServiceKey(ctx, requestHashKeyName, sealed)
	if err != nil {
		return nil, fmt.Errorf("request hash key: %w", err)
	}
	key, err := sealer.Open(stored, "", "", requestHashKeyName)
	if err != nil {
		return nil, fmt.Errorf("request hash key: %w", err)
	}
	return key, nil
}

// keyedDigest is the hex HMAC-SHA256 of a secret under key.
func keyedDigest(key []byte) func(string) string {
	return func(secret string) string {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(secret))
		return "hmac:" + hex.EncodeToString(m.Sum(nil))
	}
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// GetJob returns the job of the calling account.
func (s *Service) GetJob(ctx context.Context, req *docjobsv1.GetJobRequest) (*docjobsv1.Job, error) {
	acct, err := account(ctx)
	if err != nil {
		return nil, err
	}
	if !PossibleID(req.GetId()) {
		return nil, errJobNotFound
	}
	j, err := s.store.GetJob(ctx, acct, req.GetId())
	if err != nil {
		return nil, s.jobError(ctx, "GetJob", req.GetId(), err)
	}
	return toJob(j), nil
}

// GetJobResult returns the job with its recognition and model rows. A
// unary answer is built whole in memory, so it is bounded: a result that
// would pass Config.MaxResultMessageBytes is RESOURCE_EXHAUSTED, found by
// adding up the rows as they are read, before the rest are read. REST
// streams the result instead (JobResultRows), whatever its size.
func (s *Service) GetJobResult(ctx context.Context, req *docjobsv1.GetJobResultRequest) (*docjobsv1.GetJobResultResponse, error) {
	j, rows, err := s.JobResultRows(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	out := &docjobsv1.JobResult{Job: j}
	size := fieldSize(proto.Size(j))
	for r, err := range rows {
		if err != nil {
			return nil, err
		}
		var n int
		switch {
		case r.OCR != nil:
			out.Ocr, n = append(out.Ocr, r.OCR), proto.Size(r.OCR)
		case r.LLM != nil:
			out.Llm, n = append(out.Llm, r.LLM), proto.Size(r.LLM)
		case r.Merged != nil:
			out.Merged, n = append(out.Merged, r.Merged), proto.Size(r.Merged)
		}
		size += fieldSize(n)
		// The response wraps the result in one more field.
		if total := fieldSize(size); total > s.cfg.MaxResultMessageBytes {
			return nil, status.Errorf(codes.ResourceExhausted,
				"the result of job %s is larger than %d bytes, the most one gRPC answer carries here; "+
					"read it from GET /v1/jobs/%s/result, which streams it", req.GetId(), s.cfg.MaxResultMessageBytes, req.GetId())
		}
	}
	return &docjobsv1.GetJobResultResponse{Result: out}, nil
}

// fieldSize is the encoded size of a message field (of a one-byte tag, as
// every field of a result is) whose message encodes to n bytes.
func fieldSize(n int) int { return 1 + protowire.SizeBytes(n) }

// jsonSize is the size of m in a JSON answer, and of the comma before it
// (a REST list page's jobs are a JSON array), written into buf, which it
// returns for the next call. A message protojson cannot write counts as
// its protobuf size: the answer fails on it anyway.
func jsonSize(buf []byte, m proto.Message) ([]byte, int) {
	b, err := protojson.MarshalOptions{}.MarshalAppend(buf[:0], m)
	if err != nil {
		return buf, proto.Size(m)
	}
	return b, len(b) + 2
}

// ResultRow is one element of a job's result as JobResultRows yields it:
// exactly one field is set.
type ResultRow struct {
	OCR    *docjobsv1.OcrResult
	LLM    *docjobsv1.LlmResult
	Merged *docjobsv1.MergedAnswer
}

// JobResultRows is GetJobResult one row at a time, for a caller that writes
// the result out as it goes (the REST edge streams it). The job is read,
// and the caller's access checked, before it returns, so its error is
// GetJobResult's (NotFound for an unknown job or another account's); the
// rows are read as the sequence is ranged over. An error in the sequence
// is a status already logged; the sequence ends after it.
func (s *Service) JobResultRows(ctx context.Context, id string) (*docjobsv1.Job, iter.Seq2[ResultRow, error], error) {
	acct, err := account(ctx)
	if err != nil {
		return nil, nil, err
	}
	if !PossibleID(id) {
		return nil, nil, errJobNotFound
	}
	j, rows, err := s.store.ResultRows(ctx, acct, id)
	if err != nil {
		return nil, nil, s.jobError(ctx, "GetJobResult", id, err)
	}
	seq := func(yield func(ResultRow, error) bool) {
		fail := func(err error) {
			yield(ResultRow{}, s.jobError(ctx, "GetJobResult", id, err))
		}
		for r, err := range rows {
			if err != nil {
				fail(err)
				return
			}
			switch {
			case r.OCR != nil:
				if !yield(ResultRow{OCR: toOCRResult(r.OCR)}, nil) {
					return
				}
			case r.LLM != nil:
				row, err := toLLMResult(r.LLM)
				if err != nil {
					fail(err)
					return
				}
				if !yield(ResultRow{LLM: row}, nil) {
					return
				}
			case r.Merged != nil:
				answers, err := toMerged(j, r.Merged)
				if err != nil {
					fail(err)
					return
				}
				for _, a := range answers {
					if !yield(ResultRow{Merged: a}, nil) {
						return
					}
				}
			}
		}
	}
	return toJob(j), seq, nil
}

// pageSize is a listing's page size: defaultPageSize when not given,
// clamped to maxPageSize.
func pageSize(n int32) (int, error) {
	switch {
	case n < 0:
		return 0, invalid("pageSize", "must not be negative")
	case n == 0:
		return defaultPageSize, nil
	}
	return min(int(n), maxPageSize), nil
}

// listItemSize is what one item adds to a list page on either transport:
// the larger of its protobuf field and its JSON, written into *buf
// (reused from item to item).
func listItemSize(buf *[]byte, m proto.Message) int {
	var n int
	*buf, n = jsonSize(*buf, m)
	return max(fieldSize(proto.Size(m)), n)
}

// ListJobs returns a page of the calling account's jobs, newest first: at
// most pageSize jobs, and fewer when more would pass
// Config.MaxListPageBytes (a page shorter than pageSize is not the last
// one unless nextPageToken is empty).
func (s *Service) ListJobs(ctx context.Context, req *docjobsv1.ListJobsRequest) (*docjobsv1.ListJobsResponse, error) {
	acct, err := account(ctx)
	if err != nil {
		return nil, err
	}
	size, err := pageSize(req.GetPageSize())
	if err != nil {
		return nil, err
	}
	if err := checkEnum("statusEq", req.GetStatusEq()); err != nil {
		return nil, err
	}
	var st job.Status
	if req.GetStatusEq() != docjobsv1.JobStatus_JOB_STATUS_UNSPECIFIED {
		st = job.Status(req.GetStatusEq().String())
	}
	// A page is bounded in bytes too: each job echoes its prompts, schema
	// and metadata (up to ~1.3 MB within the create limits), and 100 of
	// them made a 132 MB answer that a default gRPC client refuses and
	// that cost the server hundreds of MB to build. The store sizes each
	// job as the answer will carry it, converting it once: the larger of
	// its protobuf (gRPC) and JSON (REST) encodings, so that the bound
	// holds on both transports and both give the same pages. JSON escapes
	// a quote or a backslash in two bytes, and a control character a job
	// created before they were refused holds in six.
	converted := map[*job.Job]*docjobsv1.Job{}
	var buf []byte // the JSON of the job sized last, reused
	page, err := s.store.ListJobs(ctx, store.ListParams{
		AccountID: acct, Status: st, PageSize: size, PageToken: req.GetPageToken(),
		MaxBytes: s.cfg.MaxListPageBytes,
		Size: func(j *job.Job) int {
			c := toJob(j)
			converted[j] = c
			return listItemSize(&buf, c)
		},
	})
	if errors.Is(err, store.ErrBadPageToken) {
		return nil, invalid("pageToken", "invalid")
	}
	if err != nil {
		return nil, s.internal(ctx, "ListJobs", err)
	}
	out := &docjobsv1.ListJobsResponse{Jobs: make([]*docjobsv1.Job, len(page.Jobs)), NextPageToken: page.NextPageToken}
	for i, j := range page.Jobs {
		if out.Jobs[i] = converted[j]; out.Jobs[i] == nil {
			out.Jobs[i] = toJob(j)
		}
	}
	return out, nil
}

// CancelJob stops a job's pending work; the job ends CANCELLED.
func (s *Service) CancelJob(ctx context.Context, req *docjobsv1.CancelJobRequest) (*docjobsv1.Job, error) {
	acct, err := account(ctx)
	if err != nil {
		return nil, err
	}
	if !PossibleID(req.GetId()) {
		return nil, errJobNotFound
	}
	j, err := s.store.CancelJob(ctx, acct, req.GetId())
	if err != nil {
		return nil, s.jobError(ctx, "CancelJob", req.GetId(), err)
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "job cancelled", slog.String("job_id", j.ID), slog.String("account_id", acct))
	return toJob(j), nil
}

// DeleteJob removes the job with its rows and secrets, then its stored files.
func (s *Service) DeleteJob(ctx context.Context, req *docjobsv1.DeleteJobRequest) (*emptypb.Empty, error) {
	acct, err := account(ctx)
	if err != nil {
		return nil, err
	}
	if !PossibleID(req.GetId()) {
		return nil, errJobNotFound
	}
	keys, err := s.store.DeleteJob(ctx, acct, req.GetId())
	if err != nil {
		return nil, s.jobError(ctx, "DeleteJob", req.GetId(), err)
	}
	// The job is gone whatever happens to its blobs, and the delete recorded
	// them for removal: what cannot be deleted now (or is cut off by a crash)
	// is left to the workers' sweep rather than failing a request that a
	// retry would answer with 404.
	for _, err := range fetch.RemoveDeletedJob(ctx, s.bucket, s.cfg.StorageDir, s.store, req.GetId(), keys) {
		s.log.LogAttrs(ctx, slog.LevelWarn, "stored file of a deleted job not removed yet; the sweep will retry",
			slog.String("job_id", req.GetId()), slog.String("account_id", acct), slog.String("error", err.Error()))
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "job deleted", slog.String("job_id", req.GetId()),
		slog.String("account_id", acct), slog.Int("files", len(keys)))
	return &emptypb.Empty{}, nil
}
