package anthropic

import (
	"context"
	"errors"
	"strings"

	an "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
	"github.com/anthropics/anthropic-sdk-go/packages/respjson"

	"github.com/docjobs/docjobs/internal/provider"
)

// ToolName is the name of the tool a response schema is sent as.
const ToolName = "record_answer"

// Chat is a Claude model answering model-stage requests.
type Chat struct {
	cfg      Config
	messages an.MessageService
}

// NewChat returns a model-stage adapter for cfg, built like New's.
// cfg.MaxTokens is the bound when a request sets none.
func NewChat(cfg Config) (*Chat, error) {
	o, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return &Chat{cfg: o.cfg, messages: o.messages}, nil
}

// Complete asks one question. With a schema, the Messages API has no
// response format: the schema becomes the input_schema of a single tool
// the model is forced to call, and the answer is that call's input as
// compact JSON. A schema whose root is not an object (tool inputs must
// be objects), or is one with anyOf, oneOf or allOf (which input_schema
// refuses at the top level), is wrapped and the answer unwrapped
// (provider.ToolInputSchema).
func (c *Chat) Complete(ctx context.Context, req provider.ChatRequest) (provider.ChatAnswer, error) {
	params := an.MessageNewParams{
		Model:       an.Model(c.cfg.Model),
		MaxTokens:   c.cfg.MaxTokens,
		Temperature: an.Float(0),
		Messages:    []an.MessageParam{an.NewUserMessage(an.NewTextBlock(req.User))},
	}
	if req.MaxTokens > 0 {
		params.MaxTokens = int64(req.MaxTokens)
	}
	if req.System != "" {
		params.System = []an.TextBlockParam{{Text: req.System}}
	}
	wrapped := false
	if req.Schema != "" {
		schema, _, w, err := provider.ToolInputSchema(req.Schema)
		if err != nil {
			return provider.ChatAnswer{}, err
		}
		wrapped = w
		// input_schema "must match JSON Schema draft 2020-12": an older
		// draft's tuple items refuse the request.
		schema, _ = provider.Draft2020(schema)
		tool := an.ToolParam{
			Name:        ToolName,
			Description: an.String("Record the answer. Its input is the complete answer, following the schema exactly."),
			// The raw schema goes out as it is: property order steers the
			// order the model writes in.
			InputSchema: param.Override[an.ToolInputSchemaParam](schema),
		}
		params.Tools = []an.ToolUnionParam{{OfTool: &tool}}
		params.ToolChoice = an.ToolChoiceParamOfTool(ToolName)
	}

	var res *an.Message
	var sdkErr error
	ex, err := provider.CallChat(ctx, c.cfg.Timeout, c.cfg.Key, func(ctx context.Context) error {
		res, sdkErr = c.messages.New(ctx, params)
		return sdkErr
	})
	if err != nil {
		return ex.FailedAnswer(c.cfg.Model, c.cfg.Key), refine(err, sdkErr)
	}
	status := ex.Status()
	// failed keeps what a 200 without a usable answer left, usage included:
	// it was billed.
	failed := func(err error) (provider.ChatAnswer, error) {
		a := ex.FailedAnswer(c.cfg.Model, c.cfg.Key)
		if res != nil {
			a.InputTokens, a.OutputTokens = usage(res.Usage)
		}
		return a, err
	}
	if res == nil || res.Type != "message" {
		return failed(provider.Malformed(status, "not a message"))
	}
	switch res.StopReason {
	case an.StopReasonMaxTokens:
		return failed(provider.Truncated(status, string(res.StopReason)))
	case an.StopReasonRefusal:
		return failed(&provider.Error{Category: provider.CategoryContentFilter, Status: status, Err: errors.New("stop_reason refusal")})
	case an.StopReasonModelContextWindowExceeded:
		return failed(&provider.Error{Category: provider.CategoryContextLength, Status: status, Err: errors.New("stop_reason model_context_window_exceeded")})
	}
	var content string
	if req.Schema != "" {
		found := false
		for _, b := range res.Content {
			if b.Type == "tool_use" && b.Name == ToolName {
				content, found = provider.CompactJSON(b.Input), true
				break
			}
		}
		if !found {
			return failed(provider.Malformed(status, "no call of the answer tool"))
		}
		if wrapped {
			content = provider.UnwrapAnswer(content)
		}
	} else {
		var b strings.Builder
		for _, blk := range res.Content {
			if blk.Type == "text" {
				b.WriteString(blk.Text)
			}
		}
		content = b.String()
	}
	if strings.TrimSpace(content) == "" {
		// No text and no tool input: not an answer, and not one a model
		// means; a glitch a second call mends, as in recognition.
		return failed(provider.EmptyAnswer(status))
	}
	ans := provider.ChatAnswer{
		Content:      content,
		FinishReason: string(res.StopReason),
		Model:        c.cfg.Model,
		Request:      ex.Request(c.cfg.Key),
		RawData:      ex.Response(c.cfg.Key),
	}
	ans.InputTokens, ans.OutputTokens = usage(res.Usage)
	return ans, nil
}

// usage is an answer's tokens. The prompt's are its input tokens and its
// cached ones, which Anthropic counts apart. Each count is read from its
// JSON as provider.TokenCount reads one, since the SDK turns a number past
// int64 into a negative one.
func usage(u an.Usage) (input, output int64) {
	input = provider.AddTokens(provider.AddTokens(tokens(u.JSON.InputTokens, u.InputTokens),
		tokens(u.JSON.CacheCreationInputTokens, u.CacheCreationInputTokens)),
		tokens(u.JSON.CacheReadInputTokens, u.CacheReadInputTokens))
	return min(input, provider.MaxTokenCount), tokens(u.JSON.OutputTokens, u.OutputTokens)
}

// tokens reads one count of a usage report from its JSON, else (a value
// the test built, no JSON) from the SDK's field.
func tokens(f respjson.Field, n int64) int64 {
	raw := f.Raw()
	if raw == "" {
		return provider.Tokens(n)
	}
	var c provider.TokenCount
	_ = c.UnmarshalJSON([]byte(raw)) // never fails: an unread count is 0
	return int64(c)
}

var _ provider.Chat = (*Chat)(nil)
