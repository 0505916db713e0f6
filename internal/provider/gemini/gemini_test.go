package gemini_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/provider/gemini"
	"github.com/docjobs/docjobs/internal/provider/providertest"
)

const key = "AIzaSy-test-0123456789abcdefKEY"

func open(t *testing.T, baseURL string, timeout time.Duration) provider.OCR {
	t.Helper()
	ocr, err := gemini.New(gemini.Config{BaseURL: baseURL, Model: "gemini-2.5-flash", Key: key, Timeout: timeout})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return ocr
}

func generated(text, finish string) string {
	return `{"candidates":[{"content":{"role":"model","parts":[{"text":` + quote(text) + `}]},"finishReason":"` + finish + `","index":0}],` +
		`"usageMetadata":{"promptTokenCount":300,"candidatesTokenCount":10,"totalTokenCount":310},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

func TestGenerateContentProtocol(t *testing.T) {
	providertest.Run(t, providertest.Vendor{
		Path:          "/v1beta/models/gemini-2.5-flash:generateContent",
		Key:           key,
		New:           open,
		KeyFromHeader: func(h http.Header) string { return h.Get("X-Goog-Api-Key") },
		Success:       generated("# Invoice 42\n\nTotal: 10 EUR", "STOP"),
		Answer:        func(text string) string { return generated(text, "STOP") },
		SuccessText:   "# Invoice 42\n\nTotal: 10 EUR",
		Unauthorized: func(echo string) string {
			return `{"error":{"code":401,"message":"Request had invalid authentication credentials ` + echo + `","status":"UNAUTHENTICATED"}}`
		},
		Payload: func(t *testing.T, body []byte) string {
			s, _ := providertest.Field(t, body, "contents", 0, "parts", 0, "inlineData", "data").(string)
			return s
		},
		Doc: providertest.TestImage(),
		// Gemini 2.5 now and then ends a candidate with STOP and no parts.
		Empty: `{"candidates":[{"content":{"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":1300,"totalTokenCount":1300}}`,
	})
}

func TestRequestShape(t *testing.T) {
	pdf := []byte("%PDF-1.7\n" + strings.Repeat("stream of page content ", 20))
	srv := providertest.NewServer(t, providertest.Reply(200, generated("<p>x</p>", "STOP")))
	rec, err := open(t, srv.URL, time.Second).Recognize(t.Context(), provider.Document{Data: pdf, MIME: "application/pdf", Format: "html"})
	if err != nil {
		t.Fatalf("Recognize: %v", err)
	}
	body := srv.Requests()[0].Body
	checks := []struct {
		path []any
		want any
	}{
		{[]any{"contents", 0, "role"}, "user"},
		{[]any{"contents", 0, "parts", 0, "inlineData", "mimeType"}, "application/pdf"},
		{[]any{"contents", 0, "parts", 0, "inlineData", "data"}, base64.StdEncoding.EncodeToString(pdf)},
		{[]any{"generationConfig", "temperature"}, float64(0)},
	}
	for _, c := range checks {
		if got := providertest.Field(t, body, c.path...); got != c.want {
			t.Errorf("%v = %.60v, want %.60v", c.path, got, c.want)
		}
	}
	if sys, _ := providertest.Field(t, body, "systemInstruction", "parts", 0, "text").(string); !strings.Contains(sys, "HTML") {
		t.Errorf("systemInstruction = %q, want the HTML transcription rules", sys)
	}
	if _, ok := providertest.Field(t, body, "contents", 0, "parts", 1, "text").(string); !ok {
		t.Error("no instruction part after the document")
	}
	if rec.Format != "html" || rec.Text != "<p>x</p>" {
		t.Errorf("recognition = %+v", rec)
	}
}

func TestAnswers(t *testing.T) {
	cases := []struct {
		name     string
		status   int
		body     string
		wantText string
		wantCat  provider.Category
	}{
		{"blank page answer becomes empty text", 200, generated("[BLANK]", "STOP"), "", ""},
		{"thought parts are not transcription", 200,
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me read it","thought":true},{"text":"Total: 10"}]},"finishReason":"STOP"}]}`,
			"Total: 10", ""},
		{"MAX_TOKENS is a truncated answer", 200, generated("# half", "MAX_TOKENS"), "", provider.CategoryTruncated},
		{"SAFETY is a content filter", 200, generated("", "SAFETY"), "", provider.CategoryContentFilter},
		{"a blocked prompt is a content filter", 200, `{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"}}`, "", provider.CategoryContentFilter},
		{"400 API_KEY_INVALID is an auth error", 400,
			`{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`,
			"", provider.CategoryAuth},
		{"400 INVALID_ARGUMENT is an invalid request", 400, `{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}`, "", provider.CategoryInvalidRequest},
		{"503 UNAVAILABLE is a server error", 503, `{"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}`, "", provider.CategoryServer},
		{"OTHER without content is no answer", 200, `{"candidates":[{"finishReason":"OTHER","index":0}],"usageMetadata":{"promptTokenCount":300}}`, "", provider.CategoryServer},
		{"OTHER with some text is no answer either", 200, generated("Total:", "OTHER"), "", provider.CategoryServer},
		{"an unspecified finish reason is no answer", 200, generated("Total: 10", "FINISH_REASON_UNSPECIFIED"), "", provider.CategoryServer},
		{"LANGUAGE is the model declining the input", 200, `{"candidates":[{"finishReason":"LANGUAGE","index":0}]}`, "", provider.CategoryContentFilter},
		{"a prompt over the context window is context length", 400,
			`{"error":{"code":400,"message":"The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}`,
			"", provider.CategoryContextLength},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, providertest.Reply(c.status, c.body))
			rec, err := open(t, srv.URL, time.Second).Recognize(t.Context(), providertest.TestImage())
			if c.wantCat != "" {
				providertest.AssertCategory(t, err, c.wantCat, c.status)
				return
			}
			if err != nil || rec.Text != c.wantText {
				t.Fatalf("text %q, err %v; want %q", rec.Text, err, c.wantText)
			}
		})
	}
}

