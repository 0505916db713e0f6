package convert

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/provider/tesseract"
)

// TestCorpusInvoicesKeepTheirFieldValues runs the invoice2data invoices
// (real vendor invoices, PDFs and a PNG scan) through recognition in
// HYBRID mode, with local Tesseract for what has no text layer, and
// checks what a user extracting fields downstream depends on: every amount,
// date and invoice number invoice2data's templates extracted from the
// invoice is in the recognized text. Amounts and dates are compared as
// values, whatever their written form ("1.234,56 €", "$4.11", "8-9-2022",
// "02 Juillet 2015", "August 3 , 2014").
func TestCorpusInvoicesKeepTheirFieldValues(t *testing.T) {
	dir := corpusDir(t, filepath.Join("extraction", "invoice2data"))
	expectations, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(expectations) == 0 {
		t.Skip("no invoice2data expectations")
	}
	ocr, ocrErr := tesseract.New(tesseract.Config{})
	conv := New(Config{})
	for _, exp := range expectations {
		stem := strings.TrimSuffix(exp, ".json")
		fields := invoiceFields(t, exp)
		sources, _ := filepath.Glob(stem + ".*")
		for _, src := range sources {
			if src == exp {
				continue
			}
			t.Run(filepath.Base(src), func(t *testing.T) {
				t.Parallel()
				data, err := os.ReadFile(src)
				if err != nil {
					t.Fatal(err)
				}
				in := Input{Name: filepath.Base(src), Data: data, Mode: job.ExtractionHybrid}
				if ocrErr == nil {
					in.OCR = ocr
				} else if strings.HasPrefix(DetectType(data), "image/") {
					t.Skipf("images need local OCR: %v", ocrErr)
				}
				out, err := conv.Convert(t.Context(), in)
				if err != nil {
					t.Fatalf("Convert: %v", err)
				}
				text := out.Content
				if out.Format == job.FormatHTML {
					text = textOfHTML(t, out.Content)
				}
				found := newFieldIndex(text)
				for _, f := range fields {
					if !found.has(f) {
						t.Errorf("%s %v is not in the recognized text", f.key, f.value)
					}
				}
				if t.Failed() {
					t.Logf("recognized %s:\n%s", out.Format, out.Content)
				}
			})
		}
	}
}

// TestCorpusInvoicesKeepLabelsWithTheirValues checks that a total set
// apart from its label on one row of an invoice comes out with it, in one
// table row or one paragraph: a user extracting fields from the HTML must
// see which amount is which ("Total TTC :" … "56,02 €"), not a column of
// labels away from a column of amounts.
func TestCorpusInvoicesKeepLabelsWithTheirValues(t *testing.T) {
	dir := corpusDir(t, filepath.Join("extraction", "invoice2data"))
	tests := []struct {
		file         string
		label, value string
	}{
		{"NetpresseInvoice.pdf", "Total HT", "46,68"},
		{"NetpresseInvoice.pdf", "TVA 20%", "9,34"},
		{"NetpresseInvoice.pdf", "Total TTC", "56,02"},
		{"NetpresseInvoice.pdf", "Justificatif PDF", "0,75"},
		{"QualityHosting.pdf", "Total EUR", "34,73"},
		{"saeco.pdf", "Factuur totaal EUR", "49,99"},
		{"free_fiber.pdf", "Montant du prélèvement", "29.99"},
	}
	conv := New(Config{})
	docs := map[string]*html.Node{}
	for _, tt := range tests {
		t.Run(tt.file+"/"+tt.label, func(t *testing.T) {
			doc, ok := docs[tt.file]
			if !ok {
				data, err := os.ReadFile(filepath.Join(dir, tt.file))
				if err != nil {
					t.Fatal(err)
				}
				out, err := conv.Convert(t.Context(), Input{Name: tt.file, Data: data, Mode: job.ExtractionHybrid})
				if err != nil {
					t.Fatalf("Convert: %v", err)
				}
				if doc, err = html.Parse(strings.NewReader(out.Content)); err != nil {
					t.Fatal(err)
				}
				docs[tt.file] = doc
			}
			found := false
			for _, text := range rowTexts(doc) {
				if strings.Contains(text, tt.label) {
					found = true
					if !strings.Contains(text, tt.value) {
						t.Errorf("%q is read apart from %s: %q", tt.label, tt.value, text)
					}
				}
			}
			if !found {
				t.Errorf("no table row, paragraph or heading holds %q", tt.label)
			}
		})
	}
}

// rowTexts are the texts of a document's table rows, paragraphs, list
// items and headings.
func rowTexts(n *html.Node) []string {
	var out []string
	switch n.DataAtom {
	case atom.Tr, atom.P, atom.Li, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		return []string{strings.Join(strings.Fields(textOf(n)), " ")}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		out = append(out, rowTexts(c)...)
	}
	return out
}

