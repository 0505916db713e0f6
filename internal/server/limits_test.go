package server

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/docjobs/docjobs/internal/api"
)

// withService serves the real api.Service with cfg on a SQLite store, for
// answers whose words and details the service itself decides.
func withService(t *testing.T, cfg api.Config) envOption {
	t.Helper()
	svc := newRealService(t, cfg).svc
	return func(_ *Config, d *Deps) {
		d.Service, d.Files = svc, svc
	}
}

const limitsCreateBody = `{"sourceUrls":["https://example.com/a.txt"],
	"neural":{"type":"NEURAL_CLIENT_TYPE_PROVIDER_2","model":"m","apiKey":"sk"},
	"ocr":{"provider":"NEURAL_CLIENT_TYPE_PROVIDER_1","model":"mistral-ocr-latest","providerKey":"k"}}`

func TestACreatePastTheActiveJobsLimitIs429WithRetryAfter(t *testing.T) {
	env := startServer(t, withService(t, api.Config{AccountMaxActiveJobs: 1}))
	if resp := env.doJSON("POST", "/v1/jobs", keyAlice, limitsCreateBody); resp.StatusCode != 200 {
		t.Fatalf("first create: %d %s", resp.StatusCode, readBody(t, resp))
	}
	resp := env.doJSON("POST", "/v1/jobs", keyAlice, limitsCreateBody)
	if got := resp.Header.Get("Retry-After"); got != "30" {
		t.Errorf("Retry-After = %q, want 30", got)
	}
	m := wantStatusBody(t, resp, 429, codes.ResourceExhausted, true)
	want := "account has 1 jobs in progress, the most allowed (DOCJOBS_ACCOUNT_MAX_ACTIVE_JOBS); retry when some finish"
	if m["message"] != want {
		t.Errorf("message = %q, want %q", m["message"], want)
	}
	if resp := env.doJSON("POST", "/v1/jobs", keyBob, limitsCreateBody); resp.StatusCode != 200 {
		t.Fatalf("another account's create: %d %s", resp.StatusCode, readBody(t, resp))
	}
}

func TestAnUploadPastTheAccountQuotaIs429(t *testing.T) {
	env := startServer(t, withService(t, api.Config{AccountMaxUploadBytes: 10}))
	ct, body := multipartBody(t, nil, "file", "a.txt", "0123456789")
	if resp := env.do("POST", "/v1/jobs/upload", keyAlice, ct, body); resp.StatusCode != 200 {
		t.Fatalf("upload up to the quota: %d %s", resp.StatusCode, readBody(t, resp))
	}
	ct, body = multipartBody(t, nil, "file", "b.txt", "x")
	resp := env.do("POST", "/v1/jobs/upload", keyAlice, ct, body)
	m := wantStatusBody(t, resp, 429, codes.ResourceExhausted, false)
	if msg, _ := m["message"].(string); !strings.HasPrefix(msg, "account uploads would exceed 10 bytes") {
		t.Errorf("message = %q, want it to name the quota", msg)
	}
	if got := resp.Header.Get("Retry-After"); got != "" {
		t.Errorf("Retry-After = %q, want none: nothing frees the quota on a schedule", got)
	}
}

func TestARefusedUploadFormLeavesNothingAgainstTheQuota(t *testing.T) {
	env := startServer(t, withService(t, api.Config{AccountMaxUploadBytes: 10}))
	ct, body := multipartParts(t, false, formPart{"file", "a.txt", "0123456789"}, formPart{"file", "b.txt", "x"})
	m := wantStatusBody(t, env.do("POST", "/v1/jobs/upload", keyAlice, ct, body), 400, codes.InvalidArgument, false)
	if m["message"] != "file: exactly one file per upload" {
		t.Errorf("message = %q", m["message"])
	}
	// The first file was stored before the second part was seen; had it been
	// kept, this upload would pass the quota.
	ct, body = multipartBody(t, nil, "file", "a.txt", "0123456789")
	if resp := env.do("POST", "/v1/jobs/upload", keyAlice, ct, body); resp.StatusCode != 200 {
		t.Fatalf("upload up to the quota after the refused form: %d %s", resp.StatusCode, readBody(t, resp))
	}
}
