package chunk

import (
	"fmt"
	"strings"
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// Encoding names understood by NewCounter's table.
const (
	EncodingO200K  = "o200k_base"
	EncodingCL100K = "cl100k_base"
	EncodingP50K   = "p50k_base"
)

// encodingFamilies maps model-name prefixes (lower case, vendor path and
// fine-tuning "ft:" stripped) to their encoding, as tiktoken's
// encoding_for_model does. The first matching prefix wins, so the
// o200k families that share the "gpt-4" prefix come before it. Models of
// other vendors (Claude, Gemini, Mistral, …) have tokenizers tiktoken does
// not ship; they count with o200k_base, the closest modern proxy.
var encodingFamilies = []struct{ prefix, encoding string }{
	{"gpt-4o", EncodingO200K},
	{"gpt-4.1", EncodingO200K},
	{"gpt-4.5", EncodingO200K},
	{"chatgpt-4o", EncodingO200K},
	{"gpt-4", EncodingCL100K}, // gpt-4, gpt-4-turbo, gpt-4-32k, gpt-4-0613
	{"gpt-3.5", EncodingCL100K},
	{"gpt-35", EncodingCL100K}, // Azure OpenAI's name for gpt-3.5-turbo
	{"davinci-002", EncodingCL100K},
	{"babbage-002", EncodingCL100K},
	{"text-embedding-3", EncodingCL100K},
	{"text-embedding-ada-002", EncodingCL100K},
	{"text-davinci-002", EncodingP50K},
	{"text-davinci-003", EncodingP50K},
	{"code-davinci", EncodingP50K},
	{"code-cushman", EncodingP50K},
}

// EncodingForModel names the BPE encoding used to count tokens for model:
// cl100k_base for gpt-3.5 and gpt-4 (not gpt-4o, gpt-4.1 or gpt-4.5),
// p50k_base for the legacy davinci/codex models and o200k_base for
// everything else, including the empty model and other vendors' models.
// A vendor path ("openai/gpt-4") is ignored, and a fine-tuned model
// ("ft:gpt-3.5-turbo-0613:org::id") counts as its base model.
func EncodingForModel(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	m = strings.TrimPrefix(m, "ft:")
	for _, f := range encodingFamilies {
		if strings.HasPrefix(m, f.prefix) {
			return f.encoding
		}
	}
	return EncodingO200K
}

// encodingCache holds each encoding once per process. Loading o200k_base
// from the embedded BPE file costs ~55 ms and ~9 MB of heap (measured
// 2026-11-23; ~176 ms and ~28 MB through tiktoken-go, DESIGN §2), so it
// must not happen per job or per chunk; this is the one package-level
// state, one sync.Once per encoding, filled on first use (no init()).
// The loader is set inside each Once because tiktoken-go's default loader
// downloads the BPE files, and this service has no such network access.
var encodingCache = map[string]*encodingSlot{
	EncodingO200K:  {},
	EncodingCL100K: {},
	EncodingP50K:   {},
}

type encodingSlot struct {
	once sync.Once
	enc  *encoder
	err  error
}

// encoder counts with one encoding. o200k_base and cl100k_base use the
// hand-written pre-tokenizers of pretokenize.go over the encoding's ranks,
// because tiktoken-go spends over 90% of its time in regexp2 matching the
// split pattern; p50k_base (legacy models, rarely used) stays on
// tiktoken-go. Both give tiktoken-go's counts exactly (see
// FuzzCountMatchesTiktoken).
type encoder struct {
	fast *bpeCounter        // o200k_base, cl100k_base
	tk   *tiktoken.Tiktoken // p50k_base
}

func (e *encoder) count(s string) int {
	if e.fast != nil {
		return e.fast.count(s)
	}
	return len(e.tk.EncodeOrdinary(s))
}

// bpeFiles names the embedded rank files of the encodings counted without
// tiktoken-go; the offline loader looks them up by base name.
var bpeFiles = map[string]struct {
	file string
	next func(string, int) int
}{
	EncodingO200K:  {"o200k_base.tiktoken", nextO200K},
	EncodingCL100K: {"cl100k_base.tiktoken", nextCL100K},
}

// loaderOnce sets tiktoken-go's process-wide BPE loader to the offline one
// exactly once, before any encoding is loaded.
var loaderOnce sync.Once

func loadEncoding(name string) (*encoder, error) {
	slot, ok := encodingCache[name]
	if !ok {
		return nil, fmt.Errorf("chunk: unknown encoding %q", name)
	}
	slot.once.Do(func() {
		slot.enc, slot.err = newEncoder(name)
		if slot.err != nil {
			slot.err = fmt.Errorf("chunk: load encoding %s: %w", name, slot.err)
		}
	})
	return slot.enc, slot.err
}

func newEncoder(name string) (*encoder, error) {
	if f, ok := bpeFiles[name]; ok {
		m, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe(f.file)
		if err != nil {
			return nil, err
		}
		ranks, err := newRankTable(m)
		if err != nil {
			return nil, err
		}
		return &encoder{fast: newBPECounter(ranks, f.next)}, nil
	}
	tk, err := loadTiktoken(name)
	if err != nil {
		return nil, err
	}
	return &encoder{tk: tk}, nil
}

// loadTiktoken loads name through tiktoken-go with the offline loader.
func loadTiktoken(name string) (*tiktoken.Tiktoken, error) {
	loaderOnce.Do(func() { tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader()) })
	return tiktoken.GetEncoding(name)
}

// Counter counts tokens exactly as the model family's tokenizer does.
// It is safe for concurrent use; create one per model family and keep it
// (the encoding behind it is loaded once per process).
type Counter struct {
	encoding string
	enc      *encoder
}

// NewCounter returns a Counter for model's encoding (see EncodingForModel).
// The first call for an encoding loads it (~55 ms for o200k_base); later
// calls share it.
func NewCounter(model string) (*Counter, error) {
	name := EncodingForModel(model)
	enc, err := loadEncoding(name)
	if err != nil {
		return nil, err
	}
	return &Counter{encoding: name, enc: enc}, nil
}

// Count returns the number of tokens in s. Special-token text such as
// "<|endoftext|>" counts as ordinary text: documents are data, never
// control sequences.
func (c *Counter) Count(s string) int {
	if s == "" {
		return 0
	}
	return c.enc.count(s)
}

// additive reports whether counts of this encoding add over a clean join
// (see cleanJoin): true for o200k_base and cl100k_base, whose patterns
// end a run of white space at its last newline (\s*[\r\n]+); false for
// p50k_base, whose pattern does not, so that no boundary is clean.
func (c *Counter) additive() bool { return c.enc.fast != nil }

// Encoding names the encoding this Counter uses.
func (c *Counter) Encoding() string { return c.encoding }
