package slots_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/provider/providertest"
	"github.com/docjobs/docjobs/internal/provider/slots"
)

const schema = `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`

// Each slot's chat reaches its vendor's chat endpoint with the schema in
// the vendor's native place.
func TestChatSlotsSpeakTheirProtocols(t *testing.T) {
	cases := []struct {
		n          int
		answer     string
		path       string
		auth       string
		schemaPath []any
	}{
		{1, chatAnswer, "/v1/chat/completions", "Authorization", []any{"response_format", "json_schema", "schema"}},
		{2, chatAnswer, "/v1/chat/completions", "Authorization", []any{"response_format", "json_schema", "schema"}},
		{3, messagesAnswer, "/v1/messages", "X-Api-Key", []any{"tools", 0, "input_schema"}},
		{4, generateAnswer, "/v1beta/models/m1:generateContent", "X-Goog-Api-Key", []any{"generationConfig", "responseJsonSchema"}},
		{5, chatAnswer, "/v1/chat/completions", "Authorization", []any{"response_format", "json_schema", "schema"}},
		{6, chatAnswer, "/api/v1/chat/completions", "Authorization", []any{"response_format", "json_schema", "schema"}},
		{7, chatAnswer, "/compatible-mode/v1/chat/completions", "Authorization", []any{"response_format", "json_schema", "schema"}},
		{8, chatAnswer, "/v1/chat/completions", "Authorization", []any{"response_format", "json_schema", "schema"}},
	}
	for _, c := range cases {
		t.Run(slot(c.n), func(t *testing.T) {
			t.Parallel()
			answer := c.answer
			if c.n == 3 { // under a schema Anthropic answers with the forced tool's call
				answer = `{"id":"m","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"t","name":"record_answer","input":{"n":1}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}`
			}
			srv := providertest.NewServer(t, providertest.Reply(200, answer))
			base := srv.URL
			if i := strings.Index(c.path, "/chat/completions"); i >= 0 && c.n != 1 {
				base += c.path[:i]
			}
			obs := &recorder{}
			s := slots.New(slots.Config{BaseURLs: map[int]string{c.n: base}, Observer: obs})
			chat, err := s.Chat(slot(c.n), "m1", key)
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			ans, err := chat.Complete(t.Context(), provider.ChatRequest{System: "s", User: "u", Schema: schema})
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			r := srv.Requests()[0]
			if r.Path != c.path || ans.Model != "m1" || ans.Content == "" {
				t.Errorf("path %s, model %q, content %q; want %s, m1 and an answer", r.Path, ans.Model, ans.Content, c.path)
			}
			providertest.AssertSameJSON(t, "schema", providertest.Field(t, r.Body, c.schemaPath...), schema)
			if !strings.Contains(r.Header.Get(c.auth), key) {
				t.Errorf("key not in %s", c.auth)
			}
			providertest.AssertRedacted(t, "Request", ans.Request, key)
			if got := obs.got(); len(got) != 1 || got[0] != slot(c.n)+" ok" {
				t.Errorf("observer saw %q", got)
			}
		})
	}
}

func TestChatErrors(t *testing.T) {
	s := slots.New(slots.Config{})
	cases := []struct {
		name             string
		slot, model, key string
		want             error
	}{
		{"an unknown slot", "NEURAL_CLIENT_TYPE_PROVIDER_0", "m", key, slots.ErrUnknownSlot},
		{"every chat slot needs a model, Mistral's too", slot(1), " ", key, slots.ErrMissingModel},
		{"a vendor slot needs a key", slot(4), "gemini-2.5-flash", "", slots.ErrMissingKey},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.Chat(c.slot, c.model, c.key)
			if !errors.Is(err, c.want) || strings.Contains(err.Error(), key) {
				t.Fatalf("err = %v, want %v without the key", err, c.want)
			}
		})
	}
	if _, err := s.Chat(slot(8), "llama3.1", ""); err != nil {
		t.Errorf("self-hosted without a key: %v", err)
	}
}

