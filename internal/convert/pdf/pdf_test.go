package pdf

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/provider/tesseract"
)

// recordingOCR is a provider that answers each page with markdown naming
// the page, and records what it was sent.
type recordingOCR struct {
	mu       sync.Mutex
	docs     []provider.Document
	inFlight int
	maxIn    int
	delay    time.Duration
	format   string         // the Recognition.Format it answers in; "markdown" if empty
	fail     map[int]error  // page → error to return
	text     map[int]string // page → answer; default "# Scanned page N\n\n| a | b |\n|---|---|\n| 1 | 2 |"
}

func (f *recordingOCR) Recognize(ctx context.Context, doc provider.Document) (provider.Recognition, error) {
	f.mu.Lock()
	f.docs = append(f.docs, doc)
	f.inFlight++
	f.maxIn = max(f.maxIn, f.inFlight)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return provider.Recognition{}, ctx.Err()
		}
	}
	if err := f.fail[doc.Page]; err != nil {
		return provider.Recognition{}, err
	}
	text, ok := f.text[doc.Page]
	if !ok {
		text = fmt.Sprintf("# Scanned page %d\n\n| a | b |\n|---|---|\n| 1 | 2 |", doc.Page)
	}
	format := f.format
	if format == "" {
		format = "markdown"
	}
	return provider.Recognition{Text: text, Format: format, Model: "fake-ocr",
		Request: fmt.Sprintf(`{"page":%d,"image":"<elided>"}`, doc.Page), RawData: fmt.Sprintf(`{"text":"page %d"}`, doc.Page)}, nil
}

func (f *recordingOCR) pages() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []int
	for _, d := range f.docs {
		out = append(out, d.Page)
	}
	return out
}

func readFile(t *testing.T, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"testdata"}, parts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHybridReadsATextLayerWithoutTheProvider(t *testing.T) {
	t.Parallel()
	ocr := &recordingOCR{}
	res, err := Convert(context.Background(), Config{}, readFile(t, "pdfbox", "eu-001.pdf"), Options{Format: "html"}, ocr)
	if err != nil {
		t.Fatal(err)
	}
	if got := ocr.pages(); len(got) != 0 || res.ProviderCalls != 0 {
		t.Errorf("provider read pages %v (ProviderCalls %d), want none", got, res.ProviderCalls)
	}
	if res.Model != "pdftotext" || res.Pages != 3 || res.Request != "" || res.RawData != "" {
		t.Errorf("model %q pages %d request %q raw %q; want pdftotext, 3 pages, no exchange", res.Model, res.Pages, res.Request, res.RawData)
	}
	if n := strings.Count(res.Content, "<section data-page="); n != 3 {
		t.Errorf("%d page sections, want 3", n)
	}
}

func TestOCRAlwaysSendsEveryPageAsAJPEG(t *testing.T) {
	t.Parallel()
	ocr := &recordingOCR{}
	res, err := Convert(context.Background(), Config{DPI: 72}, readFile(t, "pdfbox", "eu-001.pdf"), Options{OCRAlways: true, Format: "html"}, ocr)
	if err != nil {
		t.Fatal(err)
	}
	if res.ProviderCalls != 3 || len(ocr.docs) != 3 {
		t.Fatalf("ProviderCalls %d, provider saw %d pages; want 3", res.ProviderCalls, len(ocr.docs))
	}
	seen := map[int]bool{}
	for _, d := range ocr.docs {
		seen[d.Page] = true
		if d.MIME != "image/jpeg" || d.Format != "html" || len(d.Data) < 4 || d.Data[0] != 0xff || d.Data[1] != 0xd8 {
			t.Errorf("page %d sent as %q format %q (%d bytes), want a JPEG for html", d.Page, d.MIME, d.Format, len(d.Data))
		}
	}
	if !seen[1] || !seen[2] || !seen[3] {
		t.Errorf("pages sent %v, want 1, 2 and 3", ocr.pages())
	}
	if res.Model != "fake-ocr" {
		t.Errorf("model %q, want the provider's fake-ocr", res.Model)
	}
	// The provider's markdown became HTML in each page's section, in order.
	for p := 1; p <= 3; p++ {
		want := fmt.Sprintf("<section data-page=\"%d\">\n<h1>Scanned page %d</h1>", p, p)
		if !strings.Contains(res.Content, want) {
			t.Errorf("content lacks %q", want)
		}
	}
	if !strings.Contains(res.Content, "<table>") || strings.Index(res.Content, `data-page="2"`) > strings.Index(res.Content, `data-page="3"`) {
		t.Errorf("content is not the pages' HTML in order:\n%s", res.Content)
	}
	if !strings.HasPrefix(res.Request, "page 1:\n") || !strings.Contains(res.Request, "page 3:\n") || !strings.Contains(res.RawData, "page 2:\n") {
		t.Errorf("request/rawData are not the per-page exchanges:\n%s\n%s", res.Request, res.RawData)
	}
}

