package pdf

import (
	"context"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// Golden tests on the PDFBox corpus (testdata/pdfbox, see testdata/README.md):
// the text of our HTML must be at least as close to PDFBox's expected text
// as plain pdftotext's output is.

// corpusDocs are the text-layer PDFs with expected text.
var corpusDocs = []string{
	"PDFBOX-2984-rotations.pdf",
	"PDFBOX-3044-010197-p5-ligatures.pdf",
	"PDFBOX-3062-002207-p1.pdf",
	"PDFBOX-3110-poems-beads.pdf",
	"PDFBOX-3127-RAU4G6QMOVRYBISJU7R6MOVZCRFUO7P4-VFont.pdf",
	"PDFBOX-4531-bidi-ligature-1.pdf",
	"cweb.pdf",
	"data-000001.pdf",
	"eu-001.pdf",
	"rotation.pdf",
	"sample_fonts_solidconvertor.pdf",
	"simple-openoffice.pdf",
}

func TestTextLayerCERIsNoWorseThanPdftotext(t *testing.T) {
	t.Parallel()
	for _, name := range corpusDocs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", "pdfbox", name)
			want := readText(t, path+".txt")
			res := convertFile(t, path, Options{Format: "html"})
			if res.ProviderCalls != 0 || res.Model != "pdftotext" {
				t.Fatalf("text-layer PDF: calls=%d model=%q, want 0 calls and pdftotext", res.ProviderCalls, res.Model)
			}
			ours := cer(htmlText(res.Content), want)
			plain := cer(pdftotextPlain(t, path), want)
			t.Logf("%s: CER ours %.5f, pdftotext %.5f (%d runes expected)", name, ours, plain, len(normalizeForCER(want)))
			if ours > plain+1e-9 {
				t.Errorf("CER %.4f is worse than plain pdftotext's %.4f", ours, plain)
			}
		})
	}
}

// A magazine scan made searchable by Tesseract (`tesseract IMAGE out
// pdf`: the page image under an invisible text layer, as scanners and
// ocrmypdf write them) is read from its text layer, against the human
// transcription of the page (testdata/scans, see testdata/README.md). The
// CER bars are the numbers docs/quality.md records; the text layer's own
// order was most of 8087's (pdftotext 0.68) until its columns were cut at
// their gutters. No word may be made that neither the page nor pdftotext
// has: reading order that jumps between columns must not join a
// hyphenated word's first half to the other column's next word ("igno-" +
// "need" → "ignoneed").
func TestScanTextLayerKeepsItsCERAndSplicesNoWords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		doc    string
		maxCER float64
	}{
		{"8071_093.3B.pdf", 0.077}, // pdftotext 0.0738: the title block is read after the third column
		// pdftotext 0.6835; 0.0262 since poppler's block of three columns
		// is cut at its gutters and the caption in the gutter is read
		// after the columns beside it (0.637 before).
		{"8087_054.3B.pdf", 0.03},
		// pdftotext 0.1044: blocks of single words of two skewed rows are
		// no columns nor captions (0.066 if a block of two words on one
		// row counted as a caption in a gutter).
		{"eurotext.pdf", 0.022},
	}
	for _, tt := range tests {
		t.Run(tt.doc, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", "scans", tt.doc)
			want := readText(t, path+".txt")
			res := convertFile(t, path, Options{Format: "html"})
			if res.ProviderCalls != 0 || res.Model != "pdftotext" {
				t.Fatalf("text-layer PDF: calls=%d model=%q, want 0 calls and pdftotext", res.ProviderCalls, res.Model)
			}
			got, plain := htmlText(res.Content), pdftotextPlain(t, path)
			ours := cer(got, want)
			t.Logf("%s: CER ours %.4f, pdftotext %.4f (%d runes expected)", tt.doc, ours, cer(plain, want), len(normalizeForCER(want)))
			if ours > tt.maxCER {
				t.Errorf("CER %.4f is above the recorded %.4f", ours, tt.maxCER)
			}
			// The page's words broken at a line end count whole (we join
			// them: "uncondi-" "tional") and as their halves (a column
			// break we keep, "Epi-" … "daurus").
			known := wordSet(want + "\n" + lineHyphenRE.ReplaceAllString(want, "$1$2") + "\n" + plain)
			for w := range wordSet(got) {
				if !known[w] {
					t.Errorf("%q is a word neither the page nor pdftotext has", w)
				}
			}
		})
	}
}

