package tesseract

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/image/tiff"

	convimage "github.com/docjobs/docjobs/internal/convert/image"
	"github.com/docjobs/docjobs/internal/provider"
)

// qualityPages are the corpus scans with human ground truth. The two
// magazine pages take about three seconds each; -short leaves them out.
var qualityPages = []struct {
	image, truth string
	long         bool
}{
	{"8071_093.3B.tif", "8071_093.3B.txt", true},
	{"8087_054.3B.tif", "8087_054.3B.txt", true},
	{"eurotext.tif", "eurotext.txt", false},
	{"phototest.tif", "phototest.gold.txt", false},
	{"phototest-rotated-180.png", "phototest-rotated-180.gold.txt", false},
	{"phototest-rotated-L.png", "phototest-rotated-L.gold.txt", false},
	{"phototest-rotated-R.png", "phototest-rotated-R.gold.txt", false},
}

// TestQualityMatchesTesseractByHand is the acceptance check for the local
// engine: on each scan, the character error rate of what this package
// returns (prepared by the image package, markdown read back as text) is
// within 10% of running `tesseract IMAGE stdout` by hand (the issue's
// bar; see allowedCER). The table it logs is the one in docs/quality.md
// (go test -run Quality -v ./internal/provider/tesseract).
func TestQualityMatchesTesseractByHand(t *testing.T) {
	t.Parallel() // the engine runs one thread (OMP_THREAD_LIMIT=1): two pages at once
	ocr := newOCR(t, Config{})
	type result struct {
		image, size        string
		ours, hand         float64
		oursSecs, handSecs float64
	}
	var (
		mu      sync.Mutex
		results = map[string]result{}
	)
	t.Run("pages", func(t *testing.T) {
		for _, p := range qualityPages {
			t.Run(p.image, func(t *testing.T) {
				if p.long && testing.Short() {
					t.Skip("a magazine page takes seconds; run without -short")
				}
				t.Parallel()
				truth := readTestdata(t, p.truth)

				// Reading phototest is shared with another test: the
				// seconds are those of the one run.
				start := time.Now()
				doc := prepared(t, p.image)
				preparing := time.Since(start)
				rec, reading := recognizeShared(t, ocr, doc)
				oursSecs := (preparing + reading).Seconds()
				ours := cer(markdownToText(rec.Text), truth)

				start = time.Now()
				hand := byHand(t, filepath.Join("testdata", p.image))
				handSecs := time.Since(start).Seconds()
				handCER := cer(hand, truth)

				if limit := allowedCER(handCER); ours > limit {
					t.Errorf("CER %.4f, by hand %.4f: over the %.4f allowed\nours:\n%s", ours, handCER, limit, rec.Text)
				}
				cfg, err := png.DecodeConfig(bytes.NewReader(doc.Data))
				if err != nil {
					t.Fatal(err)
				}
				size := fmt.Sprintf("%d×%d, %d KB", cfg.Width, cfg.Height, len(readTestdata(t, p.image))/1000)
				mu.Lock()
				results[p.image] = result{p.image, size, ours, handCER, oursSecs, handSecs}
				mu.Unlock()
			})
		}
	})
	var table strings.Builder
	table.WriteString("| image | size | our CER | by-hand CER | our seconds | by-hand seconds |\n|---|---|---|---|---|---|\n")
	for _, p := range qualityPages {
		if r, ok := results[p.image]; ok {
			fmt.Fprintf(&table, "| `%s` | %s | %.4f | %.4f | %.2f | %.2f |\n", r.image, r.size, r.ours, r.hand, r.oursSecs, r.handSecs)
		}
	}
	t.Logf("\n%s", table.String())
}

// TestRecognizeKeepsInvoiceAmountsWithTheirLabels reads a scanned invoice
// whose line items tesseract cuts into a block of labels and a block of
// amounts: each item's amount (from invoice2data's expected extraction)
// must be on the line that names the item, as it is on the page, not in a
// list of amounts elsewhere.
func TestRecognizeKeepsInvoiceAmountsWithTheirLabels(t *testing.T) {
	t.Parallel() // the engine runs one thread (OMP_THREAD_LIMIT=1): two pages at once
	ocr := newOCR(t, Config{})
	var expected []struct {
		Lines []struct {
			Name      string `json:"name"`
			PriceUnit string `json:"price_unit"`
		} `json:"lines"`
	}
	if err := json.Unmarshal([]byte(readTestdata(t, "AmazonWebServices.json")), &expected); err != nil {
		t.Fatal(err)
	}
	if len(expected) != 1 || len(expected[0].Lines) == 0 {
		t.Fatalf("AmazonWebServices.json: want one invoice with line items, got %+v", expected)
	}
	rec, _ := recognizeShared(t, ocr, prepared(t, "AmazonWebServices.png"))
	lines := strings.Split(markdownToText(rec.Text), "\n")
	for _, item := range expected[0].Lines {
		found := false
		for _, l := range lines {
			if !strings.Contains(l, item.Name) {
				continue
			}
			found = true
			if !strings.Contains(l, "$"+item.PriceUnit) {
				t.Errorf("%q is read apart from its amount $%s: %q", item.Name, item.PriceUnit, l)
			}
		}
		if !found {
			t.Errorf("no line holds %q", item.Name)
		}
	}
	if t.Failed() {
		t.Logf("recognized:\n%s", rec.Text)
	}
}

