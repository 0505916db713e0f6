package openai_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/provider/openai"
	"github.com/docjobs/docjobs/internal/provider/providertest"
)

const key = "sk-test-0123456789abcdefKEY"

func open(t *testing.T, baseURL string, timeout time.Duration) provider.OCR {
	t.Helper()
	ocr, err := openai.New(openai.Config{BaseURL: baseURL + "/v1", Model: "gpt-4o", Key: key, Timeout: timeout})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return ocr
}

func completion(content, finish string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4o",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":` + quote(content) + `,"refusal":null},"finish_reason":"` + finish + `"}],` +
		`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

func TestOpenAIProtocol(t *testing.T) {
	providertest.Run(t, providertest.Vendor{
		Path: "/v1/chat/completions",
		Key:  key,
		New:  open,
		KeyFromHeader: func(h http.Header) string {
			return strings.TrimPrefix(h.Get("Authorization"), "Bearer ")
		},
		Success:     completion("# Invoice 42\n\nTotal: 10 EUR", "stop"),
		Answer:      func(text string) string { return completion(text, "stop") },
		SuccessText: "# Invoice 42\n\nTotal: 10 EUR",
		Unauthorized: func(echo string) string {
			return `{"error":{"message":"Incorrect API key provided: ` + echo + `","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`
		},
		Payload: func(t *testing.T, body []byte) string {
			url, _ := providertest.Field(t, body, "messages", 1, "content", 1, "image_url", "url").(string)
			return strings.TrimPrefix(url, "data:image/png;base64,")
		},
		Doc: providertest.TestImage(),
		Empty: `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4o",` +
			`"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":0}}`,
	})
}

func TestRequestShape(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply(200, completion("<h1>Title</h1>", "stop")))
	doc := providertest.TestImage()
	doc.Format, doc.Page = "html", 2
	rec, err := open(t, srv.URL, time.Second).Recognize(t.Context(), doc)
	if err != nil {
		t.Fatalf("Recognize: %v", err)
	}
	body := srv.Requests()[0].Body
	checks := []struct {
		name string
		path []any
		want string
	}{
		{"model", []any{"model"}, "gpt-4o"},
		{"system message first", []any{"messages", 0, "role"}, "system"},
		{"user message with the page", []any{"messages", 1, "role"}, "user"},
		{"text part", []any{"messages", 1, "content", 0, "type"}, "text"},
		{"image part", []any{"messages", 1, "content", 1, "type"}, "image_url"},
		{"full detail", []any{"messages", 1, "content", 1, "image_url", "detail"}, "high"},
	}
	for _, c := range checks {
		if got := providertest.Field(t, body, c.path...); got != c.want {
			t.Errorf("%s: %v = %v, want %q", c.name, c.path, got, c.want)
		}
	}
	if sys, _ := providertest.Field(t, body, "messages", 0, "content").(string); !strings.Contains(sys, "HTML") {
		t.Errorf("an html page's system prompt does not ask for HTML: %q", sys)
	}
	if rec.Format != "html" || rec.Text != "<h1>Title</h1>" || rec.Model != "gpt-4o" {
		t.Errorf("recognition = %+v", rec)
	}
	if got := providertest.Field(t, body, "stream"); got != nil {
		t.Errorf("stream = %v, want it absent", got)
	}
}

func TestAnswers(t *testing.T) {
	cases := []struct {
		name     string
		body     string
		wantText string
		wantCat  provider.Category
	}{
		{"blank page answer becomes empty text", completion("[BLANK]", "stop"), "", ""},
		{"code fence around the answer is removed", completion("```markdown\n# A\n```", "stop"), "# A", ""},
		{"finish length is a truncated answer", completion("# half a pa", "length"), "", provider.CategoryTruncated},
		{"finish content_filter is a content filter", completion("", "content_filter"), "", provider.CategoryContentFilter},
		{"a refusal is a content filter",
			`{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help"},"finish_reason":"stop"}]}`,
			"", provider.CategoryContentFilter},
		{"no choices is a server error", `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[]}`, "", provider.CategoryServer},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, providertest.Reply(200, c.body))
			rec, err := open(t, srv.URL, time.Second).Recognize(t.Context(), providertest.TestImage())
			if c.wantCat != "" {
				providertest.AssertCategory(t, err, c.wantCat, 200)
				return
			}
			if err != nil || rec.Text != c.wantText {
				t.Fatalf("text %q, err %v; want %q", rec.Text, err, c.wantText)
			}
		})
	}
}

func TestErrorCodes(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		want   provider.Category
	}{
		{"context_length_exceeded", 400, `{"error":{"message":"too long","type":"invalid_request_error","code":"context_length_exceeded","param":"messages"}}`, provider.CategoryContextLength},
		{"content_policy_violation", 400, `{"error":{"message":"no","type":"invalid_request_error","code":"content_policy_violation","param":null}}`, provider.CategoryContentFilter},
		{"model not found", 404, `{"error":{"message":"The model does not exist","type":"invalid_request_error","code":"model_not_found","param":null}}`, provider.CategoryNotFound},
		{"plain-text 502 from a proxy", 502, `<html>Bad Gateway</html>`, provider.CategoryServer},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, providertest.Reply(c.status, c.body))
			_, err := open(t, srv.URL, time.Second).Recognize(t.Context(), providertest.TestImage())
			providertest.AssertCategory(t, err, c.want, c.status)
		})
	}
}