func TestChatRetriesAndAuth(t *testing.T) {
	t.Run("429 then 200 is retried and both attempts are counted", func(t *testing.T) {
		srv := providertest.NewServer(t,
			providertest.Reply(429, `{"error":{"message":"slow"}}`, "Retry-After", "0.05"),
			providertest.Reply(200, chatAnswer))
		obs := &recorder{}
		s := slots.New(slots.Config{BaseURLs: map[int]string{8: srv.URL + "/v1"}, Observer: obs, RetryBaseDelay: time.Millisecond})
		chat, _ := s.Chat(slot(8), "llama3.1", "")
		ans, err := chat.Complete(t.Context(), provider.ChatRequest{User: "u"})
		if err != nil || ans.Content != "hello" {
			t.Fatalf("answer %q, err %v", ans.Content, err)
		}
		want := slot(8) + " rate_limit," + slot(8) + " ok"
		if got := strings.Join(obs.got(), ","); got != want {
			t.Errorf("observer saw %s, want %s", got, want)
		}
	})
	// The retry and the slot's guard pass the failed call's answer on: the
	// row keeps the request, the cut-off answer and its usage.
	t.Run("a truncated answer comes through the wrappers with its exchange", func(t *testing.T) {
		truncated := `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"{\"n\":"},"finish_reason":"length"}],"usage":{"prompt_tokens":30,"completion_tokens":8,"total_tokens":38}}`
		srv := providertest.NewServer(t, providertest.Reply(200, truncated))
		s := slots.New(slots.Config{BaseURLs: map[int]string{6: srv.URL + "/api/v1"}, RetryBaseDelay: time.Millisecond})
		chat, _ := s.Chat(slot(6), "m1", key)
		ans, err := chat.Complete(t.Context(), provider.ChatRequest{User: "chunk text", Schema: schema, MaxTokens: 8})
		providertest.AssertCategory(t, err, provider.CategoryTruncated, 200)
		if !strings.Contains(ans.Request, "chunk text") || !strings.Contains(ans.RawData, `"finish_reason":"length"`) ||
			ans.InputTokens != 30 || ans.OutputTokens != 8 || ans.Model != "m1" {
			t.Errorf("answer = %+v; want the request, the raw answer, 30/8 tokens and the model", ans)
		}
		providertest.AssertRedacted(t, "Request", ans.Request, key)
		providertest.AssertRedacted(t, "RawData", ans.RawData, key)
	})
	t.Run("a 503 on every try leaves the last try's request", func(t *testing.T) {
		srv := providertest.NewServer(t, providertest.Reply(503, `{"error":{"message":"down, echoing chunk text"}}`))
		s := slots.New(slots.Config{BaseURLs: map[int]string{2: srv.URL + "/v1"}, RetryBaseDelay: time.Millisecond})
		chat, _ := s.Chat(slot(2), "m1", key)
		ans, err := chat.Complete(t.Context(), provider.ChatRequest{User: "chunk text"})
		providertest.AssertCategory(t, err, provider.CategoryServer, 503)
		if n := len(srv.Requests()); n != 4 {
			t.Errorf("calls = %d, want 4", n)
		}
		if !strings.Contains(ans.Request, "chunk text") || ans.RawData != "" {
			t.Errorf("Request %q, RawData %q; want the request and no error body", ans.Request, ans.RawData)
		}
	})
	t.Run("401 fails at once", func(t *testing.T) {
		srv := providertest.NewServer(t, providertest.Reply(401, unauthorizedAny))
		s := slots.New(slots.Config{BaseURLs: map[int]string{3: srv.URL}, RetryBaseDelay: time.Millisecond})
		chat, _ := s.Chat(slot(3), "claude-sonnet-4-5", key)
		_, err := chat.Complete(t.Context(), provider.ChatRequest{User: "u"})
		providertest.AssertCategory(t, err, provider.CategoryAuth, 401)
		if n := len(srv.Requests()); n != 1 {
			t.Errorf("calls = %d, want 1", n)
		}
	})
}

// With one place in the slot, an account with a backlog of queued calls
// does not hold up another account's single call: after the call in
// flight, the busy account (which started waiting first) gets one turn,
// then the quiet account's call goes out, not after the whole backlog.
func TestChatIsFairAcrossAccounts(t *testing.T) {
	release := make(chan struct{})
	srv := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		providertest.Reply(200, chatAnswer)(w, r)
	})
	s := slots.New(slots.Config{BaseURLs: map[int]string{2: srv.URL + "/v1"}, PerSlotConcurrency: 1})
	chat, _ := s.Chat(slot(2), "gpt-4.1", key)
	var wg sync.WaitGroup
	call := func(account, user string) {
		wg.Go(func() {
			ctx := provider.WithAccount(t.Context(), account)
			if _, err := chat.Complete(ctx, provider.ChatRequest{User: user}); err != nil {
				t.Errorf("%s: %v", user, err)
			}
		})
	}
	const backlog = 20
	for i := range backlog {
		call("busy", "busy-"+strconv.Itoa(i))
	}
	for len(srv.Requests()) == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the backlog queues behind the first call
	call("quiet", "quiet")
	time.Sleep(50 * time.Millisecond)
	for range backlog + 1 {
		release <- struct{}{}
	}
	wg.Wait()
	reqs := srv.Requests()
	order := -1
	for i, r := range reqs {
		if providertest.Field(t, r.Body, "messages", 0, "content") == "quiet" {
			order = i
		}
	}
	if len(reqs) != backlog+1 || order != 2 {
		t.Errorf("the quiet account's call went out as call %d of %d; want call 2 (0-based)", order, len(reqs))
	}
}

// TestACallWhoseContextEndsWhileItWaitsForTheSlotIsASlotWait: a call
// cut off before it could start is told apart from any vendor's failure
// (provider.ErrSlotWait), so that a consensus run cut by a stop is not
// kept as an unusable outcome; its message and cause are as before.
func TestACallWhoseContextEndsWhileItWaitsForTheSlotIsASlotWait(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		providertest.Reply(200, chatAnswer)(w, r)
	})
	s := slots.New(slots.Config{BaseURLs: map[int]string{2: srv.URL + "/v1"}, PerSlotConcurrency: 1})
	chat, _ := s.Chat(slot(2), "gpt-4.1", key)
	first, cancelFirst := context.WithCancel(t.Context())
	defer cancelFirst()
	go func() { _, _ = chat.Complete(first, provider.ChatRequest{User: "holds the slot"}) }()
	for len(srv.Requests()) == 0 {
		time.Sleep(time.Millisecond)
	}
	stopping := errors.New("stop initiated")
	ctx, cancel := context.WithCancelCause(t.Context())
	time.AfterFunc(20*time.Millisecond, func() { cancel(stopping) })
	_, err := chat.Complete(ctx, provider.ChatRequest{User: "waits"})
	if !errors.Is(err, provider.ErrSlotWait) || !errors.Is(err, stopping) || errors.Is(err, provider.ErrCallAbandoned) {
		t.Fatalf("err = %v, want ErrSlotWait wrapping the stop's cause", err)
	}
	if want := "waiting for a free " + slot(2) + " slot: stop initiated"; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}