var wordRE = regexp.MustCompile(`[\p{L}\p{N}]+`)

// wordSet is the set of s's words, lowercased.
func wordSet(s string) map[string]bool {
	set := map[string]bool{}
	for _, w := range wordRE.FindAllString(strings.ToLower(s), -1) {
		set[w] = true
	}
	return set
}

func TestTextLayerKeepsStructure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		doc  string
		want []string // fragments of the HTML
	}{
		{"the EU pollutant list has its title, bullet list and tables", "eu-001.pdf", []string{
			`<section data-page="1">`,
			`<h1>E-PRTR pollutants and their thresholds</h1>`,
			`<li>the facility has a capacity exceeding at least one of the E-PRTR capacity thresholds</li>`,
			`<tr><td>Carbon dioxide (CO2)</td><td>100 million</td><td>-</td><td>-</td></tr>`,
			`<tr><td>Chlorine and inorganic compounds (as HCl)</td><td>10 000</td><td>-</td><td>-</td></tr>`,
			`<tr><td>Benzene</td><td>1 000</td><td>200 (as BTEX)</td><td>200 (as BTEX)</td></tr>`,
			`<section data-page="3">`,
		}},
		{"the court order's caption is a table and its body paragraphs", "PDFBOX-3062-002207-p1.pdf", []string{
			`<td>Plaintiff,</td>`,
			`<p>By order dated May 1, 2007 (docket no. 213), the court dismissed this case in its entirety, with prejudice,`,
		}},
		{"the CWEB manual has headings", "cweb.pdf", []string{
			`<h1>`,
		}},
		{"the font sample sheet's Arial Black line is an entry like the others, not a heading", "sample_fonts_solidconvertor.pdf", []string{
			`<p>Arial: Toto je pokusný text s češtinou – ěščřžýáíé</p>`,
			`<p>Arial Black: Toto je pokusný text s češtinou – ěščřžýáíé</p>`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := convertFile(t, filepath.Join("testdata", "pdfbox", tt.doc), Options{Format: "html"})
			for _, w := range tt.want {
				if !strings.Contains(res.Content, w) {
					t.Errorf("HTML lacks %q", w)
				}
			}
			if t.Failed() {
				t.Logf("HTML:\n%s", res.Content)
			}
		})
	}
}

