// Package anthropic reads documents with a Claude vision model through the
// official anthropic-sdk-go Messages API (slot 3): an image goes as a
// base64 image block, a PDF as a base64 document block, with the
// transcription rules as the system prompt.
package anthropic

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	an "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	pageimage "github.com/docjobs/docjobs/internal/convert/image"
	"github.com/docjobs/docjobs/internal/provider"
)

// DefaultMaxTokens bounds an answer when Config.MaxTokens is 0. The Messages
// API requires a bound; a dense page transcribes to two or three thousand
// tokens, and every Claude model from 3.5 on allows 8192. More is not asked
// by default: Anthropic estimates an account's output tokens per minute
// from max_tokens when a call starts, so a larger bound on every call of a
// burst spends the rate limit on tokens never written.
const DefaultMaxTokens = 8192

// claude3MaxTokens is the output limit of the Claude 3 models before 3.5
// (Haiku 3, still served, and Sonnet 3 and Opus 3): the API refuses a
// larger max_tokens ("max_tokens: 8192 > 4096, which is the maximum allowed
// number of output tokens"), which failed every call of a job on them.
const claude3MaxTokens = 4096

// defaultMaxTokens is the bound for model when the configuration sets none.
func defaultMaxTokens(model string) int64 {
	for _, family := range []string{"claude-3-haiku", "claude-3-sonnet", "claude-3-opus"} {
		if strings.Contains(model, family) {
			return claude3MaxTokens
		}
	}
	return DefaultMaxTokens
}

// Config configures one adapter.
type Config struct {
	// BaseURL is the host root, e.g. https://api.anthropic.com.
	BaseURL    string
	Model      string
	Key        string        // sent as x-api-key
	HTTPClient *http.Client  // default: a plain client
	Timeout    time.Duration // per call, default provider.DefaultTimeout
	MaxTokens  int64         // per answer, default DefaultMaxTokens (4096 for Claude 3 before 3.5)
	// ImageDecodes bounds the pages decoded at once to be fitted to the
	// vendor's limits, shared with the converter's (see
	// pageimage.Config.Decodes); nil: no bound.
	ImageDecodes pageimage.Decodes
}

// OCR is a Claude model reading images and PDFs.
type OCR struct {
	cfg      Config
	messages an.MessageService
}

