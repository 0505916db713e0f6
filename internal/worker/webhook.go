package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"github.com/docjobs/docjobs/internal/fair"
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
	// sending holds the process's places for deliveries being sent; when
	// all are taken, the accounts waiting for one take turns at the next
	// that frees (fair.Sem).
	sending *fair.Sem
	// places counts each account's deliveries sending or waiting for a
	// sending place in this process; perAccount bounds them.
	places     accountPlaces
	perAccount int
}

// webhookPlaces is how many deliveries one process sends at once. A
// receiver that takes the connection and never answers holds a place for
// the whole attempt's timeout (10 s).
const webhookPlaces = 16

// webhookAccountPlaces is how many of one account's deliveries one process
// sends, or has waiting for a place, at once: half the sending places.
// Without the bound, one account whose jobs end fast (a source that
// answers 404) with a receiver that never answers held every place, each
// of its jobs eight attempts long. Half leaves a lone account 8 receivers
// at once, which a receiver that answers in 100 ms makes 80 deliveries a
// second.
const webhookAccountPlaces = webhookPlaces / 2

// webhookWaitingPerAccount is how many of one account's deliveries wait
// for a sending place at once; the rest step back. Taking turns gives a
// waiting account one place per turn however many it has waiting, and one
// each lets the queue's waiting room (webhookQueue) hold as many accounts
// as there are sending places.
const webhookWaitingPerAccount = 1

// webhookPlaceWait bounds a delivery's wait for a sending place; past it
// the delivery steps back. With every place held by receivers that never
// answer, a place frees at least every 10 s and each waiting account
// (at most webhookPlaces of them) gets one in turn, so the wait is well
// inside it; it keeps the wait and the attempt within webhookTimeout.
const webhookPlaceWait = 30 * time.Second

// newWebhookWorker returns a webhook worker sending places deliveries at
// once, half of them at most of one account.
func newWebhookWorker(cfg Config, deps Deps, places int) *webhookWorker {
	return &webhookWorker{cfg: cfg, deps: deps, sending: fair.NewSem(places), perAccount: max(places/2, 1)}
}

// webhookQueue is the River queue of a webhook worker of places sending
// places: as many River places again, where deliveries wait their turn.
// River hands out deliveries first come, first served, knowing no
// accounts; with no more River places than sending ones, a delivery of an
// account that had none in flight stayed in River's queue behind the
// busy accounts' backlog while their receivers held every place. Taken
// out of River's queue into the waiting room, it waits in its account's
// turn and gets the next place that frees.
func webhookQueue(places int) river.QueueConfig {
	return river.QueueConfig{MaxWorkers: 2 * places}
}

// webhookStepBack is how long a delivery whose account has all its places
// taken waits outside River's hands (a snooze: no attempt spent) before it
// looks again; its River place goes meanwhile to the next delivery, maybe
// another account's.
const webhookStepBack = 5 * time.Second

// accountPlaces counts deliveries in flight by account. The zero value is
// ready to use.
type accountPlaces struct {
	mu sync.Mutex
	n  map[string]int
}

// take takes one of account's limit places, or reports false when all are
// taken. release, idempotent, gives it back.
func (p *accountPlaces) take(account string, limit int) (release func(), ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n[account] >= limit {
		return nil, false
	}
	if p.n == nil {
		p.n = map[string]int{}
	}
	p.n[account]++
	return sync.OnceFunc(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.n[account]--; p.n[account] <= 0 {
			delete(p.n, account)
		}
	}), true
}

func (w *webhookWorker) Timeout(*river.Job[store.WebhookArgs]) time.Duration { return webhookTimeout }

// NextRetry follows DOCJOBS_WEBHOOK_RETRY_SCHEDULE: the n-th retry waits
// its n-th entry.
func (w *webhookWorker) NextRetry(j *river.Job[store.WebhookArgs]) time.Time {
	s := w.cfg.WebhookRetrySchedule
	return time.Now().Add(s[min(max(j.Attempt-1, 0), len(s)-1)])
}

