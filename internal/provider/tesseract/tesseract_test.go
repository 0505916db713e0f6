package tesseract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"

	convimage "github.com/docjobs/docjobs/internal/convert/image"
	"github.com/docjobs/docjobs/internal/provider"
)

func TestNewChecksLanguages(t *testing.T) {
	requireTesseract(t)
	tests := []struct {
		langs     string
		wantModel string
		wantErr   error
		errHas    string
	}{
		{langs: "", wantModel: "tesseract"},
		{langs: "eng", wantModel: "tesseract:eng"},
		{langs: "eng+zzz_notinstalled", wantErr: ErrLanguage, errHas: "zzz_notinstalled not installed"},
		{langs: "ENG", wantErr: ErrLanguage, errHas: "not a list of language names"},
		{langs: "eng+", wantErr: ErrLanguage},
		{langs: "../eng", wantErr: ErrLanguage},
		{langs: "eng --tessdata-dir /tmp", wantErr: ErrLanguage},
		{langs: strings.Repeat("a+", 150) + "a", wantErr: ErrLanguage},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%.24q", tt.langs), func(t *testing.T) {
			ocr, err := New(Config{Langs: tt.langs})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("err = %v, want %v containing %q", err, tt.wantErr, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ocr.Model() != tt.wantModel {
				t.Errorf("Model() = %q, want %q", ocr.Model(), tt.wantModel)
			}
		})
	}
}

func TestNewReportsAMissingEngine(t *testing.T) {
	_, err := New(Config{Binary: filepath.Join(t.TempDir(), "tesseract")})
	if !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("err = %v, want ErrNotInstalled", err)
	}
}

func TestRecognizeReadsAScanAsMarkdownParagraphsAndLines(t *testing.T) {
	ocr := newOCR(t, Config{})
	doc := prepared(t, "phototest.tif")
	rec, _ := recognizeShared(t, ocr, doc) // the quality test reads it too
	want := strings.TrimSpace(readTestdata(t, "phototest.gold.txt"))
	if rec.Text != want {
		t.Errorf("text:\n%s\nwant:\n%s", rec.Text, want)
	}
	if rec.Format != "markdown" || rec.Model != "tesseract" {
		t.Errorf("Format, Model = %q, %q; want markdown, tesseract", rec.Format, rec.Model)
	}
	// The TIFF gives 200 dpi, which the PNG it is handed over as does not.
	if want := fmt.Sprintf("OMP_THREAD_LIMIT=1 tesseract stdin stdout --dpi 200 -l eng --psm 1 -c thresholding_method=1 tsv < image/png (%d bytes)", len(doc.Data)); rec.Request != want {
		t.Errorf("Request = %q, want %q", rec.Request, want)
	}
	if !strings.HasPrefix(rec.RawData, "level\tpage_num\tblock_num") || !strings.Contains(rec.RawData, "\tquick") {
		t.Errorf("RawData is not the TSV: %.200q", rec.RawData)
	}
}

// Every format Prepare can hand over, and the PGM the PDF path may
// render, is read by this build's leptonica from stdin.
func TestRecognizeReadsEveryImageFormat(t *testing.T) {
	ocr := newOCR(t, Config{})
	page := textStrip(t)
	tests := []struct {
		mime   string
		encode func(*bytes.Buffer, *image.Gray) error
	}{
		{"image/png", func(b *bytes.Buffer, g *image.Gray) error { return png.Encode(b, g) }},
		{"image/jpeg", func(b *bytes.Buffer, g *image.Gray) error { return jpeg.Encode(b, g, &jpeg.Options{Quality: 90}) }},
		{"image/tiff", func(b *bytes.Buffer, g *image.Gray) error { return tiff.Encode(b, g, nil) }},
		{"image/bmp", func(b *bytes.Buffer, g *image.Gray) error { return bmp.Encode(b, g) }},
		{"image/gif", func(b *bytes.Buffer, g *image.Gray) error { return gif.Encode(b, g, nil) }},
		{"image/x-portable-graymap", func(b *bytes.Buffer, g *image.Gray) error {
			fmt.Fprintf(b, "P5\n%d %d\n255\n", g.Rect.Dx(), g.Rect.Dy())
			_, err := b.Write(g.Pix)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.mime, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			if err := tt.encode(&buf, page); err != nil {
				t.Fatal(err)
			}
			rec, err := ocr.Recognize(context.Background(), provider.Document{Data: buf.Bytes(), MIME: tt.mime, Format: "markdown"})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(rec.Text, "This is a lot of 12 point text") {
				t.Errorf("text = %q, want the first line of the page", rec.Text)
			}
		})
	}
}

