package webhook

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/outbound"
)

// received is what a receiver saw of one request.
type received struct {
	method string
	header http.Header
	body   []byte
}

// receiver starts a server that records each request and answers with h
// (204 when h is nil). got returns the requests seen so far.
func receiver(t *testing.T, h http.HandlerFunc) (url string, got func() []received) {
	t.Helper()
	var (
		mu   sync.Mutex
		reqs []received
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		reqs = append(reqs, received{r.Method, r.Header.Clone(), body})
		mu.Unlock()
		if h == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []received {
		mu.Lock()
		defer mu.Unlock()
		return append([]received(nil), reqs...)
	}
}

// answer replies with status and a body that must never reach Attempt.Err.
func answer(status int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if status >= 300 && status <= 399 {
			w.Header().Set("Location", "/moved")
		}
		w.WriteHeader(status)
		io.WriteString(w, "receiver-private-detail")
	}
}

// sender returns a Sender over an outbound client for loopback receivers.
func sender(t *testing.T, cfg Config) *Sender {
	t.Helper()
	if cfg.Client == nil {
		cfg.Client = outbound.NewClient(outbound.Config{AllowPrivate: true, MaxRedirects: -1})
	}
	s, err := NewSender(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

var testBody = []byte(`{"type":"job.completed","job_id":"job_1"}`)

func TestSendOutcomeFollowsTheStatus(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		delivered bool
		gone      bool
		err       string
	}{
		{"200 is delivered", 200, true, false, ""},
		{"204 is delivered", 204, true, false, ""},
		{"202 is delivered", 202, true, false, ""},
		{"500 fails with its status", 500, false, false, "receiver answered 500 Internal Server Error"},
		{"429 fails with its status", 429, false, false, "receiver answered 429 Too Many Requests"},
		{"404 fails and is retried", 404, false, false, "receiver answered 404 Not Found"},
		{"410 is gone: no more attempts", 410, false, true, "receiver answered 410 Gone: no further attempts"},
		{"301 fails: redirects are not followed", 301, false, false, "receiver answered 301 Moved Permanently; redirects are not followed"},
		{"307 fails: redirects are not followed", 307, false, false, "receiver answered 307 Temporary Redirect; redirects are not followed"},
		{"an unnamed status fails with its number", 599, false, false, "receiver answered 599"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, got := receiver(t, answer(tt.status))
			a := sender(t, Config{}).Send(context.Background(), url+"/hook", "msg_1", testBody, testSecret, time.Now())
			want := Attempt{Status: tt.status, Delivered: tt.delivered, Gone: tt.gone, Err: tt.err}
			if a.Status != want.Status || a.Delivered != want.Delivered || a.Gone != want.Gone || a.Err != want.Err {
				t.Errorf("Send = %+v, want %+v", a, want)
			}
			if a.Duration <= 0 {
				t.Errorf("Duration = %v, want > 0", a.Duration)
			}
			if n := len(got()); n != 1 {
				t.Errorf("receiver saw %d requests, want exactly 1 (no redirect followed)", n)
			}
		})
	}
}

func TestSendNeverFollowsRedirectsWhateverTheClient(t *testing.T) {
	url, got := receiver(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		answer(http.StatusFound)(w, r)
	})
	follower := outbound.NewClient(outbound.Config{AllowPrivate: true}) // follows up to 5 redirects
	a := sender(t, Config{Client: follower}).Send(context.Background(), url+"/hook", "msg_1", testBody, "", time.Now())
	if a.Delivered || a.Status != http.StatusFound {
		t.Errorf("Send = %+v, want a failed attempt with status 302", a)
	}
	if reqs := got(); len(reqs) != 1 {
		t.Errorf("receiver saw %d requests, want 1: the redirect must not be followed", len(reqs))
	}
	if follower.CheckRedirect == nil {
		t.Error("NewSender changed the caller's client; it must change only its own copy")
	}
}