// invoiceField is one expected value of an invoice.
type invoiceField struct {
	key   string
	kind  fieldKind
	value any // float64 amount, time.Time date or string identifier
}

type fieldKind int

const (
	fieldAmount fieldKind = iota
	fieldDate
	fieldIdentifier
)

// invoiceFields reads the header fields of an invoice2data expectation
// that recognition alone must preserve: amounts, the invoice and due
// dates, and the invoice number. Billing-period bounds (date_start,
// date_end) are left out: invoices write them as ranges ("du 1er au 31
// Juillet 2015", "July 1 - July 31 , 2014") that invoice2data's templates
// expand; names, addresses and line descriptions are left to the model
// stage's reading.
func invoiceFields(t *testing.T, path string) []invoiceField {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var docs []map[string]any
	if err := json.Unmarshal(raw, &docs); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []invoiceField
	for _, doc := range docs {
		for key, v := range doc {
			switch {
			case key == "amount" || strings.HasPrefix(key, "amount_"):
				n, ok := v.(float64)
				if !ok {
					t.Fatalf("%s: %s is %T, not a number", path, key, v)
				}
				out = append(out, invoiceField{key, fieldAmount, n})
			case key == "date" || key == "date_due":
				s, _ := v.(string)
				d, err := time.Parse(time.DateOnly, s)
				if err != nil {
					t.Fatalf("%s: %s: %v", path, key, err)
				}
				out = append(out, invoiceField{key, fieldDate, d})
			case key == "invoice_number":
				out = append(out, invoiceField{key, fieldIdentifier, fmt.Sprint(v)})
			}
		}
	}
	return out
}

// fieldIndex holds what a recognized text states, as values: the amounts
// (in cents), the dates and the text with white space removed.
type fieldIndex struct {
	cents   map[int64]bool
	dates   map[time.Time]bool
	compact string
}

var (
	// amountRE is a number as invoices write amounts: digits with
	// optional thousands groups ("1.234", "1,234", "1 234") and an
	// optional decimal part of one to three digits after a point or comma.
	amountRE = regexp.MustCompile(`\d{1,3}(?:[ .,']\d{3})+(?:[.,]\d{1,3})?|\d+(?:[.,]\d{1,3})?`)
	// numericDateRE is d.m.y, d/m/y, d-m-y (or m/d/y) and y-m-d.
	numericDateRE = regexp.MustCompile(`\b(\d{1,4})[./-](\d{1,2})[./-](\d{1,4})\b`)
	// wordDateRE is "3 August 2014", "7. Mai 2014", "August 3, 2014" and
	// "August 3 , 2014" (poppler spaces a comma set apart).
	wordDateRE = regexp.MustCompile(`(?i)\b(?:(\d{1,2})\.?\s+(\pL+)\.?\s+(\d{4})|(\pL+)\.?\s+(\d{1,2})\s*,?\s*(\d{4}))\b`)
)

// months are month names and common abbreviations in the languages of
// European invoices, lower-cased.
var months = func() map[string]time.Month {
	names := [][]string{
		{"january", "jan", "janvier", "janv", "januar", "jänner", "januari", "enero", "gennaio"},
		{"february", "feb", "février", "fevrier", "févr", "februar", "februari", "febrero", "febbraio"},
		{"march", "mar", "mars", "märz", "maerz", "maart", "marzo", "mrt"},
		{"april", "apr", "avril", "abril", "aprile"},
		{"may", "mai", "mei", "mayo", "maggio"},
		{"june", "jun", "juin", "juni", "junio", "giugno"},
		{"july", "jul", "juillet", "juil", "juli", "julio", "luglio"},
		{"august", "aug", "août", "aout", "augustus", "agosto"},
		{"september", "sep", "sept", "septembre", "septiembre", "settembre"},
		{"october", "oct", "octobre", "oktober", "okt", "octubre", "ottobre"},
		{"november", "nov", "novembre", "noviembre"},
		{"december", "dec", "décembre", "decembre", "dezember", "dez", "diciembre", "dicembre"},
	}
	m := map[string]time.Month{}
	for i, ns := range names {
		for _, n := range ns {
			m[n] = time.Month(i + 1)
		}
	}
	return m
}()

