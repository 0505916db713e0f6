package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// verifyScript checks a request with the standardwebhooks npm package, the
// reference implementation a receiver would use (scripts/webhook-verify).
var verifyScript = filepath.Join("..", "..", "scripts", "webhook-verify.sh")

// verifyWithReference runs verifyScript on one captured request and returns
// whether it verified and the last line the script wrote (npm ci may have
// written before it on a first run).
func verifyWithReference(t *testing.T, secret string, r received, body []byte) (bool, string) {
	t.Helper()
	headers := map[string]string{}
	for _, h := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
		if v := r.header.Get(h); v != "" {
			headers[h] = v
		}
	}
	in, err := json.Marshal(map[string]any{"secret": secret, "headers": headers, "body": string(body)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // the first run may npm ci
	defer cancel()
	cmd := exec.CommandContext(ctx, verifyScript)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("running %s: %v\n%s", verifyScript, err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return err == nil, lines[len(lines)-1]
}

func TestStandardWebhooksLibraryVerifiesWhatWeSend(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not on PATH; the reference verification needs it")
	}
	body, err := Event{
		Type: TypeCompleted, JobID: "job_1", AccountID: "acct_1", Status: "JOB_STATUS_COMPLETE",
		Title: "Factures — mars", Metadata: map[string]string{"client": "Société Générale"},
		Created: time.Now().Add(-time.Minute), Updated: time.Now(), ResultURL: "https://docjobs.example/v1/jobs/job_1/result",
	}.Body()
	if err != nil {
		t.Fatal(err)
	}
	tampered := bytes.Replace(body, []byte("job_1"), []byte("job_2"), 1)

	tests := []struct {
		name         string
		signWith     string // the secret Send signs with
		verifyWith   string // the secret the receiver holds
		bodyReceived []byte // nil: what was sent
		verified     bool
		says         string
	}{
		{"a whsec_ secret verifies", testSecret, testSecret, nil, true, "verified msg_job_1: job.completed"},
		{"a raw secret verifies", "a plain shared secret", "a plain shared secret", nil, true, "verified msg_job_1: job.completed"},
		{"a raw non-ASCII secret verifies as UTF-8", "clé secrète ✓", "clé secrète ✓", nil, true, "verified msg_job_1: job.completed"},
		{"a tampered body fails", testSecret, testSecret, tampered, false, "not verified: No matching signature found"},
		{"another secret fails", testSecret, "whsec_czNjcmV0", nil, false, "not verified: No matching signature found"},
		{"an unsigned request fails", "", testSecret, nil, false, "not verified: Missing required headers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, got := receiver(t, nil)
			a := sender(t, Config{}).Send(context.Background(), url, "msg_job_1", body, tt.signWith, time.Now())
			if !a.Delivered {
				t.Fatalf("Send = %+v, want delivered", a)
			}
			r := got()[0]
			if !bytes.Equal(r.body, body) {
				t.Fatalf("receiver got body %q, want %q", r.body, body)
			}
			if tt.bodyReceived != nil {
				r.body = tt.bodyReceived
			}
			ok, said := verifyWithReference(t, tt.verifyWith, r, r.body)
			if ok != tt.verified || said != tt.says {
				t.Errorf("reference verification = %v %q, want %v %q", ok, said, tt.verified, tt.says)
			}
		})
	}
}