// readsOCR is a recordingOCR that says which types it reads.
type readsOCR struct {
	recordingOCR
	reads []string
}

func (f *readsOCR) Accepts(_ context.Context, mime string) (ok, known bool) {
	return slices.Contains(f.reads, mime), true
}

func TestPagesAreRenderedAsPGMForAProviderThatReadsIt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		ocr      provider.OCR
		wantMIME string
		magic    string
	}{
		{"Tesseract reads PGM", &readsOCR{reads: []string{"image/png", "image/jpeg", "image/x-portable-graymap"}}, "image/x-portable-graymap", "P5"},
		{"a vision vendor reads JPEG", &readsOCR{reads: []string{"image/png", "image/jpeg"}}, "image/jpeg", "\xff\xd8"},
		{"a provider that cannot tell gets JPEG", &recordingOCR{}, "image/jpeg", "\xff\xd8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Convert(context.Background(), Config{DPI: 72}, readFile(t, "pdfbox", "eu-001.pdf"), Options{OCRAlways: true, Format: "html"}, tt.ocr)
			if err != nil {
				t.Fatal(err)
			}
			var docs []provider.Document
			switch o := tt.ocr.(type) {
			case *readsOCR:
				docs = o.docs
			case *recordingOCR:
				docs = o.docs
			}
			if len(docs) != 3 {
				t.Fatalf("provider saw %d pages, want 3", len(docs))
			}
			for _, d := range docs {
				if d.MIME != tt.wantMIME || !bytes.HasPrefix(d.Data, []byte(tt.magic)) {
					t.Errorf("page %d sent as %s starting %q, want %s", d.Page, d.MIME, d.Data[:min(2, len(d.Data))], tt.wantMIME)
				}
			}
		})
	}
}

// TestTesseractReadsColouredPrintOnARenderedPage runs the real pdftoppm
// and tesseract on an invoice whose line items are printed in orange
// (invoice2data's AmazonWebServices.pdf, OCR_ALWAYS): in pdftoppm's grey
// they are light grey, which one threshold for the whole page drops at
// 200 and 300 dpi alike; Tesseract's adaptive (tiled) threshold keeps them.
// Each name must be read on one line with its amount, as on the page; the
// names and amounts are the invoice's expected line items
// (AmazonWebServices.json).
func TestTesseractReadsColouredPrintOnARenderedPage(t *testing.T) {
	t.Parallel()
	ocr, err := tesseract.New(tesseract.Config{})
	if errors.Is(err, tesseract.ErrNotInstalled) {
		t.Skip("tesseract is not installed (make deps installs it)")
	}
	if err != nil {
		t.Fatal(err)
	}
	res, err := Convert(context.Background(), Config{}, readFile(t, "invoice2data", "AmazonWebServices.pdf"),
		Options{OCRAlways: true, Format: "markdown"}, ocr)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(res.Content, "\n")
	for _, item := range []struct{ name, amount string }{
		{"AWS Data Transfer", "0.01"}, {"Amazon Elastic Compute Cloud", "1.87"},
		{"Amazon Glacier", "2.22"}, {"Amazon Simple Storage Service", "0.01"},
	} {
		i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, item.name) })
		switch {
		case i < 0:
			t.Errorf("the orange line item %q is not in the recognized page", item.name)
		case !strings.Contains(lines[i], item.amount):
			t.Errorf("%q is read without its amount %s: %q", item.name, item.amount, lines[i])
		}
	}
	if t.Failed() {
		t.Logf("recognized:\n%s", res.Content)
	}
}