// TestRecognizeReadsTextBesideASidebarAsText reads pages drawn for this
// test (testdata/sidebars) where a paragraph is set on the line spacing of
// a sidebar of short lines beside it: a newsletter's contents, a CV's
// margin list, opening hours on the right. Each line of the paragraph is
// level with one of the sidebar's, but the two are text, not a table's
// columns: both come out whole, each line followed by its own next line,
// and no table is written.
func TestRecognizeReadsTextBesideASidebarAsText(t *testing.T) {
	t.Parallel() // the engine runs one thread (OMP_THREAD_LIMIT=1): two pages at once
	ocr := newOCR(t, Config{})
	tests := []struct {
		image              string
		sidebar, paragraph []string // consecutive lines of each, as on the page
	}{
		{
			"newsletter.png",
			[]string{"In this issue", "Chair's letter 1", "Plot inspections 2", "Seed swap 3", "Compost corner 4"},
			[]string{"Dear members, what a season it has been. The late frost in May",
				"took most of the early potatoes on the lower plots, and the dry",
				"July kept the water butts empty for weeks, yet the show in"},
		},
		{
			"cv.png",
			[]string{"Go", "PostgreSQL", "Linux", "Kubernetes"},
			[]string{"Since 2021 I have led the payments team at a logistics company,",
				"where we moved the invoicing service from a nightly batch job to",
				"a queue of small workers and cut the time from delivery to invoice"},
		},
		{
			"opening-hours.png",
			[]string{"Opening hours", "Mon-Fri 9-18", "Saturday 10-14", "Sunday closed"},
			[]string{"After eight months of building work the town library opens its",
				"doors again on Monday. The reading room has new windows",
				"and twice as many seats, the children's corner has moved to"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			rec, err := ocr.Recognize(context.Background(), prepared(t, tt.image))
			if err != nil {
				t.Fatal(err)
			}
			text := markdownToText(rec.Text)
			if strings.Contains(text, "| --- |") {
				t.Errorf("a table is written")
			}
			for _, want := range [][]string{tt.sidebar, tt.paragraph} {
				if !strings.Contains(text, strings.Join(want, "\n")) {
					t.Errorf("these lines are not read one after another:\n%s", strings.Join(want, "\n"))
				}
			}
			if t.Failed() {
				t.Logf("recognized:\n%s", rec.Text)
			}
		})
	}
}

// TestRecognizeKeepsALongDescriptionTableAndSetsFooterFieldsApart reads an
// invoice drawn for this test (testdata/sidebars): its descriptions are
// longer than a table cell's words, yet a table's column, so each keeps
// its amount on its line; the footer's two fields on one row, an address
// and a VAT number, are a line each, not one phrase.
func TestRecognizeKeepsALongDescriptionTableAndSetsFooterFieldsApart(t *testing.T) {
	t.Parallel() // the engine runs one thread (OMP_THREAD_LIMIT=1): two pages at once
	ocr := newOCR(t, Config{})
	rec, err := ocr.Recognize(context.Background(), prepared(t, "invoice-footer.png"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(markdownToText(rec.Text), "\n")
	hasLine := func(want func(string) bool) bool {
		return slices.ContainsFunc(lines, want)
	}
	for _, item := range [][2]string{
		{"Web hosting package Business XL, November 2026", "49.00"},
		{"Domain example.org, yearly renewal", "12.00"},
		{"Daily backups with thirty days of history", "9.50"},
		{"Support hours used in October", "120.00"},
	} {
		if !hasLine(func(l string) bool { return strings.Contains(l, item[0]) && strings.Contains(l, item[1]) }) {
			t.Errorf("%q is read apart from its amount %s", item[0], item[1])
		}
	}
	for _, field := range []string{"Example Hosting GmbH, Hauptstr. 5, 10115 Berlin", "VAT ID DE123456789"} {
		if !hasLine(func(l string) bool { return strings.TrimSpace(l) == field }) {
			t.Errorf("the footer field %q is not a line of its own", field)
		}
	}
	if t.Failed() {
		t.Logf("recognized:\n%s", rec.Text)
	}
}

// allowedCER is the most our CER may be: 10% above the by-hand CER. Where
// the by-hand run is perfect, 10% of nothing would forbid a single wrong
// character, so half a percent is allowed instead.
func allowedCER(hand float64) float64 {
	if hand == 0 {
		return 0.005
	}
	return hand * 1.1
}

// byHand runs tesseract as a user would: default options, plain text.
// OMP_THREAD_LIMIT=1 changes only the time it takes, and keeps the
// comparison of seconds fair.
func byHand(t *testing.T, path string) string {
	t.Helper()
	cmd := exec.Command("tesseract", path, "stdout")
	cmd.Env = append(os.Environ(), "OMP_THREAD_LIMIT=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tesseract %s stdout: %v: %s", path, err, stderr.String())
	}
	return string(out)
}

// markdownToText undoes the escaping tsvToMarkdown adds: a backslash
// before ASCII punctuation stands for the punctuation.
func markdownToText(md string) string {
	var b strings.Builder
	for i := 0; i < len(md); i++ {
		if md[i] == '\\' && i+1 < len(md) && strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", md[i+1]) >= 0 {
			i++
		}
		b.WriteByte(md[i])
	}
	return b.String()
}

