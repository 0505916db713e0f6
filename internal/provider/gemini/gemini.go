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
	// ImageDecodes bounds the pages decoded at once to be fitted to the
	// vendor's limits, shared with the converter's (see
	// pageimage.Config.Decodes); nil: no bound.
	ImageDecodes pageimage.Decodes
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
		HTTPClient: withLenientUsage(provider.RecordingClient(cfg.HTTPClient)),
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
	doc, err := pageimage.Fit(ctx, pageimage.Config{Decodes: o.cfg.ImageDecodes}, doc, ImageLimits)
	if err != nil {
		return provider.Recognition{}, err
	}
	format := provider.AnswerFormat(doc)
	noContinuation := false
	config := &genai.GenerateContentConfig{
		SystemInstruction: genai.NewContentFromText(provider.SystemPrompt(format), genai.RoleUser),
		Temperature:       temperature(o.cfg.Model),
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
	ex, err := provider.CallTranscription(ctx, o.cfg.Timeout, o.cfg.Key, func(ctx context.Context) error {
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
	c, perr := candidate(res, status)
	if perr != nil {
		return "", perr
	}
	return provider.Transcription(candidateText(c), status)
}

// candidate returns the answer's first candidate when it ended as an
// answer should, else the error it is: cut off, filtered, or stopped for
// a reason that is no answer.
func candidate(res *genai.GenerateContentResponse, status int) (*genai.Candidate, *provider.Error) {
	if res == nil {
		return nil, provider.Malformed(status, "no response")
	}
	if res.PromptFeedback != nil && res.PromptFeedback.BlockReason != "" {
		return nil, &provider.Error{Category: provider.CategoryContentFilter, Status: status,
			Err: fmt.Errorf("prompt blocked: %s", provider.Identifier(string(res.PromptFeedback.BlockReason)))}
	}
	if len(res.Candidates) == 0 || res.Candidates[0] == nil {
		return nil, provider.Malformed(status, "no candidates")
	}
	c := res.Candidates[0]
	switch c.FinishReason {
	case genai.FinishReasonMaxTokens:
		return nil, provider.Truncated(status, string(c.FinishReason))
	case genai.FinishReasonSafety, genai.FinishReasonRecitation, genai.FinishReasonBlocklist,
		genai.FinishReasonProhibitedContent, genai.FinishReasonSPII, genai.FinishReasonImageSafety,
		genai.FinishReasonImageProhibitedContent, genai.FinishReasonImageRecitation,
		// The model declined the input's language: asking again gets the
		// same refusal.
		genai.FinishReasonLanguage:
		return nil, &provider.Error{Category: provider.CategoryContentFilter, Status: status,
			Err: fmt.Errorf("finishReason %s", provider.Identifier(string(c.FinishReason)))}
	case genai.FinishReasonOther, genai.FinishReasonUnspecified, genai.FinishReasonMalformedFunctionCall,
		genai.FinishReasonUnexpectedToolCall, genai.FinishReasonTooManyToolCalls:
		// Generation stopped short of its natural end (OTHER: "all other
		// reasons"), mostly with no text and now and then with some: not
		// an answer, and a second call usually gives one.
		return nil, provider.Malformed(status, "finishReason "+provider.Identifier(string(c.FinishReason)))
	}
	return c, nil
}

// candidateText is the text of c's parts. Thought summaries are the
// model's notes, not the answer.
func candidateText(c *genai.Candidate) string {
	if c.Content == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range c.Content.Parts {
		if p != nil && !p.Thought {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// temperature is the temperature sent to model: 0, for the most literal
// reading, except for Gemini 3 and later, whose guide asks to keep the
// default of 1.0 ("setting it to less than 1.0 may lead to unexpected
// behavior, looping, or degraded performance"): a transcription that
// loops ends as MAX_TOKENS, a page lost. A "-latest" alias follows the
// newest models, so it keeps the default too.
func temperature(model string) *float32 {
	name := strings.TrimPrefix(strings.TrimPrefix(model, "models/"), "tunedModels/")
	rest, ok := strings.CutPrefix(name, "gemini-")
	if !ok {
		zero := float32(0)
		return &zero // Gemma and tuned models: not Gemini 3
	}
	major := 0
	for _, r := range rest {
		if r < '0' || r > '9' {
			break
		}
		major = major*10 + int(r-'0')
	}
	if major == 0 || major >= 3 {
		return nil
	}
	zero := float32(0)
	return &zero
}

// refine sharpens a classified HTTP error with the Gemini API's status
// name, error reasons and details, fixed identifiers (the message may
// echo the request and is not kept). Gemini answers an invalid key with
// 400 INVALID_ARGUMENT and reason API_KEY_INVALID: that is an auth
// failure. A 429 says in its details how long to wait (RetryInfo, in the
// body, not a Retry-After header) and which quota ran out (QuotaFailure):
// a per-day quota, or one of zero (a model the key's tier has no access
// to), is not waited out.
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
	quota := ""
	for _, d := range ae.Details {
		if r, ok := d["reason"].(string); ok {
			reasons = append(reasons, provider.Identifier(r))
			if strings.HasPrefix(r, "API_KEY_") {
				pe.Category = provider.CategoryAuth
			}
		}
		if delay, ok := d["retryDelay"].(string); ok && pe.RetryAfter == 0 {
			pe.RetryAfter = provider.ParseRetryDelay(delay)
		}
		if q := spentQuota(d); q != "" && quota == "" {
			quota = q
		}
	}
	if pe.Category == provider.CategoryRateLimit && quota != "" {
		provider.QuotaExhausted(pe)
		reasons = append(reasons, quota)
	}
	if pe.Category == provider.CategoryInvalidRequest && promptTooLong(ae.Message) {
		pe.Category = provider.CategoryContextLength
	}
	if ae.Status != "" || len(reasons) > 0 {
		pe.Err = fmt.Errorf("%w (status %q, reasons %q)", pe.Err, provider.Identifier(ae.Status), reasons)
	}
	return pe
}

// spentQuota returns the id of the first quota in a QuotaFailure detail
// that waiting seconds does not restore: one counted per day
// (GenerateRequestsPerDayPerProjectPerModel-FreeTier, which resets at
// midnight Pacific time) or one whose limit is 0. "" when there is none:
// a per-minute quota passes within the minute.
func spentQuota(detail map[string]any) string {
	if t, _ := detail["@type"].(string); !strings.HasSuffix(t, "google.rpc.QuotaFailure") {
		return ""
	}
	violations, _ := detail["violations"].([]any)
	for _, v := range violations {
		m, _ := v.(map[string]any)
		id, _ := m["quotaId"].(string)
		value, _ := m["quotaValue"].(string)
		if strings.Contains(id, "PerDay") || value == "0" {
			return provider.Identifier(id)
		}
	}
	return ""
}

// promptTooLong reports Gemini's 400 for a prompt over the model's
// context window ("The input token count (1200293) exceeds the maximum
// number of tokens allowed (1048576)."), matched by its fixed words.
func promptTooLong(message string) bool {
	return strings.HasPrefix(message, "The input token count") &&
		strings.Contains(message, "exceeds the maximum number of tokens")
}