// Under OCR_ALWAYS a page whose only text Tesseract's layout analysis
// misses is not returned empty: secHandler.pdf's title is on a grey form
// button, and the row was DONE with no content. The engine reads the page
// again as sparse text (internal/provider/tesseract).
func TestOCRAlwaysReadsTextOnAGreyFormButton(t *testing.T) {
	t.Parallel()
	ocr, err := tesseract.New(tesseract.Config{})
	if errors.Is(err, tesseract.ErrNotInstalled) {
		t.Skip("tesseract is not installed (make deps installs it)")
	}
	if err != nil {
		t.Fatal(err)
	}
	res, err := Convert(context.Background(), Config{}, readFile(t, "encrypted", "secHandler.pdf"),
		Options{OCRAlways: true, Format: "html"}, ocr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Content, "Security Handler") {
		t.Errorf("content = %q, want the button's Security Handler", res.Content)
	}
}

// Under OCR_ALWAYS the text layer is not read, but its letters and digits
// are counted: a page whose reading has fewer than half of them says so in
// the request, so that text the engine missed (a script it was not given,
// print it took for a picture) does not pass as a blank page.
func TestOCRAlwaysNotesAReadingFarShortOfTheTextLayer(t *testing.T) {
	t.Parallel()
	// "I am a simple pdf." has 13 letters.
	const note = "\n(this reading has %d letters and digits, the page's text layer 13: the engine may have missed text)"
	tests := []struct {
		name     string
		reading  string
		format   string
		wantNote int // the reading's letters in the note; -1 no note
	}{
		{"an empty reading of a page with text", "", "markdown", 0},
		{"a reading of the page's words", "I am a simple pdf.", "markdown", -1},
		{"a reading with a word missed", "I am a pdf.", "markdown", -1},
		{"an HTML reading counts its text, not its tags", "<p class=\"abcdefghijklmnop\">simple</p>", "html", 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ocr := &recordingOCR{text: map[int]string{1: tt.reading}, format: tt.format}
			res, err := Convert(context.Background(), Config{DPI: 72}, readFile(t, "pdfbox", "simple-openoffice.pdf"),
				Options{OCRAlways: true, Format: "html"}, ocr)
			if err != nil {
				t.Fatal(err)
			}
			switch noted := strings.Contains(res.Request, "may have missed text"); {
			case tt.wantNote < 0 && noted:
				t.Errorf("request = %q, want no note", res.Request)
			case tt.wantNote >= 0 && !strings.HasSuffix(res.Request, fmt.Sprintf(note, tt.wantNote)):
				t.Errorf("request = %q, want it to end %q", res.Request, fmt.Sprintf(note, tt.wantNote))
			}
		})
	}
}

func TestHybridSendsOnlyTheScannedPage(t *testing.T) {
	t.Parallel()
	ocr := &recordingOCR{}
	res, err := Convert(context.Background(), Config{}, readFile(t, "scan-page2.pdf"), Options{Format: "html"}, ocr)
	if err != nil {
		t.Fatal(err)
	}
	if got := ocr.pages(); len(got) != 1 || got[0] != 2 || res.ProviderCalls != 1 {
		t.Fatalf("provider read pages %v (ProviderCalls %d), want only page 2", got, res.ProviderCalls)
	}
	if res.Model != "pdftotext+fake-ocr" {
		t.Errorf("model %q, want pdftotext+fake-ocr", res.Model)
	}
	for _, w := range []string{
		"<section data-page=\"1\">\n<h1>Quarterly report</h1>\n<p>This first page has a real text layer.",
		"<section data-page=\"2\">\n<h1>Scanned page 2</h1>",
	} {
		if !strings.Contains(res.Content, w) {
			t.Errorf("content lacks %q:\n%s", w, res.Content)
		}
	}
	if !strings.HasPrefix(res.Request, "page 2:\n") || strings.Contains(res.Request, "page 1:") {
		t.Errorf("request %q, want page 2's exchange only", res.Request)
	}
}

func TestAPageThatNeedsOCRFailsWithoutAProvider(t *testing.T) {
	t.Parallel()
	_, err := Convert(context.Background(), Config{}, readFile(t, "scan-page2.pdf"), Options{Format: "html"}, nil)
	if !errors.Is(err, ErrNoOCRProvider) || !strings.Contains(err.Error(), "page 2 needs OCR") {
		t.Fatalf("err = %v, want page 2 needs OCR … %v", err, ErrNoOCRProvider)
	}
}

