package provider_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/provider"
)

func perr(c provider.Category, retryAfter time.Duration) error {
	return &provider.Error{Category: c, Status: 0, RetryAfter: retryAfter}
}

// script answers call n with errs[n] (nil: success); past the end it
// succeeds.
type script struct {
	errs  []error
	calls int
}

func (s *script) call(context.Context) (string, error) {
	s.calls++
	if s.calls <= len(s.errs) && s.errs[s.calls-1] != nil {
		return "", s.errs[s.calls-1]
	}
	return "ok", nil
}

func TestRetry(t *testing.T) {
	fast := provider.RetryPolicy{MaxAttempts: 4, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}
	cases := []struct {
		name      string
		errs      []error
		wantCalls int
		wantErr   bool
	}{
		{"success needs one call", nil, 1, false},
		{"rate limit is retried", []error{perr(provider.CategoryRateLimit, 0)}, 2, false},
		{"server errors are retried", []error{perr(provider.CategoryServer, 0), perr(provider.CategoryServer, 0)}, 3, false},
		{"timeouts are retried", []error{perr(provider.CategoryTimeout, 0)}, 2, false},
		{"network failures are retried", []error{perr(provider.CategoryNetwork, 0)}, 2, false},
		{"auth is not retried", []error{perr(provider.CategoryAuth, 0)}, 1, true},
		{"invalid requests are not retried", []error{perr(provider.CategoryInvalidRequest, 0)}, 1, true},
		{"content filters are not retried", []error{perr(provider.CategoryContentFilter, 0)}, 1, true},
		{"truncated answers are not retried", []error{perr(provider.CategoryTruncated, 0)}, 1, true},
		{"unsupported input is not retried", []error{provider.ErrUnsupportedInput}, 1, true},
		{"a spent quota is not retried, though a 429", []error{provider.QuotaExhausted(&provider.Error{Category: provider.CategoryRateLimit, Status: 429})}, 1, true},
		{"plain errors are not retried", []error{errors.New("disk full")}, 1, true},
		{"attempts are bounded", []error{
			perr(provider.CategoryServer, 0), perr(provider.CategoryServer, 0), perr(provider.CategoryServer, 0),
			perr(provider.CategoryServer, 0), perr(provider.CategoryServer, 0)}, 4, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &script{errs: c.errs}
			v, err := provider.Retry(t.Context(), fast, s.call)
			if s.calls != c.wantCalls {
				t.Errorf("calls = %d, want %d", s.calls, c.wantCalls)
			}
			if (err != nil) != c.wantErr || (err == nil && v != "ok") {
				t.Errorf("Retry = %q, %v; want error %t", v, err, c.wantErr)
			}
		})
	}
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	s := &script{errs: []error{perr(provider.CategoryRateLimit, 300*time.Millisecond)}}
	start := time.Now()
	if _, err := provider.Retry(t.Context(), provider.RetryPolicy{BaseDelay: time.Millisecond}, s.call); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Errorf("waited %v, want at least the 300ms Retry-After", waited)
	}
}

// A rate limit asking for a longer wait than the process waits is not
// asked again early: the error comes back at once with its Retry-After,
// for the caller to snooze the work. It was asked again after
// MaxRetryAfter, MaxAttempts times in all. Other failures' waits are cut
// and retried as before (the worker would spend an attempt on them).
func TestRetryLeavesARateLimitPastMaxRetryAfterToTheCaller(t *testing.T) {
	cases := []struct {
		name       string
		category   provider.Category
		retryAfter time.Duration
		wantCalls  int
	}{
		{"a rate limit's Retry-After past MaxRetryAfter ends the retries", provider.CategoryRateLimit, time.Hour, 1},
		{"a rate limit's Retry-After within MaxRetryAfter is waited for", provider.CategoryRateLimit, 20 * time.Millisecond, 2},
		{"a server error's long Retry-After is cut and retried", provider.CategoryServer, time.Hour, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &script{errs: []error{perr(c.category, c.retryAfter)}}
			start := time.Now()
			_, err := provider.Retry(t.Context(), provider.RetryPolicy{BaseDelay: time.Millisecond, MaxRetryAfter: 50 * time.Millisecond}, s.call)
			if s.calls != c.wantCalls || time.Since(start) > time.Second {
				t.Fatalf("calls %d after %v, err %v; want %d calls", s.calls, time.Since(start), err, c.wantCalls)
			}
			pe := (*provider.Error)(nil)
			if c.wantCalls == 1 && (!errors.As(err, &pe) || pe.RetryAfter != c.retryAfter) {
				t.Errorf("err %v; want the 429 with its Retry-After kept for the caller", err)
			}
		})
	}
}

