package provider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultTimeout bounds one vendor call when an adapter is given none.
// Vision models take tens of seconds on a dense page; two minutes leaves
// room without letting a hung connection hold a page for long.
const DefaultTimeout = 120 * time.Second

// Call runs one vendor request. send gets a context that ends after
// timeout and records the HTTP traffic made with it through a
// RecordingClient into the returned Exchange. A failure is returned
// classified as an *Error, except when ctx itself ended: then ctx's error
// is returned (wrapped), which no one retries. key is only used to keep
// the key out of the error's cause.
func Call(ctx context.Context, timeout time.Duration, key string, send func(context.Context) error) (*Exchange, error) {
	return call(ctx, timeout, key, false, send)
}

// CallChat is Call for a model-stage answer: a response is read up to
// MaxAnswerBytes, and a larger one fails the call (see Classify).
func CallChat(ctx context.Context, timeout time.Duration, key string, send func(context.Context) error) (*Exchange, error) {
	return call(ctx, timeout, key, true, send)
}

// CallTranscription is Call for a model's transcription of a page or a
// document (the vision adapters; Mistral OCR's image pages): what a model
// writes is bounded by its output limit (tens to hundreds of kilobytes),
// so its response is read up to MaxAnswerBytes, as a model-stage answer
// is, and a larger one fails the call, not retried. Only a whole PDF read
// by Mistral OCR, markdown for up to a thousand pages, is read up to
// MaxResponseBytes (Call). A recognition answer of 64 MiB a page was kept
// whole, for every page of a file (hunt-hostile2 F3).
func CallTranscription(ctx context.Context, timeout time.Duration, key string, send func(context.Context) error) (*Exchange, error) {
	return call(ctx, timeout, key, true, send)
}

func call(ctx context.Context, timeout time.Duration, key string, chat bool, send func(context.Context) error) (*Exchange, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ex := &Exchange{chat: chat}
	callCtx, cancel := context.WithTimeout(ContextWithExchange(ctx, ex), timeout)
	defer cancel()
	err := send(callCtx)
	if err == nil {
		return ex, nil
	}
	return ex, Classify(ctx, callCtx, err, ex, key)
}

// ErrCallAbandoned is the error of a call whose caller's context ended
// before the vendor answered (a stop, the job's end, the file's time
// running out): it says nothing of the vendor, was not paid for, and is
// no outcome to keep; the next run asks again.
var ErrCallAbandoned = errors.New("provider call abandoned")

// ErrSlotWait is the error of a call that never started: its context ended
// while it waited for a place at its slot (SlotWait). Like
// ErrCallAbandoned, it is no outcome.
var ErrSlotWait = errors.New("waiting for a free slot")

// SlotWait is the error of a call whose context ended, with cause, while it
// waited for a place at slot: "waiting for a free <slot> slot: <cause>",
// matched by errors.Is with ErrSlotWait and with cause.
func SlotWait(slot string, cause error) error { return &slotWaitError{slot: slot, cause: cause} }

type slotWaitError struct {
	slot  string
	cause error
}

func (e *slotWaitError) Error() string {
	return "waiting for a free " + e.slot + " slot: " + e.cause.Error()
}
func (e *slotWaitError) Unwrap() error        { return e.cause }
func (e *slotWaitError) Is(target error) bool { return target == ErrSlotWait }

