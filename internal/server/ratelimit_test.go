package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/api"
)

// fakeClock is a clock that moves only when told, so refills are tested
// without sleeping.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// withRate limits every account to perSecond requests, burst at once, on
// clock.
func withRate(perSecond float64, burst int, clock *fakeClock) envOption {
	return func(c *Config, d *Deps) {
		c.AccountRate, c.AccountBurst = perSecond, burst
		d.Now = clock.Now
	}
}

// wantRateLimited checks a 429 of the rate limit on a JSON endpoint: the
// message, the Retry-After header and, when withDetails, the RetryInfo.
func wantRateLimited(t *testing.T, resp *http.Response, withDetails bool, wantMessage, wantRetryAfter string) {
	t.Helper()
	if got := resp.Header.Get("Retry-After"); got != wantRetryAfter {
		t.Errorf("Retry-After = %q, want %q", got, wantRetryAfter)
	}
	m := wantStatusBody(t, resp, http.StatusTooManyRequests, codes.ResourceExhausted, withDetails)
	if m["message"] != wantMessage {
		t.Errorf("message = %q, want %q", m["message"], wantMessage)
	}
	if !withDetails {
		return
	}
	details, _ := m["details"].([]any)
	if len(details) != 1 || details[0].(map[string]any)["@type"] != "type.googleapis.com/google.rpc.RetryInfo" {
		t.Errorf("details = %v, want one RetryInfo", details)
	}
}

func wantOK(t *testing.T, resp *http.Response, what string) {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d, want 200; body %s", what, resp.StatusCode, readBody(t, resp))
	}
}

func TestAnAccountOverItsRequestRateIs429OverREST(t *testing.T) {
	clock := newFakeClock()
	env := startServer(t, withService(t, api.Config{}), withRate(1, 3, clock))
	const want = "account exceeds 1 requests a second (DOCJOBS_ACCOUNT_RATE); retry after 1s"

	for range 3 {
		wantOK(t, env.doJSON("GET", "/v1/jobs", keyAlice, ""), "request within the burst")
	}
	wantRateLimited(t, env.doJSON("GET", "/v1/jobs", keyAlice, ""), true, want, "1")
	// A refused request takes no token: asking again while refused does
	// not push the account further back.
	wantRateLimited(t, env.doJSON("POST", "/v1/jobs", keyAlice, limitsCreateBody), true, want, "1")

	wantOK(t, env.doJSON("GET", "/v1/jobs", keyBob, ""), "another account")

	clock.Advance(time.Second)
	wantOK(t, env.doJSON("POST", "/v1/jobs", keyAlice, limitsCreateBody), "the token refilled after a second")
	wantRateLimited(t, env.doJSON("GET", "/v1/jobs", keyAlice, ""), true, want, "1")

	t.Run("the refusal is logged with the account and counted", func(t *testing.T) {
		found := false
		for line := range strings.SplitSeq(env.logs.String(), "\n") {
			if strings.Contains(line, `"status":429`) && strings.Contains(line, `"account_id":"alice"`) {
				found = true
			}
		}
		if !found {
			t.Errorf("no request log line with status 429 and account alice:\n%s", env.logs.String())
		}
		got := gathered(t, env.srv.deps.Registry, "docjobs_account_rate_limited_total", nil).GetCounter().GetValue()
		if got != 3 {
			t.Errorf("docjobs_account_rate_limited_total = %v, want 3", got)
		}
		c := gathered(t, env.srv.deps.Registry, "docjobs_http_requests_total",
			map[string]string{"method": "GET", "route": "/v1/jobs", "code": "429"})
		if c.GetCounter().GetValue() != 2 {
			t.Errorf("GET /v1/jobs 429s = %v, want 2", c.GetCounter().GetValue())
		}
	})
}

func TestRetryAfterIsTheTimeUntilTheNextToken(t *testing.T) {
	clock := newFakeClock()
	// One request every four seconds.
	env := startServer(t, withRate(0.25, 1, clock))

	wantOK(t, env.doJSON("GET", "/v1/jobs", keyAlice, ""), "first request")
	wantRateLimited(t, env.doJSON("GET", "/v1/jobs", keyAlice, ""), true,
		"account exceeds 0.25 requests a second (DOCJOBS_ACCOUNT_RATE); retry after 4s", "4")
	clock.Advance(2500 * time.Millisecond)
	// 1.5 s left is answered as 2: whole seconds, rounded up.
	wantRateLimited(t, env.doJSON("GET", "/v1/jobs", keyAlice, ""), true,
		"account exceeds 0.25 requests a second (DOCJOBS_ACCOUNT_RATE); retry after 2s", "2")
	clock.Advance(1500 * time.Millisecond)
	wantOK(t, env.doJSON("GET", "/v1/jobs", keyAlice, ""), "after Retry-After")
}

