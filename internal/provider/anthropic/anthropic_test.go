package anthropic_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/provider/anthropic"
	"github.com/docjobs/docjobs/internal/provider/providertest"
)

const key = "sk-ant-api03-test-0123456789KEY"

func open(t *testing.T, baseURL string, timeout time.Duration) provider.OCR {
	t.Helper()
	ocr, err := anthropic.New(anthropic.Config{BaseURL: baseURL, Model: "claude-sonnet-4-5", Key: key, Timeout: timeout})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return ocr
}

func message(text, stop string) string {
	return `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5",` +
		`"content":[{"type":"text","text":` + quote(text) + `}],` +
		`"stop_reason":"` + stop + `","stop_sequence":null,"usage":{"input_tokens":1200,"output_tokens":20}}`
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

func TestMessagesProtocol(t *testing.T) {
	providertest.Run(t, providertest.Vendor{
		Path:          "/v1/messages",
		Key:           key,
		New:           open,
		KeyFromHeader: func(h http.Header) string { return h.Get("X-Api-Key") },
		Success:       message("# Invoice 42\n\nTotal: 10 EUR", "end_turn"),
		Answer:        func(text string) string { return message(text, "end_turn") },
		SuccessText:   "# Invoice 42\n\nTotal: 10 EUR",
		Unauthorized: func(echo string) string {
			return `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + echo + `"}}`
		},
		Payload: func(t *testing.T, body []byte) string {
			s, _ := providertest.Field(t, body, "messages", 0, "content", 0, "source", "data").(string)
			return s
		},
		Doc:   providertest.TestImage(),
		Empty: `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1200,"output_tokens":0}}`,
	})
}

func TestRequestShape(t *testing.T) {
	pdf := []byte("%PDF-1.7\n" + strings.Repeat("stream of page content ", 20))
	cases := []struct {
		name string
		doc  provider.Document
		want map[string]any // path (dot-joined) → value
	}{
		{"an image goes as a base64 image block",
			providertest.TestImage(),
			map[string]any{"type": "image", "source.type": "base64", "source.media_type": "image/png"}},
		{"a PDF goes as a base64 document block",
			provider.Document{Data: pdf, MIME: "application/pdf", Format: "html"},
			map[string]any{"type": "document", "source.type": "base64", "source.media_type": "application/pdf",
				"source.data": base64.StdEncoding.EncodeToString(pdf)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, providertest.Reply(200, message("text", "end_turn")))
			if _, err := open(t, srv.URL, time.Second).Recognize(t.Context(), c.doc); err != nil {
				t.Fatalf("Recognize: %v", err)
			}
			r := srv.Requests()[0]
			for path, want := range c.want {
				p := []any{"messages", 0, "content", 0}
				for _, k := range strings.Split(path, ".") {
					p = append(p, k)
				}
				if got := providertest.Field(t, r.Body, p...); got != want {
					t.Errorf("%s = %v, want %v", path, got, want)
				}
			}
			if got := providertest.Field(t, r.Body, "messages", 0, "content", 1, "type"); got != "text" {
				t.Errorf("the instruction follows the document: content[1].type = %v", got)
			}
			if sys, _ := providertest.Field(t, r.Body, "system", 0, "text").(string); !strings.Contains(sys, "Transcribe") {
				t.Errorf("system prompt = %q, want the transcription rules", sys)
			}
			if got := providertest.Field(t, r.Body, "max_tokens"); got != float64(anthropic.DefaultMaxTokens) {
				t.Errorf("max_tokens = %v, want %d", got, anthropic.DefaultMaxTokens)
			}
			if r.Header.Get("Anthropic-Version") == "" {
				t.Error("no anthropic-version header")
			}
		})
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
		{"blank page answer becomes empty text", 200, message("[BLANK]", "end_turn"), "", ""},
		{"stop max_tokens is a truncated answer", 200, message("# half", "max_tokens"), "", provider.CategoryTruncated},
		{"stop refusal is a content filter", 200, message("", "refusal"), "", provider.CategoryContentFilter},
		{"529 overloaded is a server error", 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "", provider.CategoryServer},
		// A body over 32 MB (a large page image), not a prompt over the
		// context window.
		{"413 request too large is an invalid request", 413, `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`, "", provider.CategoryInvalidRequest},
		{"a prompt over the context window is context length", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}`, "", provider.CategoryContextLength},
		{"another invalid request stays one", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 10000 > 4096, which is the maximum allowed number of output tokens"}}`, "", provider.CategoryInvalidRequest},
		{"403 permission is auth", 403, `{"type":"error","error":{"type":"permission_error","message":"no"}}`, "", provider.CategoryAuth},
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
	srv := providertest.NewServer(t, providertest.Reply(200, message("x", "end_turn")))
	_, err := open(t, srv.URL, time.Second).Recognize(t.Context(), provider.Document{Data: []byte("II*\x00"), MIME: "image/tiff"})
	if !errors.Is(err, provider.ErrUnsupportedInput) || len(srv.Requests()) != 0 {
		t.Fatalf("err = %v, calls %d; want ErrUnsupportedInput and no call", err, len(srv.Requests()))
	}
}

func TestEnvironmentIsIgnored(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply(200, message("ok", "end_turn")))
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-the-server-environment")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Leak: yes")
	if _, err := open(t, srv.URL, time.Second).Recognize(t.Context(), providertest.TestImage()); err != nil {
		t.Fatalf("Recognize: %v (the environment's base URL was used?)", err)
	}
	h := srv.Requests()[0].Header
	if h.Get("X-Api-Key") != key || h.Get("X-Leak") != "" {
		t.Errorf("headers carry the server environment: x-api-key %q, X-Leak %q", h.Get("X-Api-Key"), h.Get("X-Leak"))
	}
}
