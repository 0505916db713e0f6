package api

import (
	"encoding/base64"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/schema"
)

const testPublicURL = "http://localhost:8080"

// validRequest is a create request every rule accepts; each case below
// changes one thing about it.
func validRequest() *docjobsv1.CreateJobRequest {
	return &docjobsv1.CreateJobRequest{
		SourceUrls: []string{"https://example.com/a.txt"},
		Neural: &docjobsv1.Neural{
			Type:   docjobsv1.NeuralClientType_NEURAL_CLIENT_TYPE_PROVIDER_2,
			Model:  "gpt-4o-mini",
			ApiKey: "sk-neural",
		},
		Ocr: &docjobsv1.Ocr{
			Provider:    docjobsv1.NeuralClientType_NEURAL_CLIENT_TYPE_PROVIDER_1,
			Model:       "mistral-ocr-latest",
			ProviderKey: "ocr-key",
		},
	}
}

func testRules(t *testing.T, allowPrivate bool) createRules {
	t.Helper()
	pub, err := url.Parse(testPublicURL)
	if err != nil {
		t.Fatal(err)
	}
	return createRules{publicURL: pub, allowPrivate: allowPrivate, keyRequired: keyRequiredButSelfHosted}
}

// keyRequiredButSelfHosted is the slot table's rule: every slot but the
// self-hosted one needs a key.
func keyRequiredButSelfHosted(slot string) bool {
	return slot != docjobsv1.NeuralClientType_NEURAL_CLIENT_TYPE_PROVIDER_8.String()
}

func repeatN(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", s, i)
	}
	return out
}

func metadataN(n int) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m[fmt.Sprintf("k%d", i)] = "v"
	}
	return m
}

const validSchema = `{"type":"object","properties":{"total":{"type":"number"}}}`

