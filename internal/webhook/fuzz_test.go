package webhook

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzBody checks that any event becomes one JSON object that reads back
// to the same fields (invalid UTF-8 aside, which becomes U+FFFD).
func FuzzBody(f *testing.F) {
	f.Add("JOB_STATUS_COMPLETE", "job_1", "", "Invoices", "client", "ACME", int64(1741082400), int64(500))
	f.Add("JOB_STATUS_FAILED", "j", "no file could be recognized: 404", "<b>&", "", "", int64(0), int64(0))
	f.Add("JOB_STATUS_CANCELLED", "\u2028\"\\", "\x00", "\xff\xfe", "k\"", "v\n", int64(-62135596800), int64(999999999))
	f.Add("JOB_STATUS_RUNNING", "j", "", "", "", "", int64(253402300799), int64(1))
	f.Fuzz(func(t *testing.T, status, jobID, errText, title, mdKey, mdValue string, sec, nsec int64) {
		ts := time.Unix(sec, nsec)
		e := Event{
			JobID: jobID, AccountID: "acct", Status: status, Error: errText, Title: title,
			Created: ts, Updated: ts, ResultURL: "https://x/v1/jobs/" + jobID + "/result",
		}
		if mdKey != "" {
			e.Metadata = map[string]string{mdKey: mdValue}
		}
		body, err := e.Body()
		if TypeFor(status) == "" {
			if !errors.Is(err, ErrNoType) {
				t.Fatalf("Body() for status %q = %v, want ErrNoType", status, err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.Valid(body) {
			t.Fatalf("body is not valid UTF-8: %q", body)
		}
		var got map[string]any
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("body is not a JSON object: %v\n%s", err, body)
		}
		if len(got) != 10 {
			t.Errorf("body has %d fields, want 10: %s", len(got), body)
		}
		if got["type"] != TypeFor(status) {
			t.Errorf("type = %v, want %q", got["type"], TypeFor(status))
		}
		// Valid text reads back as it was; invalid bytes are U+FFFD, one
		// per byte, which the utf8.Valid check above already covers.
		for field, want := range map[string]string{"job_id": jobID, "status": status, "error": errText, "title": title} {
			if utf8.ValidString(want) && got[field] != want {
				t.Errorf("%s = %q, want %q", field, got[field], want)
			}
		}
		md, ok := got["metadata"].(map[string]any)
		if !ok || (mdKey == "" && len(md) != 0) || (mdKey != "" && len(md) != 1) {
			t.Errorf("metadata = %v, want %d pair(s)", got["metadata"], len(e.Metadata))
		}
		created, _ := got["created"].(string)
		back, err := time.Parse(time.RFC3339Nano, created)
		if err == nil && !back.Equal(ts) {
			t.Errorf("created = %s reads back as %v, want %v", created, back, ts)
		}
		if err != nil && ts.Year() >= 0 && ts.Year() <= 9999 {
			t.Errorf("created = %q is not RFC 3339: %v", created, err)
		}
	})
}

// FuzzSign checks that a signature always has the Standard Webhooks shape
// and that a raw secret and its whsec_ form sign alike.
func FuzzSign(f *testing.F) {
	f.Add(vectorSecret, vectorID, int64(vectorTimestamp), []byte(vectorPayload))
	f.Add("s3cret", "msg_1", int64(1700000000), []byte(`{"a":1}`))
	f.Add("whsec_", "", int64(-1), []byte{})
	f.Add("whsec_!!", "a.b", int64(0), []byte{0xff})
	f.Add("clé", "msg", int64(1), []byte("x"))
	f.Fuzz(func(t *testing.T, secret, id string, sec int64, body []byte) {
		ts := time.Unix(sec, 0)
		sig, err := Sign(secret, id, ts, body)
		if err != nil {
			if !errors.Is(err, ErrInvalidSecret) {
				t.Fatalf("Sign error %v does not match ErrInvalidSecret", err)
			}
			// A fixed phrase cannot quote the secret.
			switch err.Error() {
			case "has the whsec_ prefix but the rest is not valid base64", "has nothing after the whsec_ prefix", "must not be empty":
			default:
				t.Fatalf("Sign error %q is not one of the fixed phrases", err)
			}
			return
		}
		raw, ok := strings.CutPrefix(sig, "v1,")
		if !ok {
			t.Fatalf("signature %q lacks the v1, prefix", sig)
		}
		if mac, err := base64.StdEncoding.DecodeString(raw); err != nil || len(mac) != 32 {
			t.Fatalf("signature %q is not base64 of 32 bytes (%v)", sig, err)
		}
		if strings.HasPrefix(secret, SecretPrefix) {
			return
		}
		wrapped, err := Sign(SecretPrefix+base64.StdEncoding.EncodeToString([]byte(secret)), id, ts, body)
		if err != nil || wrapped != sig {
			t.Fatalf("whsec_ form signs %q (%v), raw form %q", wrapped, err, sig)
		}
	})
}