func TestInvoiceTablesKeepTheirHeaderRow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		doc  string
		page int
		want string // the page's item table, whole
	}{
		{"QualityHosting page 1: header, contract line and every item's lines are one six-column table", "QualityHosting.pdf", 1,
			"<table>\n" +
				"<tr><th>Pos.</th><th>Menge</th><th>Beschreibung</th><th>Rabatt %</th><th>VK-Preis</th><th>Zeilenbetrag</th></tr>\n" +
				"<tr><th></th><th></th><th></th><th></th><th>Ohne MwSt.</th><th>Ohne MwSt.</th></tr>\n" +
				"<tr><td></td><td></td><td>Contract No. CON02858</td><td></td><td></td><td></td></tr>\n" +
				"<tr><td>1</td><td>1</td><td>Small Business StandardExchange 2010</td><td></td><td>3,89</td><td>3,89</td></tr>\n" +
				"<tr><td></td><td></td><td>Grundgebühr pro Einheit</td><td></td><td></td><td></td></tr>\n" +
				"<tr><td></td><td></td><td>Dienst: OUDJQ_strukan</td><td></td><td></td><td></td></tr>\n" +
				"<tr><td></td><td></td><td>01.05.14-31.05.14</td><td></td><td></td><td></td></tr>\n" +
				invoiceItem("2", "schneider") + invoiceItem("3", "minar") + invoiceItem("4", "mayr") +
				invoiceItem("5", "jenewein") + invoiceItem("6", "jauernik") +
				"</table>\n"},
		{"coolblue1: the bold header row heads the items' table", "coolblue1.pdf", 1,
			"<table>\n" +
				"<tr><th>Artikel</th><th>Aantal</th><th>Prijs per stuk</th><th>BTW</th><th>Prijs incl. BTW</th></tr>\n" +
				"<tr><td>Apple iPad Air Wifi 16 GB Zilver</td><td>1</td><td>€ 399,00</td><td>21%</td><td>€ 399,00</td></tr>\n" +
				"<tr><td>Incl. Thuiskopieheffing: Thuiskopie €3.50 Serienummer: SDMPP373MPP15</td><td>1</td><td></td><td>21%</td><td>€ 4,24</td></tr>\n" +
				"<tr><td>Decoded Leather Slim Cover Apple iPad Air 2 Zwart</td><td>1</td><td>€ 69,99</td><td>21%</td><td>€ 69,99</td></tr>\n" +
				"<tr><td>Nintendo 3DS XL Wit + Blauw</td><td>1</td><td>€ 189,00</td><td>21%</td><td>€ 189,00</td></tr>\n" +
				"<tr><td>Nintendo AC-adapter</td><td>1</td><td>€ 14,99</td><td>21%</td><td>€ 14,99</td></tr>\n" +
				"<tr><td>Mario Kart 7 3DS</td><td>1</td><td>€ 44,99</td><td>21%</td><td>€ 44,99</td></tr>\n" +
				"</table>\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := convertFile(t, filepath.Join("testdata", "invoice2data", tt.doc), Options{Format: "html"})
			page := pageHTML(t, res.Content, tt.page)
			if !strings.Contains(page, tt.want) {
				t.Errorf("page %d lacks the table\n%s\npage:\n%s", tt.page, tt.want, page)
			}
			if strings.Contains(page, "<h3>") {
				t.Errorf("page %d has bold body-size headings (header labels?):\n%s", tt.page, page)
			}
		})
	}
}

// invoiceItem is a QualityHosting item row with its three description
// lines, each a row of the Beschreibung column.
func invoiceItem(pos, user string) string {
	return "<tr><td>" + pos + "</td><td>1</td><td>Small Business QualityExchange 2010</td><td></td><td>5,39</td><td>5,39</td></tr>\n" +
		"<tr><td></td><td></td><td>Grundgebühr pro Einheit</td><td></td><td></td><td></td></tr>\n" +
		"<tr><td></td><td></td><td>Dienst: OUDJQ_" + user + "</td><td></td><td></td><td></td></tr>\n" +
		"<tr><td></td><td></td><td>01.05.14-31.05.14</td><td></td><td></td><td></td></tr>\n"
}

// pageHTML is the section of one page of a converted document.
func pageHTML(t *testing.T, doc string, page int) string {
	t.Helper()
	start := strings.Index(doc, fmt.Sprintf(`<section data-page="%d">`, page))
	if start < 0 {
		t.Fatalf("no page %d in\n%s", page, doc)
	}
	end := strings.Index(doc[start:], "</section>")
	if end < 0 {
		t.Fatalf("page %d has no end", page)
	}
	return doc[start : start+end]
}

