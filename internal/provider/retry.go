package provider

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryPolicy says how often and how patiently a transient provider
// failure (an *Error whose Retryable is true) is tried again. The zero
// value is the default policy.
type RetryPolicy struct {
	// MaxAttempts bounds the calls, the first included (default 4).
	MaxAttempts int
	// BaseDelay is the wait before the first retry; it doubles per retry
	// (default 1s).
	BaseDelay time.Duration
	// MaxDelay caps the exponential wait (default 30s).
	MaxDelay time.Duration
	// MaxRetryAfter caps how long a vendor's Retry-After is waited for
	// (default 60s); a longer one is waited for this long, except a rate
	// limit's, which ends the retries (see Retry).
	MaxRetryAfter time.Duration
	// OnRetry, when set, is told about each retry before its wait (for
	// logs and metrics).
	OnRetry func(ctx context.Context, attempt int, err error, wait time.Duration)
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 4
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = time.Second
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 30 * time.Second
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = time.Minute
	}
	return p
}

// Delay is the wait before retry number retry (1 for the first retry)
// after err. A vendor's Retry-After is honoured (capped at MaxRetryAfter)
// plus up to 10% jitter, so that callers told the same instant do not all
// come back at once; otherwise the wait is exponential with "equal
// jitter": between half and all of BaseDelay·2^(retry-1), capped at
// MaxDelay.
func (p RetryPolicy) Delay(retry int, err error) time.Duration {
	p = p.withDefaults()
	if pe := (*Error)(nil); errors.As(err, &pe) && pe.RetryAfter > 0 {
		d := min(pe.RetryAfter, p.MaxRetryAfter)
		return d + time.Duration(rand.Int64N(int64(d/10)+1))
	}
	d := p.BaseDelay
	for i := 1; i < retry && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	half := d / 2
	return half + time.Duration(rand.Int64N(int64(d-half)+1))
}

// Retry calls call until it succeeds, fails with an error that is not a
// retryable *Error, MaxAttempts calls were made, or ctx ends. It does not
// start a wait that would outlast ctx's deadline: the last error is
// returned at once instead, so the caller can reschedule the work. So is a
// rate limit whose Retry-After is longer than MaxRetryAfter: the worker
// snoozes the file for it. Such a wait was cut to MaxRetryAfter and the
// vendor asked again: a 429 saying "in an hour" got three more calls a
// minute apart, each refused, while the row held its place among the
// process's calls. Other failures' long waits are still cut and retried:
// the worker retries them by River's backoff, spending an attempt, which
// would honour a server's Retry-After less. The value returned with an
// error is the last call's, which may say what the failed call left (a
// chat call's request and answer).
func Retry[T any](ctx context.Context, p RetryPolicy, call func(context.Context) (T, error)) (T, error) {
	p = p.withDefaults()
	for attempt := 1; ; attempt++ {
		v, err := call(ctx)
		if err == nil || attempt >= p.MaxAttempts || !retryable(err) || ctx.Err() != nil {
			return v, err
		}
		if pe := (*Error)(nil); errors.As(err, &pe) && pe.Category == CategoryRateLimit && pe.RetryAfter > p.MaxRetryAfter {
			return v, err
		}
		wait := p.Delay(attempt, err)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return v, err
		}
		if p.OnRetry != nil {
			p.OnRetry(ctx, attempt, err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, err
		case <-t.C:
		}
	}
}

func retryable(err error) bool {
	pe := (*Error)(nil)
	return errors.As(err, &pe) && pe.Retryable()
}

// WithRetry returns ocr with its transient failures retried under p.
func WithRetry(ocr OCR, p RetryPolicy) OCR {
	return retryingOCR{next: ocr, policy: p}
}

type retryingOCR struct {
	next   OCR
	policy RetryPolicy
}

func (r retryingOCR) Recognize(ctx context.Context, doc Document) (Recognition, error) {
	return Retry(ctx, r.policy, func(ctx context.Context) (Recognition, error) {
		return r.next.Recognize(ctx, doc)
	})
}

// Accepts passes the question on: retrying changes nothing about what the
// vendor reads.
func (r retryingOCR) Accepts(ctx context.Context, mime string) (ok, known bool) {
	return Accepts(ctx, r.next, mime)
}

// maxRetryAfter bounds a wait a vendor asks for; a longer one is taken
// for garbage, as no vendor means it.
const maxRetryAfter = 1e6 * time.Second

// ParseRetryDelay reads a google.rpc.RetryInfo retryDelay, a
// google.protobuf.Duration in its JSON form ("37s", "0.5s"), which Gemini
// sends in the body of a 429 instead of a Retry-After header. It returns
// 0 when it is unreadable or out of the bounds ParseRetryAfter keeps.
func ParseRetryDelay(s string) time.Duration {
	if !strings.HasSuffix(s, "s") {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > maxRetryAfter {
		return 0
	}
	return d
}

// ParseRetryAfter reads how long a vendor asks to wait: Retry-After-Ms
// (OpenAI-style), else Retry-After in seconds or as an HTTP date. It
// returns 0 when there is none or it is unreadable, and a wait past
// maxRetryAfter is unreadable however it is written: NaN seconds (which
// converted to a Duration became its most negative value) and a date
// years ahead (up to the largest Duration) are ignored like 10⁷ seconds.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil {
			if d, ok := retryWait(ms, time.Millisecond); ok {
				return d
			}
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		d, _ := retryWait(s, time.Second)
		return d
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) && t.Sub(now) <= maxRetryAfter {
		return t.Sub(now)
	}
	return 0
}

// retryWait is n units when that is a wait within (0, maxRetryAfter]; the
// comparison is written so NaN fails it.
func retryWait(n float64, unit time.Duration) (time.Duration, bool) {
	if !(n > 0 && n <= maxRetryAfter.Seconds()*float64(time.Second/unit)) {
		return 0, false
	}
	return time.Duration(n * float64(unit)), true
}
