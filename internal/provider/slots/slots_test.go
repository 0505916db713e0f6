package slots_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/provider/providertest"
	"github.com/docjobs/docjobs/internal/provider/slots"
	"github.com/docjobs/docjobs/internal/provider/tesseract"
)

const key = "slot-test-key-0123456789"

func slot(n int) string { return slots.SlotPrefix + strconv.Itoa(n) }

// Answers that each vendor protocol reads as the text "hello".
const (
	chatAnswer      = `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]}`
	messagesAnswer  = `{"id":"m","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hello"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`
	generateAnswer  = `{"candidates":[{"content":{"role":"model","parts":[{"text":"hello"}]},"finishReason":"STOP"}]}`
	mistralAnswer   = `{"model":"mistral-ocr-latest","pages":[{"index":0,"markdown":"hello"}]}`
	unauthorizedAny = `{"error":{"message":"nope","type":"authentication_error"}}`
)

// recorder counts ProviderCall reports.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) ProviderCall(p, outcome string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, p+" "+outcome)
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func TestTable(t *testing.T) {
	want := map[int]string{
		1: "https://api.mistral.ai",
		2: "https://api.openai.com/v1",
		3: "https://api.anthropic.com",
		4: "https://generativelanguage.googleapis.com",
		5: "https://api.x.ai/v1",
		6: "https://openrouter.ai/api/v1",
		7: "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
		8: "http://127.0.0.1:11434/v1",
	}
	s := slots.New(slots.Config{BaseURLs: map[int]string{6: "http://router.internal/api/v1/"}})
	for i, sl := range slots.Table() {
		if sl.N != i+1 || sl.Name != slot(i+1) || sl.DefaultBaseURL != want[sl.N] {
			t.Errorf("slot %d = %+v, want name %s and base %s", i+1, sl, slot(i+1), want[sl.N])
		}
	}
	if got := s.BaseURL(6); got != "http://router.internal/api/v1" {
		t.Errorf("overridden base URL = %q", got)
	}
	if got := s.BaseURL(2); got != want[2] {
		t.Errorf("default base URL = %q", got)
	}
}

// Each slot reaches its vendor's endpoint under the overridden base URL.
func TestSlotsSpeakTheirProtocols(t *testing.T) {
	cases := []struct {
		n      int
		model  string
		answer string
		path   string
		auth   string // header that must carry the key
	}{
		{1, "mistral-ocr-latest", mistralAnswer, "/v1/ocr", "Authorization"},
		{2, "gpt-4o", chatAnswer, "/v1/chat/completions", "Authorization"},
		{3, "claude-sonnet-4-5", messagesAnswer, "/v1/messages", "X-Api-Key"},
		{4, "gemini-2.5-flash", generateAnswer, "/v1beta/models/gemini-2.5-flash:generateContent", "X-Goog-Api-Key"},
		{5, "grok-4", chatAnswer, "/v1/chat/completions", "Authorization"},
		{6, "google/gemini-2.5-flash", chatAnswer, "/api/v1/chat/completions", "Authorization"},
		{7, "qwen-vl-max", chatAnswer, "/compatible-mode/v1/chat/completions", "Authorization"},
		{8, "qwen2.5vl", chatAnswer, "/v1/chat/completions", "Authorization"},
	}
	for _, c := range cases {
		t.Run(slot(c.n), func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, providertest.Reply(200, c.answer))
			base := srv.URL
			if i := strings.Index(c.path, "/chat/completions"); i >= 0 {
				base += c.path[:i] // OpenAI-protocol base URLs carry their version path
			}
			obs := &recorder{}
			s := slots.New(slots.Config{BaseURLs: map[int]string{c.n: base}, Observer: obs})
			ocr, err := s.OCR(slot(c.n), c.model, key)
			if err != nil {
				t.Fatalf("OCR: %v", err)
			}
			rec, err := ocr.Recognize(t.Context(), providertest.TestImage())
			if err != nil {
				t.Fatalf("Recognize: %v", err)
			}
			r := srv.Requests()[0]
			if r.Path != c.path || rec.Text != "hello" || rec.Model != c.model {
				t.Errorf("path %s text %q model %q; want %s, hello, %s", r.Path, rec.Text, rec.Model, c.path, c.model)
			}
			if !strings.Contains(r.Header.Get(c.auth), key) {
				t.Errorf("key not in %s", c.auth)
			}
			providertest.AssertRedacted(t, "Request", rec.Request, key)
			if got := obs.got(); len(got) != 1 || got[0] != slot(c.n)+" ok" {
				t.Errorf("observer saw %q", got)
			}
		})
	}
}

