package gemini

import (
	"context"
	"strings"

	"google.golang.org/genai"

	"github.com/docjobs/docjobs/internal/provider"
)

// Chat is a Gemini model answering model-stage requests.
type Chat struct {
	cfg    Config
	models *genai.Models
}

// NewChat returns a model-stage adapter for cfg, built like New's.
func NewChat(cfg Config) (*Chat, error) {
	o, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return &Chat{cfg: o.cfg, models: o.models}, nil
}

// Complete asks one question. With a schema the answer is constrained by
// responseMimeType application/json and responseJsonSchema, which takes
// JSON Schema as it is (responseSchema takes only Google's OpenAPI
// subset); any root type is allowed, so nothing is wrapped. The schema
// goes out as the job wrote it, in its key order (responseSchema,
// schemaBody).
func (c *Chat) Complete(ctx context.Context, req provider.ChatRequest) (provider.ChatAnswer, error) {
	noContinuation := false
	config := &genai.GenerateContentConfig{
		Temperature:           temperature(c.cfg.Model),
		AutomaticContinuation: &noContinuation,
	}
	if req.System != "" {
		config.SystemInstruction = genai.NewContentFromText(req.System, genai.RoleUser)
	}
	if req.MaxTokens > 0 {
		config.MaxOutputTokens = int32(min(req.MaxTokens, 1<<30))
	}
	if req.Schema != "" {
		schema, err := responseSchema(req.Schema)
		if err != nil {
			return provider.ChatAnswer{}, err
		}
		config.ResponseMIMEType = "application/json"
		config.HTTPOptions = schemaBody(schema)
	}
	contents := []*genai.Content{genai.NewContentFromText(req.User, genai.RoleUser)}

	var res *genai.GenerateContentResponse
	var sdkErr error
	ex, err := provider.CallChat(ctx, c.cfg.Timeout, c.cfg.Key, func(ctx context.Context) error {
		res, sdkErr = c.models.GenerateContent(ctx, c.cfg.Model, contents, config)
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
			a.InputTokens, a.OutputTokens = usage(res.UsageMetadata)
		}
		return a, err
	}
	cand, perr := candidate(res, status)
	if perr != nil {
		return failed(perr)
	}
	content := candidateText(cand)
	if strings.TrimSpace(content) == "" {
		return failed(provider.EmptyAnswer(status))
	}
	ans := provider.ChatAnswer{
		Content:      content,
		FinishReason: string(cand.FinishReason),
		Model:        c.cfg.Model,
		Request:      ex.Request(c.cfg.Key),
		RawData:      ex.Response(c.cfg.Key),
	}
	ans.InputTokens, ans.OutputTokens = usage(res.UsageMetadata)
	return ans, nil
}

var _ provider.Chat = (*Chat)(nil)