// New returns an adapter for cfg. The SDK reads no ANTHROPIC_* environment
// or profile (WithoutEnvironmentDefaults) and does not retry
// (provider.Retry does).
func New(cfg Config) (*OCR, error) {
	switch {
	case cfg.BaseURL == "":
		return nil, errors.New("anthropic: base URL is required")
	case cfg.Model == "":
		return nil, errors.New("anthropic: model is required")
	case cfg.Key == "":
		return nil, errors.New("anthropic: key is required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = provider.DefaultTimeout
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = defaultMaxTokens(cfg.Model)
	}
	client := an.NewClient(
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(provider.RecordingClient(cfg.HTTPClient)),
		option.WithAPIKey(cfg.Key),
		option.WithMaxRetries(0),
		// An explicit timeout also spares the SDK's refusal of non-streaming
		// calls it guesses would be slow from max_tokens.
		option.WithRequestTimeout(cfg.Timeout),
	)
	return &OCR{cfg: cfg, messages: client.Messages}, nil
}

// ImageLimits are Anthropic's for one image: larger than 8000×8000 pixels
// is refused (2000×2000 in a request of more than 20 images; we send one),
// and so is more than 5 MB, counted on the base64 text ("image exceeds 5
// MB maximum: 5316036 bytes > 5242880 bytes").
var ImageLimits = pageimage.Limits{Vendor: "Anthropic", MaxSide: 8000, MaxBase64: 5 << 20}

var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// Accepts reports whether Recognize reads mime; it never calls the server.
func (o *OCR) Accepts(_ context.Context, mime string) (ok, known bool) {
	return mime == "application/pdf" || imageTypes[mime], true
}

// Recognize transcribes one image or PDF. An image past ImageLimits is
// shrunk or re-encoded to fit first. Other types return an error wrapping
// provider.ErrUnsupportedInput without calling the server.
func (o *OCR) Recognize(ctx context.Context, doc provider.Document) (provider.Recognition, error) {
	if imageTypes[doc.MIME] {
		var err error
		if doc, err = pageimage.Fit(ctx, pageimage.Config{Decodes: o.cfg.ImageDecodes}, doc, ImageLimits); err != nil {
			return provider.Recognition{}, err
		}
	}
	data := base64.StdEncoding.EncodeToString(doc.Data)
	var block an.ContentBlockParamUnion
	switch {
	case doc.MIME == "application/pdf":
		block = an.NewDocumentBlock(an.Base64PDFSourceParam{Data: data})
	case imageTypes[doc.MIME]:
		block = an.NewImageBlockBase64(doc.MIME, data)
	default:
		return provider.Recognition{}, fmt.Errorf("anthropic: %s: %w", doc.MIME, provider.ErrUnsupportedInput)
	}
	format := provider.AnswerFormat(doc)
	params := an.MessageNewParams{
		Model:       an.Model(o.cfg.Model),
		MaxTokens:   o.cfg.MaxTokens,
		Temperature: an.Float(0),
		System:      []an.TextBlockParam{{Text: provider.SystemPrompt(format)}},
		Messages: []an.MessageParam{
			// The document first, then the instruction: Anthropic's advice
			// for documents and images.
			an.NewUserMessage(block, an.NewTextBlock(provider.UserPrompt(doc))),
		},
	}
	var res *an.Message
	var sdkErr error
	ex, err := provider.CallTranscription(ctx, o.cfg.Timeout, o.cfg.Key, func(ctx context.Context) error {
		res, sdkErr = o.messages.New(ctx, params)
		return sdkErr
	})
	if err != nil {
		return provider.Recognition{}, refine(err, sdkErr)
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

func answer(res *an.Message, status int) (string, *provider.Error) {
	if res == nil {
		return "", provider.Malformed(status, "no message")
	}
	switch res.StopReason {
	case an.StopReasonRefusal:
		return "", &provider.Error{Category: provider.CategoryContentFilter, Status: status, Err: errors.New("stop_reason refusal")}
	case an.StopReasonMaxTokens:
		return "", &provider.Error{Category: provider.CategoryTruncated, Status: status, Err: errors.New("stop_reason max_tokens: the answer hit the token limit")}
	case an.StopReasonModelContextWindowExceeded:
		return "", &provider.Error{Category: provider.CategoryContextLength, Status: status, Err: errors.New("stop_reason model_context_window_exceeded")}
	}
	var b strings.Builder
	for _, c := range res.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	if res.Type != "message" && len(res.Content) == 0 {
		return "", provider.Malformed(status, "not a message")
	}
	return provider.Transcription(b.String(), status)
}

// refine sharpens a classified HTTP error with Anthropic's error type, a
// fixed identifier (the message may echo the request and is not kept). A
// prompt over the model's context window is a 400 invalid_request_error
// told apart only by its message's fixed opening.
func refine(err, sdkErr error) error {
	pe := (*provider.Error)(nil)
	ae := (*an.Error)(nil)
	if !errors.As(err, &pe) || !errors.As(sdkErr, &ae) {
		return err
	}
	t := string(ae.Type())
	switch t {
	case "overloaded_error", "api_error":
		pe.Category = provider.CategoryServer
	case "timeout_error":
		pe.Category = provider.CategoryTimeout
	case "invalid_request_error":
		if promptTooLong(ae.RawJSON()) {
			pe.Category = provider.CategoryContextLength
		}
	}
	if t != "" {
		pe.Err = fmt.Errorf("%w (type %q)", pe.Err, provider.Identifier(t))
	}
	return pe
}

// promptTooLong reports Anthropic's error body for a prompt over the
// context window: {"type":"error","error":{"type":"invalid_request_error",
// "message":"prompt is too long: 208310 tokens > 200000 maximum"}}.
func promptTooLong(body string) bool {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(body), &e) != nil {
		return false
	}
	return strings.HasPrefix(e.Error.Message, "prompt is too long")
}