func TestUnsupportedInput(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply(200, generated("x", "STOP")))
	_, err := open(t, srv.URL, time.Second).Recognize(t.Context(), provider.Document{Data: []byte("BM"), MIME: "image/bmp"})
	if !errors.Is(err, provider.ErrUnsupportedInput) || len(srv.Requests()) != 0 {
		t.Fatalf("err = %v, calls %d; want ErrUnsupportedInput and no call", err, len(srv.Requests()))
	}
}

func TestEnvironmentIsIgnored(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply(200, generated("ok", "STOP")))
	t.Setenv("GOOGLE_API_KEY", "AIza-from-the-server-environment")
	t.Setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
	if _, err := open(t, srv.URL, time.Second).Recognize(t.Context(), providertest.TestImage()); err != nil {
		t.Fatalf("Recognize: %v (the environment was used?)", err)
	}
	if got := srv.Requests()[0].Header.Get("X-Goog-Api-Key"); got != key {
		t.Errorf("x-goog-api-key = %q, want the caller's key", got)
	}
}

func TestNewNeedsAKey(t *testing.T) {
	t.Setenv("GEMINI_API_KEY", "AIza-from-the-server-environment")
	if _, err := gemini.New(gemini.Config{BaseURL: "http://127.0.0.1:1", Model: "m"}); err == nil {
		t.Fatal("New without a key succeeded: the environment's key would be used")
	}
}

// quota429 is the Gemini API's 429 for a spent quota: which one in a
// QuotaFailure, how long to wait in a RetryInfo.
func quota429(quotaID, value, delay string) string {
	return `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[` +
		`{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]},` +
		`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"` + quotaID + `","quotaDimensions":{"location":"global","model":"gemini-2.5-flash"},"quotaValue":"` + value + `"}]},` +
		`{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"` + delay + `"}]}}`
}