func TestRecognizeGivesEmptyTextForABlankPage(t *testing.T) {
	ocr := newOCR(t, Config{})
	white := image.NewGray(image.Rect(0, 0, 850, 1100))
	for i := range white.Pix {
		white.Pix[i] = 255
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, white); err != nil {
		t.Fatal(err)
	}
	rec, err := ocr.Recognize(context.Background(), provider.Document{Data: buf.Bytes(), MIME: "image/png"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Text != "" {
		t.Errorf("text = %q, want empty", rec.Text)
	}
}

// A page on which the layout analysis finds no text, or almost none, is
// read again as sparse text at one threshold, and that reading is kept
// when it finds more words, read with confidence. The pages are PDF pages
// rendered grey at 200 dpi as the PDF path renders them (testdata/README.md):
// secHandler.pdf's only text is on a grey form button that --psm 1 does
// not see (the row was DONE and empty), and of the last page of
// PDFBOX-2984-rotations.pdf --psm 1 reads the small label, not the
// headline.
func TestRecognizeReadsAPageWithAlmostNoTextAgainAsSparseText(t *testing.T) {
	ocr := newOCR(t, Config{})
	tests := []struct {
		file string
		want []string
	}{
		{"sechandler-button.png", []string{"Security Handler"}},
		{"rotated-headlines.png", []string{"Apache PDFBox", "270°"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			rec, err := ocr.Recognize(context.Background(), provider.Document{Data: []byte(readTestdata(t, tt.file)), MIME: "image/png"})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(rec.Text, w) {
					t.Errorf("text = %q, want %q in it", rec.Text, w)
				}
			}
			if !strings.Contains(rec.Request, "read again as sparse text: tesseract stdin stdout -l eng --psm 11 -c thresholding_method=0 tsv") ||
				!strings.HasSuffix(rec.Request, ", kept") {
				t.Errorf("request = %q, want it to say the sparse reading was kept", rec.Request)
			}
		})
	}
}

// The sparse reading's rule, with a stand-in binary whose first reading
// has one word: the second is kept only with more words at a mean
// confidence of 60 or more, and a second run that fails keeps the first
// reading. It runs with the first run's arguments but --psm 11 at one
// threshold.
func TestRecognizeKeepsASparseReadingOnlyWithMoreConfidentWords(t *testing.T) {
	const word = "printf '5\\t1\\t%d\\t1\\t1\\t1\\t%d\\t0\\t10\\t10\\t%s\\t%s\\n'\n"
	words := func(conf string, texts ...string) string {
		var b strings.Builder
		for i, w := range texts {
			fmt.Fprintf(&b, word, i+1, 20*i, conf, w)
		}
		return b.String()
	}
	tests := []struct {
		name        string
		second      string // the stand-in's second run
		wantText    string
		wantRequest string
	}{
		{"more words read with confidence are kept", words("90", "Security", "Handler", "button"), "Security Handler button",
			"3 words, mean confidence 90, kept"},
		{"more words at low confidence are not", words("40", "ae", "oe", "ee"), "lone",
			"3 words, mean confidence 40, not kept"},
		{"no more words are not", words("95", "lone"), "lone",
			"1 word, mean confidence 95, not kept"},
		{"a failed run keeps the first reading", "echo broken >&2; exit 3\n", "lone",
			"not done (tesseract failed: exit status 3: broken), the first reading is kept"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			script := filepath.Join(dir, "tesseract")
			err := os.WriteFile(script, []byte(`#!/bin/sh
if [ "$1" = "--list-langs" ]; then
  printf 'List of available languages in "/x/" (2):\neng\nosd\n'
  exit 0
fi
cat > /dev/null
echo "$@" >> "`+dir+`/args"
if [ ! -e "`+dir+`/first" ]; then
  touch "`+dir+`/first"
  `+fmt.Sprintf(word, 1, 0, "96", "lone")+`  exit 0
fi
`+tt.second), 0o755)
			if err != nil {
				t.Fatal(err)
			}
			ocr, err := New(Config{Binary: script, Langs: "eng"})
			if err != nil {
				t.Fatal(err)
			}
			pgm := []byte("P5\n3 2\n255\n\x01\x02\x03\x04\x05\x06")
			rec, err := ocr.Recognize(context.Background(), provider.Document{Data: pgm, MIME: "image/x-portable-graymap", DPI: 200})
			if err != nil {
				t.Fatal(err)
			}
			if rec.Text != tt.wantText {
				t.Errorf("Text = %q, want %q", rec.Text, tt.wantText)
			}
			const first = "stdin stdout --dpi 200 -l eng --psm 1 -c thresholding_method=1 tsv"
			const sparse = "stdin stdout --dpi 200 -l eng --psm 11 -c thresholding_method=0 tsv"
			if runs := readFile(t, filepath.Join(dir, "args")); runs != first+"\n"+sparse+"\n" {
				t.Errorf("runs:\n%swant:\n%s\n%s", runs, first, sparse)
			}
			want := "; 1 word found, so read again as sparse text: "
			if !strings.Contains(tt.wantRequest, "not done") {
				want += "tesseract " + sparse + ": "
			}
			if want += tt.wantRequest; !strings.HasSuffix(rec.Request, want) {
				t.Errorf("Request = %q\nwant it to end %q", rec.Request, want)
			}
		})
	}
}