func TestMarkdownFormatJoinsPagesWithoutSections(t *testing.T) {
	t.Parallel()
	ocr := &recordingOCR{text: map[int]string{2: "  "}}
	res, err := Convert(context.Background(), Config{DPI: 72}, readFile(t, "pdfbox", "eu-001.pdf"), Options{OCRAlways: true, Format: "markdown"}, ocr)
	if err != nil {
		t.Fatal(err)
	}
	want := "# Scanned page 1\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n# Scanned page 3\n\n| a | b |\n|---|---|\n| 1 | 2 |"
	if res.Content != want {
		t.Errorf("content = %q, want %q (page 2 was blank)", res.Content, want)
	}
	for _, d := range ocr.docs {
		if d.Format != "markdown" {
			t.Errorf("page %d asked for %q, want markdown", d.Page, d.Format)
		}
	}
}

func TestProviderHTMLIsKeptAsIs(t *testing.T) {
	t.Parallel()
	ocr := &recordingOCR{format: "html", text: map[int]string{2: "<p>scanned <b>text</b></p>"}}
	res, err := Convert(context.Background(), Config{}, readFile(t, "scan-page2.pdf"), Options{Format: "html"}, ocr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Content, "<section data-page=\"2\">\n<p>scanned <b>text</b></p>\n</section>") {
		t.Errorf("page 2 is not the provider's HTML:\n%s", res.Content)
	}
}

// TestAProviderAnswerBecomesThePageHTML covers what a vision model asked
// for an HTML fragment may write instead: its HTML is kept, anything else
// (markdown, plain text, a fence around either) becomes HTML.
func TestAProviderAnswerBecomesThePageHTML(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		format string // Recognition.Format
		answer string
		want   string // page 2's section body
	}{
		{"an HTML answer is kept", "html",
			"<h1>Invoice 7</h1>\n<p>scanned <b>text</b></p>",
			"<h1>Invoice 7</h1>\n<p>scanned <b>text</b></p>\n"},
		{"an HTML answer without block tags is kept", "html",
			"Total: <b>12</b><br>Due: 1 May",
			"Total: <b>12</b><br>Due: 1 May\n"},
		{"a markdown answer asked as HTML is converted", "html",
			"# Page title\n\nSome recognized text.",
			"<h1>Page title</h1>\n<p>Some recognized text.</p>\n"},
		{"markdown with an inline tag is still markdown", "html",
			"Invoice 7\n\n| a | b |\n|---|---|\n| 1<br>2 | 3 |",
			"<p>Invoice 7</p>\n<table>\n<thead>\n<tr>\n<th>a</th>\n<th>b</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td>1<br>2</td>\n<td>3</td>\n</tr>\n</tbody>\n</table>\n"},
		{"a plain text answer keeps its paragraphs", "html",
			"First line\nsecond line\n\nSecond paragraph, a < b > c.",
			"<p>First line<br>\nsecond line</p>\n<p>Second paragraph, a &lt; b &gt; c.</p>\n"},
		{"a fenced HTML answer is unwrapped", "html",
			"```html\n<h2>Terms</h2>\n<ul><li>one</li></ul>\n```",
			"<h2>Terms</h2>\n<ul><li>one</li></ul>\n"},
		{"a fenced markdown answer is unwrapped and converted", "html",
			"```markdown\n## Terms\n\n- one\n```",
			"<h2>Terms</h2>\n<ul>\n<li>one</li>\n</ul>\n"},
		{"the blank-page answer is an empty page", "html", provider.BlankAnswer, ""},
		{"a markdown recognition is converted", "markdown",
			"# Scanned\n\nText.",
			"<h1>Scanned</h1>\n<p>Text.</p>\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ocr := &recordingOCR{format: tt.format, text: map[int]string{2: tt.answer}}
			res, err := Convert(context.Background(), Config{}, readFile(t, "scan-page2.pdf"), Options{Format: "html"}, ocr)
			if err != nil {
				t.Fatal(err)
			}
			want := "<section data-page=\"2\">\n" + tt.want + "</section>\n"
			if !strings.Contains(res.Content, want) {
				t.Errorf("page 2 is not\n%q\nin\n%q", want, res.Content)
			}
		})
	}
}

