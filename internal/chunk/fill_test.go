package chunk

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rivo/uniseg"
)

// unbroken returns texts that no whitespace or punctuation divides, so
// only the last-resort cut applies.
func unbroken(t testing.TB) map[string]struct{ text, format string } {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 2026))
	raw := make([]byte, 30000)
	for i := range raw {
		raw[i] = byte(rng.UintN(256))
	}
	b64 := base64.StdEncoding.EncodeToString(raw)
	var cjk, letters strings.Builder
	for range 12000 {
		cjk.WriteRune(rune(0x4E00 + rng.IntN(0x9FA5-0x4E00)))
	}
	for range 60000 {
		letters.WriteByte(byte('a' + rng.IntN(26)))
	}
	return map[string]struct{ text, format string }{
		"base64 in markdown":       {b64 + "\n", FormatMarkdown},
		"base64 in html":           {"<html><body><p>" + b64 + "</p></body></html>", FormatHTML},
		"cjk without punctuation":  {cjk.String(), FormatPlain},
		"random lowercase letters": {letters.String(), FormatPlain},
		// 25,000 tokens, 6,250 under -race: still chunks enough to see
		// them full.
		"one letter repeated": {strings.Repeat("a", raceOr(200000, 50000)), FormatPlain},
	}
}

// Text without boundaries is cut at the longest prefix that fits, so its
// chunks are full: not halved until each part is at most budget bytes,
// which made about twice the chunks for base64 or CJK (audit F7).
func TestSplitFillsChunksOfUnbrokenText(t *testing.T) {
	c := counter(t)
	const budget = 1000
	for name, tt := range unbroken(t) {
		t.Run(name, func(t *testing.T) {
			chunks := split(t, tt.text, tt.format, budget)
			total := c.Count(tt.text)
			// Each chunk but the last holds at least 97% of the budget.
			most := int(float64(total)/(0.97*budget)) + 2
			if len(chunks) > most {
				t.Errorf("%d chunks for %d tokens at budget %d, want at most %d", len(chunks), total, budget, most)
			}
			for _, ch := range chunks[:len(chunks)-1] {
				if ch.Tokens < budget*9/10 {
					t.Errorf("chunk %d holds %d tokens of %d", ch.Index, ch.Tokens, budget)
				}
			}
			// A chunk cap that holds the text's tokens does not refuse it.
			if _, err := SplitAtMost(tt.text, tt.format, budget, most, c); err != nil {
				t.Errorf("SplitAtMost with a limit of %d chunks: %v", most, err)
			}
		})
	}
}

// graphemeBoundaries returns the offsets of text that end a grapheme
// cluster.
func graphemeBoundaries(text string) map[int]bool {
	at := map[int]bool{0: true}
	state, rest, n := -1, text, 0
	for rest != "" {
		var cluster string
		cluster, rest, _, state = uniseg.FirstGraphemeClusterInString(rest, state)
		n += len(cluster)
		at[n] = true
	}
	return at
}

// The last-resort cut keeps a flag, an emoji with its skin tone, a ZWJ
// family and a letter with combining accents whole (audit F6).
func TestSplitCutsUnbrokenTextBetweenGraphemeClusters(t *testing.T) {
	clusters := []string{
		"🇩🇪", "🇯🇵", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "e\u0301", "a\u0308\u0323", "क्षि", "x", "漢", "❤️",
	}
	rng := rand.New(rand.NewPCG(5, 2026))
	var b strings.Builder
	for range 6000 {
		b.WriteString(clusters[rng.IntN(len(clusters))])
	}
	text := b.String()
	boundaries := graphemeBoundaries(text)
	for _, format := range []string{FormatPlain, FormatMarkdown} {
		for _, budget := range []int{100, 300} {
			chunks := split(t, text, format, budget)
			if len(chunks) < 5 {
				t.Fatalf("%s at %d: %d chunks, want the text split", format, budget, len(chunks))
			}
			cut := 0
			for _, ch := range chunks {
				if !boundaries[ch.Start] || !boundaries[ch.End] {
					cut++
				}
			}
			if cut > 0 {
				t.Errorf("%s at %d: %d of %d chunks start or end inside a grapheme cluster", format, budget, cut, len(chunks))
			}
		}
	}
}

// In markup the last-resort cut also stays out of entity references.
func TestSplitCutsUnbrokenMarkupOutsideEntities(t *testing.T) {
	text := "<p>" + strings.Repeat("&amp;&#x1F600;&lt;e\u0301x", 800) + "</p>"
	for _, budget := range []int{100, 250} {
		chunks := split(t, text, FormatHTML, budget)
		checkHTML(t, chunks)
		for _, ch := range chunks {
			body := ch.Body()
			if amp := strings.LastIndexByte(body, '&'); amp >= 0 && !strings.Contains(body[amp:], ";") {
				t.Errorf("chunk %d ends inside an entity: %q", ch.Index, body[max(0, len(body)-12):])
			}
		}
	}
}

// A piece that fills a chunk alone still fits once the chunk re-opens
// and closes its elements around it, though tokens merge across those
// edges (">" starts a token with the letters after it).
func TestSplitFillsUnbrokenMarkupWithinTheBudget(t *testing.T) {
	alphabet := []string{"a", "b", "X", "Z", "0", "9", "_", "-", ">", ".", "'", "\"", "é", "漢", "👍🏽", "&lt;"}
	rng := rand.New(rand.NewPCG(11, 2026))
	for i := range 60 {
		var b strings.Builder
		for range 600 + rng.IntN(600) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		budget := 60 + i%50
		t.Run(fmt.Sprintf("text %d at budget %d", i, budget), func(t *testing.T) {
			checkXML(t, split(t, `<r><p a="x">`+b.String()+"</p></r>", FormatXML, budget))
			checkHTML(t, split(t, `<div><p class="x">`+b.String()+"</p></div>", FormatHTML, budget))
		})
	}
}

// A span no prefix of which fits is still cut into single characters for
// pack to report, not dropped or looped on.
func TestSplitReportsACharacterOverTheBudget(t *testing.T) {
	c := counter(t)
	if n := c.Count("🫠"); n < 2 {
		t.Fatalf("🫠 counts %d tokens; the test needs a character of several", n)
	}
	_, err := Split(strings.Repeat("🫠", 50), FormatPlain, 1, c)
	if !errors.Is(err, ErrBudgetTooSmall) {
		t.Fatalf("err = %v, want ErrBudgetTooSmall", err)
	}
}

func BenchmarkSplitUnbroken1MB(b *testing.B) {
	c := counter(b)
	rng := rand.New(rand.NewPCG(9, 9))
	raw := make([]byte, 3<<18)
	for i := range raw {
		raw[i] = byte(rng.UintN(256))
	}
	text := base64.StdEncoding.EncodeToString(raw)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := Split(text, FormatPlain, DefaultBudget, c); err != nil {
			b.Fatal(err)
		}
	}
}