func (w *webhookWorker) Work(ctx context.Context, rj *river.Job[store.WebhookArgs]) error {
	last := rj.Attempt >= rj.MaxAttempts
	until := w.recordUntil(rj)
	err := w.deliver(ctx, rj.Args.JobID, last, until)
	var snooze *river.JobSnoozeError
	if err == nil || !last || errors.As(err, &snooze) {
		// A step back spends no attempt: the last one is still to come.
		return err
	}
	// River discards the job after this attempt. A delivery left pending
	// would keep its secret, and its job, for ever (retention waits for
	// pending deliveries): whatever kept this attempt from being recorded,
	// the delivery ends here.
	return w.giveUp(ctx, rj.Args.JobID, err, until)
}

// recordUntil is how long an attempt's record may wait out an unreachable
// database: as long as River leaves the attempt alone. River retries the
// delivery only once Work has returned, and its rescuer takes a running
// job for stuck only RescueStuckJobsAfter past its start (serve's
// LongestStageTimeout plus RescueMargin), not at the attempt's minute;
// a record that gave up at the minute left the delivery pending, and the
// next attempt sent the webhook again.
func (w *webhookWorker) recordUntil(rj *river.Job[store.WebhookArgs]) time.Time {
	began := time.Now()
	if rj.AttemptedAt != nil && rj.AttemptedAt.Before(began) {
		began = *rj.AttemptedAt
	}
	return began.Add(w.cfg.LongestStageTimeout())
}

// notSent is a delivery that failed before its request could be made;
// public says why in words fit for the job's owner, which the wrapped
// error (a store's, say) may not be.
type notSent struct {
	public string
	err    error
}

func (e *notSent) Error() string { return e.err.Error() }
func (e *notSent) Unwrap() error { return e.err }

// deliver makes one attempt and records it, waiting out an unreachable
// database until recordUntil. On River's last attempt (last) a failed
// attempt ends the delivery whatever the schedule says.
func (w *webhookWorker) deliver(ctx context.Context, jobID string, last bool, recordUntil time.Time) error {
	j, err := w.deps.Store.GetJob(ctx, "", jobID)
	if errors.Is(err, job.ErrNotFound) {
		return nil // deleted meanwhile: nobody to tell, nothing to keep
	}
	if err != nil {
		return fmt.Errorf("webhook %s: load: %w", jobID, err)
	}
	if j.Webhook.State != job.WebhookPending || !j.Status.Terminal() {
		return nil
	}
	log := w.deps.Logger.With("job_id", j.ID, "account_id", j.AccountID)
	release, ok := w.places.take(j.AccountID, w.perAccount)
	if !ok {
		log.Debug("webhook: the account's deliveries are all in flight, stepping back", "for", webhookStepBack)
		return river.JobSnooze(webhookStepBack)
	}
	defer release()
	placeCtx, cancel := context.WithTimeout(ctx, webhookPlaceWait)
	ok, err = w.sending.AcquireQueued(placeCtx, j.AccountID, webhookWaitingPerAccount)
	cancel()
	if err != nil || !ok {
		// No request was made: whether the account has one waiting
		// already, the wait ran out or the worker stops, the delivery
		// steps back and spends no attempt.
		log.Debug("webhook: no sending place, stepping back", "for", webhookStepBack, "err", err)
		return river.JobSnooze(webhookStepBack)
	}
	defer w.sending.Release()
	// The job may have ended its delivery, or been deleted, while this one
	// waited for a place: read it again rather than send for it.
	if j, err = w.deps.Store.GetJob(ctx, "", jobID); errors.Is(err, job.ErrNotFound) {
		return nil
	} else if err != nil {
		return fmt.Errorf("webhook %s: load: %w", jobID, err)
	}
	if j.Webhook.State != job.WebhookPending {
		return nil
	}
	keys, err := openJobKeys(ctx, w.deps, j)
	var secret string
	if err == nil {
		secret, err = keys.secret(job.SecretWebhookSecret)
	}
	var unopened unopenedSecret
	if errors.As(err, &unopened) {
		return fmt.Errorf("webhook %s: %w", j.ID, &notSent{public: "the webhook secret cannot be opened on this server", err: err})
	}
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
			return fmt.Errorf("webhook %s: %w", j.ID, &notSent{public: "the webhook body cannot be encoded", err: err})
		}
		// The id is the job's: a receiver sees the same webhook-id on
		// every retry and can drop repeats.
		a = w.deps.Webhooks.Send(ctx, j.WebhookURL, "msg_"+j.ID, body, secret, now)
		// The outcome words of every stage's metric are the rows' DONE and
		// FAILED, so one dashboard filter finds every stage's failures.
		outcome := job.RowDone
		if !a.Delivered {
			outcome = job.RowFailed
		}
		observe(w.deps.Observer, "webhook", string(outcome), now)
	}
	state := job.WebhookPending
	switch {
	case a.Delivered:
		state = job.WebhookDelivered
	case a.Gone:
		state = job.WebhookFailed
	case j.Webhook.Attempts+1 > len(w.cfg.WebhookRetrySchedule), last:
		// Said in the error, so the summary tells a caller that no retry
		// is coming without knowing the server's schedule.
		state = job.WebhookFailed
		a.Err = fmt.Sprintf("%s; given up after %s", a.Err, attempts(j.Webhook.Attempts+1))
	}
	// The record is tried again as a paid answer's is (retryWrite): an
	// attempt the receiver took but whose record was lost to a cut
	// connection or a failover was sent again by River's next attempt. It
	// waits past the attempt's minute, until recordUntil.
	rctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), recordUntil)
	defer cancel()
	var d job.WebhookDelivery
	_, err = retryWrite(rctx, func(ctx context.Context) (bool, error) {
		var err error
		d, err = w.deps.Store.RecordWebhookAttempt(ctx, store.WebhookAttempt{JobID: j.ID, Status: a.Status, Error: a.Err,
			At: now, Duration: a.Duration, State: state})
		return true, err
	})
	if err != nil {
		return fmt.Errorf("webhook %s: %w", j.ID, err)
	}
	log.Info("webhook attempt", "attempt", d.Attempts, "status", a.Status, "state", state, "err", a.Err)
	if state == job.WebhookPending {
		return fmt.Errorf("webhook %s: attempt %d: %s", j.ID, d.Attempts, a.Err)
	}
	return nil
}

