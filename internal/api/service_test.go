package api

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/riverqueue/river"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/auth"
	"github.com/docjobs/docjobs/internal/blobtest"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/logtest"
	"github.com/docjobs/docjobs/internal/s3test"
	"github.com/docjobs/docjobs/internal/secret"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/sqlite"
	"github.com/docjobs/docjobs/internal/store/sqlite/sqlitetest"
	"github.com/docjobs/docjobs/internal/store/storetest"
)

// The secrets every create in these tests carries; no response and no log
// line may contain them.
const (
	neuralKey     = "sk-neural-SECRET-0001"
	ocrKey        = "ocr-SECRET-0002"
	webhookSecret = "whsec-SECRET-0003"
)

// recognizeArgs stands in for the recognize stage: these tests check that
// the first stage is inserted with the job, not what works it.
type recognizeArgs struct {
	JobID     string `json:"job_id"`
	FileIndex int    `json:"file_index"`
}

func (recognizeArgs) Kind() string { return "test_recognize" }

// harness is a Service on a real store (SQLite unless a test opens
// another), sealer and file bucket.
type harness struct {
	svc    *Service
	store  storetest.Store
	sealer *secret.Sealer
	bucket *blob.Bucket
	// bucketDir is the bucket's directory, the service's StorageDir ("" for
	// an s3:// bucket).
	bucketDir string
	// s3 is the S3 server of an s3:// bucket (nil for file://) and
	// s3Bucket the bucket's name on it.
	s3       *s3test.Server
	s3Bucket string
	// parts is the proxy of an s3HeldPartsStorage bucket.
	parts *heldParts
	logs  *logtest.Buffer

	mu     sync.Mutex
	stages map[string]int // job id -> files passed to FirstStage
}

// opener opens a fresh, migrated store for one test, logging to log.
type opener func(t *testing.T, log *slog.Logger) storetest.Store

