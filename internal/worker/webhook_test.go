package worker

import (
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/store"
)

func TestWebhookRetriesWaitTheScheduleInOrder(t *testing.T) {
	w := &webhookWorker{cfg: Config{WebhookRetrySchedule: []time.Duration{time.Second, 5 * time.Second, 30 * time.Second}}}
	tests := []struct {
		name    string
		attempt int // the attempt that just failed
		want    time.Duration
	}{
		{"the first attempt's retry waits the first entry", 1, time.Second},
		{"the second attempt's retry waits the second entry", 2, 5 * time.Second},
		{"the third attempt's retry waits the third entry", 3, 30 * time.Second},
		{"beyond the schedule the last entry is kept", 4, 30 * time.Second},
		{"far beyond the schedule the last entry is kept", 20, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := time.Now()
			at := w.NextRetry(&river.Job[store.WebhookArgs]{JobRow: &rivertype.JobRow{Attempt: tt.attempt}})
			after := time.Now()
			if at.Before(before.Add(tt.want)) || at.After(after.Add(tt.want)) {
				t.Errorf("retry after attempt %d in %s, want %s", tt.attempt, at.Sub(before).Round(time.Millisecond), tt.want)
			}
		})
	}
}
