// Package gemini reads documents with a Gemini model through the official
// google.golang.org/genai SDK (slot 4): generateContent on the Gemini API
// with the image or PDF as inline data and the transcription rules as the
// system instruction.
package gemini

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"google.golang.org/genai"

	pageimage "github.com/docjobs/docjobs/internal/convert/image"
	"github.com/docjobs/docjobs/internal/provider"
)

// Config configures one adapter.
type Config struct {
	// BaseURL is the host root, e.g. https://generativelanguage.googleapis.com;
	// requests go to {BaseURL}/v1beta/models/{model}:generateContent.
	BaseURL    string
	Model      string
	Key        string        // sent as x-goog-api-key
	HTTPClient *http.Client  // default: a plain client
	Timeout    time.Duration // per call, default provider.DefaultTimeout
}

// OCR is a Gemini model reading images and PDFs.
type OCR struct {
	cfg    Config
	models *genai.Models
}

// New returns an adapter for cfg. Everything the SDK would otherwise take
// from the environment (GOOGLE_API_KEY, GEMINI_API_KEY, the Vertex switch,
// base URLs) is set explicitly, so the server's environment never leaks
// into a caller's request; the SDK does not retry (provider.Retry does).
func New(cfg Config) (*OCR, error) {
	switch {
	case cfg.BaseURL == "":
		return nil, errors.New("gemini: base URL is required")
	case cfg.Model == "":
		return nil, errors.New("gemini: model is required")
	case cfg.Key == "":
		return nil, errors.New("gemini: key is required")
	}
	one := int32(1)
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:     cfg.Key,
		Backend:    genai.BackendGeminiAPI,
		HTTPClient: provider.RecordingClient(cfg.HTTPClient),
		HTTPOptions: genai.HTTPOptions{
			BaseURL:      strings.TrimRight(cfg.BaseURL, "/") + "/",
			APIVersion:   "v1beta",
			RetryOptions: &genai.HTTPRetryOptions{Attempts: &one},
		},
	})
	if err != nil {
		// The SDK's message prints the whole ClientConfig, key included.
		return nil, errors.New("gemini: the client could not be created from this configuration")
	}
	return &OCR{cfg: cfg, models: client.Models}, nil
}

// accepted are the inline types the Gemini API documents for images and
// documents.
var accepted = map[string]bool{
	"image/jpeg": true, "image/png": true, "image/webp": true, "image/heic": true, "image/heif": true,
	"application/pdf": true,
}

// ImageLimits are Gemini's for an image sent inline: the whole request at
// most 20 MB (the prompts take a few kilobytes of it; the image's base64 is
// held to 19 MB). Gemini documents no pixel limit: it scales large images
// down itself.
var ImageLimits = pageimage.Limits{Vendor: "Gemini", MaxBase64: 19_000_000}

// Accepts reports whether Recognize reads mime; it never calls the server.
func (o *OCR) Accepts(_ context.Context, mime string) (ok, known bool) {
	return accepted[mime], true
}

// Recognize transcribes one image or PDF. An image past ImageLimits is
// re-encoded or shrunk to fit first. Other types return an error wrapping
// provider.ErrUnsupportedInput without calling the server.
func (o *OCR) Recognize(ctx context.Context, doc provider.Document) (provider.Recognition, error) {
	if !accepted[doc.MIME] {
		return provider.Recognition{}, fmt.Errorf("gemini: %s: %w", doc.MIME, provider.ErrUnsupportedInput)
	}
	doc, err := pageimage.Fit(ctx, doc, ImageLimits)
	if err != nil {
		return provider.Recognition{}, err
	}
	format := provider.AnswerFormat(doc)
	zero := float32(0)
	noContinuation := false
	config := &genai.GenerateContentConfig{
		SystemInstruction: genai.NewContentFromText(provider.SystemPrompt(format), genai.RoleUser),
		Temperature:       &zero,
		// One request per call: the recorded exchange is the whole story
		// and our retry policy is the only one.
		AutomaticContinuation: &noContinuation,
	}
	contents := []*genai.Content{genai.NewContentFromParts([]*genai.Part{
		genai.NewPartFromBytes(doc.Data, doc.MIME),
		genai.NewPartFromText(provider.UserPrompt(doc)),
	}, genai.RoleUser)}

	var res *genai.GenerateContentResponse
	var sdkErr error
	ex, err := provider.Call(ctx, o.cfg.Timeout, o.cfg.Key, func(ctx context.Context) error {
		res, sdkErr = o.models.GenerateContent(ctx, o.cfg.Model, contents, config)
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

func answer(res *genai.GenerateContentResponse, status int) (string, *provider.Error) {
	if res == nil {
		return "", provider.Malformed(status, "no response")
	}
	if res.PromptFeedback != nil && res.PromptFeedback.BlockReason != "" {
		return "", &provider.Error{Category: provider.CategoryContentFilter, Status: status,
			Err: fmt.Errorf("prompt blocked: %s", provider.Identifier(string(res.PromptFeedback.BlockReason)))}
	}
	if len(res.Candidates) == 0 || res.Candidates[0] == nil {
		return "", provider.Malformed(status, "no candidates")
	}
	c := res.Candidates[0]
	switch c.FinishReason {
	case genai.FinishReasonMaxTokens:
		return "", &provider.Error{Category: provider.CategoryTruncated, Status: status,
			Err: errors.New("finishReason MAX_TOKENS: the answer hit the token limit")}
	case genai.FinishReasonSafety, genai.FinishReasonRecitation, genai.FinishReasonBlocklist,
		genai.FinishReasonProhibitedContent, genai.FinishReasonSPII, genai.FinishReasonImageSafety,
		genai.FinishReasonImageProhibitedContent, genai.FinishReasonImageRecitation:
		return "", &provider.Error{Category: provider.CategoryContentFilter, Status: status,
			Err: fmt.Errorf("finishReason %s", provider.Identifier(string(c.FinishReason)))}
	}
	var b strings.Builder
	if c.Content != nil {
		for _, p := range c.Content.Parts {
			// Thought summaries are the model's notes, not the page.
			if p != nil && !p.Thought {
				b.WriteString(p.Text)
			}
		}
	}
	return provider.CleanTranscription(b.String()), nil
}

// refine sharpens a classified HTTP error with the Gemini API's status
// name and error reasons, fixed identifiers (the message may echo the
// request and is not kept). Gemini answers an invalid key with 400
// INVALID_ARGUMENT and reason API_KEY_INVALID: that is an auth failure.
func refine(err, sdkErr error) error {
	pe := (*provider.Error)(nil)
	if !errors.As(err, &pe) {
		return err
	}
	var ae genai.APIError
	if !errors.As(sdkErr, &ae) {
		return err
	}
	var reasons []string
	for _, d := range ae.Details {
		if r, ok := d["reason"].(string); ok {
			reasons = append(reasons, provider.Identifier(r))
			if strings.HasPrefix(r, "API_KEY_") {
				pe.Category = provider.CategoryAuth
			}
		}
	}
	if ae.Status != "" || len(reasons) > 0 {
		pe.Err = fmt.Errorf("%w (status %q, reasons %q)", pe.Err, provider.Identifier(ae.Status), reasons)
	}
	return pe
}
