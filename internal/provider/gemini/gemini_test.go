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
		SuccessText:   "# Invoice 42\n\nTotal: 10 EUR",
		Unauthorized: func(echo string) string {
			return `{"error":{"code":401,"message":"Request had invalid authentication credentials ` + echo + `","status":"UNAUTHENTICATED"}}`
		},
		Payload: func(t *testing.T, body []byte) string {
			s, _ := providertest.Field(t, body, "contents", 0, "parts", 0, "inlineData", "data").(string)
			return s
		},
		Doc: providertest.TestImage(),
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