func TestRetryStopsWithTheContext(t *testing.T) {
	t.Run("a cancelled context ends the wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		s := &script{errs: []error{perr(provider.CategoryServer, 0), perr(provider.CategoryServer, 0)}}
		time.AfterFunc(50*time.Millisecond, cancel)
		start := time.Now()
		_, err := provider.Retry(ctx, provider.RetryPolicy{BaseDelay: 10 * time.Second, MaxDelay: 10 * time.Second}, s.call)
		if err == nil || s.calls != 1 || time.Since(start) > 5*time.Second {
			t.Errorf("err %v, calls %d, after %v; want the first error back soon after cancel", err, s.calls, time.Since(start))
		}
	})
	t.Run("a wait past the deadline is not started", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		s := &script{errs: []error{perr(provider.CategoryRateLimit, 30*time.Second)}}
		start := time.Now()
		_, err := provider.Retry(ctx, provider.RetryPolicy{}, s.call)
		pe := (*provider.Error)(nil)
		if !errors.As(err, &pe) || pe.RetryAfter != 30*time.Second || s.calls != 1 || time.Since(start) > time.Second {
			t.Errorf("err %v, calls %d, after %v; want the 429 back at once, Retry-After kept for the caller", err, s.calls, time.Since(start))
		}
	})
}

func TestDelay(t *testing.T) {
	p := provider.RetryPolicy{BaseDelay: time.Second, MaxDelay: 8 * time.Second, MaxRetryAfter: time.Minute}
	cases := []struct {
		name     string
		retry    int
		err      error
		min, max time.Duration
	}{
		{"first retry: half to all of the base delay", 1, perr(provider.CategoryServer, 0), 500 * time.Millisecond, time.Second},
		{"third retry: four times the base", 3, perr(provider.CategoryServer, 0), 2 * time.Second, 4 * time.Second},
		{"capped at MaxDelay", 10, perr(provider.CategoryServer, 0), 4 * time.Second, 8 * time.Second},
		{"Retry-After is honoured plus up to 10%", 1, perr(provider.CategoryRateLimit, 5*time.Second), 5 * time.Second, 5500 * time.Millisecond},
		{"Retry-After is capped at MaxRetryAfter", 1, perr(provider.CategoryRateLimit, time.Hour), time.Minute, 66 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for range 200 {
				if d := p.Delay(c.retry, c.err); d < c.min || d > c.max {
					t.Fatalf("Delay = %v, want within [%v, %v]", d, c.min, c.max)
				}
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"seconds", http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{"fractional seconds", http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{"an HTTP date", http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{"milliseconds win", http.Header{"Retry-After": {"7"}, "Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
		{"absent", http.Header{}, 0},
		{"a date in the past", http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0},
		{"negative", http.Header{"Retry-After": {"-3"}}, 0},
		{"the longest wait kept", http.Header{"Retry-After": {"1000000"}}, 1e6 * time.Second},
		{"seconds past the bound", http.Header{"Retry-After": {"1000001"}}, 0},
		{"NaN seconds", http.Header{"Retry-After": {"NaN"}}, 0},
		{"infinite seconds", http.Header{"Retry-After": {"+Inf"}}, 0},
		{"a date past the bound", http.Header{"Retry-After": {now.Add(1e6*time.Second + time.Hour).Format(http.TimeFormat)}}, 0},
		{"a date centuries ahead", http.Header{"Retry-After": {"Fri, 31 Dec 9999 23:59:59 GMT"}}, 0},
		{"NaN milliseconds fall back to seconds", http.Header{"Retry-After": {"7"}, "Retry-After-Ms": {"NaN"}}, 7 * time.Second},
		{"milliseconds past the bound fall back to seconds", http.Header{"Retry-After": {"7"}, "Retry-After-Ms": {"1e12"}}, 7 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := provider.ParseRetryAfter(c.header, now); got != c.want {
				t.Errorf("ParseRetryAfter = %v, want %v", got, c.want)
			}
		})
	}
}

// Whatever a vendor sends, the wait read is none or within the 10⁶ s
// ParseRetryAfter keeps.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"7", "1.5", "NaN", "-Inf", "1e308", "0x1p-1074", "Fri, 31 Dec 9999 23:59:59 GMT", "Sun, 06 Nov 1994 08:49:37 GMT"} {
		f.Add(s, "")
		f.Add("", s)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, seconds, ms string) {
		h := http.Header{"Retry-After": {seconds}, "Retry-After-Ms": {ms}}
		if d := provider.ParseRetryAfter(h, now); d < 0 || d > 1e6*time.Second {
			t.Fatalf("ParseRetryAfter(Retry-After %q, Retry-After-Ms %q) = %v, outside [0, 10⁶ s]", seconds, ms, d)
		}
	})
}

func TestParseRetryDelay(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
	}{
		{"37s", 37 * time.Second},
		{"0.5s", 500 * time.Millisecond},
		{"51.606482386s", 51606482386 * time.Nanosecond},
		{"", 0},
		{"0s", 0},
		{"-3s", 0},
		{"37", 0},
		{"soon", 0},
		{"2000000s", 0},
	}
	for _, c := range cases {
		if got := provider.ParseRetryDelay(c.in); got != c.want {
			t.Errorf("ParseRetryDelay(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}