// openSQLite starts from a copy of a database migrated once per test
// binary: migrating costs about 0.3 s of CPU under -race, and nearly every
// test here opens a store (the migrations are tested in internal/store).
func openSQLite(t *testing.T, log *slog.Logger) storetest.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "docjobs.db")
	sqlitetest.WriteMigrated(t, path)
	st, err := sqlite.Open(context.Background(), sqlite.Config{Path: path, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	return newHarnessOn(t, cfg, openSQLite)
}

// storage is the file storage of a harness: file:// or s3://.
type storage string

const (
	fileStorage storage = "file"
	s3Storage   storage = "s3"
	// s3HeldPartsStorage is s3Storage reached through a proxy that holds
	// each part upload before storing it (heldParts): S3 may still be
	// storing a part when its client has given up on it.
	s3HeldPartsStorage storage = "s3-held-parts"
)

// onEachStorage runs fn on a file:// bucket and on an s3:// one, a real S3
// server (versitygw, internal/s3test) opened by its URL as serve opens
// DOCJOBS_STORAGE_URL.
func onEachStorage(t *testing.T, fn func(t *testing.T, stor storage)) {
	t.Helper()
	for _, stor := range []storage{fileStorage, s3Storage} {
		t.Run(string(stor), func(t *testing.T) { fn(t, stor) })
	}
}

// newHarnessOn is newHarness on the store open returns.
func newHarnessOn(t *testing.T, cfg Config, open opener) *harness {
	t.Helper()
	return newHarnessWith(t, cfg, open, fileStorage)
}

// newHarnessWith is newHarnessOn on the file storage stor.
func newHarnessWith(t *testing.T, cfg Config, open opener, stor storage) *harness {
	t.Helper()
	dir := t.TempDir()
	logs := &logtest.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	st := open(t, log)
	t.Cleanup(func() { _ = st.Close() })
	sealer, err := secret.Open(filepath.Join(dir, "master.keyset"))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{store: st, sealer: sealer, logs: logs, stages: map[string]int{}}
	switch stor {
	case s3Storage, s3HeldPartsStorage:
		h.s3, h.s3Bucket = s3test.Start(t), "docjobs"
		u := h.s3.Bucket(t, h.s3Bucket)
		if stor == s3HeldPartsStorage {
			h.parts = holdParts(t, h.s3.Endpoint, time.Second)
			u = strings.Replace(u, url.QueryEscape(h.s3.Endpoint), url.QueryEscape(h.parts.endpoint), 1)
		}
		if h.bucket, err = blob.OpenBucket(context.Background(), u); err != nil {
			t.Fatalf("open %s: %v", u, err)
		}
	default:
		h.bucketDir = t.TempDir()
		if h.bucket, err = fileblob.OpenBucket(h.bucketDir, nil); err != nil {
			t.Fatal(err)
		}
	}
	bucket := h.bucket
	t.Cleanup(func() { _ = bucket.Close() })
	if cfg.StorageDir == "" {
		cfg.StorageDir = h.bucketDir // as serve gives a file:// bucket's, "" for s3://
	}

	if cfg.PublicURL == "" {
		cfg.PublicURL = testPublicURL
	}
	h.svc, err = New(cfg, Deps{
		Store: st, Sealer: sealer, Bucket: bucket, Logger: log,
		FirstStage: func(jobID string, files int) []river.InsertManyParams {
			h.mu.Lock()
			h.stages[jobID] = files
			h.mu.Unlock()
			params := make([]river.InsertManyParams, files)
			for i := range params {
				params[i] = river.InsertManyParams{Args: recognizeArgs{JobID: jobID, FileIndex: i}}
			}
			return params
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.assertNoSecretLogged(t) })
	return h
}

func (h *harness) assertNoSecretLogged(t *testing.T) {
	t.Helper()
	logs := h.logs.String()
	for _, s := range []string{neuralKey, ocrKey, webhookSecret} {
		if strings.Contains(logs, s) {
			t.Errorf("a log line carries the secret %q", s)
		}
	}
}

// as is a request context authenticated as account.
func as(account string) context.Context {
	return auth.WithAccount(context.Background(), account)
}

// createRequest is a valid request with every secret set.
func createRequest(urls ...string) *docjobsv1.CreateJobRequest {
	if len(urls) == 0 {
		urls = []string{"https://example.com/a.txt"}
	}
	r := validRequest()
	r.SourceUrls = urls
	r.Neural.ApiKey = neuralKey
	r.Ocr.ProviderKey = ocrKey
	r.WebhookUrl = "https://hooks.example.com/done"
	r.WebhookSecret = webhookSecret
	return r
}

func (h *harness) create(t *testing.T, account string, req *docjobsv1.CreateJobRequest) *docjobsv1.Job {
	t.Helper()
	j, err := h.svc.CreateJob(as(account), req)
	if err != nil {
		t.Fatalf("CreateJob: %v", err)
	}
	return j
}

// riverJobs counts the River jobs inserted so far (SQLite numbers them from 1).
func (h *harness) riverJobs(t *testing.T) int {
	t.Helper()
	n := 0
	for {
		_, err := h.store.RiverJob(context.Background(), int64(n+1))
		if errors.Is(err, store.ErrNotFound) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
}

// wantStatus fails unless err is a status with code and, when msg is not
// empty, exactly that message.
func wantStatus(t *testing.T, err error, code codes.Code, msg string) {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || st.Code() != code || (msg != "" && st.Message() != msg) {
		t.Fatalf("error = %v, want %v %q", err, code, msg)
	}
}

// assertNoSecret fails when a response message holds a secret.
func assertNoSecret(t *testing.T, m proto.Message) {
	t.Helper()
	b, err := protojson.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{neuralKey, ocrKey, webhookSecret} {
		if bytes.Contains(b, []byte(s)) {
			t.Fatalf("response carries the secret %q: %s", s, b)
		}
	}
}

func TestCreateJobReturnsTheNewJobWithEffectiveDefaults(t *testing.T) {
	h := newHarness(t, Config{})
	req := createRequest("https://example.com/a.txt", "https://example.com/b.html")
	req.Title = "Invoices"
	req.Metadata = map[string]string{"batch": "7"}
	req.Prompts = []string{"extract the total"}
	req.Merge = &docjobsv1.MergeOptions{Enabled: true, DedupeBy: []string{"id"}}
	j := h.create(t, "acme", req)

	checks := []struct {
		name      string
		got, want any
	}{
		{"status", j.GetStatus(), docjobsv1.JobStatus_JOB_STATUS_NEW},
		{"accountId", j.GetAccountId(), "acme"},
		{"title", j.GetTitle(), "Invoices"},
		{"metadata", j.GetMetadata()["batch"], "7"},
		{"sourceUrls", len(j.GetSourceUrls()), 2},
		{"prompts", j.GetPrompts()[0], "extract the total"},
		{"neural.type", j.GetNeural().GetType(), docjobsv1.NeuralClientType_NEURAL_CLIENT_TYPE_PROVIDER_2},
		{"neural.model", j.GetNeural().GetModel(), "gpt-4o-mini"},
		{"neural.chunkBudgetTokens is the effective default", j.GetNeural().GetChunkBudgetTokens(), int32(job.DefaultChunkBudgetTokens)},
		{"extractionMode is the account default", j.GetExtractionMode(), docjobsv1.ExtractionMode_EXTRACTION_MODE_HYBRID},
		{"consensus is present and off", j.GetConsensus() != nil && j.GetConsensus().Mode != nil &&
			j.GetConsensus().GetMode() == docjobsv1.ConsensusMode_CONSENSUS_MODE_UNSPECIFIED, true},
		{"merge.enabled", j.GetMerge().GetEnabled(), true},
		{"merge.scope defaults to FILE", j.GetMerge().GetScope(), docjobsv1.MergeScope_MERGE_SCOPE_FILE},
		{"merge.conflictPolicy defaults to FIRST_NON_NULL", j.GetMerge().GetConflictPolicy(),
			docjobsv1.MergeConflictPolicy_MERGE_CONFLICT_POLICY_FIRST_NON_NULL},
		{"merge.format defaults to AUTO", j.GetMerge().GetFormat(), docjobsv1.MergeFormat_MERGE_FORMAT_AUTO},
		{"merge.dedupeBy", j.GetMerge().GetDedupeBy()[0], "id"},
		{"webhookUrl", j.GetWebhookUrl(), "https://hooks.example.com/done"},
		{"created", j.GetCreated() != nil, true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	assertNoSecret(t, j)

	got, err := h.svc.GetJob(as("acme"), &docjobsv1.GetJobRequest{Id: j.GetId()})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetId() != j.GetId() || got.GetNeural().GetChunkBudgetTokens() != 4000 || got.GetConsensus().Mode == nil {
		t.Fatalf("GetJob = %v, want the created job", got)
	}
	assertNoSecret(t, got)
}

// While merge is off the spec ignores every other merge field; the job keeps
// none of them, so names only counted (validateMerge) are neither stored nor
// echoed: NUL and C0 controls (six JSON bytes each) and names past the
// 256-byte bound made a 3.84 MB gRPC create a 23 MB REST job (audit-api3 F3).
func TestMergeOptionsWhileMergeIsOffAreNotKept(t *testing.T) {
	onEachStore(t, func(t *testing.T, open opener) {
		h := newHarnessOn(t, Config{}, open)
		tests := []struct {
			name  string
			merge *docjobsv1.MergeOptions
		}{
			{"an empty merge object", &docjobsv1.MergeOptions{}},
			{"options with enabled false", &docjobsv1.MergeOptions{Scope: docjobsv1.MergeScope_MERGE_SCOPE_JOB,
				ConflictPolicy: docjobsv1.MergeConflictPolicy_MERGE_CONFLICT_POLICY_MAJORITY,
				Format:         docjobsv1.MergeFormat_MERGE_FORMAT_JSON, DedupeBy: []string{"id"}}},
			{"names no check would pass", &docjobsv1.MergeOptions{DedupeBy: []string{
				"a\x00b", strings.Repeat("\x01", 1000), strings.Repeat("x", 100000), ""}}},
			{"unknown enum numbers", &docjobsv1.MergeOptions{Scope: 5, ConflictPolicy: 5, Format: 9}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				req := createRequest()
				req.Merge = tt.merge
				created := h.create(t, "acme", req)
				got, err := h.svc.GetJob(as("acme"), &docjobsv1.GetJobRequest{Id: created.GetId()})
				if err != nil {
					t.Fatal(err)
				}
				page, err := h.svc.ListJobs(as("acme"), &docjobsv1.ListJobsRequest{PageSize: 1})
				if err != nil || len(page.GetJobs()) != 1 || page.GetJobs()[0].GetId() != created.GetId() {
					t.Fatalf("ListJobs = %v, %v; want the job just made first", page, err)
				}
				for _, j := range []struct {
					answer string
					job    *docjobsv1.Job
				}{{"CreateJob", created}, {"GetJob", got}, {"ListJobs", page.GetJobs()[0]}} {
					if j.job.GetMerge() != nil {
						t.Errorf("%s echoes merge %v, want none", j.answer, j.job.GetMerge())
					}
				}
			})
		}
	})
}

func TestCreateJobKeepsAnExplicitChunkBudget(t *testing.T) {
	h := newHarness(t, Config{})
	req := createRequest()
	req.Neural.ChunkBudgetTokens = 1200
	if got := h.create(t, "acme", req).GetNeural().GetChunkBudgetTokens(); got != 1200 {
		t.Fatalf("chunkBudgetTokens = %d, want 1200", got)
	}
}

func TestCreateJobExtractionMode(t *testing.T) {
	h := newHarness(t, Config{})
	if err := h.store.SetAccountExtractionMode(context.Background(), "strict", job.ExtractionOCRAlways); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		account string
		mode    docjobsv1.ExtractionMode
		want    docjobsv1.ExtractionMode
	}{
		{"UNSPECIFIED inherits HYBRID by default", "acme", 0, docjobsv1.ExtractionMode_EXTRACTION_MODE_HYBRID},
		{"UNSPECIFIED inherits the account's default", "strict", 0, docjobsv1.ExtractionMode_EXTRACTION_MODE_OCR_ALWAYS},
		{"an explicit mode wins over the account default", "strict", docjobsv1.ExtractionMode_EXTRACTION_MODE_HYBRID,
			docjobsv1.ExtractionMode_EXTRACTION_MODE_HYBRID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := createRequest()
			req.ExtractionMode = tt.mode
			if got := h.create(t, tt.account, req).GetExtractionMode(); got != tt.want {
				t.Fatalf("extractionMode = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCreateJobKeepsAConsensusModeWithASchema(t *testing.T) {
	h := newHarness(t, Config{})
	req := createRequest()
	req.ResponseSchema = validSchema
	req.Consensus = &docjobsv1.ConsensusOptions{Mode: docjobsv1.ConsensusMode_CONSENSUS_MODE_THREE_RUNS.Enum()}
	j := h.create(t, "acme", req)
	if j.GetConsensus().GetMode() != docjobsv1.ConsensusMode_CONSENSUS_MODE_THREE_RUNS || j.GetResponseSchema() != validSchema {
		t.Fatalf("consensus %v, schema %q", j.GetConsensus(), j.GetResponseSchema())
	}
}

func TestCreateJobTreatsAnUnknownConsensusModeAsOff(t *testing.T) {
	h := newHarness(t, Config{})
	req := createRequest()
	req.Consensus = &docjobsv1.ConsensusOptions{Mode: docjobsv1.ConsensusMode(42).Enum()}
	if got := h.create(t, "acme", req).GetConsensus().GetMode(); got != docjobsv1.ConsensusMode_CONSENSUS_MODE_UNSPECIFIED {
		t.Fatalf("consensus.mode = %v, want UNSPECIFIED", got)
	}
}

func TestCreateJobSealsEachSecretForItsJobAndField(t *testing.T) {
	h := newHarness(t, Config{})
	j := h.create(t, "acme", createRequest())

	secrets, err := h.store.JobSecrets(context.Background(), j.GetId())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		job.SecretNeuralAPIKey:   neuralKey,
		job.SecretOCRProviderKey: ocrKey,
		job.SecretWebhookSecret:  webhookSecret,
	}
	if len(secrets) != len(want) {
		t.Fatalf("%d secrets stored, want %d", len(secrets), len(want))
	}
	for _, s := range secrets {
		if bytes.Contains(s.Ciphertext, []byte(want[s.Field])) {
			t.Errorf("%s is stored in clear", s.Field)
		}
		pt, err := h.sealer.Open(s.Ciphertext, "acme", j.GetId(), s.Field)
		if err != nil || string(pt) != want[s.Field] {
			t.Errorf("%s opens to %q, %v; want the given secret", s.Field, pt, err)
		}
		if _, err := h.sealer.Open(s.Ciphertext, "acme", "another-job", s.Field); err == nil {
			t.Errorf("%s opens for another job", s.Field)
		}
	}
}

func TestCreateJobSealsOnlyTheSecretsGiven(t *testing.T) {
	h := newHarness(t, Config{})
	req := createRequest()
	req.Neural.ApiKey, req.WebhookSecret = "", ""
	j := h.create(t, "acme", req)
	secrets, err := h.store.JobSecrets(context.Background(), j.GetId())
	if err != nil {
		t.Fatal(err)
	}
	if len(secrets) != 1 || secrets[0].Field != job.SecretOCRProviderKey {
		t.Fatalf("secrets = %+v, want only %s", secrets, job.SecretOCRProviderKey)
	}
}

func TestCreateJobIgnoresAWebhookSecretWithoutAWebhookURL(t *testing.T) {
	h := newHarness(t, Config{})
	req := createRequest()
	req.WebhookUrl, req.IdempotencyKey = "", "no-hook"
	j := h.create(t, "acme", req)
	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"the secret is not stored", func(t *testing.T) {
			secrets, err := h.store.JobSecrets(context.Background(), j.GetId())
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range secrets {
				if s.Field == job.SecretWebhookSecret {
					t.Errorf("the webhook secret was sealed: %+v", secrets)
				}
			}
		}},
		{"a replay without the secret is the same request", func(t *testing.T) {
			again := proto.CloneOf(req)
			again.WebhookSecret = ""
			if got := h.create(t, "acme", again); got.GetId() != j.GetId() {
				t.Errorf("replay returned job %s, want %s", got.GetId(), j.GetId())
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

func TestCreateJobInsertsTheFirstStageWithTheJob(t *testing.T) {
	h := newHarness(t, Config{})
	j := h.create(t, "acme", createRequest("https://example.com/a", "https://example.com/b", "https://example.com/c"))
	h.mu.Lock()
	files := h.stages[j.GetId()]
	h.mu.Unlock()
	if files != 3 {
		t.Fatalf("FirstStage got %d files, want 3", files)
	}
	if n := h.riverJobs(t); n != 3 {
		t.Fatalf("%d River jobs inserted, want 3", n)
	}
	res, err := h.svc.GetJobResult(as("acme"), &docjobsv1.GetJobResultRequest{Id: j.GetId()})
	if err != nil {
		t.Fatal(err)
	}
	if ocr := res.GetResult().GetOcr(); len(ocr) != 3 || ocr[0].GetStatus() != docjobsv1.JobOcrStatus_JOB_OCR_STATUS_PENDING {
		t.Fatalf("ocr rows = %v, want 3 PENDING", ocr)
	}
}

func TestCreateJobIdempotency(t *testing.T) {
	h := newHarness(t, Config{})
	req := createRequest()
	req.IdempotencyKey = "order-42"
	first := h.create(t, "acme", req)
	riverBefore := h.riverJobs(t)

	t.Run("a replay with identical parameters returns the original job and enqueues nothing", func(t *testing.T) {
		again := h.create(t, "acme", proto.CloneOf(req))
		if again.GetId() != first.GetId() {
			t.Fatalf("replay returned job %s, want %s", again.GetId(), first.GetId())
		}
		assertNoSecret(t, again)
		if n := h.riverJobs(t); n != riverBefore {
			t.Fatalf("%d River jobs after replay, want %d", n, riverBefore)
		}
	})

	mismatches := []struct {
		name   string
		mutate func(r *docjobsv1.CreateJobRequest)
	}{
		{"a different source URL", func(r *docjobsv1.CreateJobRequest) { r.SourceUrls = []string{"https://example.com/other.txt"} }},
		{"a different title", func(r *docjobsv1.CreateJobRequest) { r.Title = "other" }},
		{"a different provider key", func(r *docjobsv1.CreateJobRequest) { r.Ocr.ProviderKey = ocrKey + "-rotated" }},
		{"a different webhook secret", func(r *docjobsv1.CreateJobRequest) { r.WebhookSecret = "" }},
	}
	// Spellings of the same request replay it: the job they describe is
	// the same one.
	sameRequest := []struct {
		name   string
		mutate func(r *docjobsv1.CreateJobRequest)
	}{
		{"the default chunk budget given explicitly", func(r *docjobsv1.CreateJobRequest) { r.Neural.ChunkBudgetTokens = 4000 }},
		{"an empty merge object", func(r *docjobsv1.CreateJobRequest) { r.Merge = &docjobsv1.MergeOptions{} }},
		{"merge options while merge is off", func(r *docjobsv1.CreateJobRequest) {
			r.Merge = &docjobsv1.MergeOptions{Scope: docjobsv1.MergeScope_MERGE_SCOPE_JOB, DedupeBy: []string{"id"}}
		}},
		{"an empty consensus object", func(r *docjobsv1.CreateJobRequest) { r.Consensus = &docjobsv1.ConsensusOptions{} }},
		{"an unknown consensus mode", func(r *docjobsv1.CreateJobRequest) {
			r.Consensus = &docjobsv1.ConsensusOptions{Mode: docjobsv1.ConsensusMode(99).Enum()}
		}},
	}
	for _, m := range sameRequest {
		t.Run("a replay with "+m.name+" returns the original job", func(t *testing.T) {
			same := proto.CloneOf(req)
			m.mutate(same)
			again := h.create(t, "acme", same)
			if again.GetId() != first.GetId() {
				t.Fatalf("replay returned job %s, want %s", again.GetId(), first.GetId())
			}
		})
	}
	mismatches = append(mismatches, []struct {
		name   string
		mutate func(r *docjobsv1.CreateJobRequest)
	}{
		{"another chunk budget", func(r *docjobsv1.CreateJobRequest) { r.Neural.ChunkBudgetTokens = 3999 }},
		{"merge turned on", func(r *docjobsv1.CreateJobRequest) { r.Merge = &docjobsv1.MergeOptions{Enabled: true} }},
	}...)
	for _, m := range mismatches {
		t.Run(m.name+" is rejected", func(t *testing.T) {
			changed := proto.CloneOf(req)
			m.mutate(changed)
			_, err := h.svc.CreateJob(as("acme"), changed)
			wantStatus(t, err, codes.InvalidArgument, "idempotency key reused with different request parameters")
		})
	}

	t.Run("the same key in another account creates another job", func(t *testing.T) {
		other := h.create(t, "globex", proto.CloneOf(req))
		if other.GetId() == first.GetId() {
			t.Fatal("another account got the same job")
		}
	})
}

func TestConcurrentCreatesWithOneKeyMakeOneJob(t *testing.T) {
	h := newHarness(t, Config{})
	req := createRequest()
	req.IdempotencyKey = "concurrent"
	const n = 20
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			j, err := h.svc.CreateJob(as("acme"), proto.CloneOf(req))
			ids[i], errs[i] = j.GetId(), err
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("create %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("create %d made job %s, create 0 made %s", i, ids[i], ids[0])
		}
	}
	page, err := h.svc.ListJobs(as("acme"), &docjobsv1.ListJobsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.GetJobs()) != 1 {
		t.Fatalf("%d jobs exist, want 1", len(page.GetJobs()))
	}
}

func TestCreateJobRejectsAnInvalidRequestBeforeAnyWrite(t *testing.T) {
	h := newHarness(t, Config{})
	req := createRequest()
	req.SourceUrls = nil
	_, err := h.svc.CreateJob(as("acme"), req)
	wantStatus(t, err, codes.InvalidArgument, "sourceUrls: required")
	if n := h.riverJobs(t); n != 0 {
		t.Fatalf("%d River jobs inserted by a rejected create", n)
	}
}

func TestCreateJobAcceptsOnlyTheAccountsOwnUploads(t *testing.T) {
	h := newHarness(t, Config{})
	_, ours, err := h.svc.StoreUpload(as("acme"), "a.txt", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	_, theirs, err := h.svc.StoreUpload(as("globex"), "b.txt", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("our upload is a valid source", func(t *testing.T) {
		j := h.create(t, "acme", createRequest(ours))
		if j.GetSourceUrls()[0] != ours {
			t.Fatalf("sourceUrls = %v", j.GetSourceUrls())
		}
	})
	t.Run("another account's upload is not found", func(t *testing.T) {
		_, err := h.svc.CreateJob(as("acme"), createRequest("https://example.com/a", theirs))
		wantStatus(t, err, codes.InvalidArgument, "sourceUrls[1]: file not found")
	})
	t.Run("an upload that never existed is not found", func(t *testing.T) {
		_, err := h.svc.CreateJob(as("acme"), createRequest(FileURL(testPublicURL, "no-such-file")))
		wantStatus(t, err, codes.InvalidArgument, "sourceUrls[0]: file not found")
	})
}

func TestEveryMethodRequiresAnAccount(t *testing.T) {
	h := newHarness(t, Config{})
	ctx := context.Background()
	calls := map[string]func() error{
		"CreateJob":    func() error { _, err := h.svc.CreateJob(ctx, createRequest()); return err },
		"GetJob":       func() error { _, err := h.svc.GetJob(ctx, &docjobsv1.GetJobRequest{Id: "x"}); return err },
		"GetJobResult": func() error { _, err := h.svc.GetJobResult(ctx, &docjobsv1.GetJobResultRequest{Id: "x"}); return err },
		"ListJobs":     func() error { _, err := h.svc.ListJobs(ctx, &docjobsv1.ListJobsRequest{}); return err },
		"ListFiles":    func() error { _, err := h.svc.ListFiles(ctx, &docjobsv1.ListFilesRequest{}); return err },
		"CancelJob":    func() error { _, err := h.svc.CancelJob(ctx, &docjobsv1.CancelJobRequest{Id: "x"}); return err },
		"DeleteJob":    func() error { _, err := h.svc.DeleteJob(ctx, &docjobsv1.DeleteJobRequest{Id: "x"}); return err },
		"UploadFile": func() error {
			_, err := upload(ctx, h.svc, &docjobsv1.UploadFileRequest{Name: "a", Content: []byte("x")})
			return err
		},
		"GetFile":     func() error { _, err := getFile(ctx, h.svc, "x"); return err },
		"DeleteFile":  func() error { _, err := h.svc.DeleteFile(ctx, &docjobsv1.DeleteFileRequest{Id: "x"}); return err },
		"StoreUpload": func() error { _, _, err := h.svc.StoreUpload(ctx, "a", strings.NewReader("x")); return err },
		"OpenFile":    func() error { _, _, err := h.svc.OpenFile(ctx, "x"); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			wantStatus(t, call(), codes.Unauthenticated, "")
		})
	}
}

func TestAnotherAccountsJobIsNotFound(t *testing.T) {
	h := newHarness(t, Config{})
	id := h.create(t, "acme", createRequest()).GetId()
	other := as("globex")
	calls := map[string]func() error{
		"GetJob":       func() error { _, err := h.svc.GetJob(other, &docjobsv1.GetJobRequest{Id: id}); return err },
		"GetJobResult": func() error { _, err := h.svc.GetJobResult(other, &docjobsv1.GetJobResultRequest{Id: id}); return err },
		"CancelJob":    func() error { _, err := h.svc.CancelJob(other, &docjobsv1.CancelJobRequest{Id: id}); return err },
		"DeleteJob":    func() error { _, err := h.svc.DeleteJob(other, &docjobsv1.DeleteJobRequest{Id: id}); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			wantStatus(t, call(), codes.NotFound, "job not found")
		})
	}
	if _, err := h.svc.GetJob(as("acme"), &docjobsv1.GetJobRequest{Id: id}); err != nil {
		t.Fatalf("the owner lost the job: %v", err)
	}
}

func TestGetJobResultHasTheJobAndItsRows(t *testing.T) {
	h := newHarness(t, Config{})
	j := h.create(t, "acme", createRequest("https://example.com/a", "https://example.com/b"))
	res, err := h.svc.GetJobResult(as("acme"), &docjobsv1.GetJobResultRequest{Id: j.GetId()})
	if err != nil {
		t.Fatal(err)
	}
	r := res.GetResult()
	if r.GetJob().GetId() != j.GetId() || len(r.GetOcr()) != 2 || len(r.GetLlm()) != 0 {
		t.Fatalf("result = job %s, %d ocr, %d llm", r.GetJob().GetId(), len(r.GetOcr()), len(r.GetLlm()))
	}
	if r.GetOcr()[1].GetJobId() != j.GetId() {
		t.Fatalf("ocr[1].jobId = %q", r.GetOcr()[1].GetJobId())
	}
	assertNoSecret(t, res)
}

func TestListJobs(t *testing.T) {
	h := newHarness(t, Config{})
	var ids []string // oldest first
	for range 101 {
		ids = append(ids, h.create(t, "acme", createRequest()).GetId())
	}
	h.create(t, "globex", createRequest())
	if _, err := h.svc.CancelJob(as("acme"), &docjobsv1.CancelJobRequest{Id: ids[7]}); err != nil {
		t.Fatal(err)
	}

	list := func(t *testing.T, req *docjobsv1.ListJobsRequest) *docjobsv1.ListJobsResponse {
		t.Helper()
		page, err := h.svc.ListJobs(as("acme"), req)
		if err != nil {
			t.Fatal(err)
		}
		return page
	}

	t.Run("the default page holds 50 jobs, newest first", func(t *testing.T) {
		page := list(t, &docjobsv1.ListJobsRequest{})
		if len(page.GetJobs()) != 50 || page.GetNextPageToken() == "" {
			t.Fatalf("%d jobs, next %q; want 50 and a token", len(page.GetJobs()), page.GetNextPageToken())
		}
		if page.GetJobs()[0].GetId() != ids[100] {
			t.Fatalf("first job %s, want the newest %s", page.GetJobs()[0].GetId(), ids[100])
		}
		for _, j := range page.GetJobs() {
			assertNoSecret(t, j)
			if j.GetConsensus().Mode == nil {
				t.Fatalf("job %s lacks consensus.mode", j.GetId())
			}
		}
	})
	t.Run("a page size over 100 is clamped to 100", func(t *testing.T) {
		if n := len(list(t, &docjobsv1.ListJobsRequest{PageSize: 1000}).GetJobs()); n != 100 {
			t.Fatalf("%d jobs, want 100", n)
		}
	})
	t.Run("pages neither lose nor repeat jobs and hide other accounts", func(t *testing.T) {
		seen := map[string]bool{}
		token := ""
		for {
			page := list(t, &docjobsv1.ListJobsRequest{PageSize: 30, PageToken: token})
			for _, j := range page.GetJobs() {
				if seen[j.GetId()] || j.GetAccountId() != "acme" {
					t.Fatalf("job %s of %s repeated or foreign", j.GetId(), j.GetAccountId())
				}
				seen[j.GetId()] = true
			}
			if token = page.GetNextPageToken(); token == "" {
				break
			}
		}
		if len(seen) != 101 {
			t.Fatalf("saw %d jobs, want 101", len(seen))
		}
	})
	t.Run("statusEq filters", func(t *testing.T) {
		page := list(t, &docjobsv1.ListJobsRequest{StatusEq: docjobsv1.JobStatus_JOB_STATUS_CANCELLED})
		if len(page.GetJobs()) != 1 || page.GetJobs()[0].GetId() != ids[7] {
			t.Fatalf("cancelled jobs = %v, want only %s", page.GetJobs(), ids[7])
		}
	})

	rejected := []struct {
		name string
		req  *docjobsv1.ListJobsRequest
		msg  string
	}{
		{"a negative page size is rejected", &docjobsv1.ListJobsRequest{PageSize: -1}, "pageSize: must not be negative"},
		{"a corrupt page token is rejected", &docjobsv1.ListJobsRequest{PageToken: "not-a-token"}, "pageToken: invalid"},
		{"an unknown status number is rejected", &docjobsv1.ListJobsRequest{StatusEq: 77}, "statusEq: unknown value 77; use JOB_STATUS_NEW, JOB_STATUS_RUNNING, JOB_STATUS_COMPLETE, JOB_STATUS_FAILED or JOB_STATUS_CANCELLED"},
	}
	for _, tt := range rejected {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.svc.ListJobs(as("acme"), tt.req)
			wantStatus(t, err, codes.InvalidArgument, tt.msg)
		})
	}
	t.Run("another account's page token is rejected", func(t *testing.T) {
		token := list(t, &docjobsv1.ListJobsRequest{PageSize: 1}).GetNextPageToken()
		_, err := h.svc.ListJobs(as("globex"), &docjobsv1.ListJobsRequest{PageSize: 1, PageToken: token})
		wantStatus(t, err, codes.InvalidArgument, "pageToken: invalid")
	})
}

func TestCancelJob(t *testing.T) {
	h := newHarness(t, Config{})
	id := h.create(t, "acme", createRequest()).GetId()

	j, err := h.svc.CancelJob(as("acme"), &docjobsv1.CancelJobRequest{Id: id})
	if err != nil {
		t.Fatal(err)
	}
	if j.GetStatus() != docjobsv1.JobStatus_JOB_STATUS_CANCELLED {
		t.Fatalf("status = %v, want CANCELLED", j.GetStatus())
	}
	assertNoSecret(t, j)

	_, err = h.svc.CancelJob(as("acme"), &docjobsv1.CancelJobRequest{Id: id})
	wantStatus(t, err, codes.FailedPrecondition, "job already ended")

	_, err = h.svc.CancelJob(as("acme"), &docjobsv1.CancelJobRequest{Id: "no-such-job"})
	wantStatus(t, err, codes.NotFound, "job not found")
}

func TestDeleteJobRemovesTheJobAndItsStoredFiles(t *testing.T) {
	onEachStorage(t, func(t *testing.T, stor storage) {
		h := newHarnessWith(t, Config{}, openSQLite, stor)
		ctx := context.Background()
		id := h.create(t, "acme", createRequest("https://example.com/a", "https://example.com/b")).GetId()

		// Two stored copies: one in the bucket, one whose blob is already gone.
		for i, key := range []string{"jobs/" + id + "/0", "jobs/" + id + "/1"} {
			if i == 0 {
				if err := h.bucket.WriteAll(ctx, key, []byte("copy"), nil); err != nil {
					t.Fatal(err)
				}
			}
			f := job.File{ID: fmt.Sprintf("%s-f%d", id, i), AccountID: "acme", JobID: id, Name: "a", Size: 4, Key: key}
			if err := h.store.CreateFile(ctx, f); err != nil {
				t.Fatal(err)
			}
		}

		if _, err := h.svc.DeleteJob(as("acme"), &docjobsv1.DeleteJobRequest{Id: id}); err != nil {
			t.Fatal(err)
		}
		if ok, err := h.bucket.Exists(ctx, "jobs/"+id+"/0"); err != nil || ok {
			t.Fatalf("stored copy exists = %v (%v), want deleted", ok, err)
		}
		_, err := h.svc.GetJob(as("acme"), &docjobsv1.GetJobRequest{Id: id})
		wantStatus(t, err, codes.NotFound, "job not found")
		secrets, err := h.store.JobSecrets(ctx, id)
		if err != nil || len(secrets) != 0 {
			t.Fatalf("secrets after delete = %d (%v), want none", len(secrets), err)
		}
		_, err = h.svc.DeleteJob(as("acme"), &docjobsv1.DeleteJobRequest{Id: id})
		wantStatus(t, err, codes.NotFound, "job not found")
		if strings.Contains(h.logs.String(), "not removed") {
			t.Fatalf("a missing blob was logged as a failure:\n%s", h.logs.String())
		}
	})
}

func TestDeleteJobClearsItsFileRemovalOnlyOnceNothingIsLeft(t *testing.T) {
	tests := []struct {
		name string
		// arrange puts into the job's folder what the delete finds there.
		arrange  func(t *testing.T, h *harness, id string)
		folder   bool // left behind
		recorded bool // removal still recorded for the sweep
	}{
		{"a job whose files all go leaves no folder and no record", func(t *testing.T, h *harness, id string) {
			if err := h.bucket.WriteAll(context.Background(), "jobs/"+id+"/0-a", []byte("copy"), nil); err != nil {
				t.Fatal(err)
			}
		}, false, false},
		// A worker storing a copy for the job has made its folder and not yet
		// finished the file, which the listing does not show yet.
		{"a job whose folder cannot go yet stays recorded for the sweep", func(t *testing.T, h *harness, id string) {
			if err := os.MkdirAll(filepath.Join(h.bucketDir, "jobs", id, "being-written"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			onEachStore(t, func(t *testing.T, open opener) {
				h := newHarnessOn(t, Config{}, open)
				id := h.create(t, "acme", createRequest("https://example.com/a")).GetId()
				tt.arrange(t, h, id)
				if _, err := h.svc.DeleteJob(as("acme"), &docjobsv1.DeleteJobRequest{Id: id}); err != nil {
					t.Fatal(err)
				}
				_, err := os.Stat(filepath.Join(h.bucketDir, "jobs", id))
				if left := err == nil; left != tt.folder {
					t.Errorf("the job's folder left = %v (%v), want %v", left, err, tt.folder)
				}
				pending, err := h.store.PendingFileRemovals(context.Background(), time.Now().Add(time.Hour), 10)
				if err != nil {
					t.Fatal(err)
				}
				if recorded := len(pending) == 1 && pending[0].JobID == id && pending[0].AccountID == "acme"; recorded != tt.recorded || len(pending) > 1 {
					t.Errorf("removals recorded = %+v, want the job's = %v", pending, tt.recorded)
				}
			})
		})
	}
}

func TestInternalErrorsHideTheCauseBehindAnID(t *testing.T) {
	var path string
	h := newHarnessOn(t, Config{}, func(t *testing.T, log *slog.Logger) storetest.Store {
		t.Helper()
		path = filepath.Join(t.TempDir(), "docjobs.db")
		st, err := sqlite.Open(context.Background(), sqlite.Config{Path: path, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
	id := h.create(t, "acme", createRequest()).GetId()
	// A schema the binary does not know: an error the database answered
	// (a closed store is unavailable, not internal).
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`ALTER TABLE jobs RENAME COLUMN title TO title_renamed`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	_, err = h.svc.GetJob(as("acme"), &docjobsv1.GetJobRequest{Id: id})
	st, _ := status.FromError(err)
	m := regexp.MustCompile(`^internal error \(id=([0-9a-f]{16})\)$`).FindStringSubmatch(st.Message())
	if st.Code() != codes.Internal || m == nil {
		t.Fatalf("error = %v, want Internal with only an error id", err)
	}
	logs := h.logs.String()
	var line string
	for l := range strings.Lines(logs) {
		if strings.Contains(l, `"error_id":"`+m[1]+`"`) {
			line = l
		}
	}
	if !strings.Contains(line, "no such column") || !strings.Contains(line, id) {
		t.Fatalf("no log line with error id %s, its cause and the job id:\n%s", m[1], logs)
	}
}

// A database that cannot be reached is no internal error: the service
// hands the store's error on, matching store.ErrUnavailable and not yet a
// status, for the edge to answer UNAVAILABLE with a retry delay.
func TestAnUnreachableDatabaseIsHandedOnAsUnavailable(t *testing.T) {
	h := newHarness(t, Config{})
	id := h.create(t, "acme", createRequest()).GetId()
	if err := h.store.Close(); err != nil {
		t.Fatal(err)
	}
	calls := map[string]func() error{
		"GetJob": func() error { _, err := h.svc.GetJob(as("acme"), &docjobsv1.GetJobRequest{Id: id}); return err },
		"GetJobResult": func() error {
			_, err := h.svc.GetJobResult(as("acme"), &docjobsv1.GetJobResultRequest{Id: id})
			return err
		},
		"ListJobs":  func() error { _, err := h.svc.ListJobs(as("acme"), &docjobsv1.ListJobsRequest{}); return err },
		"CreateJob": func() error { _, err := h.svc.CreateJob(as("acme"), createRequest()); return err },
	}
	for name, call := range calls {
		err := call()
		if _, isStatus := status.FromError(err); isStatus || !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s: %v, want the store's error matching store.ErrUnavailable", name, err)
		}
	}
}

func TestStoreUploadAndOpenFile(t *testing.T) {
	onEachStorage(t, func(t *testing.T, stor storage) {
		h := newHarnessWith(t, Config{UploadMaxBytes: 1 << 10}, openSQLite, stor)
		ctx := as("acme")
		content := "Quarterly report\n\nRevenue grew.\n"

		f, u, err := h.svc.StoreUpload(ctx, "report.txt", strings.NewReader(content))
		if err != nil {
			t.Fatal(err)
		}
		if u != testPublicURL+"/v1/files/"+f.ID || f.Name != "report.txt" || f.Size != int64(len(content)) || f.AccountID != "acme" {
			t.Fatalf("file %+v at %s", f, u)
		}
		if !strings.HasPrefix(f.ContentType, "text/plain") {
			t.Errorf("content type %q, want text/plain sniffed from the bytes", f.ContentType)
		}
		if f.Key != "uploads/acme/"+f.ID {
			t.Errorf("key %q, want uploads/acme/%s", f.Key, f.ID)
		}

		got, r, err := h.svc.OpenFile(ctx, f.ID)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		_ = r.Close()
		if err != nil || string(b) != content || got.ID != f.ID {
			t.Fatalf("OpenFile read %q, %v", b, err)
		}

		if _, _, err := h.svc.OpenFile(as("globex"), f.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("another account opened the file: %v", err)
		}
		if _, _, err := h.svc.OpenFile(ctx, "no-such-file"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("OpenFile of a missing file = %v, want ErrNotFound", err)
		}
	})
}

func TestDeleteFileDeletesTheAccountsUpload(t *testing.T) {
	onEachStorage(t, func(t *testing.T, stor storage) {
		h := newHarnessWith(t, Config{}, openSQLite, stor)
		ctx := as("acme")
		f, u, err := h.svc.StoreUpload(ctx, "contract.txt", strings.NewReader("confidential"))
		if err != nil {
			t.Fatal(err)
		}
		// A job created before the delete keeps its source; its own copy is
		// made when it reads the file (internal/fetch).
		before := h.create(t, "acme", createRequest(u))

		t.Run("another account's upload is not found and stays", func(t *testing.T) {
			_, err := h.svc.DeleteFile(as("globex"), &docjobsv1.DeleteFileRequest{Id: f.ID})
			wantStatus(t, err, codes.NotFound, "file not found")
			if ok, err := h.bucket.Exists(context.Background(), f.Key); !ok || err != nil {
				t.Fatalf("the upload's bytes after another account's delete: %v, %v", ok, err)
			}
		})
		t.Run("an unknown id is not found", func(t *testing.T) {
			_, err := h.svc.DeleteFile(ctx, &docjobsv1.DeleteFileRequest{Id: "no-such-file"})
			wantStatus(t, err, codes.NotFound, "file not found")
		})

		if _, err := h.svc.DeleteFile(ctx, &docjobsv1.DeleteFileRequest{Id: f.ID}); err != nil {
			t.Fatalf("DeleteFile by its owner: %v", err)
		}
		if ok, err := h.bucket.Exists(context.Background(), f.Key); ok || err != nil {
			t.Errorf("the upload's bytes after delete: exists %v (%v)", ok, err)
		}
		// It was acme's only upload: on file:// storage its folder goes with it.
		if h.bucketDir != "" {
			if _, err := os.Stat(filepath.Join(h.bucketDir, "uploads", "acme")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("acme's upload folder after its last upload was deleted: %v, want it gone", err)
			}
		}
		if _, _, err := h.svc.OpenFile(ctx, f.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("OpenFile after delete = %v, want ErrNotFound", err)
		}
		_, err = getFile(ctx, h.svc, f.ID)
		wantStatus(t, err, codes.NotFound, "file not found")
		_, err = h.svc.CreateJob(ctx, createRequest(u))
		wantStatus(t, err, codes.InvalidArgument, "sourceUrls[0]: file not found")
		_, err = h.svc.DeleteFile(ctx, &docjobsv1.DeleteFileRequest{Id: f.ID})
		wantStatus(t, err, codes.NotFound, "file not found")
		if _, err := h.svc.GetJob(ctx, &docjobsv1.GetJobRequest{Id: before.GetId()}); err != nil {
			t.Errorf("the job created before the delete: %v", err)
		}
	})
}

func TestDeleteFileRefusesAJobsCopy(t *testing.T) {
	h := newHarness(t, Config{})
	j := h.create(t, "acme", createRequest())
	cp := job.File{ID: "copy-1", AccountID: "acme", JobID: j.GetId(), Name: "a.txt", Key: "jobs/" + j.GetId() + "/0-copy-1"}
	if err := h.bucket.WriteAll(context.Background(), cp.Key, []byte("hello"), nil); err != nil {
		t.Fatal(err)
	}
	if err := h.store.CreateFile(context.Background(), cp); err != nil {
		t.Fatal(err)
	}

	_, err := h.svc.DeleteFile(as("acme"), &docjobsv1.DeleteFileRequest{Id: cp.ID})
	wantStatus(t, err, codes.FailedPrecondition,
		"file is a stored copy of job "+j.GetId()+" and is deleted with its job")
	if _, r, err := h.svc.OpenFile(as("acme"), cp.ID); err != nil {
		t.Errorf("the job's copy after a refused delete: %v", err)
	} else {
		_ = r.Close()
	}
	// Another account learns nothing about the copy, not even that it is one.
	_, err = h.svc.DeleteFile(as("globex"), &docjobsv1.DeleteFileRequest{Id: cp.ID})
	wantStatus(t, err, codes.NotFound, "file not found")
}

func TestStoreUploadAcceptsExactlyTheLimit(t *testing.T) {
	h := newHarness(t, Config{UploadMaxBytes: 1 << 10})
	f, _, err := h.svc.StoreUpload(as("acme"), "a.bin", bytes.NewReader(make([]byte, 1<<10)))
	if err != nil || f.Size != 1<<10 {
		t.Fatalf("StoreUpload = %+v, %v; want 1024 bytes stored", f, err)
	}
}

// countingReader yields zero bytes forever and counts what was read.
type countingReader struct{ n int64 }

func (c *countingReader) Read(p []byte) (int, error) {
	clear(p)
	c.n += int64(len(p))
	return len(p), nil
}

func TestStoreUploadOverTheLimitKeepsNothing(t *testing.T) {
	onEachStorage(t, func(t *testing.T, stor storage) {
		const limit = 64 << 10
		h := newHarnessWith(t, Config{UploadMaxBytes: limit}, openSQLite, stor)
		body := &countingReader{}
		_, _, err := h.svc.StoreUpload(as("acme"), "big.bin", body)
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("StoreUpload = %v, want ErrTooLarge", err)
		}
		// The body is streamed: reading stops right after the limit instead of
		// draining (or holding) the whole body.
		if body.n > limit+64<<10 {
			t.Fatalf("read %d bytes of an endless body, want to stop near the %d limit", body.n, limit)
		}
		iter := h.bucket.List(&blob.ListOptions{Prefix: "uploads/"})
		if obj, err := iter.Next(context.Background()); err != io.EOF {
			t.Fatalf("bucket holds %v (%v) after a refused upload", obj, err)
		}
	})
}

// TestStoreUploadOfMultipartSizeOnS3 takes uploads past the size at which
// s3blob's writer turns to a multipart upload (16 MiB): one within the
// limit is stored whole; one over it, and one whose client goes away, are
// aborted and leave neither an object nor an unfinished multipart upload, whose parts S3 would keep (and
// bill) until a lifecycle rule expired them.
func TestStoreUploadOfMultipartSizeOnS3(t *testing.T) {
	const limit = 20 << 20
	h := newHarnessWith(t, Config{UploadMaxBytes: limit}, openSQLite, s3Storage)
	content := bytes.Repeat([]byte("0123456789abcdef"), limit/16)

	f, _, err := h.svc.StoreUpload(as("acme"), "big.txt", bytes.NewReader(content))
	if err != nil {
		t.Fatalf("StoreUpload of %d bytes: %v", len(content), err)
	}
	_, r, err := h.svc.OpenFile(as("acme"), f.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	_ = r.Close()
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("OpenFile read %d bytes (%v), want the %d uploaded", len(got), err, len(content))
	}

	if _, _, err := h.svc.StoreUpload(as("acme"), "endless.bin", &countingReader{}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("StoreUpload of an endless body = %v, want ErrTooLarge", err)
	}
	broken := errors.New("client went away")
	if _, _, err := h.svc.StoreUpload(as("acme"), "cut.bin", &failingReader{left: 18 << 20, err: broken}); !errors.Is(err, broken) {
		t.Fatalf("StoreUpload of a body broken after 18 MiB = %v, want its error", err)
	}
	if keys := h.s3.Keys(t, h.s3Bucket); !slices.Equal(keys, []string{f.Key}) {
		t.Errorf("bucket holds %q, want only the stored upload %s", keys, f.Key)
	}
}

// failingReader breaks off after some bytes, like a client that disconnects.
type failingReader struct {
	left int
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.left == 0 {
		return 0, f.err
	}
	n := min(len(p), f.left)
	f.left -= n
	return n, nil
}

func TestStoreUploadPassesABrokenBodyOnAndKeepsNothing(t *testing.T) {
	onEachStorage(t, func(t *testing.T, stor storage) {
		h := newHarnessWith(t, Config{}, openSQLite, stor)
		broken := errors.New("client went away")
		_, _, err := h.svc.StoreUpload(as("acme"), "a.bin", &failingReader{left: 10 << 10, err: broken})
		if !errors.Is(err, broken) {
			t.Fatalf("StoreUpload = %v, want the body's error wrapped", err)
		}
		iter := h.bucket.List(&blob.ListOptions{Prefix: "uploads/"})
		if obj, err := iter.Next(context.Background()); err != io.EOF {
			t.Fatalf("bucket holds %v (%v) after a broken upload", obj, err)
		}
	})
}

func TestUploadNamesAreCleanedAlikeOverBothTransports(t *testing.T) {
	h := newHarness(t, Config{})
	tests := []struct{ name, sent, want string }{
		{"a plain name is kept", "report.pdf", "report.pdf"},
		{"no name is upload", "", "upload"},
		{"a slash path keeps its last element", "../../etc/passwd", "passwd"},
		{"a backslash path keeps its last element", `C:\Users\me\report.pdf`, "report.pdf"},
		{"a folder name is upload", "dir/", "upload"},
		{"dot-dot is upload", "..", "upload"},
		{"control characters are dropped", "a\x00b\r\nX\tc.txt", "abXc.txt"},
		{"surrounding spaces are trimmed", "  spaced.txt  ", "spaced.txt"},
		{"256 ASCII bytes are cut to 255", strings.Repeat("x", 256), strings.Repeat("x", 255)},
		{"a long name is cut on a character boundary", strings.Repeat("é", 200) + ".txt", strings.Repeat("é", 127)},
		{"bytes that are not UTF-8 are dropped", "a\xffb.txt", "ab.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _, err := h.svc.StoreUpload(as("acme"), tt.sent, strings.NewReader("x"))
			if err != nil || f.Name != tt.want {
				t.Errorf("StoreUpload stored %q (%v), want %q", f.Name, err, tt.want)
			}
			if !utf8.ValidString(tt.sent) {
				return // a proto string field cannot carry it
			}
			up, err := upload(as("acme"), h.svc, &docjobsv1.UploadFileRequest{Name: tt.sent, Content: []byte("x")})
			if err != nil || up.GetName() != tt.want {
				t.Errorf("UploadFile stored %q (%v), want %q", up.GetName(), err, tt.want)
			}
		})
	}
}

func TestUploadFileAndGetFileOverGRPC(t *testing.T) {
	h := newHarness(t, Config{UploadMaxBytes: 1 << 10})
	ctx := as("acme")
	html := []byte("<html><body><h1>Invoice</h1></body></html>")

	// The content comes in pieces; the first message may carry none.
	up, err := upload(ctx, h.svc,
		&docjobsv1.UploadFileRequest{Name: "invoice.html"},
		&docjobsv1.UploadFileRequest{Content: html[:10]},
		&docjobsv1.UploadFileRequest{Name: "ignored.txt", Content: html[10:]})
	if err != nil {
		t.Fatal(err)
	}
	id, ok := ParseFileURL(testPublicURL, up.GetUrl())
	if !ok || up.GetName() != "invoice.html" || up.GetSizeBytes() != int64(len(html)) {
		t.Fatalf("upload = %v", up)
	}

	msgs, err := getFile(ctx, h.svc, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || !bytes.Equal(msgs[0].GetData(), html) || !strings.HasPrefix(msgs[0].GetContentType(), "text/html") {
		t.Fatalf("GetFile = %v", msgs)
	}

	_, err = getFile(as("globex"), h.svc, id)
	wantStatus(t, err, codes.NotFound, "file not found")

}

func TestUploadFileRefusals(t *testing.T) {
	h := newHarness(t, Config{UploadMaxBytes: 1 << 10})
	idleCut := status.Error(codes.DeadlineExceeded, "the upload sent nothing for 1m0s")
	piece := &docjobsv1.UploadFileRequest{Content: make([]byte, 400)}
	tests := []struct {
		name     string
		msgs     []*docjobsv1.UploadFileRequest
		end      error // what Recv returns after msgs; nil is io.EOF
		wantCode codes.Code
		wantMsg  string
	}{
		// REST's code and words (413): the same condition, the same answer.
		{"a file over the limit across pieces is RESOURCE_EXHAUSTED like over REST",
			[]*docjobsv1.UploadFileRequest{{Name: "big"}, piece, piece, piece}, nil,
			codes.ResourceExhausted, "file exceeds the upload limit of 1024 bytes"},
		{"a file over the limit in its first message is RESOURCE_EXHAUSTED",
			[]*docjobsv1.UploadFileRequest{{Name: "big", Content: make([]byte, 1025)}}, nil,
			codes.ResourceExhausted, "file exceeds the upload limit of 1024 bytes"},
		{"an empty stream is InvalidArgument", nil, nil,
			codes.InvalidArgument, "name: the upload stream sent no message"},
		// The edge cuts a stream idle too long (internal/server); the
		// partial file goes and the client gets the edge's status as it is.
		{"a stream cut mid-file for idleness answers the cut's status",
			[]*docjobsv1.UploadFileRequest{{Name: "slow"}, piece, piece}, idleCut,
			codes.DeadlineExceeded, "the upload sent nothing for 1m0s"},
		{"a stream cut before its first message answers the cut's status", nil, idleCut,
			codes.DeadlineExceeded, "the upload sent nothing for 1m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &uploadStreamFake{ctx: as("acme"), msgs: tt.msgs, end: tt.end}
			wantStatus(t, h.svc.UploadFile(st), tt.wantCode, tt.wantMsg)
			iter := h.bucket.List(&blob.ListOptions{Prefix: "uploads/"})
			if obj, err := iter.Next(context.Background()); err != io.EOF {
				t.Fatalf("bucket holds %v (%v) after a refused upload", obj, err)
			}
		})
	}
}

func TestGetFileStreamsTheFileInPieces(t *testing.T) {
	onEachStorage(t, func(t *testing.T, stor storage) {
		h := newHarnessWith(t, Config{UploadMaxBytes: 8 << 20}, openSQLite, stor)
		ctx := as("acme")
		// Above grpc's default 4 MiB message limit, so one message could not
		// carry it to a default client.
		content := bytes.Repeat([]byte("0123456789abcdef"), (5<<20)/16+1)
		tests := []struct {
			name       string
			content    []byte
			wantPieces []int // the length of each message's data
		}{
			{"a file above 4 MiB comes in 1 MiB pieces", content, []int{1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20, 16}},
			{"a file of exactly one piece is one message", content[:1<<20], []int{1 << 20}},
			{"a small file is one message", []byte("hello"), []int{5}},
			{"an empty file is one message with its content type", nil, []int{0}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				f, _, err := h.svc.StoreUpload(ctx, "a.txt", bytes.NewReader(tt.content))
				if err != nil {
					t.Fatal(err)
				}
				msgs, err := getFile(ctx, h.svc, f.ID)
				if err != nil {
					t.Fatal(err)
				}
				var got []byte
				var pieces []int
				for i, m := range msgs {
					got = append(got, m.GetData()...)
					pieces = append(pieces, len(m.GetData()))
					if (i == 0) != (m.GetContentType() != "") {
						t.Errorf("message %d has content type %q; want it on the first message only", i, m.GetContentType())
					}
				}
				if !bytes.Equal(got, tt.content) || !slices.Equal(pieces, tt.wantPieces) {
					t.Errorf("got %d bytes in pieces %v, want %d bytes in %v", len(got), pieces, len(tt.content), tt.wantPieces)
				}
				if msgs[0].GetContentType() != f.ContentType {
					t.Errorf("content type %q, want the stored %q", msgs[0].GetContentType(), f.ContentType)
				}
			})
		}
	})
}

// getFile runs the gRPC download of id and returns the messages sent.
func getFile(ctx context.Context, svc *Service, id string) ([]*httpbody.HttpBody, error) {
	st := &downloadStreamFake{ctx: ctx}
	err := svc.GetFile(&docjobsv1.GetFileRequest{Id: id}, st)
	return st.msgs, err
}

type downloadStreamFake struct {
	grpc.ServerStream // only the methods below are called
	ctx               context.Context
	msgs              []*httpbody.HttpBody
}

func (f *downloadStreamFake) Context() context.Context { return f.ctx }

func (f *downloadStreamFake) Send(m *httpbody.HttpBody) error {
	f.msgs = append(f.msgs, proto.Clone(m).(*httpbody.HttpBody))
	return nil
}

// upload runs the gRPC upload over msgs as a client stream would send them.
func upload(ctx context.Context, svc *Service, msgs ...*docjobsv1.UploadFileRequest) (*docjobsv1.UploadFileResponse, error) {
	st := &uploadStreamFake{ctx: ctx, msgs: msgs}
	if err := svc.UploadFile(st); err != nil {
		return nil, err
	}
	return st.resp, nil
}

type uploadStreamFake struct {
	grpc.ServerStream // only the methods below are called
	ctx               context.Context
	msgs              []*docjobsv1.UploadFileRequest
	end               error // after msgs; nil is io.EOF
	resp              *docjobsv1.UploadFileResponse
}

func (f *uploadStreamFake) Context() context.Context { return f.ctx }

func (f *uploadStreamFake) Recv() (*docjobsv1.UploadFileRequest, error) {
	if len(f.msgs) == 0 {
		if f.end != nil {
			return nil, f.end
		}
		return nil, io.EOF
	}
	m := f.msgs[0]
	f.msgs = f.msgs[1:]
	return m, nil
}

func (f *uploadStreamFake) SendAndClose(r *docjobsv1.UploadFileResponse) error {
	f.resp = r
	return nil
}

func TestNewRejectsAnIncompleteSetup(t *testing.T) {
	ok := Deps{
		Store: &sqlite.Store{}, Sealer: &secret.Sealer{}, Bucket: &blob.Bucket{},
		FirstStage: func(string, int) []river.InsertManyParams { return nil },
	}
	tests := []struct {
		name   string
		cfg    Config
		mutate func(d *Deps)
		want   string
	}{
		{"a relative public URL", Config{PublicURL: "localhost:8080"}, func(*Deps) {}, "PublicURL"},
		{"a negative upload limit", Config{PublicURL: testPublicURL, UploadMaxBytes: -1}, func(*Deps) {}, "UploadMaxBytes"},
		{"a negative active jobs limit", Config{PublicURL: testPublicURL, AccountMaxActiveJobs: -1}, func(*Deps) {}, "account limits"},
		{"a negative upload quota", Config{PublicURL: testPublicURL, AccountMaxUploadBytes: -1}, func(*Deps) {}, "account limits"},
		{"no store", Config{PublicURL: testPublicURL}, func(d *Deps) { d.Store = nil }, "Store"},
		{"no sealer", Config{PublicURL: testPublicURL}, func(d *Deps) { d.Sealer = nil }, "Sealer"},
		{"no bucket", Config{PublicURL: testPublicURL}, func(d *Deps) { d.Bucket = nil }, "Bucket"},
		{"no first stage", Config{PublicURL: testPublicURL}, func(d *Deps) { d.FirstStage = nil }, "FirstStage"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is refused", func(t *testing.T) {
			d := ok
			tt.mutate(&d)
			if _, err := New(tt.cfg, d); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New() = %v, want an error naming %s", err, tt.want)
			}
		})
	}
	t.Run("an upload limit of 0 means the default", func(t *testing.T) {
		s, err := New(Config{PublicURL: testPublicURL + "/"}, ok)
		if err != nil {
			t.Fatal(err)
		}
		if s.cfg.UploadMaxBytes != DefaultUploadMaxBytes || s.cfg.PublicURL != testPublicURL {
			t.Fatalf("config = %+v", s.cfg)
		}
	})
}

func TestGetJobResultIsBoundedAndPointsToTheStreamedEndpoint(t *testing.T) {
	h := newHarness(t, Config{})
	j := h.create(t, "acme", createRequest("https://example.com/a", "https://example.com/b"))
	for i, text := range []string{strings.Repeat("a", 3000), strings.Repeat("b", 5000)} {
		ocr := job.OCRRow{JobID: j.GetId(), FileIndex: i, File: fmt.Sprint("f", i), Status: job.RowDone, Content: text}
		if _, err := h.store.FinishOCR(context.Background(), store.OCRDone{Row: ocr,
			LLM: []job.LLMRow{job.SkippedLLMRow(ocr, job.SkipNoPrompt, "")}}); err != nil {
			t.Fatal(err)
		}
	}
	// The size of the whole answer, read without a tight bound.
	req := &docjobsv1.GetJobResultRequest{Id: j.GetId()}
	res, err := h.svc.GetJobResult(as("acme"), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.GetResult().GetOcr()) != 2 || len(res.GetResult().GetLlm()) != 2 {
		t.Fatalf("result has %d ocr and %d llm rows, want 2 and 2", len(res.GetResult().GetOcr()), len(res.GetResult().GetLlm()))
	}
	size := proto.Size(res)

	for _, tc := range []struct {
		name  string
		limit int
		want  codes.Code
	}{
		{"an answer of exactly the limit is sent", size, codes.OK},
		{"an answer one byte over the limit is refused", size - 1, codes.ResourceExhausted},
		{"the first large row is enough to refuse", 4000, codes.ResourceExhausted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, err := New(Config{PublicURL: testPublicURL, MaxResultMessageBytes: tc.limit}, Deps{
				Store: h.store, Sealer: h.sealer, Bucket: h.bucket,
				FirstStage: func(string, int) []river.InsertManyParams { return nil },
			})
			if err != nil {
				t.Fatal(err)
			}
			_, err = svc.GetJobResult(as("acme"), req)
			if got := status.Code(err); got != tc.want {
				t.Fatalf("code = %v (%v), want %v", got, err, tc.want)
			}
			if tc.want == codes.OK {
				return
			}
			if msg := status.Convert(err).Message(); !strings.Contains(msg, "GET /v1/jobs/"+j.GetId()+"/result") {
				t.Errorf("message %q does not point to the REST endpoint", msg)
			}
		})
	}
}

// An account's uploads go in a folder named by the account, which on local
// storage is a file name: one escaped past 255 bytes failed every upload
// as an internal error. A long name's folder is its hash instead.
func TestAnAccountWithALongNameUploads(t *testing.T) {
	long := strings.Repeat("é", 100) // 200 bytes, 600 escaped
	onEachStorage(t, func(t *testing.T, stor storage) {
		h := newHarnessWith(t, Config{UploadMaxBytes: 1 << 10}, openSQLite, stor)
		ctx := as(long)
		f, _, err := h.svc.StoreUpload(ctx, "a.txt", strings.NewReader("hello"))
		if err != nil {
			t.Fatalf("an upload of an account of 100 é: %v", err)
		}
		if want := "uploads/" + UploadFolder(long) + "/" + f.ID; f.Key != want {
			t.Errorf("key %q, want %q", f.Key, want)
		}
		_, r, err := h.svc.OpenFile(ctx, f.ID)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		_ = r.Close()
		if err != nil || string(b) != "hello" {
			t.Fatalf("read back %q, %v", b, err)
		}
	})
}

func TestUploadFolder(t *testing.T) {
	at200 := strings.Repeat("a", 200)
	tests := []struct {
		name, account, want string
	}{
		{"a plain name is itself", "acme", "acme"},
		{"a name that needs escaping is escaped", "a b/c", "a%20b%2Fc"},
		{"an escaped name of 200 bytes is kept", at200, at200},
		{"one of 201 bytes is hashed", at200 + "b", "sha256-" + sha256Hex(at200+"b")},
		{"a long name outside ASCII is hashed", strings.Repeat("é", 34), "sha256-" + sha256Hex(strings.Repeat("é", 34))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := UploadFolder(tt.account)
			if got != tt.want {
				t.Errorf("UploadFolder(%q) = %q, want %q", tt.account, got, tt.want)
			}
			if len(got) > maxUploadFolder+7 {
				t.Errorf("folder of %d bytes", len(got))
			}
		})
	}
}

// recordAnswers is a store whose CreateUpload answers err: after
// committing the record (a connection cut at COMMIT loses only the answer)
// or instead of it; and whose GetFile fails with lookErr when set.
type recordAnswers struct {
	storetest.Store
	commit  bool
	err     error
	lookErr error
}

func (r *recordAnswers) CreateUpload(ctx context.Context, f job.File, maxBytes int64) error {
	if r.commit {
		if err := r.Store.CreateUpload(ctx, f, maxBytes); err != nil {
			return err
		}
	}
	return r.err
}

func (r *recordAnswers) GetFile(ctx context.Context, accountID, id string) (job.File, error) {
	if r.lookErr != nil {
		return job.File{}, r.lookErr
	}
	return r.Store.GetFile(ctx, accountID, id)
}

// An error from the upload's record need not mean nothing committed: the
// bytes were deleted whatever it meant, and a record whose commit only
// lost its answer named a file that was gone.
func TestAnUploadWhoseRecordAnsweredAnErrorKeepsWhatItsRecordNeeds(t *testing.T) {
	cut := errors.New("conn closed while committing")
	tests := []struct {
		name          string
		store         recordAnswers
		wantErr       bool
		wantBytesKept bool
	}{
		{"recorded, its answer lost: the upload is the account's", recordAnswers{commit: true, err: cut}, false, true},
		{"not recorded: the bytes go", recordAnswers{err: cut}, true, false},
		{"not known whether recorded: the bytes stay for the sweep", recordAnswers{err: cut, lookErr: errors.New("database unreachable")}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.store
			h := newHarnessOn(t, Config{UploadMaxBytes: 1 << 10}, func(t *testing.T, log *slog.Logger) storetest.Store {
				st.Store = openSQLite(t, log)
				return &st
			})
			ctx := as("acme")
			f, _, err := h.svc.StoreUpload(ctx, "a.txt", strings.NewReader("hello"))
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("StoreUpload: %v, want an error: %v", err, tt.wantErr)
			}
			keys := blobtest.Keys(t, h.bucket, "uploads/")
			if kept := len(keys) == 1; kept != tt.wantBytesKept {
				t.Fatalf("stored under uploads/: %q, want the bytes kept: %v", keys, tt.wantBytesKept)
			}
			if !tt.wantErr {
				_, r, err := h.svc.OpenFile(ctx, f.ID)
				if err != nil {
					t.Fatalf("OpenFile of the upload: %v", err)
				}
				_ = r.Close()
			}
		})
	}
}

// A write cancelled while its multipart upload was being created leaves
// an upload the client has no id for: abort finds it by its key.
func TestAbortFindsAMultipartUploadWhoseIDWasNeverRead(t *testing.T) {
	h := newHarnessWith(t, Config{}, openSQLite, s3Storage)
	var client *s3.Client
	if !h.bucket.As(&client) {
		t.Fatal("the S3 bucket has no *s3.Client")
	}
	ctx := context.Background()
	bucket, key, other := h.s3Bucket, "uploads/acme/lost", "uploads/acme/lost-not"
	for _, k := range []string{key, other} {
		if _, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &k}); err != nil {
			t.Fatal(err)
		}
	}
	u := s3Upload{bucket: &bucket, key: &key}
	if err := u.abort(ctx, h.bucket, context.Canceled); err != nil {
		t.Fatalf("abort: %v", err)
	}
	out, err := client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &bucket})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, up := range out.Uploads {
		left = append(left, *up.Key)
	}
	if !slices.Equal(left, []string{other}) {
		t.Errorf("multipart uploads left: %q, want only the other key's", left)
	}
}
