package office

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gabriel-vasile/mimetype"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current output")

// expectation is one entry of testdata/corpus/expectations.json, the
// assertions transcribed from Tika, POI and mammoth tests.
type expectation struct {
	Output                       string   `json:"output"`
	Contains                     []string `json:"contains"`
	ContainsWhitespaceNormalized []string `json:"contains_whitespace_normalized"`
	XMLContains                  []string `json:"xml_contains"`
	NotContains                  []string `json:"not_contains"`
	Exact                        string   `json:"exact"`
	ExactIgnoringStyleMap        string   `json:"exact_ignoring_embedded_style_map"`
	ExactRawText                 string   `json:"exact_raw_text"`
	ExactValuesNoSheetNames      string   `json:"exact_values_no_sheet_names"`
	ExactSlidesOnly              string   `json:"exact_slides_only"`
	StartsWith                   string   `json:"starts_with"`
	EndsWith                     string   `json:"ends_with"`
	HeaderText                   string   `json:"header_text"`
	FooterText                   string   `json:"footer_text"`
	Expect                       string   `json:"expect"`
}

// notApplicable are upstream assertions about output docjobs does not
// produce on purpose, with why.
var notApplicable = map[string]string{
	// mammoth renders comments only with a style map; by default (and
	// here) comments are ignored, which the test below checks instead.
	"docx/mammoth/comments.docx#exact": "comments are ignored",
}

// notApplicablePhrases are phrases upstream finds in places docjobs does
// not read on purpose.
var notApplicablePhrases = map[string]string{
	// Tika reads the header and footer placeholders of notes pages (print
	// furniture repeated on every notes page); we read the notes body only.
	"pptx/testPPT_various.pptx#This is the header text.": "notes-page header",
	"pptx/testPPT_various.pptx#This is the footer text.": "notes-page footer",
}

// checkboxGlyphs maps POI's checkbox rendering to ours.
var checkboxGlyphs = strings.NewReplacer("|_|", "☐", "|X|", "☒")

// TestCorpusExpectations checks the markdown of every corpus office file
// against the upstream assertions that apply to text: phrases contained
// (HTML fragments by their text), formatting where upstream asserts it,
// phrases absent, and whole texts compared with white space normalized.
func TestCorpusExpectations(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "corpus", "expectations.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exps map[string]expectation
	if err := json.Unmarshal(raw, &exps); err != nil {
		t.Fatal(err)
	}
	for name, exp := range exps {
		t.Run(name, func(t *testing.T) {
			data := readTestdata(t, name)
			kind := mimetype.Detect(data).String()
			legacy := strings.HasPrefix(name, "doc/") || strings.HasPrefix(name, "xls_ods/")
			if legacy {
				needSoffice(t)
				t.Parallel()
			}
			if exp.Expect == "error" || strings.HasPrefix(name, "malformed/") {
				// Malformed packages fail with a sentence naming the kind,
				// whether sniffed as a zip or named .docx.
				for _, k := range []string{kind, DOCX} {
					_, _, err := Markdown(context.Background(), Config{}, k, data)
					if err == nil {
						t.Fatalf("Markdown(%s) succeeded, want an error", k)
					}
					if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrUnsupported) {
						t.Errorf("Markdown(%s) = %v, want ErrInvalid or ErrUnsupported", k, err)
					}
					t.Logf("%s: %v", k, err)
				}
				return
			}
			md, model, err := Markdown(context.Background(), Config{}, kind, data)
			if err != nil {
				t.Fatalf("Markdown(%s): %v", kind, err)
			}
			if legacy && !strings.HasPrefix(model, ModelLibreOfficePrefix) {
				t.Errorf("model = %q, want libreoffice+…", model)
			}
			plain := norm(checkboxGlyphs.Replace(plainText(md)))
			check := func(field string, ok bool, want string) {
				t.Helper()
				if reason, skip := notApplicable[name+"#"+field]; skip {
					t.Logf("%s not checked: %s", field, reason)
					return
				}
				if !ok {
					t.Errorf("%s: want %q\nmarkdown:\n%s", field, want, md)
				}
			}
			for _, c := range exp.Contains {
				for _, node := range htmlTextNodes(c) {
					if reason, skip := notApplicablePhrases[name+"#"+node]; skip {
						t.Logf("%q not checked: %s", node, reason)
						continue
					}
					check("contains", strings.Contains(plain, node), node)
				}
			}
			for _, c := range exp.ContainsWhitespaceNormalized {
				check("contains_whitespace_normalized", strings.Contains(plain, norm(c)), c)
			}
			for _, c := range exp.XMLContains {
				want := htmlToMarkdown(c)
				check("xml_contains", strings.Contains(md, want), want)
			}
			for _, c := range exp.NotContains {
				check("not_contains", !strings.Contains(plain, c), "no "+c)
			}
			if exp.Exact != "" {
				if strings.HasPrefix(exp.Exact, "<") {
					missing := inOrder(plain, htmlNodesWithoutBacklinks(exp.Exact))
					check("exact", missing == "", missing)
				} else {
					want := norm(checkboxGlyphs.Replace(exp.Exact))
					check("exact", plain == want, want)
				}
			}
			if exp.ExactIgnoringStyleMap != "" {
				check("exact_ignoring_embedded_style_map", plain == strings.Join(htmlTextNodes(exp.ExactIgnoringStyleMap), " "), exp.ExactIgnoringStyleMap)
			}
			if exp.ExactRawText != "" {
				check("exact_raw_text", plain == norm(exp.ExactRawText), exp.ExactRawText)
			}
			// Spreadsheets and slides carry headings of their own; the
			// upstream text must appear in order.
			for field, want := range map[string]string{
				"exact_values_no_sheet_names": exp.ExactValuesNoSheetNames,
				"exact_slides_only":           exp.ExactSlidesOnly,
			} {
				if want != "" {
					missing := inOrder(plain, cellsOf(want))
					check(field, missing == "", missing)
				}
			}
			if exp.StartsWith != "" {
				check("starts_with", strings.HasPrefix(plain, norm(exp.StartsWith)), exp.StartsWith)
			}
			if exp.EndsWith != "" {
				check("ends_with", strings.HasSuffix(plain, norm(exp.EndsWith)), exp.EndsWith)
			}
			for field, want := range map[string]string{"header_text": exp.HeaderText, "footer_text": exp.FooterText} {
				if want != "" {
					check(field, strings.Contains(plain, norm(want)), want)
				}
			}
			if exp.Expect != "" && strings.TrimSpace(plain) == "" {
				// Word 95: upstream accepts extraction or a clear error; we extract.
				t.Errorf("no text from %s", name)
			}
		})
	}
}

