package openai_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/provider/openai"
	"github.com/docjobs/docjobs/internal/provider/providertest"
)

func openChat(t *testing.T, baseURL string, timeout time.Duration, legacy bool) provider.Chat {
	t.Helper()
	c, err := openai.NewChat(openai.ChatConfig{
		Config:          openai.Config{BaseURL: baseURL + "/v1", Model: "gpt-4.1", Key: key, Timeout: timeout},
		LegacyMaxTokens: legacy,
	})
	if err != nil {
		t.Fatalf("NewChat: %v", err)
	}
	return c
}

func chatCompletion(content, finish string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4.1",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":` + providertest.JSONString(content) + `,"refusal":null},"finish_reason":"` + finish + `"}],` +
		`"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`
}

func chatVendor(legacy bool) providertest.ChatVendor {
	return providertest.ChatVendor{
		Path: "/v1/chat/completions",
		Key:  key,
		New: func(t *testing.T, baseURL string, timeout time.Duration) provider.Chat {
			return openChat(t, baseURL, timeout, legacy)
		},
		KeyFromHeader: func(h http.Header) string { return strings.TrimPrefix(h.Get("Authorization"), "Bearer ") },
		Text:          func(c string) string { return chatCompletion(c, "stop") },
		Structured:    func(j string) string { return chatCompletion(j, "stop") },
		Truncated:     func(p string) string { return chatCompletion(`{"total":4, "note": "`+p, "length") },
		Unauthorized: func(echo string) string {
			return `{"error":{"message":"Incorrect API key provided: ` + echo + `","type":"invalid_request_error","code":"invalid_api_key"}}`
		},
		Empty: `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4.1",` +
			`"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null},"finish_reason":"stop"}],` +
			`"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`,
		Messages: func(t *testing.T, body []byte) (string, string) {
			sys, _ := providertest.Field(t, body, "messages", 0, "content").(string)
			user, _ := providertest.Field(t, body, "messages", 1, "content").(string)
			return sys, user
		},
		SchemaIn: func(t *testing.T, body []byte) any {
			if providertest.Field(t, body, "response_format") == nil {
				return nil
			}
			if got := providertest.Field(t, body, "response_format", "type"); got != "json_schema" {
				t.Errorf("response_format.type = %v, want json_schema", got)
			}
			if got := providertest.Field(t, body, "response_format", "json_schema", "strict"); got != true {
				t.Errorf("json_schema.strict = %v, want true for a strict-compatible schema", got)
			}
			if got := providertest.Field(t, body, "response_format", "json_schema", "name"); got != openai.SchemaName {
				t.Errorf("json_schema.name = %v", got)
			}
			return providertest.Field(t, body, "response_format", "json_schema", "schema")
		},
	}
}

func TestChatProtocol(t *testing.T) {
	providertest.RunChat(t, chatVendor(false))
}

