package anthropic_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/provider/anthropic"
	"github.com/docjobs/docjobs/internal/provider/providertest"
	"github.com/docjobs/docjobs/internal/schema"
)

func openChat(t *testing.T, baseURL string, timeout time.Duration) provider.Chat {
	t.Helper()
	c, err := anthropic.NewChat(anthropic.Config{BaseURL: baseURL, Model: "claude-sonnet-4-5", Key: key, Timeout: timeout})
	if err != nil {
		t.Fatalf("NewChat: %v", err)
	}
	return c
}

func chatMessage(content, stop string) string {
	return `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[` + content + `],` +
		`"stop_reason":"` + stop + `","stop_sequence":null,"usage":{"input_tokens":11,"output_tokens":7}}`
}

func textBlock(s string) string {
	return `{"type":"text","text":` + providertest.JSONString(s) + `}`
}

// toolUse is the forced tool's call, with input as the model writes it
// (not compact).
func toolUse(input string) string {
	return `{"type":"tool_use","id":"toolu_01","name":"` + anthropic.ToolName + `","input":` + input + `}`
}

func TestChatProtocol(t *testing.T) {
	providertest.RunChat(t, providertest.ChatVendor{
		Path:          "/v1/messages",
		Key:           key,
		New:           openChat,
		KeyFromHeader: func(h http.Header) string { return h.Get("X-Api-Key") },
		Text:          func(c string) string { return chatMessage(textBlock(c), "end_turn") },
		TextWithUsage: func(c, in, out string) string {
			return strings.Replace(chatMessage(textBlock(c), "end_turn"), `"input_tokens":11,"output_tokens":7`, `"input_tokens":`+in+`,"output_tokens":`+out, 1)
		},
		Structured: func(j string) string {
			// Spaced out, as models write it: the row gets it compact.
			return chatMessage(toolUse(`{ "total": 42.5, "items": [ "a", "b" ] }`), "tool_use")
		},
		// A cut-off tool call has the input the model had written.
		Truncated: func(p string) string {
			return chatMessage(toolUse(`{"total":4,"note":`+providertest.JSONString(p)+`}`), "max_tokens")
		},
		Unauthorized: func(echo string) string {
			return `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + echo + `"}}`
		},
		Empty: chatMessage(``, "end_turn"),
		Messages: func(t *testing.T, body []byte) (string, string) {
			sys, _ := providertest.Field(t, body, "system", 0, "text").(string)
			user, _ := providertest.Field(t, body, "messages", 0, "content", 0, "text").(string)
			return sys, user
		},
		SchemaIn: func(t *testing.T, body []byte) any {
			if providertest.Field(t, body, "tools") == nil {
				if providertest.Field(t, body, "tool_choice") != nil {
					t.Error("tool_choice sent without a tool")
				}
				return nil
			}
			if got := providertest.Field(t, body, "tool_choice"); got == nil {
				t.Fatal("no tool_choice: the tool is not forced")
			}
			if tc, name := providertest.Field(t, body, "tool_choice", "type"), providertest.Field(t, body, "tool_choice", "name"); tc != "tool" || name != anthropic.ToolName {
				t.Errorf("tool_choice = %v %v, want the answer tool forced", tc, name)
			}
			if n, _ := providertest.Field(t, body, "tools").([]any); len(n) != 1 {
				t.Errorf("tools = %d, want 1", len(n))
			}
			if name := providertest.Field(t, body, "tools", 0, "name"); name != anthropic.ToolName {
				t.Errorf("tool name = %v", name)
			}
			return providertest.Field(t, body, "tools", 0, "input_schema")
		},
	})
}

