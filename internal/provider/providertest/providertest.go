// Package providertest is the shared test suite of the vendor adapters: an
// httptest server that answers with a script of responses and records
// what it received, and Run, the behaviours every adapter must show
// against its vendor's wire protocol (success, 401 without retry, 429
// with Retry-After, 500 then 200, timeout, malformed body), with the key
// only ever in the auth header.
package providertest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/provider"
)

// Received is one request as the server saw it.
type Received struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// Server answers the n-th request with the n-th step of its script (the
// last step answers all further requests) and records every request.
type Server struct {
	*httptest.Server
	mu    sync.Mutex
	steps []http.HandlerFunc
	got   []Received
}

// NewServer starts a server running steps; it is closed when t ends.
func NewServer(t *testing.T, steps ...http.HandlerFunc) *Server {
	t.Helper()
	if len(steps) == 0 {
		t.Fatal("providertest: a server needs at least one step")
	}
	s := &Server{steps: steps}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	step := s.steps[min(len(s.got), len(s.steps)-1)]
	s.got = append(s.got, Received{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	s.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body)) // for a step that reads it
	step(w, r)
}

// Requests returns what the server received so far.
func (s *Server) Requests() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.got...)
}

// Reply answers with status, a JSON body and optional header pairs.
func Reply(status int, body string, headerPairs ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headerPairs); i += 2 {
			w.Header().Set(headerPairs[i], headerPairs[i+1])
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

// Hang answers nothing until the client gives up (or a minute passes).
func Hang() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	}
}

// Field walks a decoded JSON value along keys (strings) and indexes (ints).
func Field(t *testing.T, body []byte, path ...any) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("request body is not JSON: %v", err)
	}
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: want an object holding %q, have %T", path, k, v)
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("at %v: want an array with index %d, have %T", path, k, v)
			}
			v = a[k]
		}
	}
	return v
}

// Vendor is what Run needs to know about one adapter and its protocol.
type Vendor struct {
	// Path is the request path the adapter must use.
	Path string
	// Key is the key given to the adapter; it must appear only where
	// KeyFromHeader finds it.
	Key string
	// New opens the adapter against baseURL with the per-call timeout.
	New func(t *testing.T, baseURL string, timeout time.Duration) provider.OCR
	// KeyFromHeader returns the key as sent in the auth header.
	KeyFromHeader func(h http.Header) string
	// Success is a 200 body whose transcription is SuccessText.
	Success     string
	SuccessText string
	// Answer is a 200 body whose transcription is text, as Success is.
	Answer func(text string) string
	// Unauthorized is the vendor's 401 body. Run adds an echo of the
	// input and the key to check that neither reaches the error.
	Unauthorized func(echo string) string
	// Payload returns the base64 document as found in a request body.
	Payload func(t *testing.T, body []byte) string
	// Doc is the document sent (an image the vendor accepts).
	Doc provider.Document
	// Empty is a 200 body whose answer holds no text at all (not the
	// blank-page answer): a vendor glitch that a retry mends. "" for a
	// vendor whose empty answer is a blank page (Mistral OCR, which is
	// given no prompt).
	Empty string
}

// fastRetry keeps the retry tests quick; Retry-After is still honoured.
func fastRetry(attempts int) provider.RetryPolicy {
	return provider.RetryPolicy{MaxAttempts: attempts, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}
}

