package api

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// storedJob reads a job as the store keeps it.
func (h *harness) storedJob(t *testing.T, id string) *job.Job {
	t.Helper()
	j, err := h.store.GetJob(context.Background(), "", id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// A copy of the database must not let anyone test guesses of a job's
// secrets: they enter the stored request hash only through HMAC under a
// key the database holds sealed.
func TestTheStoredRequestHashKeysItsSecrets(t *testing.T) {
	h := newHarness(t, Config{})
	req := createRequest()
	req.IdempotencyKey = "keyed"
	created := h.create(t, "acme", req)
	stored := h.storedJob(t, created.GetId()).RequestHash

	plain, err := requestHash(req, sha256Hex)
	if err != nil {
		t.Fatal(err)
	}
	if stored == plain {
		t.Fatal("the stored hash is the one plain SHA-256 digests of the secrets give")
	}
	sealed, err := h.store.ServiceKey(context.Background(), requestHashKeyName, []byte("not used: a key is stored"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := h.sealer.Open(sealed, "", "", requestHashKeyName)
	if err != nil {
		t.Fatalf("the stored key does not open with the master keyset: %v", err)
	}
	if keyed, _ := requestHash(req, keyedDigest(key)); stored != keyed {
		t.Errorf("stored hash %s, want the one keyed by the stored key %s", stored, keyed)
	}
	if strings.Contains(string(sealed), string(key)) {
		t.Error("the stored key holds the key in the clear")
	}
}

// Every API process that shares the database keys alike, so a replay
// reaching another process still finds its job.
func TestAReplayThroughAnotherServiceOnTheSameDatabaseReturnsTheJob(t *testing.T) {
	h := newHarness(t, Config{})
	req := createRequest()
	req.IdempotencyKey = "two-processes"
	first := h.create(t, "acme", req)

	other, err := New(Config{PublicURL: testPublicURL}, Deps{
		Store: h.store, Sealer: h.sealer, Bucket: h.bucket,
		FirstStage: func(string, int) []river.InsertManyParams { return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	again, err := other.CreateJob(as("acme"), req)
	if err != nil {
		t.Fatal(err)
	}
	if again.GetId() != first.GetId() {
		t.Fatalf("the other service made job %s, want the replay of %s", again.GetId(), first.GetId())
	}
	changed := createRequest()
	changed.IdempotencyKey = req.IdempotencyKey
	changed.WebhookSecret = "another secret"
	_, err = other.CreateJob(as("acme"), changed)
	wantStatus(t, err, codes.InvalidArgument, "idempotency key reused with different request parameters")
}

// Jobs created before secrets were keyed into the hash hold the plain
// one; replaying them must still return them.
func TestAReplayOfAJobHashedBeforeKeyingReturnsTheJob(t *testing.T) {
	h := newHarness(t, Config{})
	req := createRequest()
	req.IdempotencyKey = "from-before"
	legacy, err := requestHash(req, sha256Hex)
	if err != nil {
		t.Fatal(err)
	}
	replaysTheJobHashed(t, h, req, legacy, func(r *docjobsv1.CreateJobRequest) { r.Title = "changed" })
}

// replaysTheJobHashed stores a job as an earlier release made it for req,
// with hash, and checks that req replays it and req changed does not.
func replaysTheJobHashed(t *testing.T, h *harness, req *docjobsv1.CreateJobRequest, hash string, change func(*docjobsv1.CreateJobRequest)) {
	t.Helper()
	old := &job.Job{ID: "job-before", AccountID: "acme", Status: job.StatusNew, SourceURLs: req.GetSourceUrls(),
		ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", IdempotencyKey: req.GetIdempotencyKey(), RequestHash: hash,
		Created: time.Now().UTC()}
	if _, _, err := h.store.CreateJob(context.Background(), store.CreateJobParams{Job: old}); err != nil {
		t.Fatal(err)
	}
	again, err := h.svc.CreateJob(as("acme"), req)
	if err != nil {
		t.Fatal(err)
	}
	if again.GetId() != old.ID {
		t.Fatalf("replay made job %s, want %s", again.GetId(), old.ID)
	}
	changed := proto.CloneOf(req)
	change(changed)
	_, err = h.svc.CreateJob(as("acme"), changed)
	wantStatus(t, err, codes.InvalidArgument, "idempotency key reused with different request parameters")
}

// asSpelledBefore2211 is the request hash of releases before 2026-11-23
// 22:00, written out as they computed it: the request as the client spelled
// it, each secret a plain SHA-256.
func asSpelledBefore2211(t *testing.T, req *docjobsv1.CreateJobRequest) string {
	t.Helper()
	c := proto.CloneOf(req)
	c.Neural.ApiKey = sha256Hex(c.GetNeural().GetApiKey())
	c.Ocr.ProviderKey = sha256Hex(c.GetOcr().GetProviderKey())
	c.WebhookSecret = sha256Hex(c.GetWebhookSecret())
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return sha256Hex(string(b))
}

// The first releases hashed a create as spelled: one that left the chunk
// budget out (the README's own example) hashed otherwise than today's
// normalised form, and its retry after an upgrade got a 400.
func TestAReplayOfAJobHashedAsSpelledReturnsTheJob(t *testing.T) {
	h := newHarness(t, Config{})
	req := createRequest()
	req.IdempotencyKey = "from-the-first-release"
	req.Neural.ChunkBudgetTokens = 0
	oldHash := asSpelledBefore2211(t, req)
	if plain, _ := requestHash(req, sha256Hex); plain == oldHash {
		t.Fatal("the request hashes alike both ways: the test proves nothing")
	}
	replaysTheJobHashed(t, h, req, oldHash, func(r *docjobsv1.CreateJobRequest) { r.Neural.ChunkBudgetTokens = 1000 })
}