// htmlNodesWithoutBacklinks is the text nodes of mammoth HTML without the
// "↑" back-links it adds to notes.
func htmlNodesWithoutBacklinks(h string) []string {
	var out []string
	for _, n := range htmlTextNodes(h) {
		if n = strings.TrimSpace(strings.TrimSuffix(n, "↑")); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// cellsOf splits tab- and line-separated upstream text into its cells.
func cellsOf(s string) []string {
	var cells []string
	for _, c := range regexp.MustCompile(`[\t\n]+`).Split(s, -1) {
		if c = norm(c); c != "" {
			cells = append(cells, c)
		}
	}
	return cells
}

// htmlToMarkdown writes an inline HTML fragment as our markdown writes it.
func htmlToMarkdown(h string) string {
	return strings.NewReplacer("<b>", "**", "</b>", "**", "<i>", "*", "</i>", "*",
		"<s>", "~~", "</s>", "~~", "<u>", "", "</u>", "").Replace(h)
}

// TestCommentsAreIgnored: comment text is not document text.
func TestCommentsAreIgnored(t *testing.T) {
	md, _ := markdown(t, Config{}, DOCX, readTestdata(t, "docx/mammoth/comments.docx"))
	if got := plainText(md); norm(got) != "Ouch." {
		t.Errorf("text = %q, want %q", got, "Ouch.")
	}
}

// TestTextractParagraphsAndTables: textract's expected text appears in
// order, the inner table inside its cell.
func TestTextractParagraphsAndTables(t *testing.T) {
	md, _ := markdown(t, Config{}, DOCX, readTestdata(t, "docx/textract/paragraphs_and_tables.docx"))
	want := cellsOf(string(readTestdata(t, "docx/textract/paragraphs_and_tables.txt")))
	if missing := inOrder(norm(plainText(md)), want); missing != "" {
		t.Errorf("missing in order: %q\n%s", missing, md)
	}
}

// goldenFiles are compared whole with testdata/golden/<name>.md.
var goldenFiles = []string{
	"docx/testWORD.docx",
	"docx/testWORD_various.docx",
	"docx/checkboxes.docx",
	"docx/textract/paragraphs_and_tables.docx",
	"docx/mammoth/footnotes.docx",
	"pptx/sample.pptx",
	"pptx/testPPT_various.pptx",
	"xlsx/sample.xlsx",
	"xlsx/SampleSS.xlsx",
	"xlsx/testEXCEL.xlsx",
}

// TestGolden compares whole outputs with reviewed golden files; run with
// -update to rewrite them after a deliberate change, and review the diff.
func TestGolden(t *testing.T) {
	for _, name := range goldenFiles {
		t.Run(name, func(t *testing.T) {
			data := readTestdata(t, name)
			md, model := markdown(t, Config{}, mimetype.Detect(data).String(), data)
			if want := strings.TrimPrefix(path.Ext(name), "."); model != want {
				t.Errorf("model = %q, want %q", model, want)
			}
			golden := filepath.Join("testdata", "golden", strings.ReplaceAll(name, "/", "_")+".md")
			if *update {
				if err := os.WriteFile(golden, []byte(md), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if md != string(want) {
				t.Errorf("markdown differs from %s:\n--- got\n%s\n--- want\n%s", golden, md, want)
			}
		})
	}
}
