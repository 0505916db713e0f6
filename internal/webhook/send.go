package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/docjobs/docjobs/internal/outbound"
)

// Defaults applied by NewSender to zero Config fields.
const (
	DefaultTimeout   = 10 * time.Second
	DefaultUserAgent = "docjobs-webhook"
)

// Limits on what a receiver, or an error about it, can make us hold.
const (
	// MaxErrLen caps Attempt.Err in bytes; it is stored and shown to the
	// caller on every attempt.
	MaxErrLen = 200
	// maxDrain is how much of a response body is read (and thrown away) so
	// the connection can be reused; nothing of it is kept.
	maxDrain = 4 << 10
)

// ErrNoClient is returned by NewSender without a Config.Client: falling
// back to http.DefaultClient would bypass the outbound address checks.
var ErrNoClient = errors.New("webhook: Config.Client is required")

// Config configures NewSender.
type Config struct {
	// Client makes the requests. Build it with outbound.NewClient so the
	// receiver's address is checked at connect time. Its CheckRedirect is
	// replaced: a webhook never follows a redirect (a 3xx is a failed
	// attempt), or a receiver could bounce our signed POST elsewhere.
	Client *http.Client
	// Timeout bounds one attempt, connecting included; 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// UserAgent is sent on every request; "" means DefaultUserAgent.
	UserAgent string
}

// Sender makes delivery attempts. It is safe for concurrent use.
type Sender struct {
	client    *http.Client
	timeout   time.Duration
	userAgent string
}

// NewSender returns a Sender with cfg's defaults applied.
func NewSender(cfg Config) (*Sender, error) {
	if cfg.Client == nil {
		return nil, ErrNoClient
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("webhook: Config.Timeout is negative (%s)", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	c := *cfg.Client // shares the transport and its connection pool
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Sender{client: &c, timeout: cfg.Timeout, userAgent: cfg.UserAgent}, nil
}

// Attempt is the outcome of one delivery attempt.
type Attempt struct {
	// Status is the receiver's HTTP status, 0 when none was received.
	Status int
	// Delivered: the receiver answered 2xx.
	Delivered bool
	// Gone: retrying cannot help. The receiver answered 410 Gone (the
	// Standard Webhooks way to unsubscribe), the outbound client refused
	// the receiver's address (a name resolving to a private or reserved
	// address), or the request could not be made at all: the secret cannot
	// sign, the id is empty, the URL is unusable.
	Gone bool
	// Err says why an attempt that was not delivered failed, in at most
	// MaxErrLen bytes safe to show the job's owner: it never contains the
	// secret, and nothing of the receiver's body.
	Err string
	// Duration runs from sending the request to the response headers or
	// the failure.
	Duration time.Duration
}

// Send POSTs body to endpoint once. id is the webhook-id, the same on every
// retry of one message so the receiver can drop repeats; now is the
// webhook-timestamp, fresh on each attempt. With secret "" the request is
// not signed (no webhook-signature header).
//
// When ctx ends before the receiver answers, the attempt fails with Err
// "abandoned before an answer: …"; the caller can check ctx.Err() and not
// count it against the receiver.
func (s *Sender) Send(ctx context.Context, endpoint, id string, body []byte, secret string, now time.Time) Attempt {
	if id == "" {
		return Attempt{Gone: true, Err: "cannot send: empty webhook id"}
	}
	var sig string
	if secret != "" {
		var err error
		if sig, err = Sign(secret, id, now, body); err != nil {
			return Attempt{Gone: true, Err: "cannot sign: webhookSecret " + err.Error()}
		}
	}

	attemptCtx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(attemptCtx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return Attempt{Gone: true, Err: "cannot send: webhookUrl is not a valid URL"}
	}
	// url.Parse takes any digits as a port. Create refuses one outside
	// 1–65535, but a job stored before it did may hold one: no attempt can
	// reach it, and retrying would keep the delivery pending for a day.
	if !outbound.PortInRange(req.URL.Port()) {
		return Attempt{Gone: true, Err: "cannot send: webhookUrl has an invalid port"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.userAgent)
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	if sig != "" {
		req.Header.Set("webhook-signature", sig)
	}

	start := time.Now()
	resp, err := s.client.Do(req)
	elapsed := time.Since(start)
	if err != nil {
		a := Attempt{Err: describe(ctx, err, s.timeout), Duration: elapsed}
		if errors.Is(err, outbound.ErrForbiddenAddress) {
			// The name resolved to an address we never connect to. Unlike a
			// network fault it is the receiver's configuration, and it will
			// resolve the same way on the next attempt: retrying would only
			// probe that address on the schedule for hours.
			a.Gone = true
			a.Err += "; no further attempts"
		}
		a.Err = clean(a.Err, secret)
		return a
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))

	a := Attempt{Status: resp.StatusCode, Duration: elapsed}
	switch code := resp.StatusCode; {
	case code >= 200 && code <= 299:
		a.Delivered = true
	case code == http.StatusGone:
		a.Gone = true
		a.Err = "receiver answered 410 Gone: no further attempts"
	case code >= 300 && code <= 399:
		a.Err = "receiver answered " + statusText(code) + "; redirects are not followed"
	default:
		a.Err = "receiver answered " + statusText(code)
	}
	return a
}

func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return strconv.Itoa(code) + " " + t
	}
	return strconv.Itoa(code)
}

// describe turns a client error into a short phrase for the job's owner.
// The known causes get words of our own; anything else is the innermost
// error's text without the "Post <url>:" prefix net/http adds.
func describe(parent context.Context, err error, timeout time.Duration) string {
	var (
		dnsErr  *net.DNSError
		opErr   *net.OpError
		certErr *tls.CertificateVerificationError
		netErr  net.Error
	)
	switch {
	case errors.Is(err, outbound.ErrForbiddenAddress):
		msg := "refused: private or reserved address"
		if errors.As(err, &opErr) && opErr.Addr != nil {
			if host, _, e := net.SplitHostPort(opErr.Addr.String()); e == nil {
				msg += " " + host
			}
		}
		return msg
	case parent.Err() != nil:
		// The worker stopped or its own deadline passed, not the receiver.
		return "abandoned before an answer: " + parent.Err().Error()
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "no answer within " + timeout.String()
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return "host not found: " + dnsErr.Name
		}
		return "cannot resolve host " + dnsErr.Name
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset before an answer"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed before an answer"
	case errors.As(err, &certErr):
		return "TLS certificate not accepted: " + certErr.Err.Error()
	}
	var uErr *url.Error
	if errors.As(err, &uErr) {
		err = uErr.Err
	}
	return err.Error()
}

// clean bounds msg to MaxErrLen bytes on a rune boundary and blanks the
// secret, should any error text ever quote it.
func clean(msg, secret string) string {
	if secret != "" {
		msg = strings.ReplaceAll(msg, secret, "[secret]")
	}
	if len(msg) <= MaxErrLen {
		return msg
	}
	cut := MaxErrLen - len("…")
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "…"
}
