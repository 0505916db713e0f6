package slots

import (
	"context"
	"fmt"
	"strings"

	"github.com/docjobs/docjobs/internal/fair"
	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/provider/anthropic"
	"github.com/docjobs/docjobs/internal/provider/gemini"
	"github.com/docjobs/docjobs/internal/provider/mistral"
	"github.com/docjobs/docjobs/internal/provider/openai"
)

// Chat returns the model-stage adapter of slot (NEURAL_CLIENT_TYPE_PROVIDER_N)
// for model and key, wrapped like OCR's: retries, the slot's concurrency
// bound (shared with recognition) and the observer. Calls wait for the
// slot round-robin by the account provider.WithAccount put in their
// context. Slot 1 is Mistral's chat completions, slots 2 and 5–8 the
// OpenAI protocol, 3 Anthropic Messages, 4 Gemini. Every slot needs a
// model; every slot but 8 needs a key. Errors name what is wrong, never
// the key.
func (s *Slots) Chat(slot, model, key string) (provider.Chat, error) {
	sl, ok := Lookup(slot)
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownSlot, slot)
	}
	model = strings.TrimSpace(model)
	if model == "" {
		return nil, fmt.Errorf("%s: %w", sl.Name, ErrMissingModel)
	}
	if key == "" && sl.KeyRequired {
		return nil, fmt.Errorf("%s: %w", sl.Name, ErrMissingKey)
	}
	base := s.BaseURL(sl.N)
	var (
		chat provider.Chat
		err  error
	)
	switch sl.Protocol {
	case ProtocolMistralOCR:
		chat, err = mistral.NewChat(mistral.Config{BaseURL: base, Model: model, Key: key, HTTPClient: s.client, Timeout: s.cfg.Timeout})
	case ProtocolAnthropic:
		chat, err = anthropic.NewChat(anthropic.Config{BaseURL: base, Model: model, Key: key, HTTPClient: s.client, Timeout: s.cfg.Timeout})
	case ProtocolGemini:
		chat, err = gemini.NewChat(gemini.Config{BaseURL: base, Model: model, Key: key, HTTPClient: s.client, Timeout: s.cfg.Timeout})
	default:
		chat, err = openai.NewChat(openai.ChatConfig{
			Config: openai.Config{BaseURL: base, Model: model, Key: key, HTTPClient: s.client, Timeout: s.cfg.Timeout},
			// OpenAI and xAI take max_completion_tokens; OpenRouter, Qwen
			// and self-hosted servers document max_tokens.
			LegacyMaxTokens: sl.N >= 6,
		})
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sl.Name, err)
	}
	g := guardedChat{next: chat, sem: s.sems[sl.N], slot: sl.Name, obs: s.cfg.Observer}
	return provider.WithChatRetry(g, s.retryPolicy(sl.Name)), nil
}

// guardedChat is one chat attempt: it waits for its account's turn at the
// slot (holding no place while a retry backs off), calls the adapter and
// reports the outcome.
type guardedChat struct {
	next provider.Chat
	sem  *fair.Sem
	slot string
	obs  Observer
}

func (g guardedChat) Complete(ctx context.Context, req provider.ChatRequest) (provider.ChatAnswer, error) {
	if err := g.sem.Acquire(ctx, provider.AccountOf(ctx)); err != nil {
		return provider.ChatAnswer{}, provider.SlotWait(g.slot, err)
	}
	if err := startable(ctx, g.sem, g.slot); err != nil {
		return provider.ChatAnswer{}, err
	}
	ans, err := g.next.Complete(ctx, req)
	g.sem.Release()
	if g.obs != nil {
		g.obs.ProviderCall(g.slot, Outcome(err))
	}
	return ans, err
}