func TestSendHeadersAndSignature(t *testing.T) {
	now := time.Unix(1700000000, 0)
	tests := []struct {
		name, secret string
	}{
		{"whsec_ secret signs with the decoded key", testSecret},
		{"raw secret signs with its bytes", "a plain shared secret"},
		{"no secret sends no signature header", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url, got := receiver(t, nil)
			a := sender(t, Config{UserAgent: "docjobs/test"}).Send(context.Background(), url, "msg_job_1", testBody, tt.secret, now)
			if !a.Delivered {
				t.Fatalf("Send = %+v, want delivered", a)
			}
			r := got()[0]
			wantHeaders := map[string]string{
				"Content-Type":      "application/json",
				"User-Agent":        "docjobs/test",
				"Webhook-Id":        "msg_job_1",
				"Webhook-Timestamp": "1700000000",
			}
			for k, v := range wantHeaders {
				if r.header.Get(k) != v {
					t.Errorf("header %s = %q, want %q", k, r.header.Get(k), v)
				}
			}
			if r.method != http.MethodPost || string(r.body) != string(testBody) {
				t.Errorf("request = %s %q, want POST %q", r.method, r.body, testBody)
			}
			sig, present := r.header["Webhook-Signature"]
			if tt.secret == "" {
				if present {
					t.Errorf("webhook-signature = %q, want no header without a secret", sig)
				}
				return
			}
			want, err := Sign(tt.secret, "msg_job_1", now, testBody)
			if err != nil {
				t.Fatal(err)
			}
			if len(sig) != 1 || sig[0] != want {
				t.Errorf("webhook-signature = %q, want %q", sig, want)
			}
		})
	}
}

func TestSendDefaultUserAgent(t *testing.T) {
	url, got := receiver(t, nil)
	sender(t, Config{}).Send(context.Background(), url, "msg_1", testBody, "", time.Now())
	if ua := got()[0].header.Get("User-Agent"); ua != DefaultUserAgent {
		t.Errorf("User-Agent = %q, want %q", ua, DefaultUserAgent)
	}
}

// closedPort returns the address of a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestSendFailsWithoutAnAnswer(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	slowURL, _ := receiver(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	okURL, _ := receiver(t, nil)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	tests := []struct {
		name   string
		cfg    Config
		ctx    context.Context
		url    string
		prefix string // Err starts with it
	}{
		{"a receiver too slow to answer times out", Config{Timeout: 150 * time.Millisecond}, context.Background(), slowURL, "no answer within 150ms"},
		{"a closed port is connection refused", Config{}, context.Background(), "http://" + closedPort(t) + "/hook", "connection refused"},
		{"a worker that stops abandons the attempt", Config{}, cancelled, okURL, "abandoned before an answer: context canceled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := sender(t, tt.cfg).Send(tt.ctx, tt.url, "msg_1", testBody, testSecret, time.Now())
			if a.Delivered || a.Gone || a.Status != 0 {
				t.Errorf("Send = %+v, want a failed attempt with no status, to be retried", a)
			}
			if !strings.HasPrefix(a.Err, tt.prefix) {
				t.Errorf("Err = %q, want it to start with %q", a.Err, tt.prefix)
			}
			if strings.Contains(a.Err, strings.TrimPrefix(testSecret, SecretPrefix)) {
				t.Errorf("Err = %q quotes the secret", a.Err)
			}
		})
	}
}

