package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/webhook"
)

// WebhookSender makes one signed delivery attempt.
type WebhookSender interface {
	Send(ctx context.Context, url, id string, body []byte, secret string, now time.Time) webhook.Attempt
}

// webhookTimeout bounds one attempt's River job: the send's own 10s
// timeout plus the store.
const webhookTimeout = time.Minute

type webhookWorker struct {
	river.WorkerDefaults[store.WebhookArgs]
	cfg  Config
	deps Deps
}

func (w *webhookWorker) Timeout(*river.Job[store.WebhookArgs]) time.Duration { return webhookTimeout }

// NextRetry follows DOCJOBS_WEBHOOK_RETRY_SCHEDULE: the n-th retry waits
// its n-th entry.
func (w *webhookWorker) NextRetry(j *river.Job[store.WebhookArgs]) time.Time {
	s := w.cfg.WebhookRetrySchedule
	return time.Now().Add(s[min(max(j.Attempt-1, 0), len(s)-1)])
}

func (w *webhookWorker) Work(ctx context.Context, rj *river.Job[store.WebhookArgs]) error {
	j, err := w.deps.Store.GetJob(ctx, "", rj.Args.JobID)
	if errors.Is(err, job.ErrNotFound) {
		return nil // deleted meanwhile: nobody to tell, nothing to keep
	}
	if err != nil {
		return fmt.Errorf("webhook %s: load: %w", rj.Args.JobID, err)
	}
	if j.Webhook.State != job.WebhookPending || !j.Status.Terminal() {
		return nil
	}
	log := w.deps.Logger.With("job_id", j.ID, "account_id", j.AccountID)
	secret, err := openSecret(ctx, w.deps, j, job.SecretWebhookSecret)
	if err != nil && !errors.Is(err, errNoSecret) {
		return fmt.Errorf("webhook %s: %w", j.ID, err)
	}
	now := time.Now()
	var a webhook.Attempt
	if errors.Is(err, errNoSecret) && j.WebhookSigned {
		// The secret given at create is gone before the delivery ended,
		// which nothing should do. Sending unsigned would hand the
		// receiver a request it cannot tell from a forgery: the delivery
		// fails instead, and says why.
		a = webhook.Attempt{Gone: true, Err: "not sent: the webhook secret is no longer stored, and a request is never sent unsigned when one was given"}
	} else {
		body, err := webhook.Event{
			Type: webhook.TypeFor(string(j.Status)), JobID: j.ID, AccountID: j.AccountID, Status: string(j.Status),
			Error: j.Error, Title: j.Title, Metadata: j.Metadata, Created: j.Created, Updated: j.Updated,
			ResultURL: w.cfg.PublicURL + "/v1/jobs/" + j.ID + "/result",
		}.Body()
		if err != nil {
			return fmt.Errorf("webhook %s: body: %w", j.ID, err)
		}
		// The id is the job's: a receiver sees the same webhook-id on
		// every retry and can drop repeats.
		a = w.deps.Webhooks.Send(ctx, j.WebhookURL, "msg_"+j.ID, body, secret, now)
	}
	state := job.WebhookPending
	switch {
	case a.Delivered:
		state = job.WebhookDelivered
	case a.Gone:
		state = job.WebhookFailed
	case j.Webhook.Attempts+1 > len(w.cfg.WebhookRetrySchedule):
		// Said in the error, so the summary tells a caller that no retry
		// is coming without knowing the server's schedule.
		state = job.WebhookFailed
		a.Err = fmt.Sprintf("%s; given up after %d attempts", a.Err, j.Webhook.Attempts+1)
	}
	d, err := w.deps.Store.RecordWebhookAttempt(ctx, store.WebhookAttempt{JobID: j.ID, Status: a.Status, Error: a.Err,
		At: now, Duration: a.Duration, State: state})
	if err != nil {
		return fmt.Errorf("webhook %s: %w", j.ID, err)
	}
	log.Info("webhook attempt", "attempt", d.Attempts, "status", a.Status, "state", state, "err", a.Err)
	if state == job.WebhookPending {
		return fmt.Errorf("webhook %s: attempt %d: %s", j.ID, d.Attempts, a.Err)
	}
	return nil
}
