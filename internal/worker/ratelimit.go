package worker

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/provider"
)

// A provider that answers 429 snoozes the file, and a snooze spends no
// River attempt: without a bound of its own, a 429 that never lifts (a
// request larger than a per-minute token limit, a quota no error code
// names) had a row asked about 30 times a minute until the job's deadline,
// which then blamed a timeout. So each stage of a file keeps, in its River
// job's metadata, since when it has waited out rate limits without any of
// its calls answered. Once that is Config.RateLimitPatience, the stage's
// calls still rate limited fail their rows with the provider's error
// (`provider error (category=rate_limit, status=429)`). River writes the
// metadata with the snooze, so a crash or another node resumes the count.
// An answered call starts the count again: a large file kept under a
// per-minute limit is making its way, however often it is told to wait.
const (
	ocrRateLimitKey   = "docjobs_ocr_rate_limited"
	modelRateLimitKey = "docjobs_model_rate_limited"
)

// DefaultRateLimitPatience is Config.RateLimitPatience's default.
const DefaultRateLimitPatience = 10 * time.Minute

// maxRateLimitSnooze caps the growing snooze between a stage's
// rate-limited runs (a vendor's longer Retry-After is still honoured).
const maxRateLimitSnooze = time.Minute

// rateLimitWait is what a file's River job keeps of one stage's rate
// limits since a call of that stage was last answered.
type rateLimitWait struct {
	Since   time.Time `json:"since"`
	Snoozes int       `json:"snoozes"`
}

// rateLimitWaitOf reads the stage's wait (under key) from the file's River
// job, as the run began; none when the stage is not waiting.
func rateLimitWaitOf(rj *rivertype.JobRow, key string) rateLimitWait {
	var md map[string]json.RawMessage
	var wait rateLimitWait
	if rj == nil || json.Unmarshal(rj.Metadata, &md) != nil {
		return wait
	}
	if raw, ok := md[key]; ok {
		_ = json.Unmarshal(raw, &wait) // null, after an answer: no wait
	}
	return wait
}

// over reports whether the stage has waited out rate limits for patience.
func (r rateLimitWait) over(now time.Time, patience time.Duration) bool {
	return !r.Since.IsZero() && now.Sub(r.Since) >= patience
}

// snooze is the River snooze of a stage rate limited again, told to wait
// retryAfter: the vendor's wait, at least the floor doubled for each
// snooze of this wait before it (5 s, 10 s, 20 s, …, at most a minute), so
// a 429 that does not lift is asked a few dozen times, not hundreds. The
// wait is kept in the job's metadata, from now when a call of the stage
// was answered in this run.
//
// No snooze outlasts the wait's patience (by more than the floor): the
// run after it is the one that fails the rows still limited. A vendor's
// Retry-After is honoured within that, not past it. It was honoured
// whole, and ParseRetryAfter keeps up to 10⁶ s: a 429 asking for an hour
// (a per-day or per-hour limit, which OpenAI-protocol servers word as
// "try again in 1h2m") slept the file an hour, past the patience, and one
// asking for days past the job's deadline, which then failed the row as a
// timeout, the very outcome the patience is there to prevent.
func (r rateLimitWait) snooze(ctx context.Context, key string, retryAfter, floor, patience time.Duration, answered bool) error {
	if answered || r.Since.IsZero() {
		r = rateLimitWait{Since: time.Now()}
	}
	wait := floor
	for range r.Snoozes {
		if wait >= maxRateLimitSnooze {
			break
		}
		wait *= 2
	}
	r.Snoozes++
	// Outside River (tests) there is nowhere to keep it.
	_ = river.MetadataSet(ctx, key, r)
	d := max(retryAfter, min(wait, maxRateLimitSnooze))
	if left := time.Until(r.Since.Add(patience)); d > left {
		d = max(left, floor)
	}
	return river.JobSnooze(d)
}

// answered ends the stage's wait after a run in which a call of it was
// answered but which ends in an error River retries (not a snooze): the
// next rate limit counts from then.
func (r rateLimitWait) answered(ctx context.Context, key string) {
	if !r.Since.IsZero() {
		_ = river.MetadataSet(ctx, key, nil)
	}
}

// rateLimitedErr returns the rate-limit error among errs, nil when none
// is one.
func rateLimitedErr(errs []error) *provider.Error {
	for _, err := range errs {
		if pe := (*provider.Error)(nil); errors.As(err, &pe) && pe.Category == provider.CategoryRateLimit {
			return pe
		}
	}
	return nil
}

// rateLimitsFinal is a file's model-stage provider once the stage has
// waited out rate limits for its patience: a call still rate limited after
// its retries fails its row rather than snoozing the file again.
type rateLimitsFinal struct {
	next provider.Chat
}

func (c rateLimitsFinal) Complete(ctx context.Context, req provider.ChatRequest) (provider.ChatAnswer, error) {
	a, err := c.next.Complete(ctx, req)
	if pe := (*provider.Error)(nil); errors.As(err, &pe) && pe.Category == provider.CategoryRateLimit && !pe.Permanent {
		final := *pe
		final.Permanent = true
		return a, &final
	}
	return a, err
}
