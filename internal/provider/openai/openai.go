// Package openai reads page images with a vision chat model over the
// OpenAI chat completions protocol, through the official openai-go SDK. It
// serves OpenAI itself (slot 2) and every vendor speaking the same protocol:
// xAI, OpenRouter, Alibaba Qwen and self-hosted servers such as Ollama,
// vLLM or llama.cpp (slots 5–8). The image goes as a base64 data URL in an
// image_url content part; PDFs are not sent (not every server of the
// protocol reads them): callers render pages instead.
package openai

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	oa "github.com/openai/openai-go"
	"github.com/openai/openai-go/option"

	pageimage "github.com/docjobs/docjobs/internal/convert/image"
	"github.com/docjobs/docjobs/internal/provider"
)

// Config configures one adapter: one server, one model, one key.
type Config struct {
	// BaseURL includes the version path, e.g. https://api.openai.com/v1 or
	// http://127.0.0.1:11434/v1.
	BaseURL string
	Model   string
	// Key is sent as "Authorization: Bearer <key>"; it may be empty for a
	// self-hosted server that wants none.
	Key        string
	HTTPClient *http.Client  // default: a plain client
	Timeout    time.Duration // per call, default provider.DefaultTimeout
	// ImageTypes are the MIME types the server reads; default
	// CommonImageTypes. Others are refused before any call, and callers
	// convert them first (provider.Accepter).
	ImageTypes []string
	// ImageLimits are the server's limits for one image; default
	// OpenAIImageLimits. Larger images are re-encoded or shrunk to fit
	// before the call.
	ImageLimits pageimage.Limits
	// ImageDecodes bounds the pages decoded at once to be fitted to the
	// vendor's limits, shared with the converter's (see
	// pageimage.Config.Decodes); nil: no bound.
	ImageDecodes pageimage.Decodes
}

// Image types servers of the protocol read. OpenAI documents PNG, JPEG,
// WebP and non-animated GIF. Compatible servers are not held to that: xAI
// documents JPEG and PNG only, OpenRouter passes images on to whichever
// vendor serves the model, and self-hosted servers (Ollama, llama.cpp,
// vLLM) decode with libraries whose formats depend on the build. PNG and
// JPEG are read by all of them.
var (
	OpenAIImageTypes = []string{"image/jpeg", "image/png", "image/webp", "image/gif"}
	CommonImageTypes = []string{"image/jpeg", "image/png"}
)

// Image limits of servers of the protocol. OpenAI documents 20 MB per
// image (and scales large ones down itself: no pixel limit); the servers
// that document none (OpenRouter, Qwen, self-hosted ones) are held to
// the same. xAI documents 10 MiB.
var (
	OpenAIImageLimits = pageimage.Limits{Vendor: "OpenAI", MaxBase64: 20_000_000}
	XAIImageLimits    = pageimage.Limits{Vendor: "xAI", MaxBase64: 10 << 20}
)

// OCR is a vision chat model reading page images.
type OCR struct {
	cfg    Config
	client *oa.Client
}

// New returns an adapter for cfg. The SDK is built from explicit options
// only: it does not read OPENAI_* environment variables (the server's
// environment must not leak into a caller's request) and does not retry
// (provider.Retry does).
func New(cfg Config) (*OCR, error) {
	if cfg.BaseURL == "" {
		return nil, errors.New("openai: base URL is required")
	}
	if cfg.Model == "" {
		return nil, errors.New("openai: model is required")
	}
	if len(cfg.ImageTypes) == 0 {
		cfg.ImageTypes = CommonImageTypes
	}
	if cfg.ImageLimits == (pageimage.Limits{}) {
		cfg.ImageLimits = OpenAIImageLimits
	}
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(provider.RecordingClient(cfg.HTTPClient)),
		option.WithMaxRetries(0),
	}
	if cfg.Key != "" {
		opts = append(opts, option.WithAPIKey(cfg.Key))
	}
	// A Client made from explicit options only, unlike NewClient, adds no
	// environment defaults.
	return &OCR{cfg: cfg, client: &oa.Client{Options: opts}}, nil
}

// Accepts reports whether Recognize reads mime (Config.ImageTypes); it
// never calls the server.
func (o *OCR) Accepts(_ context.Context, mime string) (ok, known bool) {
	return slices.Contains(o.cfg.ImageTypes, mime), true
}