// OpenAI answers a spent quota or credit with a 429 like a rate limit;
// its code (or, from older accounts, its type alone) says insufficient_quota,
// which waiting does not restore.
func TestASpentQuotaIsNotRetried(t *testing.T) {
	cases := []struct {
		name, body string
	}{
		{"in code and type", `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`},
		{"in type alone", `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":null}}`},
	}
	fast := provider.RetryPolicy{MaxAttempts: 4, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, providertest.Reply(429, c.body), providertest.Reply(200, completion("ok", "stop")))
			_, err := provider.WithRetry(open(t, srv.URL, time.Second), fast).Recognize(t.Context(), providertest.TestImage())
			pe := providertest.AssertCategory(t, err, provider.CategoryRateLimit, 429)
			if pe.Retryable() || err.Error() != "provider error (category=rate_limit, status=429): quota exhausted" {
				t.Errorf("error %q, retryable %t: want a quota that is not retried", err, pe.Retryable())
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("calls = %d, want 1", n)
			}
		})
	}

	t.Run("a rate limit is still retried", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewServer(t,
			providertest.Reply(429, `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, "Retry-After-Ms", "5"),
			providertest.Reply(200, completion("ok", "stop")))
		if _, err := provider.WithRetry(open(t, srv.URL, time.Second), fast).Recognize(t.Context(), providertest.TestImage()); err != nil {
			t.Fatalf("Recognize: %v", err)
		}
		if n := len(srv.Requests()); n != 2 {
			t.Errorf("calls = %d, want 2", n)
		}
	})
}

func TestPDFIsUnsupported(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply(200, completion("x", "stop")))
	_, err := open(t, srv.URL, time.Second).Recognize(t.Context(), provider.Document{Data: []byte("%PDF-1.7"), MIME: "application/pdf"})
	if !errors.Is(err, provider.ErrUnsupportedInput) {
		t.Fatalf("err = %v, want ErrUnsupportedInput", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("calls = %d, want none", n)
	}
}

func TestNoKeyNoAuthHeader(t *testing.T) {
	// Self-hosted servers (Ollama) want no key; none is invented.
	srv := providertest.NewServer(t, providertest.Reply(200, completion("ok", "stop")))
	ocr, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "llama3.2-vision"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ocr.Recognize(t.Context(), providertest.TestImage()); err != nil {
		t.Fatal(err)
	}
	if h := srv.Requests()[0].Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization = %q, want none", h)
	}
}

func TestEnvironmentIsIgnored(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply(200, completion("ok", "stop")))
	t.Setenv("OPENAI_API_KEY", "sk-from-the-server-environment")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_ORG_ID", "org-server")
	if _, err := open(t, srv.URL, time.Second).Recognize(t.Context(), providertest.TestImage()); err != nil {
		t.Fatalf("Recognize: %v (the environment's base URL was used?)", err)
	}
	h := srv.Requests()[0].Header
	if h.Get("Authorization") != "Bearer "+key || h.Get("OpenAI-Organization") != "" {
		t.Errorf("headers carry the server environment: Authorization %q, OpenAI-Organization %q",
			h.Get("Authorization"), h.Get("OpenAI-Organization"))
	}
}

// TestAKeyWithWhiteSpaceAroundItIsRedactedAsSent: the API takes a key
// with a space or tab around it, net/http sends it trimmed, and a vendor
// echoing the key it was sent echoes the trimmed form. Neither the text,
// which is stored and passed on to the model vendor, nor the debug
// fields keep it, whether the adapter redacts its own key or the worker's
// wrapper redacts the job's secrets.
func TestAKeyWithWhiteSpaceAroundItIsRedactedAsSent(t *testing.T) {
	const sent = "sk-test-0123456789abcdefSPACED"
	for _, stored := range []string{sent + " ", " " + sent, "\t" + sent + " "} {
		echo := func(w http.ResponseWriter, r *http.Request) {
			got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer")
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(completion("Invoice. The key was "+strings.TrimSpace(got)+".", "stop")))
		}
		srv := providertest.NewServer(t, echo, echo)
		ocr, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "gpt-4o", Key: stored})
		if err != nil {
			t.Fatal(err)
		}
		for name, o := range map[string]provider.OCR{"adapter": ocr,
			"wrapped": provider.RedactOCR(ocr, provider.NewSecrets(stored, "whsec-other-secret-of-the-job"))} {
			rec, err := o.Recognize(t.Context(), providertest.TestImage())
			if err != nil {
				t.Fatalf("%q, %s: Recognize: %v", stored, name, err)
			}
			providertest.AssertRedacted(t, name+" RawData", rec.RawData, sent)
			providertest.AssertRedacted(t, name+" Request", rec.Request, sent)
			if name == "wrapped" && (strings.Contains(rec.Text, sent) || !strings.Contains(rec.Text, "[key elided]")) {
				t.Errorf("%q: text = %q, want the key elided", stored, rec.Text)
			}
		}
	}
}
