// Package slots maps the eight provider slots of the API
// (NEURAL_CLIENT_TYPE_PROVIDER_1 … _8) to vendor adapters for recognition
// (OCR) and the model stage (Chat), and wraps each adapter the same way:
// transient failures retried with backoff, a process-wide bound on calls
// in flight per slot shared by both stages and served round-robin by
// account (provider.WithAccount), and every call counted by outcome. Slot 8 with ocr.model "tesseract" or
// "tesseract:<langs>" is the local Tesseract engine instead of a server.
package slots

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/semaphore"

	pageimage "github.com/docjobs/docjobs/internal/convert/image"
	"github.com/docjobs/docjobs/internal/fair"
	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/provider/anthropic"
	"github.com/docjobs/docjobs/internal/provider/gemini"
	"github.com/docjobs/docjobs/internal/provider/mistral"
	"github.com/docjobs/docjobs/internal/provider/openai"
	"github.com/docjobs/docjobs/internal/provider/tesseract"
)

// Protocols a slot speaks.
const (
	ProtocolMistralOCR = "mistral-ocr"
	ProtocolOpenAI     = "openai-chat"
	ProtocolAnthropic  = "anthropic-messages"
	ProtocolGemini     = "gemini-generate-content"
)

// SlotPrefix is the common prefix of slot names.
const SlotPrefix = "NEURAL_CLIENT_TYPE_PROVIDER_"

// Slot describes one provider slot (DESIGN §4).
type Slot struct {
	N              int
	Name           string // NEURAL_CLIENT_TYPE_PROVIDER_N
	Vendor         string
	DefaultBaseURL string
	Protocol       string
	// KeyRequired is false only for the self-hosted slot, whose servers
	// often want no key.
	KeyRequired bool
}

// Table returns the eight slots in order. Base URLs are in the form
// DOCJOBS_PROVIDER_<N>_BASE_URL replaces: OpenAI-protocol slots include
// the /v1 path, Mistral, Anthropic and Gemini are the host root.
func Table() []Slot {
	return []Slot{
		{1, SlotPrefix + "1", "Mistral AI", "https://api.mistral.ai", ProtocolMistralOCR, true},
		{2, SlotPrefix + "2", "OpenAI", "https://api.openai.com/v1", ProtocolOpenAI, true},
		{3, SlotPrefix + "3", "Anthropic", "https://api.anthropic.com", ProtocolAnthropic, true},
		{4, SlotPrefix + "4", "Google Gemini", "https://generativelanguage.googleapis.com", ProtocolGemini, true},
		{5, SlotPrefix + "5", "xAI", "https://api.x.ai/v1", ProtocolOpenAI, true},
		{6, SlotPrefix + "6", "OpenRouter", "https://openrouter.ai/api/v1", ProtocolOpenAI, true},
		{7, SlotPrefix + "7", "Alibaba Qwen (Model Studio)", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1", ProtocolOpenAI, true},
		{8, SlotPrefix + "8", "self-hosted (Ollama, vLLM, llama.cpp)", "http://127.0.0.1:11434/v1", ProtocolOpenAI, false},
	}
}

// Lookup returns the slot named name.
func Lookup(name string) (Slot, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(name, SlotPrefix))
	if !strings.HasPrefix(name, SlotPrefix) || err != nil || n < 1 || n > 8 {
		return Slot{}, false
	}
	return Table()[n-1], true
}

// Errors callers may branch on.
var (
	ErrUnknownSlot  = errors.New("unknown provider slot")
	ErrMissingKey   = errors.New("the provider key is required")
	ErrMissingModel = errors.New("the model is required")
	ErrNoTesseract  = errors.New("local Tesseract is not available on this server")
)

// Observer is told about every provider call (each attempt), for metrics.
// outcome is "ok" or the failure's category (see outcome).
type Observer interface {
	ProviderCall(provider, outcome string)
}