func TestSendGivesUpOnRequestsThatCannotBeMade(t *testing.T) {
	url, got := receiver(t, nil)
	tests := []struct {
		name, url, id, secret, err string
	}{
		{"a whsec_ secret that does not decode", url, "msg_1", "whsec_%%%", "cannot sign: webhookSecret has the whsec_ prefix but the rest is not valid base64"},
		{"an empty webhook id", url, "", testSecret, "cannot send: empty webhook id"},
		{"a URL that does not parse", "http://[::1", "msg_1", "", "cannot send: webhookUrl is not a valid URL"},
		{"a URL with port 0 (stored before create refused it)", "http://127.0.0.1:0/hook", "msg_1", "", "cannot send: webhookUrl has an invalid port"},
		{"a URL with port 99999", "http://127.0.0.1:99999/hook", "msg_1", "", "cannot send: webhookUrl has an invalid port"},
		{"a URL with port 65536", "http://127.0.0.1:65536/hook", "msg_1", "", "cannot send: webhookUrl has an invalid port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := sender(t, Config{}).Send(context.Background(), tt.url, tt.id, testBody, tt.secret, time.Now())
			if !a.Gone || a.Delivered || a.Status != 0 || a.Err != tt.err {
				t.Errorf("Send = %+v, want Gone with Err %q", a, tt.err)
			}
		})
	}
	if n := len(got()); n != 0 {
		t.Errorf("receiver saw %d requests, want none", n)
	}
}

// A receiver whose name resolves to a private address is refused when the
// outbound client dials it. That is its configuration, not a passing fault:
// the delivery ends at once instead of probing the address on the schedule.
func TestSendGivesUpOnAReceiverAtAPrivateAddress(t *testing.T) {
	url, got := receiver(t, nil)
	port := url[strings.LastIndex(url, ":")+1:]
	guarded := Config{Client: outbound.NewClient(outbound.Config{MaxRedirects: -1})}
	tests := []struct {
		name, url string
	}{
		{"a name resolving to loopback", "http://localhost:" + port + "/hook"},
		{"a loopback address", url + "/hook"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := sender(t, guarded).Send(context.Background(), tt.url, "msg_1", testBody, testSecret, time.Now())
			if !a.Gone || a.Delivered || a.Status != 0 {
				t.Errorf("Send = %+v, want Gone with no status", a)
			}
			if !strings.HasPrefix(a.Err, "refused: private or reserved address ") || !strings.HasSuffix(a.Err, "; no further attempts") {
				t.Errorf("Err = %q, want the refused address and that no attempt follows", a.Err)
			}
		})
	}
	if n := len(got()); n != 0 {
		t.Errorf("receiver saw %d requests, want none", n)
	}
}

func TestSendIsSafeForConcurrentUse(t *testing.T) {
	var hits atomic.Int64
	url, _ := receiver(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	s := sender(t, Config{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			a := s.Send(context.Background(), url, "msg_"+strconv.Itoa(i), testBody, testSecret, time.Now())
			if !a.Delivered {
				t.Errorf("Send %d = %+v, want delivered", i, a)
			}
		})
	}
	wg.Wait()
	if hits.Load() != 8 {
		t.Errorf("receiver saw %d requests, want 8", hits.Load())
	}
}

func TestNewSenderRefusesBadConfig(t *testing.T) {
	client := outbound.NewClient(outbound.Config{})
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no client: http.DefaultClient would skip the address checks", Config{}},
		{"negative timeout", Config{Client: client, Timeout: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewSender(tt.cfg); err == nil {
				t.Error("NewSender = nil error, want one")
			}
		})
	}
	if _, err := NewSender(Config{}); !errors.Is(err, ErrNoClient) {
		t.Errorf("NewSender without client = %v, want ErrNoClient", err)
	}
}

func TestCleanBoundsAndRedacts(t *testing.T) {
	tests := []struct {
		name, msg, secret, want string
	}{
		{"short text is kept", "connection refused", "s3cret", "connection refused"},
		{"the secret is blanked", "bad header s3cret here", "s3cret", "bad header [secret] here"},
		{"long text is cut at MaxErrLen on a rune boundary", strings.Repeat("é", 150), "", strings.Repeat("é", 98) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := clean(tt.msg, tt.secret)
			if got != tt.want || len(got) > MaxErrLen {
				t.Errorf("clean = %q (%d bytes), want %q", got, len(got), tt.want)
			}
		})
	}
}