func newFieldIndex(text string) fieldIndex {
	idx := fieldIndex{cents: map[int64]bool{}, dates: map[time.Time]bool{}}
	for _, m := range amountRE.FindAllString(text, -1) {
		for _, c := range amountReadings(m) {
			idx.cents[c] = true
		}
	}
	for _, m := range numericDateRE.FindAllStringSubmatch(text, -1) {
		a, _ := strconv.Atoi(m[1])
		b, _ := strconv.Atoi(m[2])
		c, _ := strconv.Atoi(m[3])
		if len(m[1]) == 4 {
			idx.addDate(a, b, c) // y-m-d
			continue
		}
		if len(m[3]) == 2 {
			c += 2000
		}
		idx.addDate(c, b, a) // d.m.y
		idx.addDate(c, a, b) // m/d/y
	}
	for _, m := range wordDateRE.FindAllStringSubmatch(text, -1) {
		day, name, year := m[1], m[2], m[3]
		if day == "" {
			day, name, year = m[5], m[4], m[6]
		}
		if mon, ok := months[strings.ToLower(name)]; ok {
			d, _ := strconv.Atoi(day)
			y, _ := strconv.Atoi(year)
			idx.addDate(y, int(mon), d)
		}
	}
	idx.compact = strings.ToLower(strings.Join(strings.FieldsFunc(text, unicode.IsSpace), ""))
	return idx
}

// amountReadings are the values a written number may stand for, in
// cents: "1,234" is 1234 or 1.234 depending on the locale.
func amountReadings(s string) []int64 {
	var out []int64
	for _, dec := range []string{".", ","} {
		v := s
		if i := strings.LastIndexAny(v, ".,"); i >= 0 && v[i:i+1] == dec && len(v)-i-1 <= 2 {
			v = v[:i] + "\x00" + v[i+1:] // the decimal separator
		}
		v = strings.NewReplacer(".", "", ",", "", " ", "", "'", "", "\x00", ".").Replace(v)
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			out = append(out, int64(math.Round(f*100)))
		}
	}
	return out
}

func (idx fieldIndex) addDate(y, m, d int) {
	if m < 1 || m > 12 || d < 1 || d > 31 {
		return
	}
	idx.dates[time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)] = true
}

func (idx fieldIndex) has(f invoiceField) bool {
	switch f.kind {
	case fieldAmount:
		return idx.cents[int64(math.Round(f.value.(float64)*100))]
	case fieldDate:
		return idx.dates[f.value.(time.Time)]
	}
	id := strings.ToLower(strings.Join(strings.FieldsFunc(f.value.(string), unicode.IsSpace), ""))
	return strings.Contains(idx.compact, id)
}

func TestFieldIndexReadsWrittenValues(t *testing.T) {
	idx := newFieldIndex("Total 1.234,56 € — $4.11 — 1,234.50 — 0 € — le 02 Juillet 2015, " +
		"Invoice Date: August 3 , 2014; Rechnungsdatum 7. Mai 2014; 8-9-2022; 2016-04-04; 28/11/22; Nr. VF 1005193039")
	tests := []struct {
		name string
		f    invoiceField
		want bool
	}{
		{"decimal comma with point groups", invoiceField{"a", fieldAmount, 1234.56}, true},
		{"dollar amount", invoiceField{"a", fieldAmount, 4.11}, true},
		{"decimal point with comma groups", invoiceField{"a", fieldAmount, 1234.5}, true},
		{"zero", invoiceField{"a", fieldAmount, 0.0}, true},
		{"absent amount", invoiceField{"a", fieldAmount, 56.02}, false},
		{"French month name", invoiceField{"d", fieldDate, time.Date(2015, 7, 2, 0, 0, 0, 0, time.UTC)}, true},
		{"English month first, spaced comma", invoiceField{"d", fieldDate, time.Date(2014, 8, 3, 0, 0, 0, 0, time.UTC)}, true},
		{"German day with a point", invoiceField{"d", fieldDate, time.Date(2014, 5, 7, 0, 0, 0, 0, time.UTC)}, true},
		{"unpadded day-month-year", invoiceField{"d", fieldDate, time.Date(2022, 9, 8, 0, 0, 0, 0, time.UTC)}, true},
		{"ISO date", invoiceField{"d", fieldDate, time.Date(2016, 4, 4, 0, 0, 0, 0, time.UTC)}, true},
		{"two-digit year", invoiceField{"d", fieldDate, time.Date(2022, 11, 28, 0, 0, 0, 0, time.UTC)}, true},
		{"absent date", invoiceField{"d", fieldDate, time.Date(2022, 9, 22, 0, 0, 0, 0, time.UTC)}, false},
		{"identifier across a space", invoiceField{"n", fieldIdentifier, "VF1005193039"}, true},
		{"absent identifier", invoiceField{"n", fieldIdentifier, "42183017"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := idx.has(tt.f); got != tt.want {
				t.Errorf("has(%v) = %v, want %v", tt.f.value, got, tt.want)
			}
		})
	}
}