func TestAProviderErrorFailsTheFileNamingThePage(t *testing.T) {
	t.Parallel()
	perr := &provider.Error{Category: provider.CategoryAuth, Status: 401}
	ocr := &recordingOCR{fail: map[int]error{2: perr}}
	_, err := Convert(context.Background(), Config{DPI: 72}, readFile(t, "pdfbox", "eu-001.pdf"), Options{OCRAlways: true, Format: "html"}, ocr)
	var got *provider.Error
	if !errors.As(err, &got) || got.Status != 401 || err.Error() != "provider error (category=auth, status=401) on page 2" {
		t.Fatalf("err = %v, want page 2's provider error", err)
	}
}

func TestPagesAreReadConcurrentlyWithinTheLimit(t *testing.T) {
	t.Parallel()
	ocr := &recordingOCR{delay: 150 * time.Millisecond}
	res, err := Convert(context.Background(), Config{DPI: 36, PageConcurrency: 2}, readFile(t, "pdfbox", "PDFBOX-2984-rotations.pdf"), Options{OCRAlways: true, Format: "html"}, ocr)
	if err != nil {
		t.Fatal(err)
	}
	if ocr.maxIn != 2 {
		t.Errorf("at most %d pages in flight, want 2", ocr.maxIn)
	}
	last := -1
	for p := 1; p <= 6; p++ {
		i := strings.Index(res.Content, fmt.Sprintf("<h1>Scanned page %d</h1>", p))
		if i < last {
			t.Fatalf("page %d is out of order:\n%s", p, res.Content)
		}
		last = i
	}
}

func TestEncryptedPDFs(t *testing.T) {
	t.Parallel()
	var expect map[string]json.RawMessage
	if err := json.Unmarshal(readFile(t, "encrypted", "expectations.json"), &expect); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file string
		want string // text the HTML holds; "" when the file must fail
	}{
		{"bug900822.pdf", "reference-pdftotext"},
		{"issue17215.pdf", "Dummy PDF file"},
		{"issue9972-1.pdf", "reference-pdftotext"},
		{"secHandler.pdf", "Security Handler"},
		{"issue6010_1.pdf", ""},
		{"issue21579.pdf", ""},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			var e struct {
				UserPassword string `json:"user_password"`
			}
			if err := json.Unmarshal(expect[tt.file], &e); err != nil {
				t.Fatal(err)
			}
			res, err := Convert(context.Background(), Config{}, readFile(t, "encrypted", tt.file), Options{Format: "html"}, nil)
			if e.UserPassword != "" {
				if !errors.Is(err, ErrPasswordProtected) || err.Error() != "the PDF is password-protected" {
					t.Fatalf("err = %v, want %v", err, ErrPasswordProtected)
				}
				return
			}
			if err != nil {
				t.Fatalf("a PDF that opens with the empty password failed: %v", err)
			}
			want := tt.want
			if want == "reference-pdftotext" {
				// Every word poppler's reference output has is in ours.
				ref := strings.TrimSuffix(tt.file, ".pdf") + ".reference-pdftotext.txt"
				want = strings.Fields(string(readFile(t, "encrypted", ref)))[0]
			}
			if text := strings.Join(strings.Fields(htmlText(res.Content)), " "); !strings.Contains(text, want) {
				t.Errorf("text %q lacks %q", text, want)
			}
		})
	}
}