func TestValidateCreate(t *testing.T) {
	tests := []struct {
		name         string
		allowPrivate bool
		mutate       func(r *docjobsv1.CreateJobRequest)
		want         string // the exact message; "" = accepted
		wantPrefix   bool   // want is a prefix of the message
	}{
		// Accepted requests.
		{name: "a minimal request is accepted", mutate: func(r *docjobsv1.CreateJobRequest) {}},
		{name: "without prompts neural may be empty", mutate: func(r *docjobsv1.CreateJobRequest) { r.Neural = &docjobsv1.Neural{} }},
		{name: "100 source URLs are accepted", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.SourceUrls = repeatN("https://example.com/f", 100)
		}},
		{name: "a source URL of 2048 bytes is accepted", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.SourceUrls = []string{"https://example.com/" + strings.Repeat("a", 2048-len("https://example.com/"))}
		}},
		{name: "http and https are both accepted, in any case", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.SourceUrls = []string{"http://example.com/a", "HTTPS://example.com/b"}
		}},
		{name: "a private address is accepted when private URLs are allowed", allowPrivate: true, mutate: func(r *docjobsv1.CreateJobRequest) {
			r.SourceUrls = []string{"http://127.0.0.1:9000/a.txt"}
			r.WebhookUrl = "http://10.0.0.5/hook"
		}},
		{name: "our own upload URL is accepted although its host is local", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.SourceUrls = []string{testPublicURL + "/v1/files/abc"}
		}},
		{name: "16 prompts of 64 KiB are accepted", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Prompts = slices.Repeat([]string{strings.Repeat("p", 64<<10)}, 16)
		}},
		{name: "a chunk budget of 0 means the default and is accepted", mutate: func(r *docjobsv1.CreateJobRequest) { r.Neural.ChunkBudgetTokens = 0 }},
		{name: "a valid response schema is accepted", mutate: func(r *docjobsv1.CreateJobRequest) { r.ResponseSchema = validSchema }},
		{name: "consensus with a response schema is accepted", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.ResponseSchema = validSchema
			r.Consensus = &docjobsv1.ConsensusOptions{Mode: docjobsv1.ConsensusMode_CONSENSUS_MODE_FIVE_RUNS.Enum()}
		}},
		{name: "an explicit UNSPECIFIED consensus mode needs no schema", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Consensus = &docjobsv1.ConsensusOptions{Mode: docjobsv1.ConsensusMode_CONSENSUS_MODE_UNSPECIFIED.Enum()}
		}},
		{name: "an unknown consensus mode number is ignored like an unknown name", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Consensus = &docjobsv1.ConsensusOptions{Mode: docjobsv1.ConsensusMode(42).Enum()}
		}},
		{name: "32 dedupeBy names are accepted", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Merge = &docjobsv1.MergeOptions{Enabled: true, DedupeBy: repeatN("f", 32)}
		}},
		{name: "a title of 1024 characters is accepted", mutate: func(r *docjobsv1.CreateJobRequest) { r.Title = strings.Repeat("é", 1024) }},
		{name: "64 metadata pairs at their size limits are accepted", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Metadata = metadataN(63)
			r.Metadata[strings.Repeat("k", 128)] = strings.Repeat("v", 2048)
		}},
		{name: "an idempotency key of 255 multi-byte characters is accepted", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.IdempotencyKey = strings.Repeat("ü", 255)
		}},
		{name: "a public webhook URL is accepted", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.WebhookUrl = "https://hooks.example.com/done"
			r.WebhookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		}},

		// sourceUrls.
		{name: "missing sourceUrls are rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.SourceUrls = nil }, want: "sourceUrls: required"},
		{name: "more than 100 source URLs are rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.SourceUrls = repeatN("https://example.com/f", 101)
		}, want: "sourceUrls: at most 100 URLs"},
		{name: "a relative source URL is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.SourceUrls = []string{"/a.txt"} },
			want: "sourceUrls[0]: must be an absolute http or https URL"},
		{name: "an ftp source URL is rejected with its index", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.SourceUrls = []string{"https://example.com/a", "https://example.com/b", "ftp://example.com/c"}
		}, want: "sourceUrls[2]: must be an absolute http or https URL"},
		{name: "a source URL without a host is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.SourceUrls = []string{"http:///a.txt"} },
			want: "sourceUrls[0]: must be an absolute http or https URL"},
		{name: "an opaque source URL is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.SourceUrls = []string{"http:example.com"} },
			want: "sourceUrls[0]: must be an absolute http or https URL"},
		{name: "an empty source URL is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.SourceUrls = []string{""} },
			want: "sourceUrls[0]: must be an absolute http or https URL"},
		{name: "a source URL that does not parse is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.SourceUrls = []string{"http://exa mple.com/%zz"} },
			want: "sourceUrls[0]: must be an absolute http or https URL"},
		{name: "a source URL over 2048 bytes is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.SourceUrls = []string{"https://example.com/" + strings.Repeat("a", 2049-len("https://example.com/"))}
		}, want: "sourceUrls[0]: at most 2048 bytes"},
		{name: "a loopback source URL is rejected unless private URLs are allowed", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.SourceUrls = []string{"http://127.0.0.1:9000/a.txt"}
		}, want: "sourceUrls[0]: must not point to a private or local address"},
		{name: "a source host written as one number is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.SourceUrls = []string{"http://2130706433/a.txt"}
		}, want: "sourceUrls[0]: a host ending in a number must be an IPv4 address written a.b.c.d"},
		{name: "a source host in short, hex, octal or zero-padded IPv4 form is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.SourceUrls = []string{"https://example.com/a", "http://127.1/", "http://0x7f.0.0.1/", "http://0177.0.0.1/", "http://8.8.8.008/"}
		}, want: "sourceUrls[1]: a host ending in a number must be an IPv4 address written a.b.c.d"},
		{name: "a source host whose last label is a number is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.SourceUrls = []string{"https://example.123/a"}
		}, want: "sourceUrls[0]: a host ending in a number must be an IPv4 address written a.b.c.d"},
		{name: "a source URL on localhost that is not an upload URL is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.SourceUrls = []string{"http://localhost:8080/v1/jobs"}
		}, want: "sourceUrls[0]: must not point to a private or local address"},

		// prompts.
		{name: "more than 16 prompts are rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Prompts = repeatN("p", 17) },
			want: "prompts: at most 16 prompts"},
		{name: "a prompt over 64 KiB is rejected with its index", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Prompts = []string{"short", strings.Repeat("p", 64<<10+1)}
		}, want: "prompts[1]: at most 65536 bytes"},
		{name: "an empty prompt is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Prompts = []string{""} },
			want: "prompts[0]: must not be empty (omit prompts to skip the model)"},
		{name: "a prompt of white space is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Prompts = []string{"Extract.", " \n\t"} },
			want: "prompts[1]: must not be empty (omit prompts to skip the model)"},

		// neural.
		{name: "a missing neural is rejected even without prompts", mutate: func(r *docjobsv1.CreateJobRequest) { r.Neural = nil },
			want: "neural: required"},
		{name: "an unknown neural.type number is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Neural.Type = 99 },
			want: "neural.type: unknown value 99; use NEURAL_CLIENT_TYPE_PROVIDER_1 to NEURAL_CLIENT_TYPE_PROVIDER_8 (or an alias: ", wantPrefix: true},
		{name: "prompts without neural.type are rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Prompts = []string{"extract"}
			r.Neural.Type = docjobsv1.NeuralClientType_NEURAL_CLIENT_TYPE_UNSPECIFIED
		}, want: "neural.type: required when prompts are given"},
		{name: "prompts without neural.model are rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Prompts = []string{"extract"}
			r.Neural.Model = " "
		}, want: "neural.model: required when prompts are given"},
		{name: "a neural.model over 256 bytes is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Neural.Model = strings.Repeat("m", 257) },
			want: "neural.model: at most 256 bytes"},
		{name: "a neural.apiKey over 4096 bytes is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Neural.ApiKey = strings.Repeat("k", 4097) },
			want: "neural.apiKey: at most 4096 bytes"},
		{name: "a negative chunk budget is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Neural.ChunkBudgetTokens = -1 },
			want: "neural.chunkBudgetTokens: must not be negative"},
		{name: "a chunk budget below 100 tokens is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Neural.ChunkBudgetTokens = 99 },
			want: "neural.chunkBudgetTokens: at least 100 (0 means the default of 4000)"},
		{name: "a chunk budget of 100 tokens is accepted", mutate: func(r *docjobsv1.CreateJobRequest) { r.Neural.ChunkBudgetTokens = 100 }},

		// ocr.
		{name: "a missing ocr is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Ocr = nil }, want: "ocr: required"},
		{name: "a missing ocr.provider is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Ocr.Provider = 0 }, want: "ocr.provider: required"},
		{name: "an unknown ocr.provider number is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Ocr.Provider = 9 },
			want: "ocr.provider: unknown value 9; use NEURAL_CLIENT_TYPE_PROVIDER_1 to NEURAL_CLIENT_TYPE_PROVIDER_8 (or an alias: ", wantPrefix: true},
		{name: "a missing ocr.model is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Ocr.Model = "" }, want: "ocr.model: required"},
		{name: "a blank ocr.model is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Ocr.Model = "  \t" }, want: "ocr.model: required"},
		{name: "an ocr.model over 256 bytes is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Ocr.Model = strings.Repeat("m", 257) },
			want: "ocr.model: at most 256 bytes"},
		{name: "a missing ocr.providerKey is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Ocr.ProviderKey = "" },
			want: "ocr.providerKey: required"},
		{name: "an ocr.providerKey over 4096 bytes is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Ocr.ProviderKey = strings.Repeat("k", 4097)
		}, want: "ocr.providerKey: at most 4096 bytes"},

		// extractionMode.
		{name: "an unknown extractionMode number is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.ExtractionMode = 7 },
			want: "extractionMode: unknown value 7; use EXTRACTION_MODE_HYBRID or EXTRACTION_MODE_OCR_ALWAYS"},

		// responseSchema (each schema rule has its own table in package schema).
		{name: "a response schema that is not JSON is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.ResponseSchema = "{nope" },
			want: "responseSchema: not valid JSON", wantPrefix: true},
		{name: "a response schema that is not a schema is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.ResponseSchema = `{"type":12}` },
			want: "responseSchema: not a valid JSON Schema", wantPrefix: true},
		{name: "a boolean response schema is rejected: no vendor takes one", mutate: func(r *docjobsv1.CreateJobRequest) { r.ResponseSchema = "true" },
			want: "responseSchema: must be a JSON object (omit responseSchema for no constraint)"},
		{name: "a response schema with an external reference is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.ResponseSchema = `{"$ref":"https://example.com/s.json"}`
		}, want: `responseSchema: references must be internal (start with "#")`, wantPrefix: true},
		{name: "a response schema deeper than 64 levels is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.ResponseSchema = strings.Repeat(`{"items":`, 70) + `{}` + strings.Repeat(`}`, 70)
		}, want: "responseSchema: deeper than 64 levels"},
		{name: "a response schema over 128 KiB is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.ResponseSchema = `{"description":"` + strings.Repeat("x", 128<<10) + `"}`
		}, want: "responseSchema: larger than 131072 bytes (128 KiB)"},
		{name: "a response schema with more than 10000 nodes is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.ResponseSchema = `{"enum":[` + strings.TrimSuffix(strings.Repeat("1,", 10000), ",") + `]}`
		}, want: "responseSchema: more than 10000 nodes"},

		// merge.
		{name: "more than 32 dedupeBy names are rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Merge = &docjobsv1.MergeOptions{Enabled: true, DedupeBy: repeatN("f", 33)}
		}, want: "merge.dedupeBy: at most 32 names"},
		{name: "the dedupeBy bound applies while merge is disabled too", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Merge = &docjobsv1.MergeOptions{DedupeBy: repeatN("f", 33)}
		}, want: "merge.dedupeBy: at most 32 names"},
		{name: "an empty dedupeBy name is rejected with its index", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Merge = &docjobsv1.MergeOptions{Enabled: true, DedupeBy: []string{"id", ""}}
		}, want: "merge.dedupeBy[1]: must not be empty"},
		{name: "a dedupeBy name over 256 bytes is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Merge = &docjobsv1.MergeOptions{Enabled: true, DedupeBy: []string{strings.Repeat("f", 257)}}
		}, want: "merge.dedupeBy[0]: at most 256 bytes"},
		{name: "an unknown merge.scope number is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Merge = &docjobsv1.MergeOptions{Enabled: true, Scope: 5}
		}, want: "merge.scope: unknown value 5; use MERGE_SCOPE_FILE or MERGE_SCOPE_JOB"},
		{name: "an unknown merge.conflictPolicy number is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Merge = &docjobsv1.MergeOptions{Enabled: true, ConflictPolicy: 5}
		}, want: "merge.conflictPolicy: unknown value 5; use MERGE_CONFLICT_POLICY_FIRST_NON_NULL or MERGE_CONFLICT_POLICY_MAJORITY"},
		{name: "merge options are ignored while merge is off", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Merge = &docjobsv1.MergeOptions{Scope: 5, ConflictPolicy: 5, Format: 9, DedupeBy: []string{""}}
		}, want: ""},
		{name: "an unknown merge.format number is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Merge = &docjobsv1.MergeOptions{Enabled: true, Format: 9}
		}, want: "merge.format: unknown value 9; use MERGE_FORMAT_AUTO, MERGE_FORMAT_JSON, MERGE_FORMAT_XML, MERGE_FORMAT_HTML, MERGE_FORMAT_MARKDOWN or MERGE_FORMAT_TEXT"},

		// consensus.
		{name: "a consensus mode without a response schema is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Consensus = &docjobsv1.ConsensusOptions{Mode: docjobsv1.ConsensusMode_CONSENSUS_MODE_THREE_RUNS.Enum()}
		}, want: "consensus.mode: requires responseSchema"},

		// title and metadata.
		{name: "a title over 1024 characters is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Title = strings.Repeat("t", 1025) },
			want: "title: at most 1024 characters"},
		{name: "more than 64 metadata pairs are rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Metadata = metadataN(65) },
			want: "metadata: at most 64 pairs"},
		{name: "a metadata key over 128 bytes is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Metadata = map[string]string{strings.Repeat("k", 129): "v"}
		}, want: `metadata: key "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"… longer than 128 bytes`},
		{name: "a metadata value over 2048 bytes is rejected with its key", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Metadata = map[string]string{"invoice": strings.Repeat("v", 2049)}
		}, want: `metadata["invoice"]: at most 2048 bytes`},

		// webhook.
		{name: "a webhookUrl with credentials is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.WebhookUrl = "https://hook:s3cret@example.com/done" },
			want: "webhookUrl: must not contain credentials (user:password@)"},
		{name: "a source URL with credentials is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.SourceUrls = []string{"https://example.com/a.txt", "https://reader:s3cret@example.com/b.txt"}
		}, want: "sourceUrls[1]: must not contain credentials (user:password@)"},
		{name: "a webhookUrl with port 0 is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.WebhookUrl = "https://example.com:0/done" },
			want: "webhookUrl: must have a port from 1 to 65535"},
		{name: "a webhookUrl with port 65536 is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.WebhookUrl = "https://example.com:65536/done" },
			want: "webhookUrl: must have a port from 1 to 65535"},
		{name: "a webhookUrl with port 99999 is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.WebhookUrl = "http://127.0.0.1:99999/hook" },
			allowPrivate: true, want: "webhookUrl: must have a port from 1 to 65535"},
		{name: "a webhookUrl with a port past int64 is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.WebhookUrl = "https://example.com:99999999999999999999999/done"
		}, want: "webhookUrl: must have a port from 1 to 65535"},
		{name: "a source URL with port 0 is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.SourceUrls = []string{"https://example.com:1/a.txt", "https://example.com:0/b.txt"}
		}, want: "sourceUrls[1]: must have a port from 1 to 65535"},
		{name: "a source URL with port 65536 is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.SourceUrls = []string{"https://example.com:65536/a.txt"}
		}, want: "sourceUrls[0]: must have a port from 1 to 65535"},
		{name: "a source URL with port 99999 is rejected", allowPrivate: true, mutate: func(r *docjobsv1.CreateJobRequest) {
			r.SourceUrls = []string{"http://127.0.0.1:99999/a.txt"}
		}, want: "sourceUrls[0]: must have a port from 1 to 65535"},
		{name: "ports 1 and 65535 and an empty port are accepted", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.SourceUrls = []string{"https://example.com:1/a.txt", "https://[2001:db8::1]:65535/b.txt", "https://example.com:/c.txt"}
			r.WebhookUrl = "https://example.com:65535/done"
		}, want: ""},
		{name: "a relative webhookUrl is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.WebhookUrl = "hooks/done" },
			want: "webhookUrl: must be an absolute http or https URL"},
		{name: "a non-http webhookUrl is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.WebhookUrl = "mailto:ops@example.com" },
			want: "webhookUrl: must be an absolute http or https URL"},
		{name: "a webhookUrl over 2048 bytes is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.WebhookUrl = "https://example.com/" + strings.Repeat("h", 2048)
		}, want: "webhookUrl: at most 2048 bytes"},
		{name: "a private webhookUrl is rejected unless private URLs are allowed", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.WebhookUrl = "http://169.254.169.254/latest/meta-data"
		}, want: "webhookUrl: must not point to a private or local address"},
		{name: "a webhookSecret over 4096 bytes is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.WebhookUrl = "https://hooks.example.com/done"
			r.WebhookSecret = strings.Repeat("s", 4097)
		}, want: "webhookSecret: at most 4096 bytes"},
		{name: "a whsec_ webhookSecret whose key is not base64 is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.WebhookUrl = "https://hooks.example.com/done"
			r.WebhookSecret = "whsec_not*base64"
		}, want: "webhookSecret: has the whsec_ prefix but the rest is not valid base64"},

		// idempotencyKey.
		{name: "an idempotency key of 256 characters is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.IdempotencyKey = strings.Repeat("k", 256)
		}, want: "idempotencyKey: at most 255 characters"},

		// Text stored as it is: NUL (PostgreSQL refuses it) and invalid
		// UTF-8 are refused on every database.
		{name: "a title with NUL is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Title = "a\x00b" },
			want: "title: must not contain NUL characters"},
		{name: "a title that is not UTF-8 is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Title = "a\xffb" },
			want: "title: must be valid UTF-8"},
		{name: "a title with tabs and new lines is accepted", mutate: func(r *docjobsv1.CreateJobRequest) { r.Title = "a\tb\nc" }},
		{name: "an idempotency key with NUL is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.IdempotencyKey = "k\x00" },
			want: "idempotencyKey: must not contain NUL characters"},
		{name: "an idempotency key that is not UTF-8 is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.IdempotencyKey = "\xc3" },
			want: "idempotencyKey: must be valid UTF-8"},
		{name: "a neural model with NUL is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Neural.Model = "g\x00pt" },
			want: "neural.model: must not contain NUL characters"},
		{name: "a neural model with NUL is rejected without prompts too", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Prompts, r.Neural.Model = nil, "\x00"
		}, want: "neural.model: must not contain NUL characters"},
		{name: "an ocr model with NUL is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Ocr.Model = "m\x00" },
			want: "ocr.model: must not contain NUL characters"},

		// Other C0 controls, which JSON writes as six bytes each, are
		// refused in every free-text field; tab, line feed and carriage
		// return stay allowed.
		{name: "a prompt with a control character is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Prompts = []string{"fine", "bad\x01"}
		}, want: "prompts[1]: must not contain control characters other than tab, line feed and carriage return (U+0001)"},
		{name: "a prompt with NUL is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Prompts = []string{"a\x00"} },
			want: "prompts[0]: must not contain NUL characters"},
		{name: "a prompt with tabs, line feeds and carriage returns is accepted", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Prompts = []string{"Extract:\r\n\t- the total\n\t- the date"}
		}},
		{name: "a title with an escape character is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Title = "\x1b[31mred" },
			want: "title: must not contain control characters other than tab, line feed and carriage return (U+001B)"},
		{name: "a metadata value with a control character is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Metadata = map[string]string{"k": "v\x1f"}
		}, want: `metadata["k"]: must not contain control characters other than tab, line feed and carriage return (U+001F)`},
		{name: "a metadata key with a control character is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Metadata = map[string]string{"k\x02": "v"}
		}, want: `metadata: key "k\x02": must not contain control characters other than tab, line feed and carriage return (U+0002)`},
		{name: "a dedupeBy name with a control character is rejected", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.ResponseSchema = `{"type":"object"}`
			r.Merge = &docjobsv1.MergeOptions{Enabled: true, DedupeBy: []string{"id\x7f", "n\x08"}}
		}, want: "merge.dedupeBy[1]: must not contain control characters other than tab, line feed and carriage return (U+0008)"},
		{name: "an idempotency key with a control character is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.IdempotencyKey = "k\x03" },
			want: "idempotencyKey: must not contain control characters other than tab, line feed and carriage return (U+0003)"},
		{name: "an ocr model that is not UTF-8 is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Ocr.Model = "m\xff" },
			want: "ocr.model: must be valid UTF-8"},

		// Provider keys go into an HTTP header: RFC 9110 field-value.
		{name: "a provider key with SP, HTAB and obs-text is accepted", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Neural.ApiKey, r.Ocr.ProviderKey = "sk a\tb", "k\x80\xff~!"
		}},
		{name: "an api key with a new line is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Neural.ApiKey = "sk-1\n" },
			want: "neural.apiKey: must not contain control characters"},
		{name: "an api key with CR LF is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Neural.ApiKey = "sk-1\r\nX-Evil: 1" },
			want: "neural.apiKey: must not contain control characters"},
		{name: "an api key with NUL is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Neural.ApiKey = "sk\x00" },
			want: "neural.apiKey: must not contain control characters"},
		{name: "a provider key with DEL is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Ocr.ProviderKey = "k\x7f" },
			want: "ocr.providerKey: must not contain control characters"},
		{name: "a provider key with an escape is rejected", mutate: func(r *docjobsv1.CreateJobRequest) { r.Ocr.ProviderKey = "k\x1b[0m" },
			want: "ocr.providerKey: must not contain control characters"},

		// neural.apiKey.
		{name: "with prompts a slot that needs a key requires neural.apiKey", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Prompts = []string{"Extract the totals."}
			r.Neural.ApiKey = ""
		}, want: "neural.apiKey: required when prompts are given for NEURAL_CLIENT_TYPE_PROVIDER_2"},
		{name: "with prompts a key of spaces is no key", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Prompts = []string{"Extract the totals."}
			r.Neural.ApiKey = "   "
		}, want: "neural.apiKey: required when prompts are given for NEURAL_CLIENT_TYPE_PROVIDER_2"},
		{name: "a recognition key of spaces is no key", mutate: func(r *docjobsv1.CreateJobRequest) { r.Ocr.ProviderKey = " \t " },
			want: "ocr.providerKey: required"},
		{name: "with prompts the self-hosted slot needs no key", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.Prompts = []string{"Extract the totals."}
			r.Neural.Type = docjobsv1.NeuralClientType_NEURAL_CLIENT_TYPE_PROVIDER_8
			r.Neural.ApiKey = ""
		}},
		{name: "without prompts no key is needed", mutate: func(r *docjobsv1.CreateJobRequest) { r.Neural.ApiKey = "" }},

		// Our own upload URLs follow the rules of every URL.
		{name: "our upload URL with credentials is rejected like any URL", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.SourceUrls = []string{"http://u:pw@localhost:8080/v1/files/abc"}
		}, want: "sourceUrls[0]: must not contain credentials (user:password@)"},
		{name: "our upload URL with a user only is rejected like any URL", mutate: func(r *docjobsv1.CreateJobRequest) {
			r.SourceUrls = []string{"http://u@localhost:8080/v1/files/abc"}
		}, want: "sourceUrls[0]: must not contain credentials (user:password@)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := validRequest()
			tt.mutate(req)
			_, err := validateCreate(req, testRules(t, tt.allowPrivate))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("validateCreate() = %v, want accepted", err)
				}
				return
			}
			st, ok := status.FromError(err)
			if !ok || st.Code() != codes.InvalidArgument {
				t.Fatalf("validateCreate() = %v, want InvalidArgument", err)
			}
			if got := st.Message(); got != tt.want && !(tt.wantPrefix && strings.HasPrefix(got, tt.want)) {
				t.Fatalf("message = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestValidateCreateReturnsUploadsForTheOwnershipCheck(t *testing.T) {
	req := validRequest()
	req.SourceUrls = []string{
		"https://example.com/a.txt",
		testPublicURL + "/v1/files/0190-upload-1",
		"https://other.example.com/v1/files/not-ours",
		"HTTP://LOCALHOST:8080/v1/files/0190-upload-2",
	}
	uploads, err := validateCreate(req, testRules(t, false))
	if err != nil {
		t.Fatal(err)
	}
	want := []uploadRef{{index: 1, id: "0190-upload-1"}, {index: 3, id: "0190-upload-2"}}
	if !slices.Equal(uploads, want) {
		t.Fatalf("uploads = %+v, want %+v", uploads, want)
	}
}

func TestParseFileURL(t *testing.T) {
	tests := []struct {
		name, public, raw string
		wantID            string // "" = not a file URL of ours
	}{
		{"a file URL of ours gives its id", "http://localhost:8080", "http://localhost:8080/v1/files/abc", "abc"},
		{"scheme and host compare without case", "http://localhost:8080", "HTTP://LocalHost:8080/v1/files/abc", "abc"},
		{"a public URL with a path prefix is honored", "https://api.example.com/docjobs/", "https://api.example.com/docjobs/v1/files/abc", "abc"},
		{"another host is not ours", "http://localhost:8080", "http://localhost:9090/v1/files/abc", ""},
		{"another scheme is not ours", "http://localhost:8080", "https://localhost:8080/v1/files/abc", ""},
		{"another path is not a file", "http://localhost:8080", "http://localhost:8080/v1/jobs/abc", ""},
		{"an empty id is not a file", "http://localhost:8080", "http://localhost:8080/v1/files/", ""},
		{"a nested path is not a file", "http://localhost:8080", "http://localhost:8080/v1/files/a/b", ""},
		{"garbage is not a file", "http://localhost:8080", "%zz", ""},
		{"a URL with credentials is not ours to read", "http://localhost:8080", "http://u:pw@localhost:8080/v1/files/abc", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, ok := ParseFileURL(tt.public, tt.raw)
			if id != tt.wantID || ok != (tt.wantID != "") {
				t.Fatalf("ParseFileURL() = %q, %v; want %q", id, ok, tt.wantID)
			}
		})
	}
	if got := FileURL("http://localhost:8080/", "abc"); got != "http://localhost:8080/v1/files/abc" {
		t.Fatalf("FileURL() = %q", got)
	}
}