// cer is the character error rate of hyp against the truth: the edit
// distance between the two, in characters, over the truth's length, after
// both have every run of white space made one space (line breaks and
// paragraph gaps are layout, not characters read).
func cer(hyp, truth string) float64 {
	h, r := []rune(normalizeSpace(hyp)), []rune(normalizeSpace(truth))
	if len(r) == 0 {
		if len(h) == 0 {
			return 0
		}
		return 1
	}
	return float64(levenshtein(h, r)) / float64(len(r))
}

func normalizeSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func levenshtein(a, b []rune) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func TestAllowedCERIsTenPercentAboveByHand(t *testing.T) {
	for hand, want := range map[float64]float64{0: 0.005, 0.02: 0.022, 0.0939: 0.10329} {
		if got := allowedCER(hand); math.Abs(got-want) > 1e-12 {
			t.Errorf("allowedCER(%v) = %v, want %v", hand, got, want)
		}
	}
}

func TestCER(t *testing.T) {
	tests := []struct {
		hyp, truth string
		want       float64
	}{
		{"same text", "same text", 0},
		{"same\n\n text ", "same text", 0},
		{"sane text", "same text", 1.0 / 9},
		{"", "abcd", 1},
		{"überfall", "uberfall", 1.0 / 8},
	}
	for _, tt := range tests {
		if got := cer(tt.hyp, tt.truth); got != tt.want {
			t.Errorf("cer(%q, %q) = %v, want %v", tt.hyp, tt.truth, got, tt.want)
		}
	}
	if got := markdownToText(`\<lazy> \#90 snake\_case a\\b \q`); got != `<lazy> #90 snake_case a\b \q` {
		t.Errorf("markdownToText = %q", got)
	}
}

// TestRecognizeReadsColouredPrintOnAGreyPage reads the invoice scan turned
// grey and scaled to 200 dpi, as pdftoppm renders a PDF page for us: its
// orange line-item names become light grey (about 170 of 255) beside black
// text, and one threshold for the whole page makes them background. The
// engine is run to binarize tile by tile, which keeps them.
func TestRecognizeReadsColouredPrintOnAGreyPage(t *testing.T) {
	t.Parallel() // the engine runs one thread (OMP_THREAD_LIMIT=1): two pages at once
	ocr := newOCR(t, Config{})
	grey := greyInvoice(t)
	var pgm bytes.Buffer
	fmt.Fprintf(&pgm, "P5\n%d %d\n255\n", grey.Rect.Dx(), grey.Rect.Dy())
	pgm.Write(grey.Pix)
	// The same page is the upright grey form of the turned invoice test.
	rec, _ := recognizeShared(t, ocr, provider.Document{Data: pgm.Bytes(), MIME: "image/x-portable-graymap"})
	text := markdownToText(rec.Text)
	for _, name := range []string{"AWS Data Transfer", "Amazon Elastic Compute Cloud", "Amazon Glacier", "Amazon Simple Storage Service"} {
		if !strings.Contains(text, name) {
			t.Errorf("the orange line item %q is not read", name)
		}
	}
	if t.Failed() {
		t.Logf("recognized:\n%s", rec.Text)
	}
}