// Specks are not text: a grey page of dark specks has no text for --psm 1,
// and --psm 11 reads hundreds of "words" off it at low confidence, a
// reading that is not kept. A blank page reads nothing either way.
func TestRecognizeKeepsNoSparseReadingOfSpecks(t *testing.T) {
	ocr := newOCR(t, Config{})
	specks := image.NewGray(image.Rect(0, 0, 850, 1100))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range specks.Pix {
		specks.Pix[i] = 235 + uint8(r.IntN(20))
		if r.IntN(2000) == 0 {
			specks.Pix[i] = 40
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, specks); err != nil {
		t.Fatal(err)
	}
	rec, err := ocr.Recognize(context.Background(), provider.Document{Data: buf.Bytes(), MIME: "image/png"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Text != "" || !strings.HasSuffix(rec.Request, ", not kept") {
		t.Errorf("text = %.200q\nrequest = %q\nwant no text and the sparse reading not kept", rec.Text, rec.Request)
	}
}

func TestRecognizeRefusesWhatItCannotRead(t *testing.T) {
	ocr := newOCR(t, Config{})
	tif := []byte(readTestdata(t, "phototest.tif"))
	tests := []struct {
		name string
		doc  provider.Document
		want error
	}{
		{"a PDF", provider.Document{Data: []byte("%PDF-1.7\n"), MIME: "application/pdf"}, provider.ErrUnsupportedInput},
		{"an unknown type", provider.Document{Data: []byte("hello"), MIME: "text/plain"}, provider.ErrUnsupportedInput},
		// Tesseract would read these bytes as a list of files to open.
		{"file names posing as an image", provider.Document{Data: []byte("/etc/hostname\n"), MIME: "image/png"}, ErrUnreadableImage},
		{"an empty image", provider.Document{MIME: "image/png"}, ErrUnreadableImage},
		{"a damaged PNG", provider.Document{Data: []byte("\x89PNG\r\n\x1a\nnot really"), MIME: "image/png"}, ErrUnreadableImage},
		{"a truncated TIFF", provider.Document{Data: tif[:100], MIME: "image/tiff"}, ErrUnreadableImage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := ocr.Recognize(context.Background(), tt.doc)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Recognize = %q, %v; want %v", rec.Text, err, tt.want)
			}
		})
	}
}

// TestItSaysItReadsPageImagesNotDocuments: PDF pages are rendered as PGM
// for it (pdf.Convert asks), and what it refuses is refused beforehand.
func TestItSaysItReadsPageImagesNotDocuments(t *testing.T) {
	ocr := newOCR(t, Config{})
	for mime, want := range map[string]bool{
		"image/x-portable-graymap": true, "image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true,
		"application/pdf": false, "text/plain": false,
	} {
		if ok, known := ocr.Accepts(context.Background(), mime); ok != want || !known {
			t.Errorf("Accepts(%s) = %v, %v; want %v, known", mime, ok, known, want)
		}
	}
}

func TestRecognizeStopsAtTheTimeoutAndOnCancel(t *testing.T) {
	doc := prepared(t, "eurotext.tif") // half a second of work
	t.Run("timeout", func(t *testing.T) {
		ocr := newOCR(t, Config{Timeout: 50 * time.Millisecond})
		start := time.Now()
		_, err := ocr.Recognize(context.Background(), doc)
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("err = %v, want ErrTimeout", err)
		}
		if pe := (*provider.Error)(nil); errors.As(err, &pe) {
			t.Errorf("a timeout is a provider.Error (%v) and would be retried", pe)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("Recognize returned after %v, want the process killed at once", d)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		ocr := newOCR(t, Config{})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := ocr.Recognize(ctx, doc)
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrTimeout) {
			t.Fatalf("err = %v, want the caller's context error", err)
		}
	})
}