// Config configures the slot table.
type Config struct {
	// BaseURLs[n] replaces slot n's default base URL (the
	// DOCJOBS_PROVIDER_<N>_BASE_URL settings, read by the config package).
	BaseURLs map[int]string
	// HTTPClient sends every vendor request (default: a client that keeps
	// up to PerSlotConcurrency idle connections per vendor host).
	HTTPClient *http.Client
	// Timeout bounds one call, each retry anew (DOCJOBS_PROVIDER_TIMEOUT,
	// read by the config package; default provider.DefaultTimeout, 120s).
	Timeout time.Duration
	// MaxAttempts bounds the calls per recognition, retries included
	// (default 4).
	MaxAttempts int
	// RetryBaseDelay is the first backoff wait (default 1s); tests
	// shorten it.
	RetryBaseDelay time.Duration
	// MaxRetryAfter caps a vendor's Retry-After (default 60s).
	MaxRetryAfter time.Duration
	// PerSlotConcurrency bounds the calls in flight per slot in this
	// process (default 8).
	PerSlotConcurrency int
	// TesseractConcurrency bounds local Tesseract runs in this process
	// (default the number of CPUs: each run is one busy core).
	TesseractConcurrency int
	// Observer, when set, counts calls by slot and outcome.
	Observer Observer
	// Tesseract, when set, opens the local engine (tesseract.New) with
	// cfg: its Langs from the model ("" for the engine's default), its
	// ImageDecodes this table's, which bounds the pages it decodes to turn
	// upright. Without it slot 8's "tesseract" models fail.
	Tesseract func(cfg tesseract.Config) (provider.OCR, error)
	// Logger receives a line per retry (default: discarded).
	Logger *slog.Logger
	// ImageDecodes bounds the pages the vision adapters decode at once to
	// fit them to their vendor's limits (pageimage.Fit), and those the
	// local Tesseract decodes to turn a page upright: give the
	// converter's (pageimage.Config.Decodes), so that one bound holds for
	// every page decoded in the process. Default: a bound of its own, of
	// the number of CPUs.
	ImageDecodes pageimage.Decodes
}

// Slots opens recognition adapters by slot. It holds no keys: each OCR
// value it returns carries its own. It is safe for concurrent use.
type Slots struct {
	cfg    Config
	client *http.Client
	// sems bound calls in flight, shared by recognition and chat and fair
	// across accounts: sems[n] for slot n, sems[0] for Tesseract.
	sems [9]*fair.Sem
}

// New returns the slot table for cfg.
func New(cfg Config) *Slots {
	if cfg.Timeout <= 0 {
		cfg.Timeout = provider.DefaultTimeout
	}
	if cfg.PerSlotConcurrency <= 0 {
		cfg.PerSlotConcurrency = 8
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.TesseractConcurrency <= 0 {
		cfg.TesseractConcurrency = runtime.NumCPU()
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Transport: pooledTransport(cfg.PerSlotConcurrency)}
	}
	if cfg.ImageDecodes == nil {
		cfg.ImageDecodes = semaphore.NewWeighted(int64(runtime.NumCPU()))
	}
	s := &Slots{cfg: cfg, client: provider.RecordingClient(cfg.HTTPClient)}
	s.sems[0] = fair.NewSem(cfg.TesseractConcurrency)
	for i := 1; i < len(s.sems); i++ {
		s.sems[i] = fair.NewSem(cfg.PerSlotConcurrency)
	}
	return s
}

// pooledTransport keeps as many idle connections to a vendor host as calls
// a slot may have in flight. Go's default keeps two, so after every burst
// of calls all but two connections were closed and the next burst paid a
// TCP and TLS handshake per call.
func pooledTransport(perHost int) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = perHost
	t.MaxIdleConns = 8 * perHost
	return t
}

// BaseURL is the base URL slot n's requests go to.
func (s *Slots) BaseURL(n int) string {
	if u := s.cfg.BaseURLs[n]; u != "" {
		return strings.TrimRight(u, "/")
	}
	if n < 1 || n > 8 {
		return ""
	}
	return Table()[n-1].DefaultBaseURL
}

