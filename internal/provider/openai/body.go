package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	oa "github.com/openai/openai-go"

	"github.com/docjobs/docjobs/internal/provider"
)

// The request body is written with encoding/json rather than through the
// SDK's parameter types: the SDK's encoder re-validates and re-compacts the
// output of every nested value, so each byte of a message is scanned once
// per level. That cost 0.1 ms of CPU per call for a 1.6 KB chunk, 0.74 ms
// for a 16 KB one (the default 4000-token budget) and 73 ms and 14 MB for a
// page image of 1 MB, 15 to 25 times encoding/json's (docs/decisions.md).
// The SDK still sends the request (base URL, key, headers, errors); the
// answer is decoded as a completion (answer.go). TestBodiesMatchTheSDK
// keeps these types saying what the SDK's parameter types would.

// chatBody is a chat completions request.
type chatBody struct {
	Model               string          `json:"model"`
	Messages            []message       `json:"messages"`
	ResponseFormat      *responseFormat `json:"response_format,omitempty"`
	MaxTokens           int64           `json:"max_tokens,omitempty"`
	MaxCompletionTokens int64           `json:"max_completion_tokens,omitempty"`
}

// message is a chat message whose content is either text or parts.
type message struct {
	Role    string `json:"role"`
	Content any    `json:"content"` // string or []part
}

type part struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

type imageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

type responseFormat struct {
	Type       string      `json:"type"` // json_schema or json_object
	JSONSchema *jsonSchema `json:"json_schema,omitempty"`
}

type jsonSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

// encode writes b as JSON, leaving <, > and & as they are: chunks of HTML
// and XML would otherwise grow by five bytes for each.
func (b *chatBody) encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(b); err != nil {
		return nil, fmt.Errorf("encode chat request: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// complete sends body to the chat completions endpoint within one call,
// provider.CallTranscription for recognition or provider.CallChat for the
// model stage, which records the exchange, bounds the answer and
// classifies a failure.
func complete(ctx context.Context, call callFunc, client *oa.Client, cfg Config, body *chatBody) (*completion, *provider.Exchange, error) {
	data, err := body.encode()
	if err != nil {
		return nil, nil, err
	}
	var res *completion
	var sdkErr error
	ex, err := call(ctx, cfg.Timeout, cfg.Key, func(ctx context.Context) error {
		sdkErr = client.Post(ctx, "chat/completions", data, &res)
		return sdkErr
	})
	if err != nil {
		return nil, ex, refine(err, sdkErr)
	}
	return res, ex, nil
}

// callFunc is provider.CallTranscription or provider.CallChat.
type callFunc func(ctx context.Context, timeout time.Duration, key string, send func(context.Context) error) (*provider.Exchange, error)
