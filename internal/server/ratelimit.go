package server

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// accountIdleMin is the least time a bucket is kept after its last
// request. Dropping a bucket is free only once it has refilled (a new one
// starts full), so a slow rate keeps its buckets longer: see idleAfter.
const accountIdleMin = 5 * time.Minute

// accountLimiter is a token bucket per account, in this process only: the
// buckets are not shared with other api processes, which keeps a request
// to a map lookup under a mutex and needs nothing from the database.
//
// Buckets of accounts that stopped asking are dropped by a sweep that runs
// at most once per idle period, from a request, so the map holds only the
// accounts seen in the last few minutes and no goroutine is needed.
type accountLimiter struct {
	limit rate.Limit
	burst int
	idle  time.Duration
	now   func() time.Time

	mu        sync.Mutex
	buckets   map[string]*accountBucket
	nextSweep time.Time
}

type accountBucket struct {
	lim  *rate.Limiter
	last time.Time // the last request, for the sweep
}

// newAccountLimiter returns nil when perSecond is not positive: no limit.
func newAccountLimiter(perSecond float64, burst int, now func() time.Time) *accountLimiter {
	if perSecond <= 0 || math.IsNaN(perSecond) {
		return nil
	}
	return &accountLimiter{
		limit:   rate.Limit(perSecond),
		burst:   burst,
		idle:    idleAfter(perSecond, burst),
		now:     now,
		buckets: map[string]*accountBucket{},
	}
}

// idleAfter is how long a bucket is kept unused: at least accountIdleMin,
// and at least the time an empty bucket takes to refill, so that dropping
// it and starting a full one later never hands out tokens early.
func idleAfter(perSecond float64, burst int) time.Duration {
	refill := float64(burst) / perSecond * float64(time.Second)
	if refill >= float64(math.MaxInt64/2) {
		return time.Duration(math.MaxInt64 / 2)
	}
	return max(accountIdleMin, time.Duration(math.Ceil(refill)))
}

// take spends one token of account's bucket. When none is left it spends
// nothing and returns how long until one is.
func (l *accountLimiter) take(account string) (ok bool, wait time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	b := l.buckets[account]
	if b == nil {
		b = &accountBucket{lim: rate.NewLimiter(l.limit, l.burst)}
		l.buckets[account] = b
	}
	b.last = now
	// With a burst of at least one (withDefaults) a reservation of one
	// token is always possible; only its delay says whether it is now.
	r := b.lim.ReserveN(now, 1)
	if wait = r.DelayFrom(now); wait > 0 {
		// A refused request takes nothing: a client that keeps asking
		// while refused is not pushed further back.
		r.CancelAt(now)
		return false, wait
	}
	return true, 0
}

// sweep drops the buckets unused for idle, at most once per idle.
func (l *accountLimiter) sweep(now time.Time) {
	if now.Before(l.nextSweep) {
		return
	}
	for account, b := range l.buckets {
		if now.Sub(b.last) >= l.idle {
			delete(l.buckets, account)
		}
	}
	l.nextSweep = now.Add(l.idle)
}

// size is the number of buckets held.
func (l *accountLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// limitAccount counts one request of an authenticated account and returns a RESOURCE_EXHAUSTED status error when the
// account is over DOCJOBS_ACCOUNT_RATE, nil otherwise.
//
// The retry delay is rounded up to whole seconds, at least one, in the
// message, the RetryInfo and so REST's Retry-After alike: a client told
// to come back in 20 ms would be back at the edge of the limit at once,
// and the three should not disagree.
func (s *Server) limitAccount(account string) error {
	if s.rate == nil {
		return nil
	}
	ok, wait := s.rate.take(account)
	if ok {
		return nil
	}
	s.metrics.rateLimited.Inc()
	secs := max(int64(math.Ceil(wait.Seconds())), 1)
	st := status.New(codes.ResourceExhausted, fmt.Sprintf(
		"account exceeds %s requests a second (DOCJOBS_ACCOUNT_RATE); retry after %ds",
		strconv.FormatFloat(float64(s.rate.limit), 'f', -1, 64), secs))
	withRetry, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Duration(secs) * time.Second)})
	if err != nil {
		// A RetryInfo always marshals; answer without it rather than not at all.
		return st.Err()
	}
	return withRetry.Err()
}