func TestOCRErrors(t *testing.T) {
	s := slots.New(slots.Config{})
	cases := []struct {
		name             string
		slot, model, key string
		want             error
		wantInMessage    string
	}{
		{"an unknown slot is named", "NEURAL_CLIENT_TYPE_PROVIDER_9", "m", key, slots.ErrUnknownSlot, "NEURAL_CLIENT_TYPE_PROVIDER_9"},
		{"a vendor alias is not a slot name", "NEURAL_CLIENT_TYPE_OPENAI", "m", key, slots.ErrUnknownSlot, "NEURAL_CLIENT_TYPE_OPENAI"},
		{"an empty slot", "", "m", key, slots.ErrUnknownSlot, `""`},
		{"a vendor slot needs a key", slot(2), "gpt-4o", "", slots.ErrMissingKey, slot(2)},
		{"a chat slot needs a model", slot(3), "", key, slots.ErrMissingModel, slot(3)},
		{"tesseract without the engine wired", slot(8), "tesseract", "", slots.ErrNoTesseract, "Tesseract"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.OCR(c.slot, c.model, c.key)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.wantInMessage) {
				t.Fatalf("err = %v, want %v naming %s", err, c.want, c.wantInMessage)
			}
			if strings.Contains(err.Error(), key) {
				t.Error("the error carries the key")
			}
		})
	}
	t.Run("Mistral defaults its model; self-hosted needs no key", func(t *testing.T) {
		if _, err := s.OCR(slot(1), "", key); err != nil {
			t.Errorf("slot 1 without a model: %v", err)
		}
		if _, err := s.OCR(slot(8), "llama3.2-vision", ""); err != nil {
			t.Errorf("slot 8 without a key: %v", err)
		}
	})
}

// TestEachSlotSaysWhichTypesItReads: recognition asks before it sends, and
// converts what a vendor would refuse. Only OpenAI among the servers of
// its protocol is trusted with WebP and GIF; Gemini reads no GIF; only the
// vendors that read documents take a PDF.
func TestEachSlotSaysWhichTypesItReads(t *testing.T) {
	s := slots.New(slots.Config{})
	all := []string{"image/png", "image/jpeg", "image/webp", "image/gif", "application/pdf"}
	tests := []struct {
		slot  int
		model string
		reads []string
	}{
		{1, "mistral-ocr-latest", []string{"image/png", "image/jpeg", "image/webp", "image/gif", "application/pdf"}},
		{2, "gpt-4o", []string{"image/png", "image/jpeg", "image/webp", "image/gif"}},
		{3, "claude-sonnet-4-5", []string{"image/png", "image/jpeg", "image/webp", "image/gif", "application/pdf"}},
		{4, "gemini-2.5-flash", []string{"image/png", "image/jpeg", "image/webp", "application/pdf"}},
		{5, "grok-4", []string{"image/png", "image/jpeg"}},
		{6, "openai/gpt-4o", []string{"image/png", "image/jpeg"}},
		{7, "qwen-vl-max", []string{"image/png", "image/jpeg"}},
		{8, "llama3.2-vision", []string{"image/png", "image/jpeg"}},
	}
	for _, tt := range tests {
		ocr, err := s.OCR(slot(tt.slot), tt.model, key)
		if err != nil {
			t.Fatalf("slot %d: %v", tt.slot, err)
		}
		for _, mime := range all {
			ok, known := provider.Accepts(t.Context(), ocr, mime)
			if want := slices.Contains(tt.reads, mime); ok != want || !known {
				t.Errorf("slot %d Accepts(%s) = %v, %v; want %v, known", tt.slot, mime, ok, known, want)
			}
		}
	}
}