func TestQuotas(t *testing.T) {
	fast := provider.RetryPolicy{MaxAttempts: 4, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond, MaxRetryAfter: 10 * time.Millisecond}
	cases := []struct {
		name          string
		body          string
		wantPermanent bool
		wantCalls     int
	}{
		{"a per-day quota fails at once", quota429("GenerateRequestsPerDayPerProjectPerModel-FreeTier", "20", "51s"), true, 1},
		{"a quota of zero fails at once", quota429("GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "0", "20s"), true, 1},
		// Within MaxRetryAfter: a longer RetryInfo ends the retries for the
		// caller to wait it out (provider.Retry), as a Retry-After does.
		{"a per-minute quota is waited out", quota429("GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "10", "0.005s"), false, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, providertest.Reply(429, c.body), providertest.Reply(200, generated("ok", "STOP")))
			_, err := provider.WithRetry(open(t, srv.URL, time.Second), fast).Recognize(t.Context(), providertest.TestImage())
			if n := len(srv.Requests()); n != c.wantCalls {
				t.Errorf("calls = %d, want %d", n, c.wantCalls)
			}
			if !c.wantPermanent {
				if err != nil {
					t.Errorf("Recognize: %v, want the retry's answer", err)
				}
				return
			}
			pe := providertest.AssertCategory(t, err, provider.CategoryRateLimit, 429)
			if pe.Retryable() || err.Error() != "provider error (category=rate_limit, status=429): quota exhausted" {
				t.Errorf("error %q, retryable %t: want a quota that is not retried", err, pe.Retryable())
			}
		})
	}
}

// Gemini says how long to wait in the body (RetryInfo), not in a
// Retry-After header.
func TestRetryInfoIsTheRetryAfter(t *testing.T) {
	cases := []struct {
		name   string
		header []string
		want   time.Duration
	}{
		{"RetryInfo alone", nil, 37 * time.Second},
		{"a Retry-After header wins", []string{"Retry-After", "5"}, 5 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := providertest.NewServer(t, providertest.Reply(429, quota429("GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "10", "37s"), c.header...))
			_, err := open(t, srv.URL, time.Second).Recognize(t.Context(), providertest.TestImage())
			pe := providertest.AssertCategory(t, err, provider.CategoryRateLimit, 429)
			if pe.RetryAfter != c.want || !pe.Retryable() {
				t.Errorf("RetryAfter = %v, retryable %t; want %v and retried", pe.RetryAfter, pe.Retryable(), c.want)
			}
		})
	}
}

// Google's Gemini 3 guide: keep the temperature at its default of 1.0;
// lower values may loop. Older models keep 0, for the most literal
// reading.
func TestTemperature(t *testing.T) {
	cases := []struct {
		model string
		want  any // nil: not sent
	}{
		{"gemini-2.5-flash", float64(0)},
		{"models/gemini-2.0-flash", float64(0)},
		{"gemini-1.5-pro", float64(0)},
		{"gemma-3-27b-it", float64(0)},
		{"gemini-3-pro-preview", nil},
		{"models/gemini-3.1-flash", nil},
		{"gemini-flash-latest", nil},
	}
	for _, c := range cases {
		t.Run(c.model, func(t *testing.T) {
			srv := providertest.NewServer(t, providertest.Reply(200, generated("ok", "STOP")))
			cfg := gemini.Config{BaseURL: srv.URL, Model: c.model, Key: key, Timeout: time.Second}
			ocr, err := gemini.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			chat, err := gemini.NewChat(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ocr.Recognize(t.Context(), providertest.TestImage()); err != nil {
				t.Fatalf("Recognize: %v", err)
			}
			if _, err := chat.Complete(t.Context(), provider.ChatRequest{User: "u"}); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			for i, r := range srv.Requests() {
				if got := providertest.Field(t, r.Body, "generationConfig", "temperature"); got != c.want {
					t.Errorf("request %d: temperature = %v, want %v", i, got, c.want)
				}
			}
		})
	}
}
