package openai

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	oa "github.com/openai/openai-go"
	"github.com/openai/openai-go/shared"

	"github.com/docjobs/docjobs/internal/provider"
)

// sdkParams says with the SDK's own parameter types what body says: the
// reference the hand-written types must match on the wire.
func sdkParams(t *testing.T, body *chatBody) oa.ChatCompletionNewParams {
	t.Helper()
	params := oa.ChatCompletionNewParams{Model: body.Model}
	for _, m := range body.Messages {
		switch c := m.Content.(type) {
		case string:
			switch m.Role {
			case "system":
				params.Messages = append(params.Messages, oa.SystemMessage(c))
			case "user":
				params.Messages = append(params.Messages, oa.UserMessage(c))
			default:
				t.Fatalf("role %q", m.Role)
			}
		case []part:
			var parts []oa.ChatCompletionContentPartUnionParam
			for _, p := range c {
				switch p.Type {
				case "text":
					parts = append(parts, oa.TextContentPart(p.Text))
				case "image_url":
					parts = append(parts, oa.ImageContentPart(oa.ChatCompletionContentPartImageImageURLParam{URL: p.ImageURL.URL, Detail: p.ImageURL.Detail}))
				default:
					t.Fatalf("part type %q", p.Type)
				}
			}
			params.Messages = append(params.Messages, oa.UserMessage(parts))
		default:
			t.Fatalf("content %T", m.Content)
		}
	}
	if f := body.ResponseFormat; f != nil {
		switch f.Type {
		case "json_schema":
			params.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: f.JSONSchema.Name, Schema: f.JSONSchema.Schema, Strict: oa.Bool(f.JSONSchema.Strict)},
			}
		case "json_object":
			params.ResponseFormat.OfJSONObject = &shared.ResponseFormatJSONObjectParam{}
		default:
			t.Fatalf("response format %q", f.Type)
		}
	}
	if body.MaxTokens > 0 {
		params.MaxTokens = oa.Int(body.MaxTokens)
	}
	if body.MaxCompletionTokens > 0 {
		params.MaxCompletionTokens = oa.Int(body.MaxCompletionTokens)
	}
	return params
}

func assertSameJSON(t *testing.T, got []byte, want any) {
	t.Helper()
	wantJSON, err := json.Marshal(want)
	if err != nil {
		t.Fatalf("SDK marshal: %v", err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(wantJSON, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("body differs from the SDK's\n got %s\nwant %s", got, wantJSON)
	}
}

func TestBodiesMatchTheSDK(t *testing.T) {
	strict := `{"type":"object","properties":{"total":{"type":"number"}},"required":["total"],"additionalProperties":false}`
	loose := `{"type":"object","properties":{"a":{"type":"string","minLength":2}}}`
	cases := []struct {
		name string
		cfg  ChatConfig
		req  provider.ChatRequest
	}{
		{"user message alone", ChatConfig{}, provider.ChatRequest{User: "u"}},
		{"system and user", ChatConfig{}, provider.ChatRequest{System: "Summarize.", User: "Document \"a.md\", part 1 of 2:\n\ntext"}},
		{"markup and non-ASCII text", ChatConfig{}, provider.ChatRequest{System: "Extract <b>all</b> & more.", User: "<section data-page=\"1\"><p>Grüße — 価格 \u2028 \"q\"</p></section>"}},
		{"strict schema", ChatConfig{}, provider.ChatRequest{System: "Extract.", User: "u", Schema: strict}},
		{"schema in JSON mode", ChatConfig{}, provider.ChatRequest{System: "Extract.", User: "u", Schema: loose}},
		{"wrapped array schema", ChatConfig{}, provider.ChatRequest{User: "u", Schema: `{"type":"array","items":{"type":"string"}}`}},
		{"max_completion_tokens", ChatConfig{}, provider.ChatRequest{User: "u", MaxTokens: 300}},
		{"max_tokens for older servers", ChatConfig{LegacyMaxTokens: true}, provider.ChatRequest{User: "u", MaxTokens: 300}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Model = "gpt-4.1"
			body, _, err := (&Chat{cfg: c.cfg}).body(c.req)
			if err != nil {
				t.Fatal(err)
			}
			data, err := body.encode()
			if err != nil {
				t.Fatal(err)
			}
			assertSameJSON(t, data, sdkParams(t, body))
		})
	}

	t.Run("page image", func(t *testing.T) {
		doc := provider.Document{MIME: "image/png", Data: []byte("\x89PNG\r\n\x1a\n0123"), Page: 3, Format: "html"}
		body := recognitionBody("gpt-4o", doc, "html")
		data, err := body.encode()
		if err != nil {
			t.Fatal(err)
		}
		assertSameJSON(t, data, sdkParams(t, body))
		if got, want := body.Messages[1].Content.([]part)[1].ImageURL.URL, "data:image/png;base64,"+base64.StdEncoding.EncodeToString(doc.Data); got != want {
			t.Errorf("image URL = %q, want %q", got, want)
		}
	})
}

func TestBodyKeepsMarkupReadable(t *testing.T) {
	data, err := (&chatBody{Model: "m", Messages: []message{{Role: "user", Content: "<p>a & b</p>"}}}).encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"<p>a & b</p>"`) || strings.HasSuffix(string(data), "\n") {
		t.Errorf("body = %q, want the markup unescaped and no trailing newline", data)
	}
}

// BenchmarkRequestBody compares the hand-written body with the SDK's
// parameter types for a chunk of the default budget (about 16 KB).
func BenchmarkRequestBody(b *testing.B) {
	req := provider.ChatRequest{System: "Summarize.", User: strings.Repeat("Item 12 costs 144 units. ", 640)}
	c := &Chat{cfg: ChatConfig{Config: Config{Model: "gpt-4.1"}}}
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			body, _, _ := c.body(req)
			if _, err := body.encode(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("SDK params", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			params := oa.ChatCompletionNewParams{Model: "gpt-4.1", Messages: []oa.ChatCompletionMessageParamUnion{oa.SystemMessage(req.System), oa.UserMessage(req.User)}}
			if _, err := json.Marshal(params); err != nil {
				b.Fatal(err)
			}
		}
	})
}