// TestRecognizeReadsATIFFScanAtItsResolution reads the invoice scan as a
// scanner writes one, a TIFF giving its 350 dpi, through image.Prepare,
// which hands its page over as PNG: the page reads byte for byte as the
// PNG scan giving the same 350 dpi does. Without its resolution,
// tesseract guessed 362 dpi and read 12 of the 17 amounts.
func TestRecognizeReadsATIFFScanAtItsResolution(t *testing.T) {
	t.Parallel() // the engine runs one thread (OMP_THREAD_LIMIT=1): two pages at once
	ocr := newOCR(t, Config{})
	src := decodedInvoice(t)
	var buf bytes.Buffer
	if err := tiff.Encode(&buf, src, &tiff.Options{Compression: tiff.Deflate}); err != nil {
		t.Fatal(err)
	}
	// x/image/tiff writes 72 dpi for want of one: the scan's 350 replaces
	// it (XResolution and YResolution, little-endian rationals).
	at72, at350 := []byte{72, 0, 0, 0, 1, 0, 0, 0}, []byte{94, 1, 0, 0, 1, 0, 0, 0}
	if n := bytes.Count(buf.Bytes(), at72); n != 2 {
		t.Fatalf("the TIFF written holds %d rationals of 72, want XResolution and YResolution", n)
	}
	doc := prepared(t, "AmazonWebServices.png")
	if doc.MIME != "image/png" || doc.DPI != 0 {
		t.Fatalf("the PNG scan is handed over as %s, DPI %d; want itself, its header giving 350", doc.MIME, doc.DPI)
	}
	fromTIFF, err := convimage.Prepare(context.Background(), convimage.Config{}, bytes.ReplaceAll(buf.Bytes(), at72, at350))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := recognizeShared(t, ocr, doc) // the PNG scan as other tests read it
	got, err := ocr.Recognize(context.Background(), fromTIFF[0])
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != want.Text {
		t.Errorf("the TIFF reads %d amounts, the PNG %d; it reads:\n%s\nthe PNG:\n%s",
			len(amountPattern.FindAllString(got.Text, -1)), len(amountPattern.FindAllString(want.Text, -1)), got.Text, want.Text)
	}
}

// TestRecognizeReadsAPlaceholderResolutionAsNone reads the invoice scan
// labelled 72 dpi instead of its 350, as software writes for want of a
// value: a page 53 inches long, no document. image.Prepare hands the PNG
// over as it came but without its pHYs chunk, the scan as one written
// with no resolution, which tesseract guesses (362 dpi): 12 of the 17
// amounts are read, where believing the 72 (the file read as it is)
// reads 1.
func TestRecognizeReadsAPlaceholderResolutionAsNone(t *testing.T) {
	t.Parallel() // the engine runs one thread (OMP_THREAD_LIMIT=1): two pages at once
	ocr := newOCR(t, Config{})
	scan := []byte(readTestdata(t, "AmazonWebServices.png"))
	at := bytes.Index(scan, []byte("pHYs")) - 4 // the chunk: length, type, 9 bytes, CRC
	if at < 8 || binary.BigEndian.Uint32(scan[at:]) != 9 {
		t.Fatal("the scan has no pHYs chunk")
	}
	noResolution := slices.Concat(scan[:at], scan[at+21:])
	at72 := slices.Clone(scan)
	binary.BigEndian.PutUint32(at72[at+8:], 2835) // pixels per metre
	binary.BigEndian.PutUint32(at72[at+12:], 2835)
	binary.BigEndian.PutUint32(at72[at+17:], crc32.ChecksumIEEE(at72[at+4:at+17]))

	docs, err := convimage.Prepare(context.Background(), convimage.Config{}, at72)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(docs[0].Data, noResolution) {
		t.Errorf("the scan labelled 72 dpi is handed over as %d bytes, not as the %d of the scan without its pHYs chunk", len(docs[0].Data), len(noResolution))
	}
	got, err := ocr.Recognize(context.Background(), docs[0])
	if err != nil {
		t.Fatal(err)
	}
	believed, err := ocr.Recognize(context.Background(), provider.Document{Data: at72, MIME: "image/png"})
	if err != nil {
		t.Fatal(err)
	}
	g, b := len(amountPattern.FindAllString(got.Text, -1)), len(amountPattern.FindAllString(believed.Text, -1))
	t.Logf("amounts read: %d prepared, %d at the header's 72 dpi", g, b)
	if g <= b {
		t.Errorf("the prepared scan reads %d amounts, the scan at its 72 dpi %d; it reads:\n%s", g, b, got.Text)
	}
}