// Run checks the behaviours every adapter shares.
func Run(t *testing.T, v Vendor) {
	t.Helper()
	b64 := base64.StdEncoding.EncodeToString(v.Doc.Data)

	t.Run("success sends the document base64 and the key only in the auth header", func(t *testing.T) {
		t.Parallel()
		srv := NewServer(t, Reply(200, v.Success))
		ocr := v.New(t, srv.URL, 5*time.Second)
		rec, err := ocr.Recognize(t.Context(), v.Doc)
		if err != nil {
			t.Fatalf("Recognize: %v", err)
		}
		if rec.Text != v.SuccessText {
			t.Errorf("text = %q, want %q", rec.Text, v.SuccessText)
		}
		reqs := srv.Requests()
		if len(reqs) != 1 {
			t.Fatalf("calls = %d, want 1", len(reqs))
		}
		r := reqs[0]
		if r.Method != http.MethodPost || r.Path != v.Path {
			t.Errorf("request = %s %s, want POST %s", r.Method, r.Path, v.Path)
		}
		if got := v.Payload(t, r.Body); got != b64 {
			t.Errorf("document payload in the request = %.40q…, want the base64 of the document", got)
		}
		if got := v.KeyFromHeader(r.Header); got != v.Key {
			t.Errorf("key in the auth header = %q, want %q", got, v.Key)
		}
		for name, vals := range r.Header {
			if name == "Authorization" || name == "X-Api-Key" || name == "X-Goog-Api-Key" {
				continue
			}
			if strings.Contains(strings.Join(vals, " "), v.Key) {
				t.Errorf("key sent in header %s too", name)
			}
		}
		if strings.Contains(string(r.Body), v.Key) || strings.Contains(r.Path, v.Key) {
			t.Error("key sent in the request body or URL")
		}
		AssertRedacted(t, "Request", rec.Request, v.Key)
		AssertRedacted(t, "RawData", rec.RawData, v.Key)
		if !strings.Contains(rec.Request, "<elided ") {
			t.Errorf("Request does not show the elided payload: %.300s", rec.Request)
		}
		if !strings.Contains(rec.RawData, strings.Split(v.SuccessText, "\n")[0]) {
			t.Errorf("RawData does not hold the answer: %.300s", rec.RawData)
		}
		if rec.Model == "" || rec.Format == "" {
			t.Errorf("Model %q, Format %q: want both set", rec.Model, rec.Format)
		}
	})

	t.Run("401 is an auth error, not retried, without the vendor's text or the key", func(t *testing.T) {
		t.Parallel()
		echo := "ECHOED-INPUT-" + b64[:16]
		srv := NewServer(t, Reply(401, v.Unauthorized(echo+" "+v.Key)), Reply(200, v.Success))
		ocr := provider.WithRetry(v.New(t, srv.URL, 5*time.Second), fastRetry(4))
		_, err := ocr.Recognize(t.Context(), v.Doc)
		pe := AssertCategory(t, err, provider.CategoryAuth, 401)
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("calls = %d, want exactly 1", n)
		}
		for _, text := range []string{err.Error(), fmt.Sprint(pe.Err)} {
			if strings.Contains(text, v.Key) || strings.Contains(text, "ECHOED-INPUT") {
				t.Errorf("error text carries the key or the vendor's body: %q", text)
			}
		}
	})

	t.Run("429 with Retry-After is retried after the wait", func(t *testing.T) {
		t.Parallel()
		srv := NewServer(t, Reply(429, `{"error":{"message":"slow down"}}`, "Retry-After", "1"), Reply(200, v.Success))
		ocr := provider.WithRetry(v.New(t, srv.URL, 5*time.Second), fastRetry(4))
		start := time.Now()
		rec, err := ocr.Recognize(t.Context(), v.Doc)
		if err != nil {
			t.Fatalf("Recognize: %v", err)
		}
		if waited := time.Since(start); waited < time.Second {
			t.Errorf("retried after %v, want the 1s Retry-After honoured", waited)
		}
		if n := len(srv.Requests()); n != 2 || rec.Text != v.SuccessText {
			t.Errorf("calls = %d, text %q; want 2 calls and the transcription", n, rec.Text)
		}
	})

	t.Run("500 then 200 succeeds on the retry", func(t *testing.T) {
		t.Parallel()
		srv := NewServer(t, Reply(500, `{"error":{"message":"boom"}}`), Reply(200, v.Success))
		ocr := provider.WithRetry(v.New(t, srv.URL, 5*time.Second), fastRetry(4))
		rec, err := ocr.Recognize(t.Context(), v.Doc)
		if err != nil {
			t.Fatalf("Recognize: %v", err)
		}
		if n := len(srv.Requests()); n != 2 || rec.Text != v.SuccessText {
			t.Errorf("calls = %d, text %q; want 2 calls and the transcription", n, rec.Text)
		}
	})

	t.Run("a server slower than the timeout is a timeout, retried up to MaxAttempts", func(t *testing.T) {
		t.Parallel()
		srv := NewServer(t, Hang())
		ocr := provider.WithRetry(v.New(t, srv.URL, 150*time.Millisecond), fastRetry(3))
		start := time.Now()
		_, err := ocr.Recognize(t.Context(), v.Doc)
		AssertCategory(t, err, provider.CategoryTimeout, 0)
		if n := len(srv.Requests()); n != 3 {
			t.Errorf("calls = %d, want 3 (MaxAttempts)", n)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("took %v: the timeout did not cut the calls short", took)
		}
	})

	t.Run("a transcription past MaxAnswerBytes fails its call as server, not retried", func(t *testing.T) {
		t.Parallel()
		// A page's text is what a model writes, within its output limit:
		// 64 MiB of it was read and kept, for every page of a file.
		srv := NewServer(t, Reply(200, v.Answer(strings.Repeat("word ", provider.MaxAnswerBytes/5+1))))
		ocr := provider.WithRetry(v.New(t, srv.URL, 10*time.Second), fastRetry(3))
		_, err := ocr.Recognize(t.Context(), v.Doc)
		pe := AssertCategory(t, err, provider.CategoryServer, 200)
		if pe != nil && (!errors.Is(err, provider.ErrAnswerTooLarge) || pe.Retryable()) {
			t.Errorf("err = %v (retryable %t), want the answer too large, not retried", err, pe.Retryable())
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("calls = %d, want 1", n)
		}
	})

	t.Run("a malformed 200 body is a server error", func(t *testing.T) {
		t.Parallel()
		srv := NewServer(t, Reply(200, `{"choices": [ {"mess`))
		ocr := provider.WithRetry(v.New(t, srv.URL, 5*time.Second), fastRetry(2))
		_, err := ocr.Recognize(t.Context(), v.Doc)
		AssertCategory(t, err, provider.CategoryServer, 200)
		if n := len(srv.Requests()); n != 2 {
			t.Errorf("calls = %d, want 2 (server errors are retried)", n)
		}
	})

	t.Run("an empty answer is a failed call, retried, not a blank page", func(t *testing.T) {
		if v.Empty == "" {
			t.Skip("the vendor's empty answer is a blank page")
		}
		t.Parallel()
		srv := NewServer(t, Reply(200, v.Empty), Reply(200, v.Success))
		rec, err := provider.WithRetry(v.New(t, srv.URL, 5*time.Second), fastRetry(4)).Recognize(t.Context(), v.Doc)
		if err != nil {
			t.Fatalf("Recognize: %v", err)
		}
		if n := len(srv.Requests()); n != 2 || rec.Text != v.SuccessText {
			t.Errorf("calls = %d, text %q; want 2 calls and the transcription", n, rec.Text)
		}
	})

	t.Run("an answer that stays empty fails its call saying so", func(t *testing.T) {
		if v.Empty == "" {
			t.Skip("the vendor's empty answer is a blank page")
		}
		t.Parallel()
		srv := NewServer(t, Reply(200, v.Empty))
		rec, err := provider.WithRetry(v.New(t, srv.URL, 5*time.Second), fastRetry(3)).Recognize(t.Context(), v.Doc)
		pe := AssertCategory(t, err, provider.CategoryServer, 200)
		if pe.Reason != "empty answer" {
			t.Errorf("reason = %q, want %q", pe.Reason, "empty answer")
		}
		if n := len(srv.Requests()); n != 3 || rec.Text != "" {
			t.Errorf("calls = %d, text %q; want 3 (MaxAttempts) and no text", n, rec.Text)
		}
	})

	t.Run("a 200 body of the wrong shape is a server error", func(t *testing.T) {
		t.Parallel()
		srv := NewServer(t, Reply(200, `{"unexpected": true}`))
		ocr := v.New(t, srv.URL, 5*time.Second)
		_, err := ocr.Recognize(t.Context(), v.Doc)
		AssertCategory(t, err, provider.CategoryServer, 200)
	})

	t.Run("a cancelled context is not a provider error", func(t *testing.T) {
		t.Parallel()
		srv := NewServer(t, Reply(200, v.Success))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := provider.WithRetry(v.New(t, srv.URL, 5*time.Second), fastRetry(4)).Recognize(ctx, v.Doc)
		pe := (*provider.Error)(nil)
		if err == nil || errors.As(err, &pe) {
			t.Fatalf("err = %v, want the context's error, not a provider error", err)
		}
		if n := len(srv.Requests()); n != 0 {
			t.Errorf("calls = %d, want 0", n)
		}
	})
}