func TestBrokenPDFsFailClearlyAndQuickly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data func(t *testing.T) []byte
		want string // message prefix; "" when the file recovers
		text string // text of a recovered file
	}{
		{"corrupt dictionaries, no startxref", func(t *testing.T) []byte { return readFile(t, "malformed", "bug1020226.pdf") }, "the PDF is damaged: ", ""},
		{"bogus xref stream widths", func(t *testing.T) []byte { return readFile(t, "malformed", "REDHAT-1531897-0.pdf") }, "the PDF is damaged: ", ""},
		{"fuzzed, no page tree", func(t *testing.T) []byte { return readFile(t, "malformed", "poppler-395-0-fuzzed.pdf") }, "the PDF is damaged: ", ""},
		{"incomplete trailer, no pages", func(t *testing.T) []byte { return readFile(t, "malformed", "issue15590.pdf") }, "the PDF is damaged: ", ""},
		{"wrong startxref offset recovers", func(t *testing.T) []byte { return readFile(t, "malformed", "helloworld-bad.pdf") }, "", "Hello, world!"},
		{"truncated to its first 2 KiB", func(t *testing.T) []byte { return readFile(t, "pdfbox", "eu-001.pdf")[:2048] }, "the PDF is damaged: ", ""},
		{"not a PDF at all", func(t *testing.T) []byte { return []byte("hello, I am text") }, "the PDF is damaged: ", ""},
		{"empty", func(t *testing.T) []byte { return nil }, "the PDF is damaged: the file is empty", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			res, err := Convert(context.Background(), Config{Timeout: 20 * time.Second}, tt.data(t), Options{Format: "html"}, nil)
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %s", d)
			}
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(res.Content, tt.text) {
					t.Errorf("content %q lacks %q", res.Content, tt.text)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || !errors.Is(err, ErrDamaged) {
				t.Fatalf("err = %v, want %q…", err, tt.want)
			}
			if strings.Contains(err.Error(), os.TempDir()) || strings.Contains(err.Error(), "docjobs-pdf-") {
				t.Errorf("message leaks the temp file: %v", err)
			}
		})
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	eu := readFile(t, "pdfbox", "eu-001.pdf")
	tests := []struct {
		name   string
		cfg    Config
		target error
		msg    string
	}{
		{"more pages than the cap", Config{MaxPages: 2}, ErrTooManyPages, "the PDF has too many pages: 3 pages, the limit is 2"},
		{"longer than the time budget", Config{Timeout: time.Millisecond}, ErrTimeout, "reading the PDF took too long (limit 1ms)"},
		{"poppler cannot start under the memory limit", Config{MemoryLimit: 1 << 20}, nil, "pdfinfo could not start under the 1 MiB memory limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Convert(context.Background(), tt.cfg, eu, Options{Format: "html"}, nil)
			if err == nil || err.Error() != tt.msg || tt.target != nil && !errors.Is(err, tt.target) {
				t.Fatalf("err = %v, want %q", err, tt.msg)
			}
		})
	}
}

func TestRenderingOutOfMemoryIsAnErrorNotABlankPage(t *testing.T) {
	t.Parallel()
	// 64 MiB is enough to start poppler and read the text, not to render a
	// Letter page at 1200 dpi.
	ocr := &recordingOCR{}
	_, err := Convert(context.Background(), Config{MemoryLimit: 64 << 20, DPI: 1200}, readFile(t, "pdfbox", "simple-openoffice.pdf"), Options{OCRAlways: true, Format: "html"}, ocr)
	if !errors.Is(err, ErrTooComplex) || !strings.Contains(err.Error(), "out of memory at the 64 MiB limit") {
		t.Fatalf("err = %v, want out of memory", err)
	}
	if len(ocr.docs) != 0 {
		t.Errorf("the provider was sent %d broken images", len(ocr.docs))
	}
}

func TestACancelledJobStopsTheConversion(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	ocr := &recordingOCR{delay: time.Minute}
	go func() {
		time.Sleep(300 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	_, err := Convert(ctx, Config{DPI: 36}, readFile(t, "pdfbox", "eu-001.pdf"), Options{OCRAlways: true, Format: "html"}, ocr)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("err = %v after %s, want context.Canceled promptly", err, time.Since(start))
	}
}

func TestTheTempFileIsRemoved(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	if _, err := Convert(context.Background(), Config{}, readFile(t, "pdfbox", "simple-openoffice.pdf"), Options{Format: "html"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Convert(context.Background(), Config{}, []byte("%PDF-1.4 broken"), Options{Format: "html"}, nil); err == nil {
		t.Fatal("a broken PDF converted")
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("left behind %v", left)
	}
}

// blockingOCR calls seen on its first page, then waits for the context:
// the conversion is mid-way, its PDF being read, until the test is done.
type blockingOCR struct {
	once sync.Once
	seen func()
}

func (f *blockingOCR) Recognize(ctx context.Context, _ provider.Document) (provider.Recognition, error) {
	f.once.Do(f.seen)
	<-ctx.Done()
	return provider.Recognition{}, ctx.Err()
}

// The PDF is a user's document: while poppler reads it (here the scanned
// page has been rendered and is with the provider) no file in the
// temporary directory holds it, so nothing of it can outlive the process.
func TestTheDocumentBeingReadIsInNoNamedFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	ctx, cancel := context.WithCancel(context.Background())
	var left []string
	ocr := &blockingOCR{seen: func() {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Error(err)
		}
		for _, e := range entries {
			left = append(left, e.Name())
		}
		cancel()
	}}
	_, err := Convert(ctx, Config{}, readFile(t, "scan-page2.pdf"), Options{Format: "html"}, ocr)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the conversion to reach the provider and be cancelled there", err)
	}
	if len(left) != 0 {
		t.Errorf("while the PDF was being read, the temporary directory held %q; want nothing", left)
	}
}