func TestPrivateHost(t *testing.T) {
	tests := []struct {
		host    string
		private bool
	}{
		{"example.com", false},
		{"93.184.216.34", false},
		{"2606:2800:220:1:248:1893:25c8:1946", false},
		{"localhost", true},
		{"LOCALHOST.", true},
		{"api.localhost", true},
		{"127.0.0.1", true},
		{"127.8.9.10", true},
		{"10.1.2.3", true},
		{"172.16.0.1", true},
		{"192.168.1.1", true},
		{"169.254.169.254", true}, // cloud metadata
		{"100.64.0.1", true},      // carrier-grade NAT
		{"0.0.0.0", true},
		{"255.255.255.255", true},
		{"224.0.0.1", true},
		{"::1", true},
		{"::", true},
		{"fe80::1", true},
		{"fe80::1%eth0", true},
		{"fd00:ec2::254", true},
		{"::ffff:127.0.0.1", true},    // IPv4-mapped loopback
		{"::ffff:10.0.0.1", true},     // IPv4-mapped private
		{"64:ff9b::7f00:1", true},     // NAT64 of 127.0.0.1
		{"64:ff9b::5db8:d822", false}, // NAT64 of a public address
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			if got := privateHost(tt.host); got != tt.private {
				t.Fatalf("privateHost(%q) = %v, want %v", tt.host, got, tt.private)
			}
		})
	}
}