// A stand-in binary records how it was run: the arguments, the
// environment and the bytes on stdin.
func TestRecognizeRunsOneThreadWithTheImageOnStdinAndNoServiceEnvironment(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "tesseract")
	err := os.WriteFile(script, []byte(`#!/bin/sh
if [ "$1" = "--list-langs" ]; then
  printf 'List of available languages in "/x/" (2):\neng\nosd\n'
  exit 0
fi
echo "$@" > "`+dir+`/args"
env > "`+dir+`/env"
cat > "`+dir+`/stdin"
printf 'level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n'
printf '5\t1\t1\t1\t1\t1\t0\t0\t10\t10\t91.5\tHello\n'
printf '5\t1\t1\t1\t1\t2\t20\t0\t10\t10\t91.5\tfrom\n'
printf '5\t1\t1\t1\t1\t3\t40\t0\t10\t10\t91.5\ttesseract\n'
`), 0o755)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCJOBS_TEST_SECRET", "s3cr3t-value")
	ocr, err := New(Config{Binary: script, Langs: "eng"})
	if err != nil {
		t.Fatal(err)
	}
	doc := provider.Document{Data: append([]byte("\x89PNG\r\n\x1a\n"), "pixels"...), MIME: "image/png", Page: 3}
	rec, err := ocr.Recognize(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Text != "Hello from tesseract" || rec.Model != "tesseract:eng" {
		t.Errorf("Text, Model = %q, %q; want Hello from tesseract, tesseract:eng", rec.Text, rec.Model)
	}
	if got := readFile(t, filepath.Join(dir, "args")); got != "stdin stdout -l eng --psm 1 -c thresholding_method=1 tsv\n" {
		t.Errorf("args = %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "stdin")); got != string(doc.Data) {
		t.Errorf("stdin = %q, want the image bytes", got)
	}
	env := readFile(t, filepath.Join(dir, "env"))
	if !strings.Contains(env, "OMP_THREAD_LIMIT=1\n") {
		t.Errorf("environment lacks OMP_THREAD_LIMIT=1:\n%s", env)
	}
	if strings.Contains(env, "s3cr3t-value") {
		t.Errorf("the service's environment reached the engine:\n%s", env)
	}
}

func TestTSVToMarkdown(t *testing.T) {
	const header = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n"
	word := func(block, par, line, n int, conf, text string) string {
		return fmt.Sprintf("5\t1\t%d\t%d\t%d\t%d\t0\t0\t1\t1\t%s\t%s\n", block, par, line, n, conf, text)
	}
	structure := func(level, block, par, line int) string {
		return fmt.Sprintf("%d\t1\t%d\t%d\t%d\t0\t0\t0\t1\t1\t-1\t\n", level, block, par, line)
	}
	tests := []struct {
		name string
		tsv  string
		want string
	}{
		{"no words is an empty page", header + structure(1, 0, 0, 0) + structure(2, 1, 0, 0), ""},
		{"nothing at all is an empty page", "", ""},
		{
			"lines stay lines and paragraphs are separated by a blank line",
			header + structure(2, 1, 0, 0) + structure(3, 1, 1, 0) + structure(4, 1, 1, 1) +
				word(1, 1, 1, 1, "96", "The") + word(1, 1, 1, 2, "95", "quick") +
				structure(4, 1, 1, 2) + word(1, 1, 2, 1, "90", "brown") +
				structure(3, 1, 2, 0) + word(1, 2, 1, 1, "91", "dog") +
				structure(2, 2, 0, 0) + word(2, 1, 1, 1, "88", "jumped"),
			"The quick\nbrown\n\ndog\n\njumped",
		},
		{
			"empty words and rows without confidence are dropped, low confidence is kept",
			header + word(1, 1, 1, 1, "-1", "ghost") + word(1, 1, 1, 2, "93", " ") +
				word(1, 1, 1, 3, "12.5", "faint") + word(1, 1, 1, 4, "x", "broken"),
			"faint",
		},
		{
			"markdown characters are escaped",
			header + word(1, 1, 1, 1, "90", "<lazy>") + word(1, 1, 1, 2, "90", "*bold*") +
				word(1, 1, 1, 3, "90", "snake_case") + word(1, 1, 1, 4, "90", "`x`") + word(1, 1, 1, 5, "90", `a\b`),
			"\\<lazy> \\*bold\\* snake\\_case \\`x\\` a\\\\b",
		},
		{
			"line starts that markdown reads as blocks are escaped",
			header + word(1, 1, 1, 1, "90", "#90") + word(1, 1, 1, 2, "90", "dog") +
				word(1, 1, 2, 1, "90", ">") + word(1, 1, 2, 2, "90", "quote") +
				word(1, 1, 3, 1, "90", "---") +
				word(1, 1, 4, 1, "90", "=") +
				word(1, 1, 5, 1, "90", "~~~") +
				word(1, 1, 6, 1, "90", "-") + word(1, 1, 6, 2, "90", "item"),
			"\\#90 dog\n\\> quote\n\\---\n\\=\n\\~~~\n- item",
		},
		{
			"a second page of a multi-page input starts a paragraph",
			header + word(1, 1, 1, 1, "90", "one") + strings.Replace(word(1, 1, 1, 1, "90", "two"), "5\t1\t", "5\t2\t", 1),
			"one\n\ntwo",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tsvToMarkdown(tt.tsv); got != tt.want {
				t.Errorf("got:\n%q\nwant:\n%q", got, tt.want)
			}
		})
	}
}

