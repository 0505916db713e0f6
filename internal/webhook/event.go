// Package webhook builds the notification docjobs sends when a job ends,
// signs it the Standard Webhooks way (https://www.standardwebhooks.com), and
// makes one delivery attempt; retrying and recording attempts are the
// worker's.
//
// Receivers verify us with any Standard Webhooks library: the headers are
// webhook-id (stable across retries), webhook-timestamp (unix seconds) and
// webhook-signature ("v1," + base64 HMAC-SHA256 of "{id}.{timestamp}.{body}").
package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Event types, one per terminal job status.
const (
	TypeCompleted = "job.completed"
	TypeFailed    = "job.failed"
	TypeCancelled = "job.cancelled"
)

// ErrNoType is wrapped by Event.Body when the event has no type and its
// status is not terminal, so none can be derived.
var ErrNoType = errors.New("webhook event needs a type")

// TypeFor returns the event type for a terminal job status (the JobStatus
// enum name, such as JOB_STATUS_COMPLETE), or "" for any other status.
func TypeFor(status string) string {
	switch status {
	case "JOB_STATUS_COMPLETE":
		return TypeCompleted
	case "JOB_STATUS_FAILED":
		return TypeFailed
	case "JOB_STATUS_CANCELLED":
		return TypeCancelled
	}
	return ""
}

// Event is the body of a webhook request: a small summary of the job; the
// receiver reads the result itself at ResultURL.
type Event struct {
	Type      string // one of the Type constants; "" means TypeFor(Status)
	JobID     string
	AccountID string
	Status    string // the JobStatus enum name
	Error     string
	Title     string
	Metadata  map[string]string
	Created   time.Time
	Updated   time.Time
	ResultURL string // {publicURL}/v1/jobs/{id}/result
}

// wireEvent fixes the field names and order of the body. Every field is
// always present, empty or not, so a receiver with a strict schema sees
// one shape for every event.
type wireEvent struct {
	Type      string            `json:"type"`
	JobID     string            `json:"job_id"`
	AccountID string            `json:"account_id"`
	Status    string            `json:"status"`
	Error     string            `json:"error"`
	Title     string            `json:"title"`
	Metadata  map[string]string `json:"metadata"`
	Created   string            `json:"created"`
	Updated   string            `json:"updated"`
	ResultURL string            `json:"result_url"`
}

// Body returns the event as compact JSON with snake_case names. Metadata is
// {} when there is none; timestamps are RFC 3339 in UTC written the way the
// API writes them, so a receiver can compare them with GET /v1/jobs/{id}.
// Strings that are not valid UTF-8 have the bad bytes replaced by U+FFFD,
// which keeps the body valid UTF-8 for receivers that verify it as text.
func (e Event) Body() ([]byte, error) {
	typ := e.Type
	if typ == "" {
		typ = TypeFor(e.Status)
	}
	if typ == "" {
		return nil, fmt.Errorf("%w: status %q is not terminal", ErrNoType, e.Status)
	}
	md := e.Metadata
	if md == nil {
		md = map[string]string{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Receivers are not HTML pages; "<" reads better than "\u003c".
	enc.SetEscapeHTML(false)
	err := enc.Encode(wireEvent{
		Type: typ, JobID: e.JobID, AccountID: e.AccountID, Status: e.Status, Error: e.Error, Title: e.Title,
		Metadata: md, Created: timestamp(e.Created), Updated: timestamp(e.Updated), ResultURL: e.ResultURL,
	})
	if err != nil {
		return nil, fmt.Errorf("webhook body: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// timestamp formats t like protojson formats a google.protobuf.Timestamp
// (UTC, "Z", 0, 3, 6 or 9 fractional digits), which is how the API
// returns created and updated.
func timestamp(t time.Time) string {
	s := t.UTC().Format("2006-01-02T15:04:05.000000000")
	s = strings.TrimSuffix(s, "000")
	s = strings.TrimSuffix(s, "000")
	s = strings.TrimSuffix(s, ".000")
	return s + "Z"
}