// FuzzValidateCreate feeds arbitrary JSON bodies through the same decoding
// the gateway uses and checks that whatever validation accepts keeps the
// contract's limits, and that nothing panics.
func FuzzValidateCreate(f *testing.F) {
	f.Add(`{"sourceUrls":["https://example.com/a.pdf"],"neural":{},"ocr":{"provider":"NEURAL_CLIENT_TYPE_PROVIDER_1","model":"m","providerKey":"k"}}`)
	f.Add(`{"sourceUrls":["https://example.com/a.pdf"],"neural":{},"ocr":{"provider":1,"model":"m","providerKey":"k"},"consensus":{"mode":"CONSENSUS_MODE_TWO_RUNS"},"responseSchema":"{\"type\":\"object\"}"}`)
	f.Add(`{"sourceUrls":["http://[::1]/x"],"idempotencyKey":"k","merge":{"enabled":true,"dedupeBy":["id"]}}`)
	f.Add(`{"sourceUrls":["https://u:p@example.com/a","http://localhost:8080/v1/files/f1","http://127.0.0.1/x","https://10.0.0.1/y","http://[::ffff:127.0.0.1]/z"],"prompts":["p"],"neural":{"type":1,"model":"m","apiKey":"k"},"ocr":{"provider":1,"model":"m","providerKey":"k"},"metadata":{"k":"v"},"title":"t","webhookUrl":"https://hooks.example.com/h","webhookSecret":"whsec_AAAA"}`)
	f.Add(`{"sourceUrls":["https://example.com/a","http://localhost:8080/v1/files/f1","http://93.184.215.14/x"],"prompts":["p"],"neural":{"type":1,"model":"m","apiKey":"k"},"ocr":{"provider":1,"model":"m","providerKey":"k"},"metadata":{"k":"v"},"title":"t","webhookUrl":"https://hooks.example.com/h","responseSchema":"{}","consensus":{"mode":2}}`)
	pub, _ := url.Parse(testPublicURL)
	f.Fuzz(func(t *testing.T, body string) {
		var req docjobsv1.CreateJobRequest
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal([]byte(body), &req); err != nil {
			return
		}
		if _, err := validateCreate(&req, createRules{publicURL: pub}); err != nil {
			return
		}
		if len(req.GetSourceUrls()) == 0 || req.GetNeural() == nil || req.GetOcr().GetProviderKey() == "" {
			t.Fatalf("accepted a request missing a required field: %s", body)
		}
		urls := req.GetSourceUrls()
		if w := req.GetWebhookUrl(); w != "" {
			urls = append(slices.Clip(urls), w)
		}
		for i, raw := range urls {
			u, err := url.Parse(raw)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
				t.Fatalf("accepted URL %q", raw)
			}
			if _, own := ParseFileURL(testPublicURL, raw); own && i < len(req.GetSourceUrls()) {
				continue // an upload, read from storage
			}
			// Private addresses are refused unless allowed (createRules'
			// allowPrivate, false here): however the address is written.
			if a, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil {
				a = a.Unmap()
				if a.IsLoopback() || a.IsPrivate() || a.IsUnspecified() || a.IsLinkLocalUnicast() || a.IsMulticast() {
					t.Fatalf("accepted URL %q of a private address", raw)
				}
			}
			if strings.EqualFold(strings.TrimSuffix(u.Hostname(), "."), "localhost") {
				t.Fatalf("accepted URL %q of localhost", raw)
			}
		}
		if len(req.GetPrompts()) > maxPrompts || len(req.GetMetadata()) > maxMetadataPairs {
			t.Fatalf("accepted a request over a count limit: %s", body)
		}
		for _, p := range req.GetPrompts() {
			if len(p) > maxPromptBytes || strings.TrimSpace(p) == "" {
				t.Fatalf("accepted prompt %q", p)
			}
		}
		if s := req.GetResponseSchema(); s != "" && schema.Check(s) != nil {
			t.Fatalf("accepted schema %q, which Check refuses", s)
		}
		if utf8.RuneCountInString(req.GetIdempotencyKey()) > 255 || len(req.GetMerge().GetDedupeBy()) > 32 {
			t.Fatalf("accepted a request over a limit: %s", body)
		}
		if req.GetConsensus().GetMode() != docjobsv1.ConsensusMode_CONSENSUS_MODE_UNSPECIFIED && req.GetResponseSchema() == "" {
			t.Fatalf("accepted consensus without a schema: %s", body)
		}
	})
}

