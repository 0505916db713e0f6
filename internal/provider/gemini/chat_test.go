package gemini_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/provider/gemini"
	"github.com/docjobs/docjobs/internal/provider/providertest"
	"github.com/docjobs/docjobs/internal/schema"
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
		TextWithUsage: func(c, in, out string) string {
			return strings.Replace(answer(c, "STOP"), `"promptTokenCount":11,"candidatesTokenCount":5,"thoughtsTokenCount":2`, `"promptTokenCount":`+in+`,"candidatesTokenCount":`+out, 1)
		},
		Structured: func(j string) string { return answer(j, "STOP") },
		Truncated:  func(p string) string { return answer(`{"total":4, "note": "`+p, "MAX_TOKENS") },
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

// The schema reaches Gemini as the job wrote it: Gemini 2.5 and later
// write the answer's keys in the schema's order (the SDK's own encoding
// sorted them alphabetically), and integers past 2^53 keep every digit
// (the SDK's float64 rounded 9007199254740993 to ...992).
func TestChatSchemaGoesAsWritten(t *testing.T) {
	const schema = `{"type":"object","properties":{"zeta":{"type":"string"},"evidence":{"type":"string"},` +
		`"amount":{"type":"integer","maximum":9007199254740993},"alpha":{"type":"object","properties":{"yy":{"type":"string"},"bb":{"type":"string"}}}},` +
		`"required":["zeta","evidence","amount","alpha"]}`
	srv := providertest.NewServer(t, providertest.Reply(200, answer(`{"zeta":"z"}`, "STOP")))
	ans, err := openChat(t, srv.URL, time.Second).Complete(t.Context(), provider.ChatRequest{User: "u", Schema: " " + schema + "\n"})
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	body := srv.Requests()[0].Body
	if want := `"responseJsonSchema":` + schema; !strings.Contains(string(body), want) {
		t.Errorf("request body %s\ndoes not hold %s", body, want)
	}
	if !strings.Contains(ans.Request, schema) {
		t.Errorf("the row's request %s does not hold the schema as sent", ans.Request)
	}
	if got := providertest.Field(t, body, "generationConfig", "responseMimeType"); got != "application/json" {
		t.Errorf("responseMimeType = %v", got)
	}
	for _, k := range []string{"httpOptions", "extraBody"} {
		if strings.Contains(string(body), k) {
			t.Errorf("request body carries %q: %s", k, body)
		}
	}
}

// Gemini refuses a $ref with keywords beside it other than $-keywords
// (400 "schema at properties.buyer can only contain properties starting
// with '$' when $ref is present"), which is how Pydantic writes a
// described nested model: they are dropped, everything else kept.
func TestChatSchemaRefStandsAlone(t *testing.T) {
	const schema = `{"type":"object","properties":{"buyer":{"$ref":"#/$defs/Party","description":"who buys","title":"Buyer","$comment":"c"},` +
		`"description":{"type":"string","description":"a property named description"}},"$defs":{"Party":{"type":"object","description":"a party"}}}`
	const sent = `{"type":"object","properties":{"buyer":{"$ref":"#/$defs/Party","$comment":"c"},` +
		`"description":{"type":"string","description":"a property named description"}},"$defs":{"Party":{"type":"object","description":"a party"}}}`
	srv := providertest.NewServer(t, providertest.Reply(200, answer(`{}`, "STOP")))
	if _, err := openChat(t, srv.URL, time.Second).Complete(t.Context(), provider.ChatRequest{User: "u", Schema: schema}); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if body := srv.Requests()[0].Body; !strings.Contains(string(body), `"responseJsonSchema":`+sent) {
		t.Errorf("request body %s\nwant the schema as %s", body, sent)
	}
}

// Gemini refuses an item array ("'items' must be a schema (object or
// boolean), not an array. For tuple validation, use 'prefixItems'
// instead.", 400 INVALID_ARGUMENT, oomkapwn/enquire-mcp#360), and a
// reference must point somewhere: zod-to-json-schema's named output
// lost its root definitions beside the root $ref (audit-providers3 F3).
// The fake refuses both.
func TestChatOlderDraftSchemasGoAs2020(t *testing.T) {
	const refusal = `{"error":{"code":400,"message":"'items' must be a schema (object or boolean), not an array. For tuple validation, use 'prefixItems' instead.","status":"INVALID_ARGUMENT"}}`
	cases := []struct {
		name, schema, want string
	}{
		{
			name:   "a draft-07 tuple goes as prefixItems",
			schema: `{"$schema":"http://json-schema.org/draft-07/schema#","type":"array","items":[{"type":"number"},{"type":"number"}],"additionalItems":false}`,
			want:   `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"array","prefixItems":[{"type":"number"},{"type":"number"}],"items":false}`,
		},
		{
			name:   "a root $ref keeps its definitions, as $defs",
			schema: `{"$ref":"#/definitions/mySchema","definitions":{"mySchema":{"type":"object","properties":{"myString":{"type":"string"}},"required":["myString"],"additionalProperties":false}},"$schema":"http://json-schema.org/draft-07/schema#"}`,
			want:   `{"$ref":"#/$defs/mySchema","$defs":{"mySchema":{"type":"object","properties":{"myString":{"type":"string"}},"required":["myString"],"additionalProperties":false}},"$schema":"https://json-schema.org/draft/2020-12/schema"}`,
		},
	}
	dangling := func(body []byte) string {
		var req struct {
			GenerationConfig struct {
				ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
			} `json:"generationConfig"`
		}
		if json.Unmarshal(body, &req) != nil || schema.Check(string(req.GenerationConfig.ResponseJSONSchema)) != nil {
			return "a reference that points nowhere"
		}
		return providertest.ItemArray(body)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, providertest.Unless(dangling, refusal, providertest.Reply(200, answer(`{"myString":"x"}`, "STOP"))))
			if _, err := openChat(t, srv.URL, time.Second).Complete(t.Context(), provider.ChatRequest{User: "u", Schema: c.schema}); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if body := srv.Requests()[0].Body; !strings.Contains(string(body), `"responseJsonSchema":`+c.want) {
				t.Errorf("request body %s\nwant the schema as %s", body, c.want)
			}
		})
	}
}