func TestChatRequests(t *testing.T) {
	cases := []struct {
		name    string
		req     provider.ChatRequest
		legacy  bool
		answer  string
		check   func(t *testing.T, body []byte)
		content string
	}{
		{
			name:   "a schema strict mode cannot take goes in JSON mode, spelled out in the system message",
			req:    provider.ChatRequest{System: "Extract.", User: "u", Schema: `{"type":"object","properties":{"a":{"type":"string","minLength":2}}}`},
			answer: chatCompletion(`{"a":"xy"}`, "stop"),
			check: func(t *testing.T, body []byte) {
				if got := providertest.Field(t, body, "response_format", "type"); got != "json_object" {
					t.Errorf("response_format.type = %v, want json_object", got)
				}
				sys, _ := providertest.Field(t, body, "messages", 0, "content").(string)
				want := "Extract.\n\nThe JSON Schema the answer must conform to:\n" +
					`{"type":"object","properties":{"a":{"type":"string","minLength":2}}}`
				if sys != want {
					t.Errorf("system message = %q, want the prompt then the schema: %q", sys, want)
				}
			},
			content: `{"a":"xy"}`,
		},
		{
			name:   "an array schema is wrapped in an object and the answer unwrapped",
			req:    provider.ChatRequest{User: "u", Schema: `{"type":"array","items":{"type":"string"},"$defs":{}}`},
			answer: chatCompletion(`{"value": ["a", "b"]}`, "stop"),
			check: func(t *testing.T, body []byte) {
				providertest.AssertSameJSON(t, "wrapped schema", providertest.Field(t, body, "response_format", "json_schema", "schema"),
					`{"type":"object","properties":{"value":{"type":"array","items":{"type":"string"}}},"required":["value"],"additionalProperties":false,"$defs":{}}`)
				if got := providertest.Field(t, body, "messages", 0, "role"); got != "user" {
					t.Errorf("first message role = %v, want user (no empty system message)", got)
				}
			},
			content: `["a","b"]`,
		},
		{
			// JSON mode does not enforce the schema: the model answered the
			// caller's own, whose "value" is one field of three.
			name:   "properties without a root type are asked for as an object, and the answer is kept whole",
			req:    provider.ChatRequest{System: "Extract.", User: "u", Schema: `{"properties":{"value":{"type":"number"},"unit":{"type":"string"},"item":{"type":"string"}},"required":["value","unit","item"]}`},
			answer: chatCompletion(`{"value": 3, "unit": "kg", "item": "flour"}`, "stop"),
			check: func(t *testing.T, body []byte) {
				if got := providertest.Field(t, body, "response_format", "type"); got != "json_object" {
					t.Errorf("response_format.type = %v, want json_object", got)
				}
				sys, _ := providertest.Field(t, body, "messages", 0, "content").(string)
				if want := "\n" + `{"type":"object","properties":{"value":{"type":"number"},"unit":{"type":"string"},"item":{"type":"string"}},"required":["value","unit","item"]}`; !strings.HasSuffix(sys, want) {
					t.Errorf("system message = %q, want it to end with the schema as an object, not wrapped: %q", sys, want)
				}
			},
			content: `{"value": 3, "unit": "kg", "item": "flour"}`,
		},
		{
			name:    "a $ref root is wrapped, but an answer to the caller's own schema is kept whole",
			req:     provider.ChatRequest{User: "u", Schema: `{"$ref":"#/$defs/KV","$defs":{"KV":{"type":"object","properties":{"field":{"type":"string"},"value":{"type":"string"},"confidence":{"type":"number"}}}}}`},
			answer:  chatCompletion(`{"field":"total","value":"118.00","confidence":0.9}`, "stop"),
			check:   func(*testing.T, []byte) {},
			content: `{"field":"total","value":"118.00","confidence":0.9}`,
		},
		{
			// OpenAI refuses a $ref with keywords beside it ("$ref cannot
			// have keywords {'description'}"), a 400 on every row.
			name: "a described nested model stays strict, its $ref sent alone",
			req: provider.ChatRequest{User: "u", Schema: `{"type":"object","properties":{"buyer":{"$ref":"#/$defs/Party","description":"who buys"}},"required":["buyer"],"additionalProperties":false,` +
				`"$defs":{"Party":{"type":"object","properties":{"name":{"type":"string","description":"full name"}},"required":["name"],"additionalProperties":false}}}`},
			answer: chatCompletion(`{"buyer":{"name":"Ann"}}`, "stop"),
			check: func(t *testing.T, body []byte) {
				if got := providertest.Field(t, body, "response_format", "json_schema", "strict"); got != true {
					t.Errorf("strict = %v, want true", got)
				}
				providertest.AssertSameJSON(t, "schema", providertest.Field(t, body, "response_format", "json_schema", "schema"),
					`{"type":"object","properties":{"buyer":{"$ref":"#/$defs/Party"}},"required":["buyer"],"additionalProperties":false,`+
						`"$defs":{"Party":{"type":"object","properties":{"name":{"type":"string","description":"full name"}},"required":["name"],"additionalProperties":false}}}`)
			},
			content: `{"buyer":{"name":"Ann"}}`,
		},
		{
			// Wrapped in place, "#" would name the wrapper and strict
			// decoding would force {"value":…} into every level.
			name:   "a recursive array schema is wrapped with its root in $defs",
			req:    provider.ChatRequest{User: "u", Schema: `{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"children":{"$ref":"#"}},"required":["name","children"],"additionalProperties":false}}`},
			answer: chatCompletion(`{"value":[{"name":"a","children":[]}]}`, "stop"),
			check: func(t *testing.T, body []byte) {
				if got := providertest.Field(t, body, "response_format", "json_schema", "strict"); got != true {
					t.Errorf("strict = %v, want true", got)
				}
				providertest.AssertSameJSON(t, "schema", providertest.Field(t, body, "response_format", "json_schema", "schema"),
					`{"type":"object","properties":{"value":{"$ref":"#/$defs/root"}},"required":["value"],"additionalProperties":false,`+
						`"$defs":{"root":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"children":{"$ref":"#/$defs/root"}},"required":["name","children"],"additionalProperties":false}}}}`)
			},
			content: `[{"name":"a","children":[]}]`,
		},
		{
			name:   "OpenAI gets max_completion_tokens",
			req:    provider.ChatRequest{User: "u", MaxTokens: 300},
			answer: chatCompletion("ok", "stop"),
			check: func(t *testing.T, body []byte) {
				if got := providertest.Field(t, body, "max_completion_tokens"); got != float64(300) {
					t.Errorf("max_completion_tokens = %v", got)
				}
				if got := providertest.Field(t, body, "max_tokens"); got != nil {
					t.Errorf("max_tokens = %v, want absent", got)
				}
			},
			content: "ok",
		},
		{
			name:   "older servers get max_tokens",
			req:    provider.ChatRequest{User: "u", MaxTokens: 300},
			legacy: true,
			answer: chatCompletion("ok", "stop"),
			check: func(t *testing.T, body []byte) {
				if got := providertest.Field(t, body, "max_tokens"); got != float64(300) {
					t.Errorf("max_tokens = %v", got)
				}
			},
			content: "ok",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, providertest.Reply(200, c.answer))
			ans, err := openChat(t, srv.URL, time.Second, c.legacy).Complete(t.Context(), c.req)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			c.check(t, srv.Requests()[0].Body)
			if ans.Content != c.content {
				t.Errorf("content = %q, want %q", ans.Content, c.content)
			}
		})
	}
}

func TestChatRefusalIsAContentFilter(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply(200,
		`{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"no"},"finish_reason":"stop"}]}`))
	ans, err := openChat(t, srv.URL, time.Second, false).Complete(t.Context(), provider.ChatRequest{User: "u"})
	providertest.AssertCategory(t, err, provider.CategoryContentFilter, 200)
	// The refusal is the vendor's answer, not an error body: the row keeps it.
	if !strings.Contains(ans.Request, `"u"`) || !strings.Contains(ans.RawData, `"refusal":"no"`) {
		t.Errorf("Request %q, RawData %q; want the exchange", ans.Request, ans.RawData)
	}
}
