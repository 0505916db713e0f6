package gemini_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/provider/gemini"
	"github.com/docjobs/docjobs/internal/provider/providertest"
)

func openChat(t *testing.T, baseURL string, timeout time.Duration) provider.Chat {
	t.Helper()
	c, err := gemini.NewChat(gemini.Config{BaseURL: baseURL, Model: "gemini-2.5-flash", Key: key, Timeout: timeout})
	if err != nil {
		t.Fatalf("NewChat: %v", err)
	}
	return c
}

// answer is a generateContent answer; usage splits the 7 output tokens
// into 5 of answer and 2 of thinking, both billed as output.
func answer(text, finish string) string {
	return `{"candidates":[{"content":{"role":"model","parts":[{"text":"weighing the totals","thought":true},{"text":` + providertest.JSONString(text) + `}]},"finishReason":"` + finish + `","index":0}],` +
		`"usageMetadata":{"promptTokenCount":11,"candidatesTokenCount":5,"thoughtsTokenCount":2,"totalTokenCount":18},"modelVersion":"gemini-2.5-flash"}`
}

func TestChatProtocol(t *testing.T) {
	providertest.RunChat(t, providertest.ChatVendor{
		Path:          "/v1beta/models/gemini-2.5-flash:generateContent",
		Key:           key,
		New:           openChat,
		KeyFromHeader: func(h http.Header) string { return h.Get("X-Goog-Api-Key") },
		Text:          func(c string) string { return answer(c, "STOP") },
		Structured:    func(j string) string { return answer(j, "STOP") },
		Truncated:     func(p string) string { return answer(`{"total":4, "note": "`+p, "MAX_TOKENS") },
		Unauthorized: func(echo string) string {
			return `{"error":{"code":401,"message":"Request had invalid authentication credentials ` + echo + `","status":"UNAUTHENTICATED"}}`
		},
		Messages: func(t *testing.T, body []byte) (string, string) {
			sys, _ := providertest.Field(t, body, "systemInstruction", "parts", 0, "text").(string)
			user, _ := providertest.Field(t, body, "contents", 0, "parts", 0, "text").(string)
			return sys, user
		},
		Empty: `{"candidates":[{"content":{"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":11,"candidatesTokenCount":5,"thoughtsTokenCount":2}}`,
		SchemaIn: func(t *testing.T, body []byte) any {
			s := providertest.Field(t, body, "generationConfig", "responseJsonSchema")
			if s == nil {
				return nil
			}
			if got := providertest.Field(t, body, "generationConfig", "responseMimeType"); got != "application/json" {
				t.Errorf("responseMimeType = %v, want application/json", got)
			}
			if got := providertest.Field(t, body, "generationConfig", "responseSchema"); got != nil {
				t.Errorf("responseSchema = %v, want only responseJsonSchema", got)
			}
			return s
		},
	})
}

func TestChatSchemaIsNotWrapped(t *testing.T) {
	// Gemini takes any root type: an array schema goes as it is.
	const schema = `{"type":"array","items":{"type":"integer"},"minItems":1}`
	srv := providertest.NewServer(t, providertest.Reply(200, answer("[1,2]", "STOP")))
	ans, err := openChat(t, srv.URL, time.Second).Complete(t.Context(), provider.ChatRequest{User: "u", Schema: schema, MaxTokens: 99})
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	body := srv.Requests()[0].Body
	providertest.AssertSameJSON(t, "responseJsonSchema", providertest.Field(t, body, "generationConfig", "responseJsonSchema"), schema)
	if got := providertest.Field(t, body, "generationConfig", "maxOutputTokens"); got != float64(99) {
		t.Errorf("maxOutputTokens = %v", got)
	}
	if ans.Content != "[1,2]" {
		t.Errorf("content = %q", ans.Content)
	}
}

func TestChatSafetyStopIsAContentFilter(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply(200, answer("", "SAFETY")))
	_, err := openChat(t, srv.URL, time.Second).Complete(t.Context(), provider.ChatRequest{User: "u"})
	providertest.AssertCategory(t, err, provider.CategoryContentFilter, 200)
}
