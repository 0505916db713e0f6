package mistral_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/provider/mistral"
	"github.com/docjobs/docjobs/internal/provider/providertest"
)

func openChat(t *testing.T, baseURL string, timeout time.Duration) provider.Chat {
	t.Helper()
	c, err := mistral.NewChat(mistral.Config{BaseURL: baseURL, Model: "mistral-small-latest", Key: key, Timeout: timeout})
	if err != nil {
		t.Fatalf("NewChat: %v", err)
	}
	return c
}

func completion(content, finish string) string {
	return `{"id":"cmpl-1","object":"chat.completion","created":1700000000,"model":"mistral-small-latest",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":` + content + `,"tool_calls":null},"finish_reason":"` + finish + `"}],` +
		`"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`
}

func TestChatProtocol(t *testing.T) {
	providertest.RunChat(t, providertest.ChatVendor{
		Path:          "/v1/chat/completions",
		Key:           key,
		New:           openChat,
		KeyFromHeader: func(h http.Header) string { return strings.TrimPrefix(h.Get("Authorization"), "Bearer ") },
		Text:          func(c string) string { return completion(providertest.JSONString(c), "stop") },
		TextWithUsage: func(c, in, out string) string {
			return strings.Replace(completion(providertest.JSONString(c), "stop"), `"prompt_tokens":11,"completion_tokens":7`, `"prompt_tokens":`+in+`,"completion_tokens":`+out, 1)
		},
		Structured: func(j string) string { return completion(providertest.JSONString(j), "stop") },
		Truncated:  func(p string) string { return completion(providertest.JSONString(`{"total":4, "note": "`+p), "length") },
		Unauthorized: func(echo string) string {
			return `{"message":"Unauthorized ` + echo + `","request_id":"r1"}`
		},
		Empty: completion(`null`, "stop"),
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
				t.Errorf("json_schema.strict = %v, want true", got)
			}
			if got := providertest.Field(t, body, "response_format", "json_schema", "name"); got != mistral.SchemaName {
				t.Errorf("json_schema.name = %v", got)
			}
			return providertest.Field(t, body, "response_format", "json_schema", "schema")
		},
	})
}