// --- helpers ---

func requireTesseract(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tesseract"); err != nil {
		t.Skip("tesseract is not installed (make deps installs it)")
	}
}

func newOCR(t *testing.T, cfg Config) *OCR {
	t.Helper()
	requireTesseract(t)
	ocr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ocr.psm != "1" {
		t.Skip("the osd traineddata is not installed; these tests expect orientation detection")
	}
	return ocr
}

// prepared returns a testdata image as the image package hands it over.
func prepared(t *testing.T, name string) provider.Document {
	t.Helper()
	docs, err := convimage.Prepare(context.Background(), convimage.Config{}, []byte(readTestdata(t, name)))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 {
		t.Fatalf("%s: %d pages, want 1", name, len(docs))
	}
	return docs[0]
}

// textStrip is the first paragraph of phototest as an 8-bit grey image.
func textStrip(t *testing.T) *image.Gray {
	t.Helper()
	img, err := tiff.Decode(strings.NewReader(readTestdata(t, "phototest.tif")))
	if err != nil {
		t.Fatal(err)
	}
	r := image.Rect(0, 0, img.Bounds().Dx(), 150)
	g := image.NewGray(r)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			g.Set(x, y, color.GrayModel.Convert(img.At(x, y)))
		}
	}
	return g
}

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	return readFile(t, filepath.Join("testdata", name))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A resolution the sender knows (Document.DPI: a page re-encoded without
// its file's header) is passed to the engine as --dpi, on the second run
// of a page found turned too, where it stands before the one the image's
// header gives. One tesseract does not believe (under 70 or over 2400) is
// not passed: it would guess anyway. A stand-in binary records each run's
// arguments and reads the page turned left the first time when told to.
func TestRecognizePassesTheResolutionTheSenderKnows(t *testing.T) {
	pgm := []byte("P5\n3 2\n255\n\x01\x02\x03\x04\x05\x06")
	grey := image.NewGray(image.Rect(0, 0, 3, 2))
	var buf bytes.Buffer
	if err := png.Encode(&buf, grey); err != nil {
		t.Fatal(err)
	}
	// 11811 pixels a metre, 300 an inch.
	png300 := withChunkOf(t, buf.Bytes(), "\x00\x00\x00\x09pHYs\x00\x00\x2e\x23\x00\x00\x2e\x23\x01"+"\x78\xa5\x3f\x76", "pHYs")
	const plain = "stdin stdout -l eng --psm 1 -c thresholding_method=1 tsv"
	const at200 = "stdin stdout --dpi 200 -l eng --psm 1 -c thresholding_method=1 tsv"
	tests := []struct {
		name     string
		doc      provider.Document
		turned   bool
		wantRuns []string
	}{
		{"a resolution the sender knows", provider.Document{Data: pgm, MIME: "image/x-portable-graymap", DPI: 200}, false, []string{at200}},
		{"none known", provider.Document{Data: pgm, MIME: "image/x-portable-graymap"}, false, []string{plain}},
		{"one tesseract does not believe", provider.Document{Data: pgm, MIME: "image/x-portable-graymap", DPI: 30}, false, []string{plain}},
		{"a page found turned, both runs", provider.Document{Data: pgm, MIME: "image/x-portable-graymap", DPI: 200}, true, []string{at200, at200}},
		{"a page found turned, the sender's before the header's", provider.Document{Data: png300, MIME: "image/png", DPI: 200}, true, []string{at200, at200}},
		{"a page found turned, the header's when the sender knows none", provider.Document{Data: png300, MIME: "image/png"}, true,
			[]string{plain, "stdin stdout --dpi 300 -l eng --psm 1 -c thresholding_method=1 tsv"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.turned {
				if err := os.WriteFile(filepath.Join(dir, "turned.tsv"), []byte(fixtureTSV(t, "L", labels, amounts)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			script := filepath.Join(dir, "tesseract")
			err := os.WriteFile(script, []byte(`#!/bin/sh
if [ "$1" = "--list-langs" ]; then
  printf 'List of available languages in "/x/" (2):\neng\nosd\n'
  exit 0
fi
echo "$@" >> "`+dir+`/args"
cat > /dev/null
if [ -e "`+dir+`/turned.tsv" ]; then
  cat "`+dir+`/turned.tsv"
  rm "`+dir+`/turned.tsv"
  exit 0
fi
printf 'level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n'
printf '5\t1\t1\t1\t1\t1\t0\t0\t10\t10\t91.5\tHello\n'
printf '5\t1\t1\t1\t1\t2\t20\t0\t10\t10\t91.5\tfrom\n'
printf '5\t1\t1\t1\t1\t3\t40\t0\t10\t10\t91.5\ttesseract\n'
`), 0o755)
			if err != nil {
				t.Fatal(err)
			}
			ocr, err := New(Config{Binary: script, Langs: "eng"})
			if err != nil {
				t.Fatal(err)
			}
			rec, err := ocr.Recognize(context.Background(), tt.doc)
			if err != nil {
				t.Fatal(err)
			}
			runs := strings.Split(strings.TrimSuffix(readFile(t, filepath.Join(dir, "args")), "\n"), "\n")
			if !slices.Equal(runs, tt.wantRuns) {
				t.Errorf("runs:\n%s\nwant:\n%s", strings.Join(runs, "\n"), strings.Join(tt.wantRuns, "\n"))
			}
			if want := "OMP_THREAD_LIMIT=1 tesseract " + tt.wantRuns[0] + " < "; !strings.HasPrefix(rec.Request, want) {
				t.Errorf("Request = %q, want it to start %q", rec.Request, want)
			}
			if rec.Text != "Hello from tesseract" {
				t.Errorf("Text = %q, want the last run's Hello from tesseract", rec.Text)
			}
		})
	}
}
