package store

import (
	"time"

	"github.com/riverqueue/river"
)

// QueueWebhook is the webhook deliveries' queue.
const QueueWebhook = "webhook"

// WebhookArgs is the River job that delivers a job's webhook. The store
// inserts it in every transaction that makes a job with a webhook URL
// terminal, so no path to a terminal status can forget it; the worker
// package works it.
type WebhookArgs struct {
	JobID string `json:"job_id"`
}

// Kind is the River job kind.
func (WebhookArgs) Kind() string { return "webhook" }

// InsertOpts put deliveries on their own queue. Retries follow the
// worker's schedule (at most MaxWebhookRetries), which ends the delivery
// itself before River's attempts run out; should attempts fail before they
// are recorded, the worker ends the delivery on River's last one.
func (WebhookArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueWebhook, MaxAttempts: MaxWebhookRetries + 2,
		UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// MaxWebhookRetries bounds DOCJOBS_WEBHOOK_RETRY_SCHEDULE.
const MaxWebhookRetries = 20

// WebhookAttempt is one delivery attempt and the state it leaves.
type WebhookAttempt struct {
	JobID    string
	Status   int    // HTTP status; 0 when there was no answer
	Error    string // empty when delivered
	At       time.Time
	Duration time.Duration
	// State is the delivery's state after this attempt: pending (a retry
	// follows), delivered or failed. A final state erases the webhook
	// secret in the same transaction.
	State string
}