// OCR returns the recognition adapter of slot (NEURAL_CLIENT_TYPE_PROVIDER_N)
// for model and key, wrapped with retries, the slot's concurrency bound and
// the observer. Errors name what is wrong, never the key.
func (s *Slots) OCR(slot, model, key string) (provider.OCR, error) {
	sl, ok := Lookup(slot)
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownSlot, slot)
	}
	model = strings.TrimSpace(model)
	if sl.N == 8 && (model == "tesseract" || strings.HasPrefix(model, "tesseract:")) {
		if s.cfg.Tesseract == nil {
			return nil, ErrNoTesseract
		}
		ocr, err := s.cfg.Tesseract(tesseract.Config{
			Langs:        strings.TrimPrefix(strings.TrimPrefix(model, "tesseract"), ":"),
			ImageDecodes: s.cfg.ImageDecodes,
		})
		if err != nil {
			return nil, fmt.Errorf("local Tesseract: %w", err)
		}
		return s.wrap(sl.Name, ocr, s.sems[0]), nil
	}
	if model == "" && sl.Protocol != ProtocolMistralOCR {
		return nil, fmt.Errorf("%s: %w", sl.Name, ErrMissingModel)
	}
	if key == "" && sl.KeyRequired {
		return nil, fmt.Errorf("%s: %w", sl.Name, ErrMissingKey)
	}
	base := s.BaseURL(sl.N)
	var (
		ocr provider.OCR
		err error
	)
	switch sl.Protocol {
	case ProtocolMistralOCR:
		ocr, err = mistral.New(mistral.Config{BaseURL: base, Model: model, Key: key, HTTPClient: s.client, Timeout: s.cfg.Timeout,
			ImageDecodes: s.cfg.ImageDecodes})
	case ProtocolAnthropic:
		ocr, err = anthropic.New(anthropic.Config{BaseURL: base, Model: model, Key: key, HTTPClient: s.client, Timeout: s.cfg.Timeout,
			ImageDecodes: s.cfg.ImageDecodes})
	case ProtocolGemini:
		ocr, err = gemini.New(gemini.Config{BaseURL: base, Model: model, Key: key, HTTPClient: s.client, Timeout: s.cfg.Timeout,
			ImageDecodes: s.cfg.ImageDecodes})
	default:
		// Only OpenAI itself is known to read WebP and GIF; the other
		// servers of its protocol get PNG or JPEG (openai.CommonImageTypes).
		var types []string
		if sl.N == 2 {
			types = openai.OpenAIImageTypes
		}
		limits := openai.OpenAIImageLimits
		if sl.N == 5 {
			limits = openai.XAIImageLimits
		}
		ocr, err = openai.New(openai.Config{BaseURL: base, Model: model, Key: key, HTTPClient: s.client, Timeout: s.cfg.Timeout,
			ImageTypes: types, ImageLimits: limits, ImageDecodes: s.cfg.ImageDecodes})
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sl.Name, err)
	}
	return s.wrap(sl.Name, ocr, s.sems[sl.N]), nil
}

func (s *Slots) wrap(slot string, ocr provider.OCR, sem *fair.Sem) provider.OCR {
	g := guarded{next: ocr, sem: sem, slot: slot, obs: s.cfg.Observer}
	return provider.WithRetry(g, s.retryPolicy(slot))
}

func (s *Slots) retryPolicy(slot string) provider.RetryPolicy {
	log := s.cfg.Logger
	return provider.RetryPolicy{
		MaxAttempts:   s.cfg.MaxAttempts,
		BaseDelay:     s.cfg.RetryBaseDelay,
		MaxRetryAfter: s.cfg.MaxRetryAfter,
		OnRetry: func(ctx context.Context, attempt int, err error, wait time.Duration) {
			log.InfoContext(ctx, "provider call failed, retrying",
				"provider", slot, "account_id", provider.AccountOf(ctx), "attempt", attempt, "error", err.Error(), "wait", wait)
		},
	}
}

// guarded is one attempt: it waits for room in the slot (not holding any
// while a retry backs off), calls the adapter and reports the outcome.
type guarded struct {
	next provider.OCR
	sem  *fair.Sem
	slot string
	obs  Observer
}

func (g guarded) Recognize(ctx context.Context, doc provider.Document) (provider.Recognition, error) {
	if err := g.sem.Acquire(ctx, provider.AccountOf(ctx)); err != nil {
		return provider.Recognition{}, provider.SlotWait(g.slot, err)
	}
	if err := startable(ctx, g.sem, g.slot); err != nil {
		return provider.Recognition{}, err
	}
	rec, err := g.next.Recognize(ctx, doc)
	g.sem.Release()
	if g.obs != nil {
		g.obs.ProviderCall(g.slot, Outcome(err))
	}
	return rec, err
}

// startable releases the place just taken and says why when ctx ended
// meanwhile: a free place is taken without looking at ctx, and a job that
// ended (a cancel, a delete) must start no call, whose key is already
// erased from the database.
func startable(ctx context.Context, sem *fair.Sem, slot string) error {
	if err := ctx.Err(); err != nil {
		sem.Release()
		return provider.SlotWait(slot, context.Cause(ctx))
	}
	return nil
}

// Accepts asks the adapter; it takes no room in the slot.
func (g guarded) Accepts(ctx context.Context, mime string) (ok, known bool) {
	return provider.Accepts(ctx, g.next, mime)
}

// Outcome is the metrics label of a call's result: "ok", the category of
// a *provider.Error, "unsupported_input", "canceled", or "error".
func Outcome(err error) string {
	pe := (*provider.Error)(nil)
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &pe):
		return string(pe.Category)
	case errors.Is(err, provider.ErrUnsupportedInput):
		return "unsupported_input"
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	}
	return "error"
}