// maxJSONBodyBytes is the REST body limit (server.DefaultMaxJSONBodyBytes),
// grpc-go's default receive limit.
const maxJSONBodyBytes = 4 << 20

// worstCaseRequest is a create request with every field at its cap, each
// filled with what JSON makes largest: a quote (escaped to two bytes) where
// a field is capped in bytes, a four-byte character where it is capped in
// characters.
func worstCaseRequest(t *testing.T) *docjobsv1.CreateJobRequest {
	t.Helper()
	const quotes = `"`
	const wide = "😀"
	fill := func(prefix string, n int) string { return prefix + strings.Repeat(quotes, n-len(prefix)) }
	r := validRequest()
	r.SourceUrls = nil
	for i := range MaxSourceURLs {
		r.SourceUrls = append(r.SourceUrls, fill(fmt.Sprintf("https://example.com/%d/", i), maxURLBytes))
	}
	r.Prompts = slices.Repeat([]string{fill("p", maxPromptBytes)}, maxPrompts)
	r.Neural.Model = fill("m", maxModelBytes)
	r.Neural.ApiKey = fill("k", maxSecretBytes)
	r.Ocr.Model = fill("m", maxModelBytes)
	r.Ocr.ProviderKey = fill("k", maxSecretBytes)
	// A JSON string of backslash pairs: each written \\\\ again in the echo.
	head, tail := `{"type":"object","description":"`, `"}`
	r.ResponseSchema = head + strings.Repeat(`\\`, (schema.MaxBytes-len(head)-len(tail))/2) + tail
	r.Merge = &docjobsv1.MergeOptions{Enabled: true}
	for i := range maxDedupeBy {
		r.Merge.DedupeBy = append(r.Merge.DedupeBy, fill(fmt.Sprintf("%d", i), maxDedupeNameBytes))
	}
	r.Title = strings.Repeat(wide, maxTitleChars)
	r.Metadata = map[string]string{}
	for i := range maxMetadataPairs {
		r.Metadata[fill(fmt.Sprintf("%d", i), maxMetadataKey)] = fill("v", maxMetadataValue)
	}
	r.WebhookUrl = fill("https://hooks.example.com/", maxURLBytes)
	r.WebhookSecret = "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, (maxSecretBytes-len("whsec_"))/4*3))
	r.IdempotencyKey = strings.Repeat(wide, maxIdempotencyKey)
	return r
}

