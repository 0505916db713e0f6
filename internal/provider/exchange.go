package provider

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/docjobs/docjobs/internal/merge"
)

// Capture limits. The request is kept whole up to maxRequestCapture
// because redaction shrinks it to a few kilobytes (its bulk is the base64
// document); the response is vendor JSON, kept up to maxResponseCapture.
const (
	maxRequestCapture  = 64 << 20
	maxResponseCapture = 4 << 20
)

// MaxResponseBytes bounds what is read of one vendor response: markdown for
// a thousand pages fits many times over, and an answer that does not fit
// (a runaway or hostile server) fails its call instead of the process.
const MaxResponseBytes = 64 << 20

// ErrResponseTooLarge is the read error of a response past MaxResponseBytes.
var ErrResponseTooLarge = errors.New("the response is larger than 64 MiB")

// MaxAnswerBytes bounds what is read of one model-stage answer (CallChat):
// merge's limit on one chunk's answer, the most any later stage takes of
// it. No model writes that much within its output limit (the largest are
// about a megabyte of text), so a larger answer is a broken or hostile
// server's; read whole, up to MaxResponseBytes, it cost about 13 times its
// size in memory and was stored as the row's content.
const MaxAnswerBytes = merge.DefaultMaxAnswerBytes

// ErrAnswerTooLarge is the read error of an answer past MaxAnswerBytes.
var ErrAnswerTooLarge = errors.New("the answer is larger than 8 MiB")

// MaxResponseValues bounds the JSON values a 2xx response may hold, each
// object, array and comma outside strings counted as one (about one per
// value): the SDKs decode an answer into a tree of structs or maps, each
// small value tens of bytes, so a response of many tiny values (`{},`
// three bytes each) cost 50 to 90 times its size in memory before this
// limit, within the byte limits above: an 8 MiB chat answer of two
// million empty choices, parts or blocks 384–729 MiB of heap, a 64 MiB
// recognition answer 1.9 GB (Mistral OCR pages) and 3.6 GB (OpenAI
// choices), hunt-hostile2. A vendor's answer holds a few dozen values, a
// thousand-page Mistral OCR answer about fifteen a page, and the most an
// answer's own JSON can add is about two per output token (Anthropic's
// tool input; every other vendor sends the answer as a string, whose
// inside is not counted): 262,144 leaves room for answers of over 100,000
// tokens, more than any call asks for.
const MaxResponseValues = 1 << 18

// ErrTooManyValues is the read error of a response past MaxResponseValues.
var ErrTooManyValues = errors.New("the response holds more than 262144 JSON values")

// Exchange records the HTTP traffic of one vendor call: the request body,
// the response status, Retry-After and body. Headers are never kept: the
// request's carry the key. Adapters attach one to the call's context with
// ContextWithExchange; the transport of RecordingClient fills it in.
type Exchange struct {
	mu         sync.Mutex
	request    []byte
	response   bytes.Buffer
	truncated  bool
	status     int
	retryAfter time.Duration
	calls      int
	// chat bounds each response at MaxAnswerBytes rather than
	// MaxResponseBytes (CallChat, CallTranscription): a model's answer.
	// Set before the call; read-only after.
	chat bool
}

type exchangeKey struct{}

// ContextWithExchange returns ctx carrying ex, so that requests made with
// it through a RecordingClient are recorded in ex.
func ContextWithExchange(ctx context.Context, ex *Exchange) context.Context {
	return context.WithValue(ctx, exchangeKey{}, ex)
}

// Status is the HTTP status of the last response; 0 when none came.
func (e *Exchange) Status() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.status
}

// RetryAfter is the last response's Retry-After; 0 when it had none.
func (e *Exchange) RetryAfter() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.retryAfter
}

// Calls is the number of HTTP requests recorded.
func (e *Exchange) Calls() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls
}

// Request is the last request body, redacted of secrets and base64.
func (e *Exchange) Request(secrets ...string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.TrimSpace(Redact(string(e.request), secrets...))
}

// Response is the last response body as read so far, redacted of secrets
// and base64, with a note when it was longer than what was kept.
func (e *Exchange) Response(secrets ...string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := strings.TrimSpace(Redact(e.response.String(), secrets...))
	if e.truncated {
		s += "\n[truncated]"
	}
	return s
}

func (e *Exchange) startRequest(body []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls++
	e.request = body
	e.response.Reset()
	e.truncated = false
	e.status = 0
	e.retryAfter = 0
}

