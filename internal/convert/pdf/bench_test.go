package pdf

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docjobs/docjobs/internal/provider"
)

// BenchmarkStructure measures the Go side of text-layer recognition (parse
// poppler's word boxes and font spans, infer the structure, write HTML) on
// documents of the corpus, in pages per second. Poppler's own time is not
// in it: run `pdftotext` for that (~760 pages/s here, DESIGN §2).
func BenchmarkStructure(b *testing.B) {
	for _, doc := range []string{"cweb.pdf", "eu-001.pdf", "PDFBOX-3062-002207-p1.pdf"} {
		b.Run(doc, func(b *testing.B) {
			text, fonts, pages := popplerOutput(b, filepath.Join("testdata", "pdfbox", doc))
			b.SetBytes(int64(len(text) + len(fonts)))
			b.ResetTimer()
			for b.Loop() {
				spans := parseFonts(fonts, 1)
				for _, tp := range parseBBox(text, 1) {
					applyFonts(&tp, spans[tp.number])
					var sb strings.Builder
					renderHTML(&sb, layoutPage(&tp))
				}
			}
			b.ReportMetric(float64(pages*b.N)/b.Elapsed().Seconds(), "pages/s")
		})
	}
}

// popplerOutput runs pdftotext -bbox-layout and pdftohtml -xml on a file.
func popplerOutput(tb testing.TB, path string) (text, fonts []byte, pages int) {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	src, err := writeSource(data)
	if err != nil {
		tb.Fatal(err)
	}
	defer src.close()
	r := newRunner(Config{}.withDefaults(), src)
	ctx := context.Background()
	info, err := r.info(ctx, DefaultMaxPages)
	if err != nil {
		tb.Fatal(err)
	}
	if text, err = r.textLayer(ctx, 1, info.pages); err != nil {
		tb.Fatal(err)
	}
	if fonts, err = r.fontLayer(ctx, 1, info.pages); err != nil {
		tb.Fatal(err)
	}
	return text, fonts, info.pages
}

// BenchmarkConvert measures a whole HYBRID conversion of a text PDF:
// pdfinfo, pdftotext and pdftohtml (run side by side) and the Go side.
func BenchmarkConvert(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "pdfbox", "cweb.pdf"))
	if err != nil {
		b.Fatal(err)
	}
	pages := 0
	for b.Loop() {
		res, err := Convert(context.Background(), Config{}, data, Options{Format: "html"}, nil)
		if err != nil {
			b.Fatal(err)
		}
		pages += res.Pages
	}
	b.ReportMetric(float64(pages)/b.Elapsed().Seconds(), "pages/s")
}

// instantOCR answers every page at once, so that a benchmark measures
// poppler's rendering, not a provider.
type instantOCR struct{}

func (instantOCR) Recognize(context.Context, provider.Document) (provider.Recognition, error) {
	return provider.Recognition{Text: "page", Format: "markdown", Model: "instant"}, nil
}

// BenchmarkRenderedPages measures an OCR_ALWAYS conversion with a provider
// that answers at once: pdfinfo and one pdftoppm per page, each opening
// the file and seeking through it.
func BenchmarkRenderedPages(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "pdfbox", "eu-001.pdf"))
	if err != nil {
		b.Fatal(err)
	}
	pages := 0
	for b.Loop() {
		res, err := Convert(context.Background(), Config{DPI: 100}, data, Options{OCRAlways: true, Format: "html"}, instantOCR{})
		if err != nil {
			b.Fatal(err)
		}
		pages += res.Pages
	}
	b.ReportMetric(float64(pages)/b.Elapsed().Seconds(), "pages/s")
}