type fakeTesseract struct{ langs string }

func (f fakeTesseract) Recognize(context.Context, provider.Document) (provider.Recognition, error) {
	return provider.Recognition{Text: "local " + f.langs, Format: "markdown", Model: "tesseract"}, nil
}

func TestTesseract(t *testing.T) {
	var asked []string
	s := slots.New(slots.Config{Tesseract: func(cfg tesseract.Config) (provider.OCR, error) {
		asked = append(asked, cfg.Langs)
		return fakeTesseract{cfg.Langs}, nil
	}})
	for model, langs := range map[string]string{"tesseract": "", "tesseract:eng+deu": "eng+deu"} {
		ocr, err := s.OCR(slot(8), model, "")
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		rec, err := ocr.Recognize(t.Context(), providertest.TestImage())
		if err != nil || rec.Text != "local "+langs {
			t.Errorf("%s: %q, %v", model, rec.Text, err)
		}
	}
	// Elsewhere "tesseract" is just a model name for the vendor.
	if _, err := s.OCR(slot(2), "tesseract", key); err != nil || len(asked) != 2 {
		t.Errorf("slot 2 with model tesseract: asked %q, err %v; only slot 8 opens the local engine", asked, err)
	}
}

func TestRetriesAreCounted(t *testing.T) {
	srv := providertest.NewServer(t,
		providertest.Reply(503, `{"error":{"message":"busy"}}`),
		providertest.Reply(429, `{"error":{"message":"slow"}}`, "Retry-After", "0.05"),
		providertest.Reply(200, chatAnswer))
	obs := &recorder{}
	s := slots.New(slots.Config{BaseURLs: map[int]string{2: srv.URL + "/v1"}, Observer: obs, RetryBaseDelay: time.Millisecond})
	ocr, _ := s.OCR(slot(2), "gpt-4o", key)
	if _, err := ocr.Recognize(t.Context(), providertest.TestImage()); err != nil {
		t.Fatalf("Recognize: %v", err)
	}
	want := []string{slot(2) + " server", slot(2) + " rate_limit", slot(2) + " ok"}
	if got := obs.got(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("observer saw %q, want %q", got, want)
	}
}

func TestAuthFailureIsNotRetried(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply(401, unauthorizedAny))
	s := slots.New(slots.Config{BaseURLs: map[int]string{5: srv.URL + "/v1"}, RetryBaseDelay: time.Millisecond})
	ocr, _ := s.OCR(slot(5), "grok-4", key)
	_, err := ocr.Recognize(t.Context(), providertest.TestImage())
	providertest.AssertCategory(t, err, provider.CategoryAuth, 401)
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("calls = %d, want 1", n)
	}
}

func TestPerSlotConcurrency(t *testing.T) {
	var inFlight, peak atomic.Int32
	release := make(chan struct{})
	slow := func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		providertest.Reply(200, chatAnswer)(w, r)
	}
	busy := providertest.NewServer(t, slow)
	other := providertest.NewServer(t, providertest.Reply(200, chatAnswer))
	s := slots.New(slots.Config{
		BaseURLs:           map[int]string{2: busy.URL + "/v1", 5: other.URL + "/v1"},
		PerSlotConcurrency: 2,
	})
	ocr, _ := s.OCR(slot(2), "gpt-4o", key)
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			if _, err := ocr.Recognize(t.Context(), providertest.TestImage()); err != nil {
				t.Errorf("Recognize: %v", err)
			}
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for inFlight.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	// Slot 2 is full; slot 5 is not held up by it.
	ocr5, _ := s.OCR(slot(5), "grok-4", key)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if _, err := ocr5.Recognize(ctx, providertest.TestImage()); err != nil {
		t.Errorf("another slot waited for slot 2: %v", err)
	}
	time.Sleep(50 * time.Millisecond) // let any excess call arrive, if the bound leaked
	close(release)
	wg.Wait()
	if p := peak.Load(); p != 2 {
		t.Errorf("peak calls in flight = %d, want 2", p)
	}
	if n := len(busy.Requests()); n != 5 {
		t.Errorf("calls = %d, want 5", n)
	}
}