func (e *Exchange) gotResponse(status int, retryAfter time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.status, e.retryAfter = status, retryAfter
}

func (e *Exchange) writeResponse(p []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	room := maxResponseCapture - e.response.Len()
	if len(p) > room {
		p, e.truncated = p[:max(room, 0)], true
	}
	e.response.Write(p)
}

// RecordingClient returns a client that sends through c (a plain client
// when nil) and records the traffic of requests whose context carries an
// Exchange. Unless c has a redirect policy of its own, redirects are not
// followed: vendor APIs do not redirect, and Go forwards custom auth
// headers (x-api-key, x-goog-api-key) to whatever host a redirect names.
// c itself is not modified; a client that records already is returned as
// it is.
func RecordingClient(c *http.Client) *http.Client {
	if c == nil {
		c = &http.Client{}
	}
	if _, ok := c.Transport.(*recordingTransport); ok {
		return c
	}
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	cp := *c
	cp.Transport = &recordingTransport{next: next}
	if cp.CheckRedirect == nil {
		cp.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	return &cp
}

type recordingTransport struct {
	next http.RoundTripper
}

func (t *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ex, _ := req.Context().Value(exchangeKey{}).(*Exchange)
	if ex == nil {
		return t.next.RoundTrip(req)
	}
	body, out, err := requestBody(req)
	if err != nil {
		req.Body.Close() // a RoundTripper closes the body, even on errors
		return nil, err
	}
	req = out
	ex.startRequest(body)
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	ex.gotResponse(resp.StatusCode, ParseRetryAfter(resp.Header, time.Now()))
	resp.Body = &teeBody{rc: resp.Body, ex: ex, count: resp.StatusCode/100 == 2}
	return resp, nil
}

// requestBody returns a copy of req's body (up to maxRequestCapture) and
// the request to send. SDK bodies are in memory with GetBody set, so the
// copy comes from GetBody and req goes out untouched; otherwise the body
// is read and req is cloned with a fresh reader over it.
func requestBody(req *http.Request) ([]byte, *http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, req, nil
	}
	if req.GetBody != nil {
		rc, err := req.GetBody()
		if err != nil {
			return nil, nil, err
		}
		defer rc.Close()
		b, err := io.ReadAll(io.LimitReader(rc, maxRequestCapture))
		if err != nil {
			return nil, nil, err
		}
		return b, req, nil
	}
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, nil, err
	}
	req.Body.Close()
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(b))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	if len(b) > maxRequestCapture {
		b = b[:maxRequestCapture]
	}
	return b, out, nil
}

// teeBody copies what the SDK reads of a response into the exchange, and
// stops reading past the exchange's limit: the SDK, which reads a body
// whole before decoding it, never holds more than that. A 2xx body (the
// one an SDK decodes into its types) also stops at MaxResponseValues.
type teeBody struct {
	rc   io.ReadCloser
	ex   *Exchange
	read int64
	// count is whether the body's values are counted; values, inString
	// and escaped are the count so far, carried across reads.
	count             bool
	values            int
	inString, escaped bool
}

func (b *teeBody) Read(p []byte) (int, error) {
	limit, tooLarge := int64(MaxResponseBytes), ErrResponseTooLarge
	if b.ex.chat {
		limit, tooLarge = MaxAnswerBytes, ErrAnswerTooLarge
	}
	if b.read >= limit {
		// A body of exactly the limit is whole: only a byte beyond it
		// makes the response too large.
		var one [1]byte
		switch _, err := io.ReadFull(b.rc, one[:]); {
		case err == nil:
			return 0, tooLarge
		case err == io.EOF:
			return 0, io.EOF
		default:
			return 0, err
		}
	}
	if room := limit - b.read; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.rc.Read(p)
	b.read += int64(n)
	if n > 0 {
		b.ex.writeResponse(p[:n])
	}
	if b.count && b.countValues(p[:n]) > MaxResponseValues {
		return 0, ErrTooManyValues
	}
	return n, err
}

// countValues adds the objects, arrays and commas outside strings of p,
// the next bytes of the body, to the count, and returns it.
func (b *teeBody) countValues(p []byte) int {
	for _, c := range p {
		switch {
		case b.escaped:
			b.escaped = false
		case b.inString:
			b.escaped = c == '\\'
			b.inString = c != '"'
		case c == '"':
			b.inString = true
		case c == '{' || c == '[' || c == ',':
			b.values++
		}
	}
	return b.values
}

func (b *teeBody) Close() error { return b.rc.Close() }
