package pdf

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzConvert runs whole files through poppler and the structure
// inference: any input ends, as HTML or as an error, within the budget.
// Seeds are the corpus PDFs small enough to mutate.
func FuzzConvert(f *testing.F) {
	for _, dir := range []string{"pdfbox", "malformed", "encrypted"} {
		paths, _ := filepath.Glob(filepath.Join("testdata", dir, "*.pdf"))
		for _, p := range paths {
			if data, err := os.ReadFile(p); err == nil && len(data) <= 64<<10 {
				f.Add(data)
			}
		}
	}
	f.Add(scanFixture())
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 256<<10 {
			t.Skip("heavy input")
		}
		start := time.Now()
		res, err := Convert(context.Background(), Config{MaxPages: 4, Timeout: 20 * time.Second, DPI: 36},
			data, Options{Format: "html"}, &recordingOCR{})
		if d := time.Since(start); d > 30*time.Second {
			t.Fatalf("took %s", d)
		}
		if err != nil {
			return
		}
		if !utf8.ValidString(res.Content) || !strings.HasPrefix(res.Content, `<section data-page="1">`) {
			t.Fatalf("content %q", res.Content)
		}
	})
}

// ourTags are the elements the text-layer HTML is made of.
var ourTags = regexp.MustCompile(`</?(section|h[1-3]|p|ul|ol|li|table|tr|td)>|<section data-page="\d+">`)

// FuzzLayout feeds arbitrary bytes to the bbox parser and the structure
// inference: the HTML must stay valid UTF-8 made of our tags only, with all
// text escaped.
func FuzzLayout(f *testing.F) {
	f.Add([]byte(`<page width="612" height="792"><flow><block><line xMin="72" yMin="100" xMax="300" yMax="112">` +
		`<word xMin="72" yMin="100" xMax="80" yMax="112">•</word><word xMin="85" yMin="100" xMax="300" yMax="112">a&amp;b &lt;i&gt;</word></line></block></flow></page>`))
	f.Add([]byte(`<page><line xMin="-1e9" yMin="NaN"><word>x</word></line><word>`))
	if text, _, _ := popplerOutputQuiet(filepath.Join("testdata", "pdfbox", "eu-001.pdf")); text != nil {
		f.Add(text)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, tp := range parseBBox(data, 1) {
			var sb strings.Builder
			renderHTML(&sb, layoutPage(&tp))
			out := sb.String()
			if !utf8.ValidString(out) {
				t.Fatalf("invalid UTF-8: %q", out)
			}
			if rest := ourTags.ReplaceAllString(out, ""); strings.ContainsAny(rest, "<>") {
				t.Fatalf("unescaped markup in %q", out)
			}
			var md strings.Builder
			renderMarkdown(&md, layoutPage(&tp))
		}
	})
}

// popplerOutputQuiet is popplerOutput for seeding: nil when poppler fails.
func popplerOutputQuiet(path string) (text, fonts []byte, pages int) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, 0
	}
	src, err := writeSource(data)
	if err != nil {
		return nil, nil, 0
	}
	defer src.close()
	r := newRunner(Config{}.withDefaults(), src)
	text, err = r.textLayer(context.Background(), 1, 1)
	if err != nil {
		return nil, nil, 0
	}
	return text, nil, 1
}
