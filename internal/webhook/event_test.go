package webhook

import (
	"errors"
	"testing"
	"time"
)

func TestTypeFor(t *testing.T) {
	tests := []struct {
		name, status, want string
	}{
		{"complete job sends job.completed", "JOB_STATUS_COMPLETE", TypeCompleted},
		{"failed job sends job.failed", "JOB_STATUS_FAILED", TypeFailed},
		{"cancelled job sends job.cancelled", "JOB_STATUS_CANCELLED", TypeCancelled},
		{"new job has no event", "JOB_STATUS_NEW", ""},
		{"running job has no event", "JOB_STATUS_RUNNING", ""},
		{"unknown status has no event", "COMPLETE", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TypeFor(tt.status); got != tt.want {
				t.Errorf("TypeFor(%q) = %q, want %q", tt.status, got, tt.want)
			}
		})
	}
}

func TestEventBody(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	created := time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		event Event
		want  string
	}{
		{
			name: "completed job carries every field in snake_case",
			event: Event{
				Type: TypeCompleted, JobID: "job_1", AccountID: "acct_1", Status: "JOB_STATUS_COMPLETE",
				Title: "Invoices <March> & co", Metadata: map[string]string{"b": "2", "a": "1"},
				Created: created, Updated: created.Add(1500 * time.Millisecond),
				ResultURL: "https://docjobs.example/v1/jobs/job_1/result",
			},
			want: `{"type":"job.completed","job_id":"job_1","account_id":"acct_1","status":"JOB_STATUS_COMPLETE",` +
				`"error":"","title":"Invoices <March> & co","metadata":{"a":"1","b":"2"},` +
				`"created":"2025-03-04T10:00:00Z","updated":"2025-03-04T10:00:01.500Z",` +
				`"result_url":"https://docjobs.example/v1/jobs/job_1/result"}`,
		},
		{
			name: "no metadata is an empty object and the type follows the status",
			event: Event{
				JobID: "job_2", AccountID: "acct_1", Status: "JOB_STATUS_FAILED", Error: "no file could be recognized",
				Created: created.In(paris), Updated: created.Add(123456 * time.Nanosecond).In(paris),
				ResultURL: "http://localhost:8080/v1/jobs/job_2/result",
			},
			want: `{"type":"job.failed","job_id":"job_2","account_id":"acct_1","status":"JOB_STATUS_FAILED",` +
				`"error":"no file could be recognized","title":"","metadata":{},` +
				`"created":"2025-03-04T10:00:00Z","updated":"2025-03-04T10:00:00.000123456Z",` +
				`"result_url":"http://localhost:8080/v1/jobs/job_2/result"}`,
		},
		{
			name: "timestamps keep microseconds in groups of three like protojson",
			event: Event{
				Type: TypeCancelled, JobID: "j", AccountID: "a", Status: "JOB_STATUS_CANCELLED",
				Metadata: map[string]string{}, Created: created.Add(120 * time.Microsecond), Updated: created,
			},
			want: `{"type":"job.cancelled","job_id":"j","account_id":"a","status":"JOB_STATUS_CANCELLED",` +
				`"error":"","title":"","metadata":{},"created":"2025-03-04T10:00:00.000120Z",` +
				`"updated":"2025-03-04T10:00:00Z","result_url":""}`,
		},
		{
			name:  "invalid UTF-8 becomes U+FFFD so the body stays text",
			event: Event{Type: TypeFailed, Status: "JOB_STATUS_FAILED", Error: "bad \xff byte", Created: created, Updated: created},
			want: `{"type":"job.failed","job_id":"","account_id":"","status":"JOB_STATUS_FAILED",` +
				`"error":"bad \ufffd byte","title":"","metadata":{},"created":"2025-03-04T10:00:00Z",` +
				`"updated":"2025-03-04T10:00:00Z","result_url":""}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.event.Body()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Body() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestEventBodyNeedsATerminalStatusOrAType(t *testing.T) {
	_, err := Event{JobID: "j", Status: "JOB_STATUS_RUNNING"}.Body()
	if !errors.Is(err, ErrNoType) {
		t.Fatalf("Body() error = %v, want ErrNoType", err)
	}
}