func TestEveryRequestTheFieldCapsAllowFitsInARESTBody(t *testing.T) {
	req := worstCaseRequest(t)
	if _, err := validateCreate(req, testRules(t, false)); err != nil {
		t.Fatalf("the request at every cap is refused: %v", err)
	}
	body, err := protojson.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(body) > maxJSONBodyBytes {
		t.Errorf("the request at every cap is %d bytes of JSON (%d of protobuf), more than REST's %d",
			len(body), proto.Size(req), maxJSONBodyBytes)
	}
	t.Logf("at every cap: %d bytes of protobuf, %d of JSON", proto.Size(req), len(body))

	t.Run("prompts of control characters, six bytes each in JSON, are refused", func(t *testing.T) {
		req.Prompts = slices.Repeat([]string{"p" + strings.Repeat("\x01", maxPromptBytes-1)}, maxPrompts)
		if body, _ := protojson.Marshal(req); len(body) <= maxJSONBodyBytes {
			t.Fatalf("the request is %d bytes of JSON: the test proves nothing", len(body))
		}
		if _, err := validateCreate(req, testRules(t, false)); err == nil {
			t.Error("accepted over gRPC a request REST cannot take")
		}
	})
}

func TestNumericHostIsAHostThatEndsInANumberButIsNoAddress(t *testing.T) {
	for host, want := range map[string]bool{
		"2130706433":        true,
		"127.1":             true,
		"0x7f000001":        true,
		"0X7F.0.0.1":        true,
		"0177.0.0.1":        true,
		"127.000.000.001":   true,
		"1.2.3.4.5":         true,
		"example.123":       true,
		"127.0.0.1":         false,
		"127.0.0.1.":        false,
		"::ffff:127.0.0.1":  false,
		"::1":               false,
		"example.com":       false,
		"x1.example.com":    false,
		"example.com1":      false,
		"123.example":       false,
		"0xfoo.example.com": false,
	} {
		if got := numericHost(host); got != want {
			t.Errorf("numericHost(%q) = %v, want %v", host, got, want)
		}
	}
}