func TestChatRequests(t *testing.T) {
	cases := []struct {
		name    string
		req     provider.ChatRequest
		answer  string
		check   func(t *testing.T, body []byte)
		content string
	}{
		{
			name:   "a schema strict mode cannot take is sent with strict false",
			req:    provider.ChatRequest{User: "u", Schema: `{"type":"object","properties":{"a":{"type":"string"}}}`},
			answer: completion(`"{\"a\":\"x\"}"`, "stop"),
			check: func(t *testing.T, body []byte) {
				if got := providertest.Field(t, body, "response_format", "json_schema", "strict"); got != false {
					t.Errorf("strict = %v, want false", got)
				}
				providertest.AssertSameJSON(t, "schema", providertest.Field(t, body, "response_format", "json_schema", "schema"),
					`{"type":"object","properties":{"a":{"type":"string"}}}`)
			},
			content: `{"a":"x"}`,
		},
		{
			// strict false does not enforce the schema: the model answered
			// the caller's own, whose "value" is one field of three.
			name:   "properties without a root type are asked for as an object, and the answer is kept whole",
			req:    provider.ChatRequest{User: "u", Schema: `{"properties":{"value":{"type":"number"},"unit":{"type":"string"},"item":{"type":"string"}},"required":["value","unit","item"]}`},
			answer: completion(providertest.JSONString(`{"value": 3, "unit": "kg", "item": "flour"}`), "stop"),
			check: func(t *testing.T, body []byte) {
				providertest.AssertSameJSON(t, "schema", providertest.Field(t, body, "response_format", "json_schema", "schema"), `{"type":"object","properties":{"value":{"type":"number"},"unit":{"type":"string"},"item":{"type":"string"}},"required":["value","unit","item"]}`)
			},
			content: `{"value": 3, "unit": "kg", "item": "flour"}`,
		},
		{
			name:    "a $ref root is wrapped, but an answer to the caller's own schema is kept whole",
			req:     provider.ChatRequest{User: "u", Schema: `{"$ref":"#/$defs/KV","$defs":{"KV":{"type":"object","properties":{"field":{"type":"string"},"value":{"type":"string"},"confidence":{"type":"number"}}}}}`},
			answer:  completion(providertest.JSONString(`{"field":"total","value":"118.00","confidence":0.9}`), "stop"),
			check:   func(*testing.T, []byte) {},
			content: `{"field":"total","value":"118.00","confidence":0.9}`,
		},
		{
			// Mistral's strict mode follows OpenAI's: a $ref stands alone.
			name:   "a described nested model stays strict, its $ref sent alone",
			req:    provider.ChatRequest{User: "u", Schema: `{"type":"object","properties":{"p":{"title":"P","$ref":"#/$defs/P"}},"required":["p"],"additionalProperties":false,"$defs":{"P":{"type":"string"}}}`},
			answer: completion(`"{\"p\":\"x\"}"`, "stop"),
			check: func(t *testing.T, body []byte) {
				if got := providertest.Field(t, body, "response_format", "json_schema", "strict"); got != true {
					t.Errorf("strict = %v, want true", got)
				}
				providertest.AssertSameJSON(t, "schema", providertest.Field(t, body, "response_format", "json_schema", "schema"),
					`{"type":"object","properties":{"p":{"$ref":"#/$defs/P"}},"required":["p"],"additionalProperties":false,"$defs":{"P":{"type":"string"}}}`)
			},
			content: `{"p":"x"}`,
		},
		{
			name:   "a recursive array schema is wrapped with its root in $defs",
			req:    provider.ChatRequest{User: "u", Schema: `{"type":"array","items":{"type":"object","properties":{"n":{"type":"string"},"kids":{"$ref":"#"}},"required":["n","kids"],"additionalProperties":false}}`},
			answer: completion(providertest.JSONString(`{"value":[{"n":"a","kids":[]}]}`), "stop"),
			check: func(t *testing.T, body []byte) {
				providertest.AssertSameJSON(t, "schema", providertest.Field(t, body, "response_format", "json_schema", "schema"),
					`{"type":"object","properties":{"value":{"$ref":"#/$defs/root"}},"required":["value"],"additionalProperties":false,`+
						`"$defs":{"root":{"type":"array","items":{"type":"object","properties":{"n":{"type":"string"},"kids":{"$ref":"#/$defs/root"}},"required":["n","kids"],"additionalProperties":false}}}}`)
			},
			content: `[{"n":"a","kids":[]}]`,
		},
		{
			// Mistral's strict mode follows OpenAI's subset, whose server
			// refuses "Objects provided via 'anyOf' must not share identical
			// first keys" (audit-providers3 F2): not strict, not refused.
			name: "a union of objects that start with the same key is sent with strict false",
			req: provider.ChatRequest{User: "u", Schema: `{"type":"object","properties":{"p":{"anyOf":[` +
				`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false},` +
				`{"type":"object","properties":{"name":{"type":"string"},"vat":{"type":"string"}},"required":["name","vat"],"additionalProperties":false}]}},"required":["p"],"additionalProperties":false}`},
			answer: completion(providertest.JSONString(`{"p":{"name":"x"}}`), "stop"),
			check: func(t *testing.T, body []byte) {
				if got := providertest.Field(t, body, "response_format", "json_schema", "strict"); got != false {
					t.Errorf("strict = %v, want false", got)
				}
			},
			content: `{"p":{"name":"x"}}`,
		},
		{
			// Servers that read JSON Schema read 2020-12; Gemini and xAI
			// refuse an item array outright (audit-providers3 F3).
			name:   "a draft-07 tuple is sent as prefixItems",
			req:    provider.ChatRequest{User: "u", Schema: `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"pt":{"type":"array","items":[{"type":"number"},{"type":"number"}]}},"required":["pt"],"additionalProperties":false}`},
			answer: completion(providertest.JSONString(`{"pt":[1,2]}`), "stop"),
			check: func(t *testing.T, body []byte) {
				providertest.AssertSameJSON(t, "schema", providertest.Field(t, body, "response_format", "json_schema", "schema"),
					`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"pt":{"type":"array","prefixItems":[{"type":"number"},{"type":"number"}]}},"required":["pt"],"additionalProperties":false}`)
			},
			content: `{"pt":[1,2]}`,
		},
		{
			// Without strict the server does not constrain the answer, and
			// a model may fence it, wrapper and all.
			name:    "a fenced wrapped answer is unwrapped",
			req:     provider.ChatRequest{User: "u", Schema: `{"type":"array","items":{"type":"integer"}}`},
			answer:  completion(providertest.JSONString("```json\n{\"value\":[1,2]}\n```"), "stop"),
			check:   func(*testing.T, []byte) {},
			content: `[1,2]`,
		},
		{
			name:   "the model, max_tokens and temperature 0 are sent",
			req:    provider.ChatRequest{User: "u", MaxTokens: 64},
			answer: completion(`"fine"`, "stop"),
			check: func(t *testing.T, body []byte) {
				for field, want := range map[string]any{"model": "mistral-small-latest", "max_tokens": float64(64), "temperature": float64(0)} {
					if got := providertest.Field(t, body, field); got != want {
						t.Errorf("%s = %v, want %v", field, got, want)
					}
				}
			},
			content: "fine",
		},
		{
			name:    "a reasoning model's chunked content gives its text chunks",
			req:     provider.ChatRequest{User: "u"},
			answer:  completion(`[{"type":"thinking","thinking":[{"type":"text","text":"hmm"}]},{"type":"text","text":"42"}]`, "stop"),
			check:   func(*testing.T, []byte) {},
			content: "42",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, providertest.Reply(200, c.answer))
			ans, err := openChat(t, srv.URL, time.Second).Complete(t.Context(), c.req)
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

func TestChatNeedsAModel(t *testing.T) {
	if _, err := mistral.NewChat(mistral.Config{BaseURL: "http://x", Key: key}); err == nil {
		t.Fatal("NewChat without a model succeeded; the OCR default is not a chat model")
	}
}

func TestChatErrors(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		want   provider.Category
	}{
		{"a prompt over the context window is context length", 400,
			`{"object":"error","message":"Prompt contains 300000 tokens, too large for model with 131072 maximum context length","type":"invalid_request_error","param":null,"code":null}`,
			provider.CategoryContextLength},
		{"another invalid request stays one", 400,
			`{"object":"error","message":"Invalid response_format","type":"invalid_request_error","param":null,"code":null}`,
			provider.CategoryInvalidRequest},
		{"a validation error with an object message stays one", 422,
			`{"object":"error","message":{"detail":[{"type":"missing","loc":["body","messages"]}]},"type":"invalid_request_error"}`,
			provider.CategoryInvalidRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, providertest.Reply(c.status, c.body))
			_, err := openChat(t, srv.URL, time.Second).Complete(t.Context(), provider.ChatRequest{User: "u"})
			providertest.AssertCategory(t, err, c.want, c.status)
		})
	}
}
