package openai

import (
	"context"
	"fmt"
	"strings"

	oa "github.com/openai/openai-go"

	"github.com/docjobs/docjobs/internal/provider"
)

// SchemaName is the json_schema name sent with a response schema.
const SchemaName = "response"

// ChatConfig configures a model-stage adapter.
type ChatConfig struct {
	Config
	// LegacyMaxTokens sends a token bound as max_tokens instead of
	// max_completion_tokens: OpenAI itself and xAI take the new name
	// (OpenAI's reasoning models reject the old one), while OpenRouter,
	// Qwen and self-hosted servers document only max_tokens.
	LegacyMaxTokens bool
}

// Chat is a chat model answering model-stage requests.
type Chat struct {
	cfg    ChatConfig
	client *oa.Client
}

// NewChat returns a model-stage adapter for cfg, built like New's.
func NewChat(cfg ChatConfig) (*Chat, error) {
	o, err := New(cfg.Config)
	if err != nil {
		return nil, err
	}
	return &Chat{cfg: cfg, client: o.client}, nil
}

// Complete asks one question. With a schema the answer is constrained by
// response_format: json_schema with strict: true when the schema is
// strict-compatible (provider.StrictSchema), else JSON mode
// (json_object) with the schema spelled out in the system message. A
// schema whose root is not an object is wrapped (provider.ObjectSchema)
// and the answer unwrapped, since both modes answer an object.
func (c *Chat) Complete(ctx context.Context, req provider.ChatRequest) (provider.ChatAnswer, error) {
	body, wrapped, err := c.body(req)
	if err != nil {
		return provider.ChatAnswer{}, err
	}
	res, ex, err := complete(ctx, provider.CallChat, c.client, c.cfg.Config, body)
	if err != nil {
		return ex.FailedAnswer(c.cfg.Model, c.cfg.Key), err
	}
	status := ex.Status()
	// failed keeps what a 200 without a usable answer left, usage included:
	// it was billed.
	failed := func(err error) (provider.ChatAnswer, error) {
		a := ex.FailedAnswer(c.cfg.Model, c.cfg.Key)
		if res != nil {
			a.InputTokens, a.OutputTokens = res.Usage.PromptTokens, res.Usage.CompletionTokens
		}
		return a, err
	}
	if res == nil || len(res.Choices) == 0 {
		return failed(provider.Malformed(status, "no choices"))
	}
	ch := res.Choices[0]
	switch {
	case ch.FinishReason == "length":
		return failed(provider.Truncated(status, ch.FinishReason))
	case ch.Message.Refusal != "" || ch.FinishReason == "content_filter":
		return failed(&provider.Error{Category: provider.CategoryContentFilter, Status: status,
			Err: fmt.Errorf("finish_reason %q, refusal given: %t", provider.Identifier(ch.FinishReason), ch.Message.Refusal != "")})
	case ch.FinishReason == "tool_calls" || ch.FinishReason == "function_call":
		return failed(provider.Malformed(status, "a tool call instead of an answer"))
	}
	content := ch.Message.Content
	if strings.TrimSpace(content) == "" {
		// Not an answer (JSON mode's least is "{}"), and not one a model
		// means: a glitch a second call mends, as in recognition.
		return failed(provider.EmptyAnswer(status))
	}
	if wrapped {
		content = provider.UnwrapAnswer(content)
	}
	return provider.ChatAnswer{
		Content:      content,
		FinishReason: ch.FinishReason,
		InputTokens:  res.Usage.PromptTokens,
		OutputTokens: res.Usage.CompletionTokens,
		Model:        c.cfg.Model,
		Request:      ex.Request(c.cfg.Key),
		RawData:      ex.Response(c.cfg.Key),
	}, nil
}

// body is the request for req, and whether its schema was wrapped.
func (c *Chat) body(req provider.ChatRequest) (*chatBody, bool, error) {
	body := &chatBody{Model: c.cfg.Model}
	system := req.System
	wrapped := false
	if req.Schema != "" {
		schema, decoded, w, err := provider.ObjectSchema(req.Schema)
		if err != nil {
			return nil, false, err
		}
		wrapped = w
		if strict, ok := provider.StrictSchema(schema, decoded); ok {
			body.ResponseFormat = &responseFormat{Type: "json_schema",
				JSONSchema: &jsonSchema{Name: SchemaName, Schema: strict, Strict: true}}
		} else {
			body.ResponseFormat = &responseFormat{Type: "json_object"}
			system += provider.SchemaInstruction(string(schema))
		}
	}
	if system != "" {
		body.Messages = append(body.Messages, message{Role: "system", Content: system})
	}
	body.Messages = append(body.Messages, message{Role: "user", Content: req.User})
	if req.MaxTokens > 0 {
		if c.cfg.LegacyMaxTokens {
			body.MaxTokens = int64(req.MaxTokens)
		} else {
			body.MaxCompletionTokens = int64(req.MaxTokens)
		}
	}
	return body, wrapped, nil
}

var _ provider.Chat = (*Chat)(nil)
