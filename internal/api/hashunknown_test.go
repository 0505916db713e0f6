package api

import (
	"bytes"
	"context"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
)

// fullRequest sets every kind of field the hash reads: secrets, prompts,
// metadata (a map), merge and consensus (nested messages).
func fullRequest() *docjobsv1.CreateJobRequest {
	r := createRequest("https://example.com/a.txt", "https://example.com/b.pdf")
	r.Title = "invoices"
	r.Metadata = map[string]string{"team": "billing", "batch": "7"}
	r.Prompts = []string{"total?", "vendor?"}
	r.ResponseSchema = `{"type":"object","properties":{"total":{"type":"number"}}}`
	three := docjobsv1.ConsensusMode_CONSENSUS_MODE_THREE_RUNS
	r.Consensus = &docjobsv1.ConsensusOptions{Mode: &three}
	r.Merge = &docjobsv1.MergeOptions{Enabled: true, DedupeBy: []string{"id"}}
	r.IdempotencyKey = "full"
	return r
}

// withUnknown returns a copy of req carrying unknown fields (numbers no
// release defines) at the top level and in each nested message, as a
// client built on a newer proto sends them over gRPC.
func withUnknown(req *docjobsv1.CreateJobRequest) *docjobsv1.CreateJobRequest {
	c := proto.CloneOf(req)
	add := func(m protoreflect.Message, num protowire.Number) {
		b := protowire.AppendTag(m.GetUnknown(), num, protowire.VarintType)
		m.SetUnknown(protowire.AppendVarint(b, 7))
	}
	add(c.ProtoReflect(), 99)
	add(c.GetNeural().ProtoReflect(), 98)
	add(c.GetOcr().ProtoReflect(), 97)
	add(c.GetConsensus().ProtoReflect(), 96)
	add(c.GetMerge().ProtoReflect(), 95)
	return c
}

// A request without unknown fields hashes as every earlier release since
// secrets were keyed into the hash stored it (the value below was computed
// by the release before unknown fields were dropped): a job created then
// must still replay.
func TestTheRequestHashOfAKnownRequestIsUnchanged(t *testing.T) {
	key := bytes.Repeat([]byte{0x42}, 32)
	got, err := requestHash(fullRequest(), keyedDigest(key))
	if err != nil {
		t.Fatal(err)
	}
	const want = "2eb236e9ac458ea4f64831527099120bb76a420c56dc0e97989cfce1595f0ab9"
	if got != want {
		t.Fatalf("request hash %s, want %s as stored by earlier releases", got, want)
	}
}

// An unknown field is ignored (docjobs-warning names it), so it must not
// tell two creates apart either: REST drops unknown JSON fields before
// hashing, and a gRPC create must hash as the same request without them.
func TestUnknownFieldsDoNotEnterTheRequestHash(t *testing.T) {
	key := bytes.Repeat([]byte{0x42}, 32)
	plain, err := requestHash(fullRequest(), keyedDigest(key))
	if err != nil {
		t.Fatal(err)
	}
	unknown := withUnknown(fullRequest())
	got, err := requestHash(unknown, keyedDigest(key))
	if err != nil {
		t.Fatal(err)
	}
	if got != plain {
		t.Errorf("hash with unknown fields %s, without %s", got, plain)
	}
	if len(unknown.ProtoReflect().GetUnknown()) == 0 || len(unknown.GetMerge().ProtoReflect().GetUnknown()) == 0 {
		t.Error("hashing dropped the unknown fields of the caller's request, not of a copy")
	}
}

func TestAReplayIgnoresUnknownFields(t *testing.T) {
	tests := []struct {
		name          string
		first, replay func() *docjobsv1.CreateJobRequest
	}{
		{"a create with unknown fields replays without them",
			func() *docjobsv1.CreateJobRequest { return withUnknown(fullRequest()) }, fullRequest},
		{"a create without unknown fields replays with them",
			fullRequest, func() *docjobsv1.CreateJobRequest { return withUnknown(fullRequest()) }},
		{"a create with unknown fields replays with them",
			func() *docjobsv1.CreateJobRequest { return withUnknown(fullRequest()) },
			func() *docjobsv1.CreateJobRequest { return withUnknown(fullRequest()) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			first := h.create(t, "acme", tt.first())
			again := h.create(t, "acme", tt.replay())
			if again.GetId() != first.GetId() {
				t.Fatalf("replay made job %s, want %s", again.GetId(), first.GetId())
			}
		})
	}
	t.Run("a changed known field is still refused", func(t *testing.T) {
		h := newHarness(t, Config{})
		h.create(t, "acme", withUnknown(fullRequest()))
		changed := fullRequest()
		changed.Title = "other"
		_, err := h.svc.CreateJob(as("acme"), changed)
		wantStatus(t, err, 3, "idempotency key reused with different request parameters")
	})
}

// Jobs created with unknown fields before they were dropped from the hash
// hold the hash with them; the same request replays them still.
func TestAReplayOfAJobHashedWithItsUnknownFieldsReturnsTheJob(t *testing.T) {
	h := newHarness(t, Config{})
	req := withUnknown(fullRequest())
	key, err := h.svc.requestHashKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	before, err := hashWithUnknown(req, keyedDigest(key))
	if err != nil {
		t.Fatal(err)
	}
	if now, _ := requestHash(req, keyedDigest(key)); now == before {
		t.Fatal("the request hashes alike with and without its unknown fields: the test proves nothing")
	}
	replaysTheJobHashed(t, h, req, before, func(r *docjobsv1.CreateJobRequest) { r.Title = "changed" })
}