// Classify turns the failure err of a call made with callCtx (derived from
// ctx) into an *Error: an HTTP error status (or a redirect, never
// followed) decides the category (see CategoryForStatus) and carries
// Retry-After; a call that outlived its
// timeout is CategoryTimeout; a transport failure is CategoryNetwork (or
// timeout); a 2xx answer the SDK could not read is CategoryServer. When
// ctx itself ended, ctx's error is returned instead. The cause kept in
// Error.Err never holds the vendor's error body (it may echo the input)
// nor key.
func Classify(ctx, callCtx context.Context, err error, ex *Exchange, key string) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", ErrCallAbandoned, context.Cause(ctx))
	}
	status := 0
	if ex != nil {
		status = ex.Status()
	}
	if errors.Is(err, ErrResponseTooLarge) {
		return &Error{Category: CategoryServer, Status: status, Err: ErrResponseTooLarge}
	}
	if errors.Is(err, ErrAnswerTooLarge) {
		// Billed, and a model that wrote 8 MiB writes as much again: the
		// call is not tried again, by this attempt or a later one.
		return &Error{Category: CategoryServer, Status: status, Permanent: true,
			Reason: "answer larger than 8 MiB", Err: ErrAnswerTooLarge}
	}
	if errors.Is(err, ErrTooManyValues) {
		// A broken or hostile server's answer, as one too large is: a
		// model's answer (CallChat, CallTranscription) is billed and not
		// asked again; Mistral OCR's whole PDF (Call) follows the rule of
		// ErrResponseTooLarge.
		return &Error{Category: CategoryServer, Status: status, Permanent: ex != nil && ex.chat,
			Reason: "answer of more than 262144 JSON values", Err: ErrTooManyValues}
	}
	if status >= 300 { // 3xx: a redirect, which is not followed
		return &Error{
			Category:   CategoryForStatus(status),
			Status:     status,
			RetryAfter: ex.RetryAfter(),
			Err:        fmt.Errorf("HTTP %d %s", status, http.StatusText(status)),
		}
	}
	if errors.Is(err, context.DeadlineExceeded) || callCtx.Err() != nil {
		return &Error{Category: CategoryTimeout, Status: status, Err: errors.New("no answer within the call timeout")}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &Error{Category: CategoryTimeout, Status: status, Err: errors.New(Redact(ne.Error(), key))}
	}
	if invalidHeader(err) {
		// The transport refused to send a header value (it names the field,
		// never the value): a key stored with a control character. Every
		// try fails alike, so it is not a network failure to retry.
		return &Error{Category: CategoryInvalidRequest, Status: status, Err: errors.New(Redact(err.Error(), key))}
	}
	var ue *url.Error
	if errors.As(err, &ue) || errors.As(err, &ne) {
		return &Error{Category: CategoryNetwork, Status: status, Err: errors.New(Redact(err.Error(), key))}
	}
	if status >= 200 && status < 300 {
		// The SDK got an answer it could not decode (or one cut short).
		// Its message may quote the body, so only the kind of failure is
		// kept.
		return &Error{Category: CategoryServer, Status: status, Err: errors.New("malformed response body")}
	}
	// Nothing was sent: the SDK refused to build the request.
	return &Error{Category: CategoryInvalidRequest, Status: status, Err: fmt.Errorf("request not sent: %T", err)}
}

// invalidHeader reports net/http's refusal to send a request whose header
// field name or value HTTP does not allow ("net/http: invalid header field
// value for \"Authorization\"", and its HTTP/2 twin). net/http exports no
// error value for it, so its words are what can be matched.
func invalidHeader(err error) bool {
	return strings.Contains(err.Error(), "invalid header field ")
}

// Malformed is the error of a 2xx answer that decodes but lacks what an
// answer must have (no choices, no candidates, no pages).
func Malformed(status int, what string) *Error {
	return &Error{Category: CategoryServer, Status: status, Err: errors.New("malformed response: " + what)}
}

// EmptyAnswer is the error of a 2xx answer without any text: not the
// blank-page answer (the prompt asks for BlankAnswer), not a refusal, not
// cut off, just nothing, which vendors return now and then (Gemini's STOP
// without parts) and a second call usually mends. It is a server error, so
// it is retried, and the row says what happened when it stays empty.
func EmptyAnswer(status int) *Error {
	return &Error{Category: CategoryServer, Status: status, Reason: "empty answer",
		Err: errors.New("malformed response: the answer holds no text")}
}

// QuotaExhausted marks pe, a 429, as a spent quota or credit (OpenAI's
// insufficient_quota, Gemini's per-day quota): a rate limit by its status
// and category, but one that lifts at the end of the day or the billing
// month, or never, so it is not retried and the row says why.
func QuotaExhausted(pe *Error) *Error {
	pe.Permanent = true
	pe.Reason = "quota exhausted"
	return pe
}

// Identifier returns a vendor's error code or type fit for a log line: at
// most 64 characters of letters, digits and _.-: (anything else means it
// is not an identifier but text, which may echo the request).
func Identifier(s string) string {
	if len(s) > 64 {
		return "?"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-' || c == ':') {
			return "?"
		}
	}
	return s
}
