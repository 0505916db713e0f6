package chunk

import (
	"testing"

	"github.com/docjobs/docjobs/internal/job"
)

func TestEncodingForModel(t *testing.T) {
	tests := []struct {
		name, model, want string
	}{
		{"empty model counts with o200k_base", "", EncodingO200K},
		{"gpt-4o is o200k_base", "gpt-4o-mini", EncodingO200K},
		{"gpt-4.1 is o200k_base", "gpt-4.1-2025-04-14", EncodingO200K},
		{"gpt-5 is o200k_base", "gpt-5", EncodingO200K},
		{"o3 reasoning model is o200k_base", "o3-mini", EncodingO200K},
		{"gpt-4 is cl100k_base", "gpt-4", EncodingCL100K},
		{"gpt-4-turbo is cl100k_base", "gpt-4-turbo-2024-04-09", EncodingCL100K},
		{"gpt-3.5-turbo is cl100k_base", "gpt-3.5-turbo", EncodingCL100K},
		{"vendor path and case are ignored", "OpenAI/GPT-4-0613", EncodingCL100K},
		{"legacy davinci is p50k_base", "text-davinci-003", EncodingP50K},
		{"azure gpt-35-turbo is cl100k_base", "gpt-35-turbo", EncodingCL100K},
		{"azure gpt-35-turbo-16k is cl100k_base", "gpt-35-turbo-16k", EncodingCL100K},
		{"fine-tuned gpt-3.5-turbo is cl100k_base", "ft:gpt-3.5-turbo:acme::abc", EncodingCL100K},
		{"fine-tuned gpt-4 is cl100k_base", "ft:gpt-4-0613:acme::x", EncodingCL100K},
		{"fine-tuned gpt-4o is o200k_base", "ft:gpt-4o-mini-2024-07-18:acme::x", EncodingO200K},
		{"fine-tuned davinci-002 is cl100k_base", "ft:davinci-002:acme::x", EncodingCL100K},
		{"babbage-002 is cl100k_base", "babbage-002", EncodingCL100K},
		{"fine-tuned id behind a vendor path", "openai/ft:gpt-3.5-turbo-0125:acme::y", EncodingCL100K},
		{"other vendors count with o200k_base", "claude-sonnet-4-5", EncodingO200K},
		{"gemini counts with o200k_base", "gemini-2.5-pro", EncodingO200K},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := EncodingForModel(tt.model); got != tt.want {
				t.Errorf("EncodingForModel(%q) = %s, want %s", tt.model, got, tt.want)
			}
		})
	}
}

func TestCounterCountsExactly(t *testing.T) {
	tests := []struct {
		name, model, text string
		want              int
	}{
		{"empty text is zero tokens", "gpt-4o", "", 0},
		{"o200k_base counts words", "gpt-4o", "hello world", 2},
		{"cl100k_base counts words", "gpt-4", "hello world", 2},
		{"special tokens count as text, not control", "gpt-4o", "<|endoftext|>", 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewCounter(tt.model)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Count(tt.text); got != tt.want {
				t.Errorf("Count(%q) = %d, want %d", tt.text, got, tt.want)
			}
		})
	}
}

func TestNewCounterLoadsEachEncodingOnce(t *testing.T) {
	a, err := NewCounter("gpt-4o")
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewCounter("claude-opus-4")
	if err != nil {
		t.Fatal(err)
	}
	if a.enc != b.enc {
		t.Error("two counters for o200k_base hold different encodings; the BPE was loaded twice")
	}
	if a.Encoding() != EncodingO200K {
		t.Errorf("Encoding() = %s", a.Encoding())
	}
}

func TestDefaultBudgetMatchesJob(t *testing.T) {
	if DefaultBudget != job.DefaultChunkBudgetTokens {
		t.Errorf("chunk.DefaultBudget %d != job.DefaultChunkBudgetTokens %d", DefaultBudget, job.DefaultChunkBudgetTokens)
	}
	if EffectiveBudget(0) != DefaultBudget || EffectiveBudget(1000) != 1000 {
		t.Error("EffectiveBudget: 0 must give the default and any other value itself")
	}
}

func TestCounterIsSafeForConcurrentUse(t *testing.T) {
	c, err := NewCounter("gpt-4o")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan int)
	for range 4 {
		go func() {
			n := 0
			for range 50 {
				n = c.Count("concurrent counting of the same text")
			}
			done <- n
		}()
	}
	want := c.Count("concurrent counting of the same text")
	for range 4 {
		if got := <-done; got != want {
			t.Errorf("concurrent Count = %d, want %d", got, want)
		}
	}
}