func TestChatSchemaShapes(t *testing.T) {
	cases := []struct {
		name       string
		schema     string
		answer     string
		wantSchema string
		want       string
	}{
		{
			name:       "an array schema is wrapped in an object tool input and the answer unwrapped",
			schema:     `{"type":"array","items":{"$ref":"#/$defs/item"},"$defs":{"item":{"type":"string"}}}`,
			answer:     chatMessage(toolUse(`{"value": ["x", "y"]}`), "tool_use"),
			wantSchema: `{"type":"object","properties":{"value":{"type":"array","items":{"$ref":"#/$defs/item"}}},"required":["value"],"additionalProperties":false,"$defs":{"item":{"type":"string"}}}`,
			want:       `["x","y"]`,
		},
		{
			// Tool inputs are not strictly enforced: the model answered the
			// caller's own schema, whose "value" is one field of three.
			name:       "properties without a root type are an object tool input, and the answer is kept whole",
			schema:     `{"properties":{"value":{"type":"number"},"unit":{"type":"string"},"item":{"type":"string"}},"required":["value","unit","item"]}`,
			answer:     chatMessage(toolUse(`{"value": 3, "unit": "kg", "item": "flour"}`), "tool_use"),
			wantSchema: `{"type":"object","properties":{"value":{"type":"number"},"unit":{"type":"string"},"item":{"type":"string"}},"required":["value","unit","item"]}`,
			want:       `{"value":3,"unit":"kg","item":"flour"}`,
		},
		{
			name:       "a $ref root is wrapped, but an answer to the caller's own schema is kept whole",
			schema:     `{"$ref":"#/$defs/KV","$defs":{"KV":{"type":"object","properties":{"field":{"type":"string"},"value":{"type":"string"},"confidence":{"type":"number"}}}}}`,
			answer:     chatMessage(toolUse(`{"field":"total","value":"118.00","confidence":0.9}`), "tool_use"),
			wantSchema: `{"type":"object","properties":{"value":{"$ref":"#/$defs/KV"}},"required":["value"],"additionalProperties":false,"$defs":{"KV":{"type":"object","properties":{"field":{"type":"string"},"value":{"type":"string"},"confidence":{"type":"number"}}}}}`,
			want:       `{"field":"total","value":"118.00","confidence":0.9}`,
		},
		{
			// Anthropic: "input_schema does not support oneOf, allOf, or
			// anyOf at the top level", a 400 on every row.
			name:       "an object schema with oneOf at the root is wrapped and the answer unwrapped",
			schema:     `{"type":"object","properties":{"iban":{"type":"string"},"account":{"type":"string"}},"oneOf":[{"required":["iban"]},{"required":["account"]}]}`,
			answer:     chatMessage(toolUse(`{"value": {"iban": "DE89"}}`), "tool_use"),
			wantSchema: `{"type":"object","properties":{"value":{"type":"object","properties":{"iban":{"type":"string"},"account":{"type":"string"}},"oneOf":[{"required":["iban"]},{"required":["account"]}]}},"required":["value"],"additionalProperties":false}`,
			want:       `{"iban":"DE89"}`,
		},
		{
			name:       "a recursive array schema is wrapped with its root in $defs",
			schema:     `{"type":"array","items":{"type":"object","properties":{"kids":{"$ref":"#"}}}}`,
			answer:     chatMessage(toolUse(`{"value": [{"kids": []}]}`), "tool_use"),
			wantSchema: `{"type":"object","properties":{"value":{"$ref":"#/$defs/root"}},"required":["value"],"additionalProperties":false,"$defs":{"root":{"type":"array","items":{"type":"object","properties":{"kids":{"$ref":"#/$defs/root"}}}}}}`,
			want:       `[{"kids":[]}]`,
		},
		{
			name:       "an object schema that is not strict-compatible goes as it is",
			schema:     `{"type":"object","properties":{"a":{"type":"string","minLength":1,"allOf":[{"pattern":"z"}]}},"patternProperties":{"^x":{}}}`,
			answer:     chatMessage(textBlock("Here you go.")+","+toolUse(`{"a":"z"}`), "tool_use"),
			wantSchema: `{"type":"object","properties":{"a":{"type":"string","minLength":1,"allOf":[{"pattern":"z"}]}},"patternProperties":{"^x":{}}}`,
			want:       `{"a":"z"}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, providertest.Reply(200, c.answer))
			ans, err := openChat(t, srv.URL, time.Second).Complete(t.Context(), provider.ChatRequest{User: "u", Schema: c.schema})
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			providertest.AssertSameJSON(t, "input_schema", providertest.Field(t, srv.Requests()[0].Body, "tools", 0, "input_schema"), c.wantSchema)
			if ans.Content != c.want {
				t.Errorf("content = %q, want %q", ans.Content, c.want)
			}
		})
	}
}

func TestChatWithoutToolCallIsMalformed(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply(200, chatMessage(textBlock(`{"a":1}`), "end_turn")))
	_, err := openChat(t, srv.URL, time.Second).Complete(t.Context(), provider.ChatRequest{User: "u", Schema: `{"type":"object"}`})
	providertest.AssertCategory(t, err, provider.CategoryServer, 200)
}

func TestChatMaxTokens(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply(200, chatMessage(textBlock("ok"), "end_turn")))
	c := openChat(t, srv.URL, time.Second)
	for _, c2 := range []struct {
		asked int
		want  float64
	}{{0, anthropic.DefaultMaxTokens}, {256, 256}} {
		if _, err := c.Complete(t.Context(), provider.ChatRequest{User: "u", MaxTokens: c2.asked}); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		reqs := srv.Requests()
		if got := providertest.Field(t, reqs[len(reqs)-1].Body, "max_tokens"); got != c2.want {
			t.Errorf("MaxTokens %d: max_tokens = %v, want %v", c2.asked, got, c2.want)
		}
	}
}

// The Claude 3 models before 3.5 refuse a max_tokens over 4096; 3.5 and
// later take the default 8192.
func TestChatMaxTokensByDefaultFitTheModel(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply(200, chatMessage(textBlock("ok"), "end_turn")))
	for model, want := range map[string]float64{
		"claude-3-haiku-20240307":    4096,
		"claude-3-opus-latest":       4096,
		"claude-3-sonnet-20240229":   4096,
		"claude-3-5-haiku-20241022":  anthropic.DefaultMaxTokens,
		"claude-3-5-sonnet-20241022": anthropic.DefaultMaxTokens,
		"claude-sonnet-4-5":          anthropic.DefaultMaxTokens,
		"claude-haiku-4-5":           anthropic.DefaultMaxTokens,
	} {
		c, err := anthropic.NewChat(anthropic.Config{BaseURL: srv.URL, Model: model, Key: key, Timeout: time.Second})
		if err != nil {
			t.Fatalf("NewChat: %v", err)
		}
		if _, err := c.Complete(t.Context(), provider.ChatRequest{User: "u"}); err != nil {
			t.Fatalf("%s: Complete: %v", model, err)
		}
		reqs := srv.Requests()
		if got := providertest.Field(t, reqs[len(reqs)-1].Body, "max_tokens"); got != want {
			t.Errorf("%s: max_tokens = %v, want %v", model, got, want)
		}
	}
}

// Anthropic validates input_schema as draft 2020-12 ("tools.0.custom.
// input_schema: JSON schema is invalid. It must match JSON Schema draft
// 2020-12", hyperdxio/hyperdx#2925, AlexGladkov/claude-in-mobile#55: an
// item array). The API accepts the draft-07 that zod-to-json-schema
// writes, so the tool gets its 2020-12 copy (audit-providers3 F3).
func TestChatOlderDraftSchemasGoAs2020(t *testing.T) {
	const refusal = `{"type":"error","error":{"type":"invalid_request_error","message":"tools.0.custom.input_schema: JSON schema is invalid. It must match JSON Schema draft 2020-12 (https://json-schema.org/draft/2020-12)."}}`
	cases := []struct {
		name, schema, answer, wantSchema, want string
	}{
		{
			name:       "a draft-07 tuple goes as prefixItems",
			schema:     `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"pt":{"type":"array","minItems":2,"maxItems":2,"items":[{"type":"number"},{"type":"number"}]}},"required":["pt"],"additionalProperties":false}`,
			answer:     toolUse(`{"pt":[1,2]}`),
			wantSchema: `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"pt":{"type":"array","minItems":2,"maxItems":2,"prefixItems":[{"type":"number"},{"type":"number"}]}},"required":["pt"],"additionalProperties":false}`,
			want:       `{"pt":[1,2]}`,
		},
		{
			name:       "zod-to-json-schema's named root is wrapped with its definitions as $defs",
			schema:     `{"$ref":"#/definitions/mySchema","definitions":{"mySchema":{"type":"object","properties":{"xy":{"type":"array","items":[{"type":"number"}]}},"required":["xy"],"additionalProperties":false}},"$schema":"http://json-schema.org/draft-07/schema#"}`,
			answer:     toolUse(`{"value":{"xy":[1]}}`),
			wantSchema: `{"type":"object","properties":{"value":{"$ref":"#/$defs/mySchema"}},"required":["value"],"additionalProperties":false,"$defs":{"mySchema":{"type":"object","properties":{"xy":{"type":"array","prefixItems":[{"type":"number"}]}},"required":["xy"],"additionalProperties":false}},"$schema":"https://json-schema.org/draft/2020-12/schema"}`,
			want:       `{"xy":[1]}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, providertest.Unless(providertest.ItemArray, refusal,
				providertest.Reply(200, chatMessage(c.answer, "tool_use"))))
			ans, err := openChat(t, srv.URL, time.Second).Complete(t.Context(), provider.ChatRequest{User: "u", Schema: c.schema})
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			sent := providertest.Field(t, srv.Requests()[0].Body, "tools", 0, "input_schema")
			providertest.AssertSameJSON(t, "input_schema", sent, c.wantSchema)
			text, _ := json.Marshal(sent)
			if err := schema.Check(string(text)); err != nil {
				t.Errorf("the input_schema sent does not compile: %v", err)
			}
			if ans.Content != c.want {
				t.Errorf("content = %q, want %q", ans.Content, c.want)
			}
		})
	}
}