// killedMidConversion is set in the process TestAProcessKilledMidConversionLeavesNoCopy
// starts: it converts a PDF whose provider never answers, says so, and
// waits to be killed.
const killedMidConversion = "DOCJOBS_TEST_PDF_KILLED_MID_CONVERSION"

func TestAProcessKilledMidConversionLeavesNoCopy(t *testing.T) {
	if os.Getenv(killedMidConversion) != "" {
		ocr := &blockingOCR{seen: func() { fmt.Println("reading") }}
		_, _ = Convert(context.Background(), Config{}, readFile(t, "scan-page2.pdf"), Options{Format: "html"}, ocr)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestAProcessKilledMidConversionLeavesNoCopy$")
	cmd.Env = append(os.Environ(), killedMidConversion+"=1", "TMPDIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "reading\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the converting process said %q (%v), want reading", line, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("a process killed mid-conversion left %s in the temporary directory", e.Name())
	}
}

func TestMarkdownFromTheTextLayer(t *testing.T) {
	t.Parallel()
	res := convertFile(t, filepath.Join("testdata", "pdfbox", "eu-001.pdf"), Options{Format: "markdown"})
	for _, w := range []string{
		"# E-PRTR pollutants and their thresholds\n",
		"\n- the facility has a capacity exceeding at least one of the E-PRTR capacity thresholds\n",
		"\n| Carbon dioxide (CO2) | 100 million | - | - |\n",
	} {
		if !strings.Contains(res.Content, w) {
			t.Errorf("markdown lacks %q", w)
		}
	}
	if strings.Contains(res.Content, "<section") || strings.Contains(res.Content, "\n\n\n") {
		t.Errorf("markdown has sections or runs of blank lines:\n%s", res.Content)
	}
}

func TestPopplerProcessesWaitForASharedSlotWithoutChargingTheBudget(t *testing.T) {
	t.Parallel()
	procs := NewProcesses(1)
	release, err := procs.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The budget is ample for the one-page file even on a loaded machine
	// under -race (100 ms was not; 1 s failed once beside other packages'
	// race tests), and the slot is held longer than it.
	cfg := Config{Timeout: 3 * time.Second, Processes: procs}
	done := make(chan error, 1)
	go func() {
		_, err := Convert(context.Background(), cfg, readFile(t, "pdfbox", "PDFBOX-3062-002207-p1.pdf"), Options{Format: "html"}, nil)
		done <- err
	}()
	// Held past the file's whole budget: a conversion that started poppler
	// without a slot, or charged the wait, would end now.
	select {
	case err := <-done:
		t.Fatalf("the conversion ended while the only process slot was held: %v", err)
	case <-time.After(3300 * time.Millisecond):
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("after the slot was freed: %v", err)
	}
}

func TestWaitingForAProcessSlotEndsWithTheContext(t *testing.T) {
	t.Parallel()
	procs := NewProcesses(1)
	if _, err := procs.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := Convert(ctx, Config{Processes: procs}, readFile(t, "pdfbox", "PDFBOX-3062-002207-p1.pdf"), Options{Format: "html"}, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's deadline", err)
	}
}

// turnedPage is a paragraph over a table, set at turn quarter turns
// counter-clockwise: a sideways table on a portrait page (1, 3) or a page
// upside down (2). fx and fy place a run in the text's own frame, x along
// the line and y down the text.
func turnedPage(turn int) []byte {
	at := func(fx, fy float64, text string) run {
		x, y := 72+fx, 100+fy
		switch turn {
		case 1: // reads up the page, lines follow rightwards
			x, y = 72+fy, 700-fx
		case 2: // reads leftwards, lines follow up the page
			x, y = 540-fx, 700-fy
		case 3: // reads down the page, lines follow leftwards
			x, y = 540-fy, 100+fx
		}
		return run{x: x, y: y, size: 11, text: text, turn: turn}
	}
	runs := []run{
		at(0, 0, "This report lists the fruit delivered in the last quarter of the year,"),
		at(0, 14, "grouped by kind, with the quantity and the price of each delivery made."),
	}
	for r, row := range [][]string{{"Item", "Quantity", "Price"}, {"Apples", "12", "3.50"}, {"Pears", "7", "2.10"}, {"Cherries", "150", "9.99"}} {
		for c, cell := range row {
			runs = append(runs, at(150*float64(c), 60+16*float64(r), cell))
		}
	}
	return buildPDF([]testPage{{runs: runs}})
}

func TestATurnedPageIsReadInTheDirectionItsTextRuns(t *testing.T) {
	t.Parallel()
	want := "<p>This report lists the fruit delivered in the last quarter of the year, grouped by kind, with the quantity and the price of each delivery made.</p>\n" +
		"<table>\n<tr><td>Item</td><td>Quantity</td><td>Price</td></tr>\n<tr><td>Apples</td><td>12</td><td>3.50</td></tr>\n" +
		"<tr><td>Pears</td><td>7</td><td>2.10</td></tr>\n<tr><td>Cherries</td><td>150</td><td>9.99</td></tr>\n</table>\n"
	for turn, name := range []string{"upright", "reading up the page", "upside down", "reading down the page"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, err := Convert(context.Background(), Config{}, turnedPage(turn), Options{Format: "html"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(res.Content, want) {
				t.Errorf("content:\n%s\nwant it to hold:\n%s", res.Content, want)
			}
		})
	}
}

func TestAnUprightPageWithATurnedMarginNoteStaysUpright(t *testing.T) {
	t.Parallel()
	pdf := buildPDF([]testPage{{runs: []run{
		{x: 30, y: 600, size: 9, turn: 1, text: "arXiv:2411.01234v1 [cs.CL] 24 Nov 2026"},
		{x: 72, y: 100, size: 11, text: "The quick brown fox jumps over the lazy dog near the river bank."},
		{x: 72, y: 114, size: 11, text: "A second line of ordinary body text follows the first one here."},
		{x: 72, y: 128, size: 11, text: "And a third line closes this short paragraph of plain text."},
	}}})
	res, err := Convert(context.Background(), Config{}, pdf, Options{Format: "html"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"<p>The quick brown fox jumps over the lazy dog near the river bank. A second line of ordinary body text follows the first one here. And a third line closes this short paragraph of plain text.</p>",
		"arXiv:2411.01234v1 [cs.CL] 24 Nov 2026",
	} {
		if !strings.Contains(res.Content, want) {
			t.Errorf("content:\n%s\nwant it to hold %q", res.Content, want)
		}
	}
}

func TestAPagePopplerCannotLoadDoesNotRepeatThePageBefore(t *testing.T) {
	t.Parallel()
	var pages []testPage
	for _, s := range []string{"First page text", "Second page text", "Third page text"} {
		pages = append(pages, testPage{runs: []run{{x: 72, y: 100, size: 12, text: s}}})
	}
	pdf := buildPDF(pages)
	// Point the second kid at its content stream, no page, keeping the
	// length so the cross-reference table stays right.
	kids := regexp.MustCompile(`/Kids \[(\d+) 0 R (\d+) 0 R`).FindSubmatchIndex(pdf)
	if kids == nil {
		t.Fatal("no Kids array")
	}
	second := pdf[kids[4]:kids[5]]
	n, _ := strconv.Atoi(string(second))
	copy(second, fmt.Sprintf("%-*d", len(second), n-1))
	res, err := Convert(context.Background(), Config{}, pdf, Options{Format: "html"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(res.Content, "Third page text"); n != 1 || res.Pages != 3 {
		t.Errorf("%d pages, %q %d times, want 3 pages and once:\n%s", res.Pages, "Third page text", n, res.Content)
	}
}