// giveUp ends a delivery whose last River attempt failed with cause before
// it could be recorded: it records a failed attempt saying why, which
// erases the webhook secret. It returns nil once that is recorded, so
// River completes the job; cause is logged. Its read and its record wait
// out an unreachable database as an attempt's record does (until until,
// at least recordPatience): River discards the job when this returns, and
// a delivery left pending keeps its secret and its job for ever.
func (w *webhookWorker) giveUp(ctx context.Context, jobID string, cause error, until time.Time) error {
	ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), until)
	defer cancel()
	log := w.deps.Logger.With("job_id", jobID)
	reason := "given up: the delivery failed on the service's side"
	var ns *notSent
	if errors.As(cause, &ns) {
		reason = "given up: not sent, " + ns.public
	}
	recorded := false
	_, err := retryWrite(ctx, func(ctx context.Context) (bool, error) {
		// The attempt may have been recorded after all (a commit whose
		// answer was lost): an ended delivery is left as it is.
		j, err := w.deps.Store.GetJob(ctx, "", jobID)
		if errors.Is(err, job.ErrNotFound) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if j.Webhook.State != job.WebhookPending {
			return true, nil
		}
		_, err = w.deps.Store.RecordWebhookAttempt(ctx, store.WebhookAttempt{JobID: jobID, Error: reason,
			At: time.Now(), State: job.WebhookFailed})
		if errors.Is(err, job.ErrNotFound) {
			return true, nil
		}
		recorded = err == nil
		return err == nil, err
	})
	if err != nil {
		log.Error("webhook: cannot give up the delivery; it stays pending", "err", err, "cause", cause)
		return fmt.Errorf("webhook %s: give up after %w: %w", jobID, cause, err)
	}
	if recorded {
		log.Warn("webhook given up on River's last attempt", "err", cause, "reason", reason)
	}
	return nil
}

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}
