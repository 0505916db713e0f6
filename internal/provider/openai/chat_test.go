package openai_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
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
		TextWithUsage: func(c, in, out string) string {
			return strings.Replace(chatCompletion(c, "stop"), `"prompt_tokens":11,"completion_tokens":7`, `"prompt_tokens":`+in+`,"completion_tokens":`+out, 1)
		},
		Structured: func(j string) string { return chatCompletion(j, "stop") },
		Truncated:  func(p string) string { return chatCompletion(`{"total":4, "note": "`+p, "length") },
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
			// A server that does not constrain the answer (OpenRouter routed
			// to a provider that ignores response_format, a JSON-mode
			// self-hosted model) may fence it, wrapper and all.
			name:    "a fenced wrapped answer is unwrapped",
			req:     provider.ChatRequest{User: "u", Schema: `{"type":"array","items":{"type":"integer"}}`},
			answer:  chatCompletion("```json\n{\"value\":[1,2]}\n```", "stop"),
			check:   func(*testing.T, []byte) {},
			content: `[1,2]`,
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

// strictRule applies the strict-mode rules of OpenAI's that a job's schema
// broke (audit-providers3 F2) to a request body, as OpenAI answers them:
// objects of an anyOf (through $refs into $defs) must not share their
// first key, "Invalid schema: Objects provided via 'anyOf' must not share
// identical first keys…" (seen in the public code bases working around
// it); a string enum of more than 250 values may total at most 15,000
// characters, and all property names, definition names and enum values
// at most 120,000 (platform.openai.com, Structured Outputs, Supported
// schemas). "" when the body keeps them or is not strict.
func strictRule(body []byte) string {
	var req struct {
		ResponseFormat struct {
			JSONSchema struct {
				Strict bool `json:"strict"`
				Schema any  `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	if json.Unmarshal(body, &req) != nil || !req.ResponseFormat.JSONSchema.Strict {
		return ""
	}
	root, _ := req.ResponseFormat.JSONSchema.Schema.(map[string]any)
	defs, _ := root["$defs"].(map[string]any)
	resolve := func(v any) map[string]any {
		m, _ := v.(map[string]any)
		if ref, ok := m["$ref"].(string); ok {
			m, _ = defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		}
		return m
	}
	total := 0
	var walk func(v any) string
	walk = func(v any) string {
		switch v := v.(type) {
		case map[string]any:
			if alts, ok := v["anyOf"].([]any); ok {
				seen := map[any]bool{}
				for _, a := range alts {
					if req, ok := resolve(a)["required"].([]any); ok && len(req) > 0 {
						if seen[req[0]] {
							return "Invalid schema: Objects provided via 'anyOf' must not share identical first keys."
						}
						seen[req[0]] = true
					}
				}
			}
			if e, ok := v["enum"].([]any); ok {
				n := 0
				for _, s := range e {
					s, _ := s.(string)
					n += len(s)
				}
				total += n
				if len(e) > 250 && n > 15000 {
					return "Invalid schema: an enum of more than 250 values totals over 15,000 characters."
				}
			}
			for _, k := range []string{"properties", "$defs"} {
				if m, ok := v[k].(map[string]any); ok {
					for name := range m {
						total += len(name)
					}
				}
			}
			for k, c := range v {
				if k == "enum" {
					continue
				}
				if r := walk(c); r != "" {
					return r
				}
			}
		case []any:
			for _, c := range v {
				if r := walk(c); r != "" {
					return r
				}
			}
		}
		return ""
	}
	if r := walk(root); r != "" {
		return r
	}
	if total > 120000 {
		return "Invalid schema: over 120,000 characters of names and enum values."
	}
	return ""
}

// A schema strict mode refuses fails every model row of the job with a 400
// that is not retried: such a schema goes in JSON mode instead, its
// answer still validated against the job's schema.
func TestChatStrictFallsBackWhereOpenAIRefuses(t *testing.T) {
	long := make([]string, 300)
	for i := range long {
		long[i] = strconv.Quote(fmt.Sprintf("Category %03d > Subcategory with a fairly long descriptive name", i))
	}
	object := func(props, req string) string {
		return `{"type":"object","properties":{` + props + `},"required":` + req + `,"additionalProperties":false}`
	}
	cases := []struct {
		name, schema string
		strict       bool
	}{
		{"a union of two objects that start with name",
			`{"type":"object","properties":{"party":{"anyOf":[` + object(`"name":{"type":"string"},"vat":{"type":"string"}`, `["name","vat"]`) + `,` +
				object(`"name":{"type":"string"},"born":{"type":"string"}`, `["name","born"]`) + `]}},"required":["party"],"additionalProperties":false}`, false},
		{"a union of $refs to models that start with name",
			`{"type":"object","properties":{"party":{"anyOf":[{"$ref":"#/$defs/Company"},{"$ref":"#/$defs/Person"},{"type":"null"}]}},"required":["party"],"additionalProperties":false,"$defs":{` +
				`"Company":` + object(`"name":{"type":"string"},"vat":{"type":"string"}`, `["name","vat"]`) + `,"Person":` + object(`"name":{"type":"string"}`, `["name"]`) + `}}`, false},
		{"an enum of 300 long category names",
			`{"type":"object","properties":{"category":{"type":"string","enum":[` + strings.Join(long, ",") + `]}},"required":["category"],"additionalProperties":false}`, false},
		{"a union whose objects start with a discriminator stays strict",
			`{"type":"object","properties":{"party":{"anyOf":[` + object(`"company":{"type":"boolean"},"name":{"type":"string"}`, `["company","name"]`) + `,` +
				object(`"person":{"type":"boolean"},"name":{"type":"string"}`, `["person","name"]`) + `]}},"required":["party"],"additionalProperties":false}`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, providertest.Unless(strictRule,
				`{"error":{"message":"Invalid schema for response_format 'response'.","type":"invalid_request_error","param":"response_format","code":null}}`,
				providertest.Reply(200, chatCompletion(`{}`, "stop"))))
			chat := provider.WithChatRetry(openChat(t, srv.URL, time.Second, false), provider.RetryPolicy{BaseDelay: time.Millisecond})
			if _, err := chat.Complete(t.Context(), provider.ChatRequest{User: "u", Schema: c.schema}); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			body := srv.Requests()[0].Body
			want := "json_object"
			if c.strict {
				want = "json_schema"
			}
			if got := providertest.Field(t, body, "response_format", "type"); got != want {
				t.Errorf("response_format.type = %v, want %s", got, want)
			}
		})
	}
}