// convertFile converts a corpus file with no OCR provider.
func convertFile(t *testing.T, path string, opts Options) Result {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Convert(context.Background(), Config{}, data, opts, nil)
	if err != nil {
		t.Fatalf("Convert(%s): %v", filepath.Base(path), err)
	}
	return res
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// pdftotextPlain is the baseline: poppler's own text output.
func pdftotextPlain(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("pdftotext", "-q", "-enc", "UTF-8", path, "-").Output()
	if err != nil {
		t.Fatalf("pdftotext %s: %v", path, err)
	}
	return string(out)
}

var tagRE = regexp.MustCompile(`<[^>]*>`)

// htmlText is the text of our HTML: every tag separates words.
func htmlText(s string) string {
	return html.UnescapeString(tagRE.ReplaceAllString(s, " "))
}

var (
	lineHyphenRE   = regexp.MustCompile(`(\pL)[-\x{2010}][ \t]*\r?\n[ \t]*(\p{Ll})`)
	lineCompoundRE = regexp.MustCompile(`(\pL[-\x{2010}])[ \t]*\r?\n[ \t]*(\S)`)
)

// normalizeForCER removes what is layout, not text: a byte-order mark,
// line-end hyphenation ("exam-\nple" and "E-\nPRTR", which we join and
// PDFBox keeps) and the amount and kind of whitespace.
func normalizeForCER(s string) []rune {
	s = strings.TrimPrefix(s, "\ufeff")
	s = lineHyphenRE.ReplaceAllString(s, "$1$2")
	s = lineCompoundRE.ReplaceAllString(s, "$1$2")
	return []rune(strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " "))
}

// cer is the character error rate of got against want: the Levenshtein
// distance over runes of the normalized texts, divided by want's length.
func cer(got, want string) float64 {
	g, w := normalizeForCER(got), normalizeForCER(want)
	if len(w) == 0 {
		return float64(len(g))
	}
	return float64(levenshtein(g, w)) / float64(len(w))
}

// levenshtein is the edit distance of a and b in O(len) memory. Texts of
// the same document are mostly aligned, so beyond a full table's size it
// runs in a diagonal band, doubling the band until the distance fits in it
// (then the band held the optimal path and the result is exact); past
// maxBand it returns the band's result, an upper bound.
func levenshtein(a, b []rune) int { return editDistance(a, b, 20_000_000) }

// editDistance is levenshtein with the table size past which it bands.
func editDistance(a, b []rune, fullCells int) int {
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	if len(a) < len(b) {
		a, b = b, a
	}
	if len(b) == 0 {
		return len(a)
	}
	if len(a)*len(b) <= fullCells {
		return banded(a, b, len(a))
	}
	const maxBand = 1 << 14
	for w := len(a) - len(b) + 64; ; w *= 2 {
		d := banded(a, b, w)
		if d <= w || w >= maxBand {
			return d
		}
	}
}

// banded computes the edit distance over cells with |i-j| <= w.
func banded(a, b []rune, w int) int {
	inf := len(a) + len(b)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		if j <= w {
			prev[j] = j
		} else {
			prev[j] = inf
		}
	}
	for i := 1; i <= len(a); i++ {
		lo, hi := max(1, i-w), min(len(b), i+w)
		if lo > 1 {
			cur[lo-1] = inf
		} else {
			cur[0] = i
		}
		for j := lo; j <= hi; j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			v := prev[j-1] + cost
			if x := prev[j] + 1; x < v {
				v = x
			}
			if x := cur[j-1] + 1; x < v {
				v = x
			}
			cur[j] = v
		}
		if hi < len(b) {
			cur[hi+1] = inf
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func TestLevenshteinIsTheEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "", 3},
		{"kitten", "sitting", 3},
		{"flaw", "lawn", 2},
		{"Straße", "Strasse", 2},
	}
	for _, tt := range tests {
		if got := levenshtein([]rune(tt.a), []rune(tt.b)); got != tt.want {
			t.Errorf("levenshtein(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
	// The banded path agrees with the full table.
	long := []rune(strings.Repeat("the quick brown fox jumps over the lazy dog ", 40))
	edited := append(append([]rune{}, long[:500]...), append([]rune("XYZ"), long[510:1200]...)...)
	edited = append(edited, []rune(strings.Repeat("lorem ipsum ", 30))...)
	if got, want := editDistance(long, edited, 0), banded(long, edited, len(long)); got != want {
		t.Errorf("banded distance %d, full table %d", got, want)
	}
	if got := cer("ä  b\n", "\ufeffä b"); got != 0 {
		t.Errorf("cer of texts differing in whitespace and BOM = %v, want 0", got)
	}
}
