package providertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/provider"
)

// ChatSchema is the strict-compatible schema RunChat sends; every vendor
// must pass it on in its native form.
const ChatSchema = `{"type":"object","properties":{"total":{"type":"number"},"items":{"type":"array","items":{"type":"string"}}},"required":["total","items"],"additionalProperties":false}`

// ChatJSON is a conforming answer to ChatSchema.
const ChatJSON = `{"total":42.5,"items":["a","b"]}`

// Token counts every ChatVendor's answers must report as usage.
const (
	ChatInputTokens  = 11
	ChatOutputTokens = 7
)

// ChatVendor is what RunChat needs to know about one chat adapter.
type ChatVendor struct {
	// Path is the request path the adapter must use.
	Path string
	Key  string
	// New opens the adapter against baseURL with the per-call timeout.
	New func(t *testing.T, baseURL string, timeout time.Duration) provider.Chat
	// KeyFromHeader returns the key as sent in the auth header.
	KeyFromHeader func(h http.Header) string
	// Text is a 200 body answering content as text; Structured one
	// answering the JSON text as the vendor does under a schema (a tool
	// call for Anthropic). Both report ChatInputTokens and
	// ChatOutputTokens as usage.
	Text       func(content string) string
	Structured func(json string) string
	// Truncated is a 200 body of an answer cut off by the token limit whose
	// text holds partial, reporting ChatInputTokens and ChatOutputTokens as
	// usage.
	Truncated func(partial string) string
	// Unauthorized is the vendor's 401 body around echo.
	Unauthorized func(echo string) string
	// Messages returns the system and user text found in a request.
	Messages func(t *testing.T, body []byte) (system, user string)
	// SchemaIn returns the schema found in a request body in the vendor's
	// native place, nil when there is none.
	SchemaIn func(t *testing.T, body []byte) any
	// Empty is a 200 body of a free-text answer holding no text at all,
	// reporting ChatInputTokens and ChatOutputTokens as usage.
	Empty string
	// TextWithUsage is Text reporting input and output, raw JSON values,
	// as its usage's input and output counts.
	TextWithUsage func(content, input, output string) string
}