func TestUploadsDownloadsAndEventStreamsCountOnceWhenOpened(t *testing.T) {
	clock := newFakeClock()
	env := startServer(t, withService(t, api.Config{}), withRate(1, 1, clock))
	const want = "account exceeds 1 requests a second (DOCJOBS_ACCOUNT_RATE); retry after 1s"

	ct, body := multipartBody(t, nil, "file", "a.txt", strings.Repeat("x", 256<<10))
	resp := env.do("POST", "/v1/jobs/upload", keyAlice, ct, body)
	wantOK(t, resp, "upload")
	var up struct {
		URL string `json:"url"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&up); err != nil {
		t.Fatal(err)
	}
	download := strings.TrimPrefix(up.URL, "http://docjobs.test")

	t.Run("the upload endpoint answers in its own shape", func(t *testing.T) {
		ct, body := multipartBody(t, nil, "file", "b.txt", "y")
		wantRateLimited(t, env.do("POST", "/v1/jobs/upload", keyAlice, ct, body), false, want, "1")
	})
	t.Run("a download counts", func(t *testing.T) {
		wantRateLimited(t, env.do("GET", download, keyAlice, "", nil), true, want, "1")
	})
	t.Run("an event stream counts", func(t *testing.T) {
		wantRateLimited(t, env.do("GET", "/v1/jobs/any/events", keyAlice, "", nil), true, want, "1")
	})
	t.Run("a download of a quarter MiB is one request", func(t *testing.T) {
		clock.Advance(time.Second)
		resp := env.do("GET", download, keyAlice, "", nil)
		wantOK(t, resp, "download after the refill")
		if n := len(readBody(t, resp)); n != 256<<10 {
			t.Errorf("downloaded %d bytes, want %d", n, 256<<10)
		}
	})
}

func TestAnAccountOverItsRequestRateIsResourceExhaustedOverGRPC(t *testing.T) {
	clock := newFakeClock()
	env := startServer(t, withService(t, api.Config{}), withRate(1, 2, clock))
	client, conn, as := grpcClient(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const want = "account exceeds 1 requests a second (DOCJOBS_ACCOUNT_RATE); retry after 1s"

	wantExhausted := func(t *testing.T, err error) {
		t.Helper()
		st, _ := status.FromError(err)
		if st.Code() != codes.ResourceExhausted || st.Message() != want {
			t.Fatalf("err = %v, want ResourceExhausted %q", err, want)
		}
		for _, d := range st.Details() {
			if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay().AsDuration() == time.Second {
				return
			}
		}
		t.Fatalf("details %v, want a RetryInfo of 1s", st.Details())
	}

	// An upload of several messages is one request: with two tokens, the
	// upload and one call pass and the next call is refused.
	if _, err := uploadOverGRPC(as(ctx, keyAlice), client, "a.txt", "one", "two", "three", "four"); err != nil {
		t.Fatalf("upload: %v", err)
	}
	if _, err := client.ListJobs(as(ctx, keyAlice), &docjobsv1.ListJobsRequest{}); err != nil {
		t.Fatalf("second call: %v", err)
	}
	_, err := client.ListJobs(as(ctx, keyAlice), &docjobsv1.ListJobsRequest{})
	wantExhausted(t, err)
	_, err = uploadOverGRPC(as(ctx, keyAlice), client, "b.txt", "x")
	wantExhausted(t, err)

	if _, err := client.ListJobs(as(ctx, keyBob), &docjobsv1.ListJobsRequest{}); err != nil {
		t.Errorf("another account: %v", err)
	}
	health, err := grpc_health_v1.NewHealthClient(conn).Check(as(ctx, keyAlice), &grpc_health_v1.HealthCheckRequest{})
	if err != nil || health.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
		t.Errorf("health check of a limited account's caller: %v, %v", health, err)
	}
	clock.Advance(time.Second)
	if _, err := client.ListJobs(as(ctx, keyAlice), &docjobsv1.ListJobsRequest{}); err != nil {
		t.Errorf("after the refill: %v", err)
	}
	got := gathered(t, env.srv.deps.Registry, "docjobs_grpc_requests_total",
		map[string]string{"method": "/docjobs.v1.JobService/ListJobs", "code": "ResourceExhausted"})
	if got.GetCounter().GetValue() != 1 {
		t.Errorf("ListJobs ResourceExhausted = %v, want 1", got.GetCounter().GetValue())
	}
}

func TestUnauthenticatedRequestsCountAgainstNoAccount(t *testing.T) {
	clock := newFakeClock()
	env := startServer(t, withRate(1, 1, clock))
	client, _, as := grpcClient(t, env)
	for range 5 {
		for _, key := range []string{"", "dj_nobody"} {
			resp := env.doJSON("GET", "/v1/jobs", key, "")
			wantStatusBody(t, resp, http.StatusUnauthorized, codes.Unauthenticated, true)
			ct, body := multipartBody(t, nil, "file", "a.txt", "x")
			wantStatusBody(t, env.do("POST", "/v1/jobs/upload", key, ct, body), http.StatusUnauthorized, codes.Unauthenticated, false)
		}
		_, err := client.ListJobs(as(context.Background(), "dj_nobody"), &docjobsv1.ListJobsRequest{})
		if status.Code(err) != codes.Unauthenticated {
			t.Fatalf("gRPC with an unknown key: %v, want Unauthenticated", err)
		}
	}
	if n := env.srv.rate.size(); n != 0 {
		t.Errorf("%d buckets after only unauthenticated requests, want none", n)
	}
	wantOK(t, env.doJSON("GET", "/v1/jobs", keyAlice, ""), "an account's first request after others' 401s")
}

func TestHealthMetricsAndOpenAPINeverCount(t *testing.T) {
	clock := newFakeClock()
	env := startServer(t, withRate(1, 1, clock))
	wantOK(t, env.doJSON("GET", "/v1/jobs", keyAlice, ""), "the one token")
	for range 5 {
		for _, path := range []string{"/healthz", "/readyz", "/metrics", "/openapi.yaml"} {
			// With a key that is out of tokens: these routes never read it.
			wantOK(t, env.do("GET", path, keyAlice, "", nil), path)
		}
	}
}

func TestAZeroRateIsNoLimit(t *testing.T) {
	clock := newFakeClock()
	// A burst of one would refuse the second request if the rate applied.
	env := startServer(t, withRate(0, 1, clock))
	client, _, as := grpcClient(t, env)
	for range 20 {
		wantOK(t, env.doJSON("GET", "/v1/jobs", keyAlice, ""), "REST")
		if _, err := client.ListJobs(as(context.Background(), keyAlice), &docjobsv1.ListJobsRequest{}); err != nil {
			t.Fatalf("gRPC: %v", err)
		}
	}
	if env.srv.rate != nil {
		t.Errorf("a rate of 0 built a limiter")
	}
}

func TestIdleBucketsAreDropped(t *testing.T) {
	tests := []struct {
		name      string
		perSecond float64
		burst     int
		wantIdle  time.Duration
	}{
		{"a fast rate keeps buckets the minimum", 50, 100, accountIdleMin},
		{"a slow rate keeps them until they would have refilled", 0.01, 100, 10000 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			l := newAccountLimiter(tt.perSecond, tt.burst, clock.Now)
			if l.idle != tt.wantIdle {
				t.Fatalf("idle = %v, want %v", l.idle, tt.wantIdle)
			}
			l.take("a")
			l.take("b")
			clock.Advance(tt.wantIdle - time.Second)
			l.take("b") // b stays in use
			if n := l.size(); n != 2 {
				t.Fatalf("%d buckets before the idle time, want 2", n)
			}
			clock.Advance(time.Second)
			l.take("c")
			if n := l.size(); n != 2 {
				t.Fatalf("%d buckets after a's idle time, want 2 (b and c)", n)
			}
			if _, ok := l.buckets["a"]; ok {
				t.Error("a's bucket was kept after its idle time")
			}
		})
	}
}

func TestABucketDroppedWhileIdleGivesNoTokensEarly(t *testing.T) {
	clock := newFakeClock()
	// Ten tokens, one per 100 s: an empty bucket takes 1000 s to refill,
	// longer than the minimum idle time.
	l := newAccountLimiter(0.01, 10, clock.Now)
	for range 10 {
		l.take("a")
	}
	if ok, wait := l.take("a"); ok || wait != 100*time.Second {
		t.Fatalf("eleventh request: ok %v, wait %v; want refused for 100s", ok, wait)
	}
	// After the minimum idle time the bucket holds three tokens, not ten:
	// dropping it now and making a full one would hand out seven early.
	clock.Advance(accountIdleMin)
	l.take("b") // a sweep is due by then if idle were the minimum
	for i := range 3 {
		if ok, _ := l.take("a"); !ok {
			t.Fatalf("token %d of the three refilled was refused", i+1)
		}
	}
	if ok, _ := l.take("a"); ok {
		t.Error("a fourth token after 300 s: the bucket was dropped and made anew, full")
	}
}