func TestWaitingForASlotEndsWithTheContext(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	s := slots.New(slots.Config{BaseURLs: map[int]string{8: srv.URL + "/v1"}, PerSlotConcurrency: 1})
	ocr, _ := s.OCR(slot(8), "llava", "")
	go func() { _, _ = ocr.Recognize(t.Context(), providertest.TestImage()) }()
	for len(srv.Requests()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := ocr.Recognize(ctx, providertest.TestImage())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's deadline", err)
	}
}

func TestOutcome(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, "ok"},
		{&provider.Error{Category: provider.CategoryRateLimit}, "rate_limit"},
		{provider.ErrUnsupportedInput, "unsupported_input"},
		{context.Canceled, "canceled"},
		{errors.New("x"), "error"},
	} {
		if got := slots.Outcome(c.err); got != c.want {
			t.Errorf("Outcome(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// A vendor is called in bursts (every chunk of a file at once); the next
// burst reuses the connections of the last instead of paying a TCP and
// TLS handshake per call.
func TestBurstsOfCallsReuseConnections(t *testing.T) {
	const perSlot = 12
	var opened atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(30 * time.Millisecond) // the whole burst is in flight at once
		providertest.Reply(200, chatAnswer)(w, r)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	s := slots.New(slots.Config{BaseURLs: map[int]string{2: srv.URL + "/v1"}, PerSlotConcurrency: perSlot})
	chat, _ := s.Chat(slot(2), "gpt-4.1", key)
	for burst := range 3 {
		var wg sync.WaitGroup
		for range perSlot {
			wg.Go(func() {
				if _, err := chat.Complete(t.Context(), provider.ChatRequest{User: "u"}); err != nil {
					t.Errorf("burst %d: %v", burst, err)
				}
			})
		}
		wg.Wait()
	}
	if n := opened.Load(); n > perSlot {
		t.Errorf("three bursts of %d calls opened %d connections, want at most %d", perSlot, n, perSlot)
	}
}

// A job that ends (a cancel, a delete) cancels its calls' context, and its
// key is already erased: a call given a free place after that starts
// nothing, neither a request nor a count in the metrics.
func TestACallWhoseContextEndedStartsNothing(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply(200, chatAnswer))
	obs := &recorder{}
	s := slots.New(slots.Config{BaseURLs: map[int]string{2: srv.URL + "/v1"}, Observer: obs})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	chat, err := s.Chat(slot(2), "gpt-4.1", key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chat.Complete(ctx, provider.ChatRequest{User: "u"}); !errors.Is(err, context.Canceled) {
		t.Errorf("chat err = %v, want the context's", err)
	}
	ocr, err := s.OCR(slot(2), "gpt-4o", key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ocr.Recognize(ctx, providertest.TestImage()); !errors.Is(err, context.Canceled) {
		t.Errorf("ocr err = %v, want the context's", err)
	}
	if calls, reqs := obs.got(), srv.Requests(); len(calls) != 0 || len(reqs) != 0 {
		t.Errorf("calls %v, requests %d; want none", calls, len(reqs))
	}
	// The places were given back: a live call still goes out.
	if _, err := chat.Complete(t.Context(), provider.ChatRequest{User: "u"}); err != nil {
		t.Errorf("a later call: %v", err)
	}
}