// RunChat checks the behaviours every chat adapter shares.
func RunChat(t *testing.T, v ChatVendor) {
	t.Helper()
	req := provider.ChatRequest{System: "Extract the totals.", User: "Invoice 7: total 42.50, items a and b", Schema: ChatSchema, MaxTokens: 500}

	t.Run("the schema reaches the vendor natively and the JSON answer comes back with usage", func(t *testing.T) {
		t.Parallel()
		srv := NewServer(t, Reply(200, v.Structured(ChatJSON)))
		ans, err := v.New(t, srv.URL, 5*time.Second).Complete(t.Context(), req)
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if ans.Content != ChatJSON {
			t.Errorf("content = %q, want %q", ans.Content, ChatJSON)
		}
		if ans.InputTokens != ChatInputTokens || ans.OutputTokens != ChatOutputTokens {
			t.Errorf("tokens = %d in, %d out; want %d, %d", ans.InputTokens, ans.OutputTokens, ChatInputTokens, ChatOutputTokens)
		}
		if ans.Model == "" || ans.FinishReason == "" {
			t.Errorf("model %q, finish reason %q: want both set", ans.Model, ans.FinishReason)
		}
		reqs := srv.Requests()
		if len(reqs) != 1 {
			t.Fatalf("calls = %d, want 1", len(reqs))
		}
		r := reqs[0]
		if r.Method != http.MethodPost || r.Path != v.Path {
			t.Errorf("request = %s %s, want POST %s", r.Method, r.Path, v.Path)
		}
		AssertSameJSON(t, "schema in the request", v.SchemaIn(t, r.Body), ChatSchema)
		system, user := v.Messages(t, r.Body)
		if !strings.Contains(system, req.System) || user != req.User {
			t.Errorf("messages = system %q, user %q; want the request's", system, user)
		}
		assertKeyOnlyInAuth(t, r, v.Key, v.KeyFromHeader)
		AssertRedacted(t, "Request", ans.Request, v.Key)
		AssertRedacted(t, "RawData", ans.RawData, v.Key)
		if !strings.Contains(ans.Request, "Invoice 7") || !strings.Contains(ans.RawData, "42.5") {
			t.Errorf("Request/RawData do not hold the exchange: %.200s / %.200s", ans.Request, ans.RawData)
		}
	})

	t.Run("without a schema the text answer comes back and no schema is sent", func(t *testing.T) {
		t.Parallel()
		srv := NewServer(t, Reply(200, v.Text("Total: 42.50")))
		ans, err := v.New(t, srv.URL, 5*time.Second).Complete(t.Context(), provider.ChatRequest{System: "Summarise.", User: "Invoice 7"})
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if ans.Content != "Total: 42.50" || ans.InputTokens != ChatInputTokens || ans.OutputTokens != ChatOutputTokens {
			t.Errorf("answer = %q, %d/%d tokens", ans.Content, ans.InputTokens, ans.OutputTokens)
		}
		if got := v.SchemaIn(t, srv.Requests()[0].Body); got != nil {
			t.Errorf("schema sent without one asked: %v", got)
		}
	})

	t.Run("429 then 200 is retried", func(t *testing.T) {
		t.Parallel()
		srv := NewServer(t, Reply(429, `{"error":{"message":"slow down"}}`, "Retry-After", "0.05"), Reply(200, v.Structured(ChatJSON)))
		ans, err := provider.WithChatRetry(v.New(t, srv.URL, 5*time.Second), fastRetry(4)).Complete(t.Context(), req)
		if err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if n := len(srv.Requests()); n != 2 || ans.Content != ChatJSON {
			t.Errorf("calls = %d, content %q; want 2 calls and the answer", n, ans.Content)
		}
	})

	t.Run("401 is an auth error, not retried, without the vendor's text or the key", func(t *testing.T) {
		t.Parallel()
		srv := NewServer(t, Reply(401, v.Unauthorized("ECHOED-INPUT "+v.Key)), Reply(200, v.Structured(ChatJSON)))
		_, err := provider.WithChatRetry(v.New(t, srv.URL, 5*time.Second), fastRetry(4)).Complete(t.Context(), req)
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

	t.Run("an answer cut off by the token limit is truncated, not retried, and keeps the exchange and usage", func(t *testing.T) {
		t.Parallel()
		// The model echoed the key and a payload from its input: the row
		// gets neither, as for a successful answer.
		payload := strings.Repeat("QUJD", 64)
		srv := NewServer(t, Reply(200, v.Truncated("PARTIAL-ANSWER "+v.Key+" "+payload)))
		cut := req
		cut.User += " " + v.Key + " " + payload
		ans, err := provider.WithChatRetry(v.New(t, srv.URL, 5*time.Second), fastRetry(4)).Complete(t.Context(), cut)
		AssertCategory(t, err, provider.CategoryTruncated, 200)
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("calls = %d, want 1", n)
		}
		AssertRedacted(t, "Request", ans.Request, v.Key)
		AssertRedacted(t, "RawData", ans.RawData, v.Key)
		if !strings.Contains(ans.Request, "Invoice 7") || !strings.Contains(ans.RawData, "PARTIAL-ANSWER") {
			t.Errorf("Request/RawData do not hold the exchange: %.200s / %.200s", ans.Request, ans.RawData)
		}
		if ans.InputTokens != ChatInputTokens || ans.OutputTokens != ChatOutputTokens {
			t.Errorf("tokens = %d in, %d out; want %d, %d: a truncated answer is billed", ans.InputTokens, ans.OutputTokens, ChatInputTokens, ChatOutputTokens)
		}
		if ans.Model == "" || ans.Content != "" {
			t.Errorf("model %q, content %q: want the model and no content", ans.Model, ans.Content)
		}
	})

	t.Run("an empty answer is a failed call, retried, and kept when it stays empty", func(t *testing.T) {
		t.Parallel()
		free := provider.ChatRequest{System: "Summarise.", User: "Invoice 7"}
		srv := NewServer(t, Reply(200, v.Empty), Reply(200, v.Text("Total: 42.50")))
		ans, err := provider.WithChatRetry(v.New(t, srv.URL, 5*time.Second), fastRetry(4)).Complete(t.Context(), free)
		if err != nil || ans.Content != "Total: 42.50" || len(srv.Requests()) != 2 {
			t.Fatalf("answer %q, err %v, calls %d; want the second call's answer", ans.Content, err, len(srv.Requests()))
		}
		if ans.InputTokens != 2*ChatInputTokens || ans.OutputTokens != 2*ChatOutputTokens {
			t.Errorf("tokens = %d in, %d out; want %d, %d: the empty answer was billed too", ans.InputTokens, ans.OutputTokens, 2*ChatInputTokens, 2*ChatOutputTokens)
		}

		srv = NewServer(t, Reply(200, v.Empty))
		ans, err = provider.WithChatRetry(v.New(t, srv.URL, 5*time.Second), fastRetry(3)).Complete(t.Context(), free)
		pe := AssertCategory(t, err, provider.CategoryServer, 200)
		if pe.Reason != "empty answer" {
			t.Errorf("reason = %q, want %q", pe.Reason, "empty answer")
		}
		if n := len(srv.Requests()); n != 3 {
			t.Errorf("calls = %d, want 3 (MaxAttempts)", n)
		}
		if ans.Content != "" || !strings.Contains(ans.Request, "Invoice 7") || ans.RawData == "" {
			t.Errorf("content %q, Request %.100q, RawData %.100q: want no content and the exchange", ans.Content, ans.Request, ans.RawData)
		}
		if ans.InputTokens != 3*ChatInputTokens || ans.OutputTokens != 3*ChatOutputTokens {
			t.Errorf("tokens = %d in, %d out; want %d, %d: each empty answer is billed", ans.InputTokens, ans.OutputTokens, 3*ChatInputTokens, 3*ChatOutputTokens)
		}
	})

	t.Run("a 500 keeps the request, not the vendor's body, through the retries", func(t *testing.T) {
		t.Parallel()
		srv := NewServer(t, Reply(500, `{"error":{"message":"ECHOED-INPUT `+v.Key+`","type":"server_error"}}`))
		ans, err := provider.WithChatRetry(v.New(t, srv.URL, 5*time.Second), fastRetry(2)).Complete(t.Context(), req)
		AssertCategory(t, err, provider.CategoryServer, 500)
		if n := len(srv.Requests()); n != 2 {
			t.Errorf("calls = %d, want 2", n)
		}
		AssertRedacted(t, "Request", ans.Request, v.Key)
		if !strings.Contains(ans.Request, "Invoice 7") {
			t.Errorf("Request = %.200q, want the request sent", ans.Request)
		}
		if ans.RawData != "" || ans.InputTokens != 0 || ans.OutputTokens != 0 {
			t.Errorf("RawData %.200q, tokens %d/%d: want none of an error body", ans.RawData, ans.InputTokens, ans.OutputTokens)
		}
	})

	t.Run("a server that hangs past the call timeout is a timeout, retried up to MaxAttempts", func(t *testing.T) {
		t.Parallel()
		srv := NewServer(t, Hang())
		start := time.Now()
		_, err := provider.WithChatRetry(v.New(t, srv.URL, 150*time.Millisecond), fastRetry(3)).Complete(t.Context(), req)
		// The row's error: provider error (category=timeout, status=0).
		AssertCategory(t, err, provider.CategoryTimeout, 0)
		// The last call's request may reach the server's handler after the
		// client gave up on it (a loaded machine under -race): wait for it.
		n := len(srv.Requests())
		for deadline := time.Now().Add(2 * time.Second); n < 3 && time.Now().Before(deadline); n = len(srv.Requests()) {
			time.Sleep(5 * time.Millisecond)
		}
		if n != 3 {
			t.Errorf("calls = %d, want 3 (MaxAttempts)", n)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("took %v: the timeout did not cut the calls short", took)
		}
	})

	t.Run("a malformed 200 body is a server error and kept as the raw data", func(t *testing.T) {
		t.Parallel()
		srv := NewServer(t, Reply(200, `{"choices": [ {"mess`))
		ans, err := v.New(t, srv.URL, 5*time.Second).Complete(t.Context(), req)
		AssertCategory(t, err, provider.CategoryServer, 200)
		if !strings.Contains(ans.Request, "Invoice 7") || !strings.Contains(ans.RawData, `"mess`) {
			t.Errorf("Request/RawData do not hold the exchange: %.200q / %.200q", ans.Request, ans.RawData)
		}
	})

	t.Run("absurd usage keeps the answer", func(t *testing.T) {
		t.Parallel()
		const top = provider.MaxTokenCount
		for _, tc := range []struct {
			name          string
			input, output string
			wantIn        int64
			wantOut       int64
		}{
			{"negative counts are none", "-4", "-1", 0, 0},
			{"counts past int64 are the maximum", "99999999999999999999", "1e300", top, top},
			{"counts past int32 are the maximum", "4294967296", "2147483648", top, top},
			{"fractions are cut to whole tokens", "11.7", "7.0", 11, 7},
		} {
			srv := NewServer(t, Reply(200, v.TextWithUsage("Total: 42.50", tc.input, tc.output)))
			ans, err := provider.WithChatRetry(v.New(t, srv.URL, 5*time.Second), fastRetry(4)).Complete(t.Context(), provider.ChatRequest{System: "Summarise.", User: "Invoice 7"})
			if err != nil || ans.Content != "Total: 42.50" {
				t.Errorf("%s: answer %q, err %v; want the answer kept", tc.name, ans.Content, err)
				continue
			}
			if ans.InputTokens != tc.wantIn || ans.OutputTokens != tc.wantOut {
				t.Errorf("%s: tokens %d in, %d out; want %d, %d", tc.name, ans.InputTokens, ans.OutputTokens, tc.wantIn, tc.wantOut)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%s: calls = %d, want 1", tc.name, n)
			}
		}
	})

	t.Run("an answer past MaxAnswerBytes fails its call as server, not retried", func(t *testing.T) {
		t.Parallel()
		free := provider.ChatRequest{System: "Summarise.", User: "Invoice 7"}
		// Words, not one run of letters, which the debug fields would elide
		// as base64 at length. (That an answer within the limit is read
		// whole is TestAnOversizedResponseFailsItsCall's: decoding 8 MiB
		// through each SDK takes seconds under the race detector.)
		srv := NewServer(t, Reply(200, v.Text(strings.Repeat("total ", provider.MaxAnswerBytes/6+1))))
		ans, err := provider.WithChatRetry(v.New(t, srv.URL, 30*time.Second), fastRetry(4)).Complete(t.Context(), free)
		pe := AssertCategory(t, err, provider.CategoryServer, 200)
		if pe.Reason != "answer larger than 8 MiB" || pe.Retryable() {
			t.Errorf("reason %q, retryable %t; want %q, not retryable: the answer was billed", pe.Reason, pe.Retryable(), "answer larger than 8 MiB")
		}
		if got, want := err.Error(), "provider error (category=server, status=200): answer larger than 8 MiB"; got != want {
			t.Errorf("row error %q, want %q", got, want)
		}
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("calls = %d, want 1", n)
		}
		if ans.Content != "" || !strings.Contains(ans.Request, "Invoice 7") {
			t.Errorf("content of %d bytes, Request %.100q: want no content and the request", len(ans.Content), ans.Request)
		}
	})

	t.Run("a schema that is not a JSON object is refused before any call, naming responseSchema", func(t *testing.T) {
		t.Parallel()
		srv := NewServer(t, Reply(200, v.Structured(ChatJSON)))
		for _, schema := range []string{`[1,`, `true`, `false`} {
			_, err := provider.WithChatRetry(v.New(t, srv.URL, 5*time.Second), fastRetry(4)).Complete(t.Context(), provider.ChatRequest{User: "x", Schema: schema})
			// The row's error: the job's field, not "provider error
			// (category=invalid_request, status=0)".
			if !errors.Is(err, provider.ErrInvalidSchema) || !strings.HasPrefix(fmt.Sprint(err), "responseSchema: ") {
				t.Errorf("schema %s: err = %v, want ErrInvalidSchema naming responseSchema", schema, err)
			}
		}
		if n := len(srv.Requests()); n != 0 {
			t.Errorf("calls = %d, want 0", n)
		}
	})
}

func assertKeyOnlyInAuth(t *testing.T, r Received, key string, fromHeader func(http.Header) string) {
	t.Helper()
	if key == "" {
		return
	}
	if got := fromHeader(r.Header); got != key {
		t.Errorf("key in the auth header = %q, want %q", got, key)
	}
	for name, vals := range r.Header {
		if name == "Authorization" || name == "X-Api-Key" || name == "X-Goog-Api-Key" {
			continue
		}
		if strings.Contains(strings.Join(vals, " "), key) {
			t.Errorf("key sent in header %s too", name)
		}
	}
	if strings.Contains(string(r.Body), key) || strings.Contains(r.Path, key) {
		t.Error("key sent in the request body or URL")
	}
}

// AssertSameJSON fails unless got (a decoded JSON value) equals the JSON
// text want.
func AssertSameJSON(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: want is not JSON: %v", what, err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Errorf("%s = %s, want %s", what, g, want)
	}
}

// JSONString quotes s as a JSON string.
func JSONString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