// AssertCategory fails unless err is a *provider.Error of category c and
// HTTP status status, with the message rows show (which names the
// error's Reason after the category when it has one).
func AssertCategory(t *testing.T, err error, c provider.Category, status int) *provider.Error {
	t.Helper()
	pe := (*provider.Error)(nil)
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v (%T), want a *provider.Error", err, err)
	}
	if pe.Category != c || pe.Status != status {
		t.Fatalf("error = category %s, status %d (%v); want %s, %d", pe.Category, pe.Status, pe.Err, c, status)
	}
	want := fmt.Sprintf("provider error (category=%s, status=%d)", c, status)
	if pe.Reason != "" {
		want += ": " + pe.Reason
	}
	if err.Error() != want {
		t.Errorf("message = %q, want %q", err.Error(), want)
	}
	return pe
}

// AssertRedacted fails if text holds the key or a base64 run long enough
// to be a payload.
func AssertRedacted(t *testing.T, field, text, key string) {
	t.Helper()
	if key != "" && strings.Contains(text, key) {
		t.Errorf("%s holds the key", field)
	}
	run := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' {
			run++
			if run >= provider.MinBase64Run {
				t.Errorf("%s holds a base64 run of %d+ characters near %q", field, run, text[max(0, i-40):i])
				return
			}
		} else {
			run = 0
		}
	}
}

// TestImage is a small PNG-typed payload: the adapters do not decode it,
// and its base64 is long enough to be elided from Request.
func TestImage() provider.Document {
	data := make([]byte, 3000)
	for i := range data {
		data[i] = byte(i*7 + i/13)
	}
	copy(data, "\x89PNG\r\n\x1a\n")
	return provider.Document{Data: data, MIME: "image/png", Format: "markdown"}
}