// Recognize transcribes one image, re-encoded or shrunk first when it is
// past Config.ImageLimits. A PDF or an image type the server does not read
// returns an error wrapping provider.ErrUnsupportedInput without calling
// the server.
func (o *OCR) Recognize(ctx context.Context, doc provider.Document) (provider.Recognition, error) {
	if ok, _ := o.Accepts(ctx, doc.MIME); !ok {
		return provider.Recognition{}, fmt.Errorf("openai: %s: %w", doc.MIME, provider.ErrUnsupportedInput)
	}
	// Fitting may turn a WebP or GIF into PNG or JPEG, which every server
	// of the protocol reads.
	doc, err := pageimage.Fit(ctx, pageimage.Config{Decodes: o.cfg.ImageDecodes}, doc, o.cfg.ImageLimits)
	if err != nil {
		return provider.Recognition{}, err
	}
	format := provider.AnswerFormat(doc)
	res, ex, err := complete(ctx, provider.CallTranscription, o.client, o.cfg, recognitionBody(o.cfg.Model, doc, format))
	if err != nil {
		return provider.Recognition{}, err
	}
	text, perr := answer(res, ex.Status())
	if perr != nil {
		return provider.Recognition{}, perr
	}
	return provider.Recognition{
		Text:    text,
		Format:  format,
		Model:   o.cfg.Model,
		Request: ex.Request(o.cfg.Key),
		RawData: ex.Response(o.cfg.Key),
	}, nil
}

// recognitionBody asks for a transcription of doc's image in format.
func recognitionBody(model string, doc provider.Document, format string) *chatBody {
	return &chatBody{
		Model: model,
		Messages: []message{
			{Role: "system", Content: provider.SystemPrompt(format)},
			{Role: "user", Content: []part{
				{Type: "text", Text: provider.UserPrompt(doc)},
				{Type: "image_url", ImageURL: &imageURL{
					URL: "data:" + doc.MIME + ";base64," + base64.StdEncoding.EncodeToString(doc.Data),
					// Small print needs the full-resolution tiles.
					Detail: "high",
				}},
			}},
		},
		// No temperature or token limit: reasoning models reject a
		// temperature, and the token parameter's name differs between
		// OpenAI (max_completion_tokens) and older compatible servers
		// (max_tokens). A cut-off answer is still detected by answer.
	}
}

// answer reads the transcription out of a completion.
func answer(res *completion, status int) (string, *provider.Error) {
	if res == nil || len(res.Choices) == 0 {
		return "", provider.Malformed(status, "no choices")
	}
	c := res.Choices[0]
	switch {
	case c.Message.Refusal != "" || c.FinishReason == "content_filter":
		return "", &provider.Error{Category: provider.CategoryContentFilter, Status: status,
			Err: fmt.Errorf("finish_reason %q, refusal given: %t", c.FinishReason, c.Message.Refusal != "")}
	case c.FinishReason == "length":
		return "", &provider.Error{Category: provider.CategoryTruncated, Status: status,
			Err: errors.New("finish_reason length: the answer hit the token limit")}
	}
	return provider.Transcription(c.Message.Content, status)
}

// refine sharpens the category of a classified HTTP error with the SDK
// error's code and type, which are fixed identifiers (never its message,
// which may echo the request). OpenAI answers a spent quota or credit
// with 429 like a rate limit, but insufficient_quota (in code, or in type
// alone from older accounts): waiting does not restore it.
func refine(err, sdkErr error) error {
	pe := (*provider.Error)(nil)
	ae := (*oa.Error)(nil)
	if !errors.As(err, &pe) || !errors.As(sdkErr, &ae) {
		return err
	}
	code := strings.ToLower(ae.Code + " " + ae.Type)
	switch {
	case strings.Contains(code, "context_length"):
		pe.Category = provider.CategoryContextLength
	case strings.Contains(code, "content_filter") || strings.Contains(code, "content_policy"):
		pe.Category = provider.CategoryContentFilter
	case pe.Category == provider.CategoryRateLimit && strings.Contains(code, "insufficient_quota"):
		provider.QuotaExhausted(pe)
	}
	if ae.Code != "" || ae.Type != "" {
		pe.Err = fmt.Errorf("%w (code %q, type %q)", pe.Err, provider.Identifier(ae.Code), provider.Identifier(ae.Type))
	}
	return pe
}
