package worker

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/convert"
	"github.com/docjobs/docjobs/internal/fair"
	"github.com/docjobs/docjobs/internal/fetch"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/outbound"
	"github.com/docjobs/docjobs/internal/secret"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/sqlite"
	"github.com/docjobs/docjobs/internal/webhook"
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

// hookReceiver records the webhook-signature header of every request it
// gets and answers each with status.
type hookReceiver struct {
	url  string
	mu   sync.Mutex
	sigs []string
}

func newHookReceiver(t *testing.T, status int) *hookReceiver {
	t.Helper()
	rc := &hookReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.sigs = append(rc.sigs, r.Header.Get("webhook-signature"))
		rc.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	rc.url = srv.URL + "/hook"
	return rc
}

func (rc *hookReceiver) signatures() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.sigs...)
}

// webhookCase is a cancelled job whose delivery to a local receiver is
// due, over a real SQLite store and sealer, and the worker that delivers it.
type webhookCase struct {
	st     *sqlite.Store
	dbPath string
	sealer *secret.Sealer
	w      *webhookWorker
	j      *job.Job
	rc     *hookReceiver
}

// newWebhookCase stores the job, sealing webhookSecret unless it is "",
// with a receiver answering status.
func newWebhookCase(t *testing.T, webhookSecret string, status int) *webhookCase {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	c := &webhookCase{dbPath: migratedSQLitePath(t), rc: newHookReceiver(t, status)}
	var err error
	if c.st, err = sqlite.Open(ctx, sqlite.Config{Path: c.dbPath, Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.st.Close() })
	if c.sealer, err = secret.Open(filepath.Join(dir, "master.keyset")); err != nil {
		t.Fatal(err)
	}
	c.j = &job.Job{ID: "job-1", AccountID: "a", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a.txt"},
		ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", WebhookURL: c.rc.url, Created: time.Now()}
	var secrets []job.SealedSecret
	if webhookSecret != "" {
		sealed, err := c.sealer.Seal([]byte(webhookSecret), c.j.AccountID, c.j.ID, job.SecretWebhookSecret)
		if err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, job.SealedSecret{Field: job.SecretWebhookSecret, Ciphertext: sealed})
	}
	if _, _, err := c.st.CreateJob(ctx, store.CreateJobParams{Job: c.j, Secrets: secrets}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.st.CancelJob(ctx, c.j.AccountID, c.j.ID); err != nil {
		t.Fatal(err)
	}
	sender, err := webhook.NewSender(webhook.Config{Client: outbound.NewClient(outbound.Config{AllowPrivate: true})})
	if err != nil {
		t.Fatal(err)
	}
	c.w = newWebhookWorker(Config{}.withDefaults(),
		Deps{Store: c.st, Secrets: c.sealer, Webhooks: sender, Logger: slog.New(slog.DiscardHandler)}, webhookPlaces)
	return c
}

// work runs the delivery's River job as its attempt-th attempt of max.
func (c *webhookCase) work(attempt, max int) error {
	return c.w.Work(context.Background(), &river.Job[store.WebhookArgs]{
		JobRow: &rivertype.JobRow{Attempt: attempt, MaxAttempts: max}, Args: store.WebhookArgs{JobID: c.j.ID}})
}

// loseWebhookSecret deletes the job's webhook secret behind the store's
// back, as a bug or a hand-edited database could.
func (c *webhookCase) loseWebhookSecret(t *testing.T) {
	t.Helper()
	db, err := sql.Open("sqlite", c.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DELETE FROM job_secrets WHERE job_id = ? AND field = ?`, c.j.ID, job.SecretWebhookSecret); err != nil {
		t.Fatal(err)
	}
}

func (c *webhookCase) delivery(t *testing.T) job.WebhookDelivery {
	t.Helper()
	j, err := c.st.GetJob(context.Background(), "", c.j.ID)
	if err != nil {
		t.Fatal(err)
	}
	return j.Webhook
}

func TestAWebhookGivenASecretIsNeverSentUnsigned(t *testing.T) {
	const lost = "not sent: the webhook secret is no longer stored, and a request is never sent unsigned when one was given"
	tests := []struct {
		name       string
		secret     string
		lose       bool
		wantState  string
		wantErr    string
		wantSigned []bool // per request the receiver got: signed or not
	}{
		{"a job given a secret is sent signed", "a plain secret", false, job.WebhookDelivered, "", []bool{true}},
		{"a job given no secret is sent unsigned", "", false, job.WebhookDelivered, "", []bool{false}},
		{"a job whose given secret is lost fails without a request", "a plain secret", true, job.WebhookFailed, lost, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newWebhookCase(t, tt.secret, http.StatusOK)
			if tt.lose {
				c.loseWebhookSecret(t)
			}
			if err := c.work(1, 22); err != nil {
				t.Fatalf("Work: %v", err)
			}
			if d := c.delivery(t); d.State != tt.wantState || d.Attempts != 1 || d.LastError != tt.wantErr {
				t.Errorf("delivery = %+v, want %s after one attempt with error %q", d, tt.wantState, tt.wantErr)
			}
			var signed []bool
			for _, sig := range c.rc.signatures() {
				signed = append(signed, sig != "")
			}
			if len(signed) != len(tt.wantSigned) || (len(signed) > 0 && signed[0] != tt.wantSigned[0]) {
				t.Errorf("requests signed = %v, want %v", signed, tt.wantSigned)
			}
		})
	}
}

// unreadableSecrets is a real store that cannot read secrets, as a
// database dropping its connections would.
type unreadableSecrets struct{ *sqlite.Store }

func (unreadableSecrets) JobSecrets(context.Context, string) ([]job.SealedSecret, error) {
	return nil, errors.New("connection reset by peer")
}

// River discards a delivery after its last attempt. Whatever kept the
// attempts from being recorded, the last one ends the delivery, so the
// secret is erased and retention can delete the job.
func TestRiversLastAttemptEndsTheDelivery(t *testing.T) {
	tests := []struct {
		name     string
		status   int                                // the receiver's answer
		fault    func(t *testing.T, c *webhookCase) // what fails each attempt
		wantErr  string                             // the summary's last error once given up
		requests int
	}{
		{
			name: "a secret this server cannot open", status: http.StatusOK,
			fault: func(t *testing.T, c *webhookCase) {
				other, err := secret.Open(filepath.Join(filepath.Dir(c.dbPath), "another.keyset"))
				if err != nil {
					t.Fatal(err)
				}
				c.w.deps.Secrets = other
			},
			wantErr: "given up: not sent, the webhook secret cannot be opened on this server",
		},
		{
			name: "a store that cannot read the secret", status: http.StatusOK,
			fault:   func(_ *testing.T, c *webhookCase) { c.w.deps.Store = unreadableSecrets{c.st} },
			wantErr: "given up: the delivery failed on the service's side",
		},
		{
			name: "a receiver still failing before the schedule is spent", status: http.StatusInternalServerError,
			fault:    func(*testing.T, *webhookCase) {},
			wantErr:  "receiver answered 500 Internal Server Error; given up after 2 attempts",
			requests: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newWebhookCase(t, "a plain secret", tt.status)
			tt.fault(t, c)
			ctx := context.Background()
			if err := c.work(1, 22); err == nil {
				t.Fatal("the first attempt succeeded; want an error so that River retries")
			}
			if d := c.delivery(t); d.State != job.WebhookPending {
				t.Fatalf("delivery after the first attempt = %+v, want pending", d)
			}
			if err := c.work(22, 22); err != nil {
				t.Fatalf("River's last attempt: %v", err)
			}
			if d := c.delivery(t); d.State != job.WebhookFailed || d.LastError != tt.wantErr || d.DeliveredAt != (time.Time{}) {
				t.Errorf("delivery after River's last attempt = %+v, want failed with %q", d, tt.wantErr)
			}
			if n := len(c.rc.signatures()); n != tt.requests {
				t.Errorf("receiver got %d requests, want %d", n, tt.requests)
			}
			secrets, err := c.st.JobSecrets(ctx, c.j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(secrets) != 0 {
				t.Errorf("%d secrets left once the delivery was given up", len(secrets))
			}
			expired, err := c.st.ExpiredJobs(ctx, time.Now().Add(time.Hour), 10)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(expired, c.j.ID) {
				t.Error("retention still skips the job whose delivery was given up")
			}
		})
	}
}

// An attempt whose record committed but whose answer was lost looks failed
// to River; giving up must not turn the delivery it recorded into a failure.
func TestGivingUpLeavesAnEndedDeliveryAlone(t *testing.T) {
	c := newWebhookCase(t, "a plain secret", http.StatusOK)
	if err := c.work(1, 22); err != nil {
		t.Fatal(err)
	}
	if err := c.w.giveUp(context.Background(), c.j.ID, errors.New("commit answer lost"), time.Now().Add(time.Minute)); err != nil {
		t.Fatalf("giveUp: %v", err)
	}
	if d := c.delivery(t); d.State != job.WebhookDelivered || d.Attempts != 1 || d.LastError != "" {
		t.Errorf("delivery = %+v, want delivered after its one attempt", d)
	}
}

// addEndedJob stores a cancelled job of account whose webhook goes to url.
func (c *webhookCase) addEndedJob(t *testing.T, id, account, url string) {
	t.Helper()
	ctx := context.Background()
	j := &job.Job{ID: id, AccountID: account, Status: job.StatusNew, SourceURLs: []string{"https://example.com/a.txt"},
		ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", WebhookURL: url, Created: time.Now()}
	if _, _, err := c.st.CreateJob(ctx, store.CreateJobParams{Job: j}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.st.CancelJob(ctx, account, id); err != nil {
		t.Fatal(err)
	}
}

// workOn runs job id's delivery as its attempt-th River attempt of max.
func (c *webhookCase) workOn(id string, attempt, max int) error {
	return c.w.Work(context.Background(), &river.Job[store.WebhookArgs]{
		JobRow: &rivertype.JobRow{Attempt: attempt, MaxAttempts: max}, Args: store.WebhookArgs{JobID: id}})
}

func (c *webhookCase) deliveryOf(t *testing.T, id string) job.WebhookDelivery {
	t.Helper()
	j, err := c.st.GetJob(context.Background(), "", id)
	if err != nil {
		t.Fatal(err)
	}
	return j.Webhook
}

// hangingReceiver takes every request and answers none until the test
// ends; arrived gets one value per request.
func hangingReceiver(t *testing.T) (url string, arrived <-chan struct{}) {
	t.Helper()
	got := make(chan struct{}, 100)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: the handlers return, then the server closes
	return srv.URL + "/hook", got
}

// A receiver that takes the connection and never answers holds a River
// place for the attempt's whole timeout. One account's deliveries take at
// most their share of the places at once; the rest step back (a snooze, no
// attempt spent, not even River's last), so another account's webhook is
// sent at once instead of after the first account's backlog.
func TestOneAccountsHangingReceiversLeaveOtherAccountsWebhooksAPlace(t *testing.T) {
	c := newWebhookCase(t, "", http.StatusOK)
	sender, err := webhook.NewSender(webhook.Config{Client: outbound.NewClient(outbound.Config{AllowPrivate: true}), Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c.w.deps.Webhooks = sender
	c.w.perAccount = 2
	hang, arrived := hangingReceiver(t)
	for _, id := range []string{"slow-1", "slow-2", "slow-3"} {
		c.addEndedJob(t, id, "slow", hang)
	}

	var wg sync.WaitGroup
	for _, id := range []string{"slow-1", "slow-2"} {
		wg.Go(func() { _ = c.workOn(id, 1, 22) })
	}
	for range 2 {
		select {
		case <-arrived:
		case <-time.After(5 * time.Second):
			t.Fatal("the first two deliveries did not reach the receiver")
		}
	}

	for _, attempt := range []int{1, 22} {
		start := time.Now()
		err := c.workOn("slow-3", attempt, 22)
		var snooze *river.JobSnoozeError
		if !errors.As(err, &snooze) || snooze.Duration != webhookStepBack {
			t.Errorf("attempt %d of a third delivery of the account = %v after %s, want a snooze of %s", attempt, err,
				time.Since(start).Round(time.Millisecond), webhookStepBack)
		}
		if d := c.deliveryOf(t, "slow-3"); d.State != job.WebhookPending || d.Attempts != 0 {
			t.Errorf("delivery stepped back at attempt %d = %+v, want pending with no attempt", attempt, d)
		}
	}
	select {
	case <-arrived:
		t.Error("the receiver got a third request while the account's places were taken")
	default:
	}

	start := time.Now()
	if err := c.work(1, 22); err != nil {
		t.Fatalf("another account's delivery: %v", err)
	}
	if d := c.delivery(t); d.State != job.WebhookDelivered || time.Since(start) > time.Second {
		t.Errorf("another account's delivery = %+v after %s, want delivered at once", d, time.Since(start).Round(time.Millisecond))
	}

	wg.Wait() // the hanging attempts time out and give their places back
	// The next attempt fails only by its timeout, and how long that is
	// does not matter here: a short one spares the test 3 s of waiting.
	if c.w.deps.Webhooks, err = webhook.NewSender(webhook.Config{Client: outbound.NewClient(outbound.Config{AllowPrivate: true}),
		Timeout: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if err := c.workOn("slow-3", 2, 22); err == nil || errors.As(err, new(*river.JobSnoozeError)) {
		t.Errorf("the third delivery once places were free = %v, want a failed attempt (the receiver hangs)", err)
	}
	if d := c.deliveryOf(t, "slow-3"); d.Attempts != 1 {
		t.Errorf("the third delivery once places were free = %+v, want one attempt", d)
	}
}

// The bound per account leaves places to other accounts only while it is
// below the sending places, and accounts take turns at those only from
// the River places beyond them.
func TestAnAccountsWebhookPlacesAreFewerThanTheQueues(t *testing.T) {
	sender, err := webhook.NewSender(webhook.Config{Client: outbound.NewClient(outbound.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	// Register only keeps its dependencies; none is called here.
	queues, err := Register(river.NewWorkers(), Config{}, Deps{Store: &sqlite.Store{}, Fetcher: &fetch.Fetcher{},
		Convert: convert.New(convert.Config{}).Convert, Webhooks: sender, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if webhookAccountPlaces >= webhookPlaces {
		t.Errorf("an account may hold %d of the %d webhook sending places: none left for other accounts", webhookAccountPlaces, webhookPlaces)
	}
	// Beyond the sending places, River places where other accounts'
	// deliveries wait their turn instead of in River's queue.
	if n := queues[store.QueueWebhook].MaxWorkers; n < webhookPlaces+webhookPlaces*webhookWaitingPerAccount {
		t.Errorf("the webhook queue has %d River places for %d sending places: no room for each account to wait its turn", n, webhookPlaces)
	}
}

// heldReceiver takes every request to /hang and answers it 503 only when
// the test says, one request per answerOne; requests to /ok are answered
// 200 at once. Every request's webhook-id goes to arrived as it comes.
type heldReceiver struct {
	url     string
	arrived chan string
	answer  chan struct{}
}

func newHeldReceiver(t *testing.T) *heldReceiver {
	t.Helper()
	rc := &heldReceiver{arrived: make(chan string, 100), answer: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.arrived <- r.Header.Get("webhook-id")
		if r.URL.Path == "/ok" {
			return
		}
		select {
		case <-rc.answer:
			w.WriteHeader(http.StatusServiceUnavailable)
		case <-r.Context().Done():
		case <-t.Context().Done(): // before the workers stop
		}
	}))
	t.Cleanup(srv.Close)
	rc.url = srv.URL
	return rc
}

// next returns the webhook-id of the next request to arrive.
func (rc *heldReceiver) next(t *testing.T) string {
	t.Helper()
	select {
	case id := <-rc.arrived:
		return id
	case <-time.After(time.Minute):
		t.Fatal("no request came to the receiver")
		return ""
	}
}

// answerOne answers one held request.
func (rc *heldReceiver) answerOne(t *testing.T) {
	t.Helper()
	select {
	case rc.answer <- struct{}{}:
	case <-time.After(time.Minute):
		t.Fatal("no request was held to answer")
	}
}

// endJobWithWebhook stores a job of account whose webhook goes to url and
// cancels it, which queues its delivery.
func endJobWithWebhook(t *testing.T, st store.Store, id, account, url string) {
	t.Helper()
	ctx := context.Background()
	j := &job.Job{ID: id, AccountID: account, Status: job.StatusNew, SourceURLs: []string{"https://example.com/a.txt"},
		ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", WebhookURL: url, Created: time.Now()}
	if _, _, err := st.CreateJob(ctx, store.CreateJobParams{Job: j}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CancelJob(ctx, account, id); err != nil {
		t.Fatal(err)
	}
}

// Two accounts whose receivers never answer hold every sending place, and
// each has a backlog queued. Two other accounts' deliveries, queued after
// it, wait in their turn: each of the next two places that free goes to
// one of them, before any of the busy accounts' backlog. Before, River
// handed the freed place to the oldest delivery queued, the busy accounts'
// backlog, and the waiting accounts went after all of it.
func TestAWaitingAccountsWebhookTakesTheNextFreePlaceBeforeBusyAccountsBacklog(t *testing.T) {
	forEachStoreAtOnce(t, func(t *testing.T, st store.Store) {
		rc := newHeldReceiver(t)
		sender, err := webhook.NewSender(webhook.Config{Client: outbound.NewClient(outbound.Config{AllowPrivate: true}), Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		const places = 4 // two accounts' 2 each fill them
		w := newWebhookWorker(Config{WebhookRetrySchedule: []time.Duration{time.Hour}}.withDefaults(),
			Deps{Store: st, Webhooks: sender, Logger: slog.New(slog.DiscardHandler)}, places)
		workers := river.NewWorkers()
		river.AddWorker(workers, w)
		runUntilTheTestEnds(t, st, workers, map[string]river.QueueConfig{store.QueueWebhook: webhookQueue(places)})

		for _, id := range []string{"a-1", "a-2", "b-1", "b-2"} {
			endJobWithWebhook(t, st, id, id[:1], rc.url+"/hang")
		}
		for range places {
			if id := rc.next(t); id != "msg_a-1" && id != "msg_a-2" && id != "msg_b-1" && id != "msg_b-2" {
				t.Fatalf("request %s came before the busy accounts' first deliveries", id)
			}
		}
		for i := 3; i <= 6; i++ {
			for _, account := range []string{"a", "b"} {
				endJobWithWebhook(t, st, fmt.Sprintf("%s-%d", account, i), account, rc.url+"/hang")
			}
		}
		endJobWithWebhook(t, st, "c-1", "c", rc.url+"/ok")
		endJobWithWebhook(t, st, "d-1", "d", rc.url+"/ok")
		// Not an assertion: the places are to free only once c-1 and d-1
		// wait for one. Without the waiting room they never do.
		for deadline := time.Now().Add(30 * time.Second); w.sending.Waiting() < 2 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}

		waiting := map[string]bool{"msg_c-1": true, "msg_d-1": true}
		for turn := range 2 {
			rc.answerOne(t)
			id := rc.next(t)
			if !waiting[id] {
				t.Fatalf("free place %d went to %s, ahead of the waiting %v", turn+1, id, slices.Sorted(maps.Keys(waiting)))
			}
			delete(waiting, id)
		}
	})
}

// A delivery waiting for a sending place reads its job again once it has
// one: a job deleted meanwhile is not announced.
func TestAWebhookWaitingForAPlaceIsNotSentForAJobDeletedMeanwhile(t *testing.T) {
	c := newWebhookCase(t, "", http.StatusOK)
	c.w.sending = fair.NewSem(1)
	if err := c.w.sending.Acquire(context.Background(), "other"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.work(1, 22) }()
	for deadline := time.Now().Add(30 * time.Second); c.w.sending.Waiting() < 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the delivery never waited for the place")
		}
	}
	if _, err := c.st.DeleteJob(context.Background(), c.j.AccountID, c.j.ID); err != nil {
		t.Fatal(err)
	}
	c.w.sending.Release()
	if err := <-done; err != nil {
		t.Errorf("delivery of a job deleted while it waited = %v, want nil", err)
	}
	if n := len(c.rc.signatures()); n != 0 {
		t.Errorf("the receiver got %d requests for a job deleted before the delivery had a place, want none", n)
	}
}

// webhookOutage is a store whose database is out for a delivery's record
// from the first try until up is closed.
type webhookOutage struct {
	store.Store
	once  sync.Once
	began chan struct{}
	up    chan struct{}
}

func (s *webhookOutage) RecordWebhookAttempt(ctx context.Context, a store.WebhookAttempt) (job.WebhookDelivery, error) {
	select {
	case <-s.up:
		return s.Store.RecordWebhookAttempt(ctx, a)
	default:
		s.once.Do(func() { close(s.began) })
		return job.WebhookDelivery{}, fmt.Errorf("record webhook attempt: %w: connection refused", store.ErrUnavailable)
	}
}

// A database outage at a delivery's record that outlasts the attempt's
// time (its minute) and recordPatience does not send the webhook again:
// River neither retries nor rescues the attempt while its record waits, so
// the record waits for the database and lands once (hunt-small; before, it
// gave up at the minute and River's next attempt sent it a second time).
// recordPatience and the attempt's time are shortened alike (both are a
// minute in production), the outage five times as long.
func TestAWebhookOutageLongerThanItsAttemptSendsItOnce(t *testing.T) {
	shortRecordPatience(t, 300*time.Millisecond)
	c := newWebhookCase(t, "", http.StatusOK)
	down := &webhookOutage{Store: c.st, began: make(chan struct{}), up: make(chan struct{})}
	c.w.deps.Store = down
	upAfter(down.began, down.up, 5*recordPatience)
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), recordPatience)
	defer cancel()
	err := c.w.Work(ctx, &river.Job[store.WebhookArgs]{
		JobRow: &rivertype.JobRow{Attempt: 1, MaxAttempts: 5, AttemptedAt: &began}, Args: store.WebhookArgs{JobID: c.j.ID}})
	if err != nil {
		t.Logf("first attempt: %v", err)
	}
	<-down.up
	// What River does next: a failed attempt is run again.
	if err != nil {
		if err := c.work(2, 5); err != nil {
			t.Logf("second attempt: %v", err)
		}
	}
	if n := len(c.rc.signatures()); n != 1 {
		t.Errorf("the receiver got %d requests, want 1", n)
	}
	if d := c.delivery(t); d.State != job.WebhookDelivered || d.Attempts != 1 {
		t.Errorf("delivery %+v, want delivered after 1 attempt", d)
	}
}

// readOutage is a store whose database is out for every job read until up
// is closed.
type readOutage struct {
	store.Store
	once  sync.Once
	began chan struct{}
	up    chan struct{}
}

func (s *readOutage) GetJob(ctx context.Context, account, id string) (*job.Job, error) {
	select {
	case <-s.up:
		return s.Store.GetJob(ctx, account, id)
	default:
		s.once.Do(func() { close(s.began) })
		return nil, fmt.Errorf("get job: %w: connection refused", store.ErrUnavailable)
	}
}

// River's last attempt that meets an unreachable database still ends the
// delivery once the database is back: giving up tried once, and a delivery
// left pending after River discarded its job kept its secret and its job
// for ever (retention skips pending deliveries) (hunt-small).
func TestRiversLastAttemptDuringAnOutageStillEndsTheDelivery(t *testing.T) {
	shortRecordPatience(t, 300*time.Millisecond)
	c := newWebhookCase(t, "a plain secret", http.StatusOK)
	down := &readOutage{Store: c.st, began: make(chan struct{}), up: make(chan struct{})}
	c.w.deps.Store = down
	upAfter(down.began, down.up, 5*recordPatience)
	if err := c.work(22, 22); err != nil {
		t.Errorf("River's last attempt: %v; want the delivery given up and recorded", err)
	}
	if d := c.delivery(t); d.State != job.WebhookFailed || d.LastError != "given up: the delivery failed on the service's side" {
		t.Errorf("delivery after River's last attempt = %+v, want failed, given up", d)
	}
	if secrets, err := c.st.JobSecrets(context.Background(), c.j.ID); err != nil || len(secrets) != 0 {
		t.Errorf("secrets left: %d, %v; want none once the delivery is given up", len(secrets), err)
	}
}

// upAfter ends an outage (closes up) d after it began.
func upAfter(began <-chan struct{}, up chan<- struct{}, d time.Duration) {
	go func() {
		<-began
		time.Sleep(d)
		close(up)
	}()
}
