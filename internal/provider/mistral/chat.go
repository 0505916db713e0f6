package mistral

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/docjobs/docjobs/internal/provider"
)

// SchemaName is the json_schema name sent with a response schema.
const SchemaName = "response"

// Chat is a Mistral chat model answering model-stage requests over
// {base}/v1/chat/completions.
type Chat struct {
	ocr *OCR // the same client and key handling
	url string
}

// NewChat returns a model-stage adapter for cfg. Unlike OCR there is no
// default model: the job names it.
func NewChat(cfg Config) (*Chat, error) {
	if cfg.Model == "" {
		return nil, errors.New("mistral: model is required")
	}
	o, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return &Chat{ocr: o, url: strings.TrimRight(cfg.BaseURL, "/") + "/v1/chat/completions"}, nil
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type jsonSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *jsonSchema `json:"json_schema,omitempty"`
}

type chatRequest struct {
	Model          string          `json:"model"`
	Messages       []chatMessage   `json:"messages"`
	Temperature    float64         `json:"temperature"`
	MaxTokens      int             `json:"max_tokens,omitempty"`
	ResponseFormat *responseFormat `json:"response_format,omitempty"`
}

type chatResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			// Content is a string, or (reasoning models) an array of
			// chunks of which the "text" ones are the answer.
			Content json.RawMessage `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	// Usage is read leniently: a count that does not fit int64 must not
	// fail the answer it came with.
	Usage struct {
		PromptTokens     provider.TokenCount `json:"prompt_tokens"`
		CompletionTokens provider.TokenCount `json:"completion_tokens"`
	} `json:"usage"`
}

// Complete asks one question. With a schema the answer is constrained by
// response_format json_schema, strict when the schema allows it
// (provider.StrictSchema); a schema whose root is not an object is
// wrapped and the answer unwrapped (provider.ObjectSchema).
func (c *Chat) Complete(ctx context.Context, req provider.ChatRequest) (provider.ChatAnswer, error) {
	cfg := c.ocr.cfg
	body := chatRequest{Model: cfg.Model, MaxTokens: max(req.MaxTokens, 0)}
	if req.System != "" {
		body.Messages = append(body.Messages, chatMessage{Role: "system", Content: req.System})
	}
	body.Messages = append(body.Messages, chatMessage{Role: "user", Content: req.User})
	wrapped := false
	if req.Schema != "" {
		schema, decoded, w, err := provider.ObjectSchema(req.Schema)
		if err != nil {
			return provider.ChatAnswer{}, err
		}
		wrapped = w
		// Without strict the schema goes as the job gave it; with strict,
		// as strict mode takes it (provider.StrictSchema).
		sent, strict := provider.StrictSchema(schema, decoded)
		body.ResponseFormat = &responseFormat{Type: "json_schema", JSONSchema: &jsonSchema{
			Name: SchemaName, Schema: sent, Strict: strict,
		}}
	}
	data, err := json.Marshal(body)
	if err != nil {
		return provider.ChatAnswer{}, fmt.Errorf("mistral: encode request: %w", err)
	}

	var res chatResponse
	var sent error
	ex, err := provider.CallChat(ctx, cfg.Timeout, cfg.Key, func(ctx context.Context) error {
		sent = c.ocr.post(ctx, c.url, data, &res)
		return sent
	})
	if err != nil {
		return ex.FailedAnswer(cfg.Model, cfg.Key), refine(err, sent)
	}
	status := ex.Status()
	// failed keeps what a 200 without a usable answer left, usage included:
	// it was billed.
	failed := func(err error) (provider.ChatAnswer, error) {
		a := ex.FailedAnswer(cfg.Model, cfg.Key)
		a.InputTokens, a.OutputTokens = int64(res.Usage.PromptTokens), int64(res.Usage.CompletionTokens)
		return a, err
	}
	if len(res.Choices) == 0 {
		return failed(provider.Malformed(status, "no choices"))
	}
	ch := res.Choices[0]
	switch ch.FinishReason {
	case "length", "model_length":
		return failed(provider.Truncated(status, ch.FinishReason))
	case "error":
		return failed(&provider.Error{Category: provider.CategoryServer, Status: status, Err: errors.New("finish_reason error")})
	case "tool_calls":
		return failed(provider.Malformed(status, "a tool call instead of an answer"))
	}
	content, ok := messageText(ch.Message.Content)
	if !ok {
		return failed(provider.Malformed(status, "no message content"))
	}
	if strings.TrimSpace(content) == "" {
		// Not an answer, and not one a model means: a glitch a second
		// call mends.
		return failed(provider.EmptyAnswer(status))
	}
	if wrapped {
		content = provider.UnwrapAnswer(content)
	}
	return provider.ChatAnswer{
		Content:      content,
		FinishReason: ch.FinishReason,
		InputTokens:  int64(res.Usage.PromptTokens),
		OutputTokens: int64(res.Usage.CompletionTokens),
		Model:        cfg.Model,
		Request:      ex.Request(cfg.Key),
		RawData:      ex.Response(cfg.Key),
	}, nil
}

// messageText reads a message content: a string, or the text chunks of a
// chunk array (thinking chunks are the model's notes, not the answer).
func messageText(raw json.RawMessage) (string, bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true
	}
	var chunks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &chunks); err != nil {
		return "", false
	}
	var b strings.Builder
	for _, ch := range chunks {
		if ch.Type == "text" {
			b.WriteString(ch.Text)
		}
	}
	return b.String(), true
}

var _ provider.Chat = (*Chat)(nil)
