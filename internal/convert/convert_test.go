package convert

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/html"

	"github.com/docjobs/docjobs/internal/convert/office"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/provider"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current output")

func convert(t *testing.T, in Input) Output {
	t.Helper()
	out, err := New(Config{}).Convert(context.Background(), in)
	if err != nil {
		t.Fatalf("Convert(%s): %v", in.Name, err)
	}
	return out
}

// TestGolden converts every file in testdata/in and compares format,
// method, charset and content with testdata/golden/<name>.golden.
func TestGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "in", "*"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, path := range inputs {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			out := convert(t, Input{Name: name, Data: data, Mode: job.ExtractionHybrid})
			got := "format: " + out.Format + "\nmodel: " + out.Model + "\ncharset: " + out.Charset + "\n---\n" + out.Content + "\n"
			goldenPath := filepath.Join("testdata", "golden", name+".golden")
			if *update {
				if err := os.WriteFile(goldenPath, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(goldenPath)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", goldenPath, got, want)
			}
		})
	}
}

func TestBinaryKindsAreRoutedByContentNotName(t *testing.T) {
	zip := []byte("PK\x03\x04\x14\x00\x06\x00\x08\x00\x00\x00!\x00")
	pdf := []byte("%PDF-1.7\n1 0 obj\n<< /Type /Catalog >>\nendobj\n")
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00")
	tests := []struct {
		name string
		in   Input
		want kind
	}{
		{"PDF named .txt is a PDF", Input{Name: "report.txt", ContentType: "text/plain", Data: pdf}, kindPDF},
		{"PDF", Input{Name: "report.pdf", Data: pdf}, kindPDF},
		{"PNG named .html is an image", Input{Name: "x.html", Data: png}, kindImage},
		{"a bare zip goes to office, which reads it by content", Input{Name: "x.docx", Data: zip}, kindOffice},
		{"a legacy Word file (OLE storage) goes to office", Input{Name: "a.bin", Data: readFile(t, "office/testdata/corpus/doc/Word95.doc")}, kindOffice},
		{"a legacy Excel file goes to office", Input{Name: "a.bin", Data: readFile(t, "office/testdata/corpus/xls_ods/testEXCEL.xls")}, kindOffice},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, detected := detect(tt.in); got != tt.want {
				t.Fatalf("detect = %v (%s), want %v", got, detected, tt.want)
			}
		})
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestDetection(t *testing.T) {
	tests := []struct {
		name        string
		in          Input
		wantFormat  string
		wantModel   string
		unsupported string
	}{
		{"text by name", Input{Name: "a.txt", Data: []byte("hello")}, job.FormatPlain, ModelText, ""},
		{"HTML by content", Input{Name: "page", Data: []byte("<!DOCTYPE html><p>hi</p>")}, job.FormatHTML, ModelHTML, ""},
		{"XML by content", Input{Name: "data", Data: []byte(`<?xml version="1.0"?><a/>`)}, job.FormatXML, ModelXML, ""},
		{"XML without declaration by name", Input{Name: "invoice.XML", Data: []byte(`<Invoice xmlns="urn:x"><ID>1</ID></Invoice>`)}, job.FormatXML, ModelXML, ""},
		{"XML without declaration by Content-Type", Input{Name: "download", ContentType: "application/xml", Data: []byte(`<a><b/></a>`)}, job.FormatXML, ModelXML, ""},
		{"vendor +xml Content-Type", Input{Name: "feed", ContentType: "application/atom+xml; charset=utf-8", Data: []byte(`<feed/>`)}, job.FormatXML, ModelXML, ""},
		{"an SVG file is markdown, as images are (by content)", Input{Name: "i", ContentType: "application/octet-stream", Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"><text>hi</text></svg>`)}, job.FormatMarkdown, ModelSVG, ""},
		{"an SVG file is markdown, as images are (by name)", Input{Name: "i.SVG", Data: []byte(`<svg><text>hi</text></svg>`)}, job.FormatMarkdown, ModelSVG, ""},
		{"an SVG file is markdown, as images are (by Content-Type)", Input{Name: "download", ContentType: "image/svg+xml", Data: []byte(`<svg><text>hi</text></svg>`)}, job.FormatMarkdown, ModelSVG, ""},
		{"an SVG named .xml is xml, as the name says", Input{Name: "i.xml", Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"><text>hi</text></svg>`)}, job.FormatXML, ModelXML, ""},
		{"HTML by Content-Type", Input{Name: "download", ContentType: "text/html; charset=utf-8", Data: []byte("Just <b>bold</b> text")}, job.FormatHTML, ModelHTML, ""},
		{"name outranks Content-Type among text kinds", Input{Name: "notes.txt", ContentType: "text/html", Data: []byte("<b>not markup</b>")}, job.FormatPlain, ModelText, ""},
		{"HTML source named .txt stays text", Input{Name: "page.txt", Data: []byte("<!DOCTYPE html><p>hi</p>")}, job.FormatPlain, ModelText, ""},
		{"XHTML is HTML", Input{Name: "x", Data: []byte(`<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body><p>hi</p></body></html>`)}, job.FormatHTML, ModelHTML, ""},
		{"markdown by name", Input{Name: "README.md", Data: []byte("# Title\n")}, job.FormatMarkdown, ModelText, ""},
		{"JSON is markdown", Input{Name: "data.json", Data: []byte(`{"a": 1}`)}, job.FormatMarkdown, ModelText, ""},
		{"JSON by content is markdown", Input{Name: "export", Data: []byte(`{"a": 1}`)}, job.FormatMarkdown, ModelText, ""},
		{"CSV is a markdown table", Input{Name: "data.csv", Data: []byte("a,b\n1,2\n")}, job.FormatMarkdown, "csv", ""},
		{"CSV by Content-Type is a markdown table", Input{Name: "download", ContentType: "text/csv", Data: []byte("a,b\n1,2\n")}, job.FormatMarkdown, "csv", ""},
		{"a log file is markdown", Input{Name: "server.log", Data: []byte("12:00 started\n")}, job.FormatMarkdown, ModelText, ""},
		{"a log file declared text/plain is still not .txt", Input{Name: "server.log", ContentType: "text/plain", Data: []byte("12:00 started\n")}, job.FormatMarkdown, ModelText, ""},
		{"text without a name or type is markdown", Input{Name: "notes", Data: []byte("hello")}, job.FormatMarkdown, ModelText, ""},
		{"text without an extension declared text/plain is plain", Input{Name: "notes", ContentType: "text/plain; charset=utf-8", Data: []byte("hello")}, job.FormatPlain, ModelText, ""},
		{"comma-separated prose without a name is not a table", Input{Name: "notes", Data: []byte("hello, world\nsee you, then\n")}, job.FormatMarkdown, ModelText, ""},
		{"empty file is empty text", Input{Name: "empty.txt"}, job.FormatPlain, ModelText, ""},
		{"OCR_ALWAYS parses text too", Input{Name: "a.html", Data: []byte("<p>x</p>"), Mode: job.ExtractionOCRAlways}, job.FormatHTML, ModelHTML, ""},
		{"binary without a text hint", Input{Name: "blob", Data: []byte{0, 1, 2, 3, 0xff, 0xfe, 0, 0, 7, 8}}, "", "", "application/octet-stream"},
		{"binary named .txt", Input{Name: "blob.txt", Data: []byte{0, 1, 2, 3, 0xff, 0x00, 0, 0, 7, 8, 0x1b, 0x1c}}, "", "", "application/octet-stream"},
		{"UTF-16 without BOM named .txt", Input{Name: "u.txt", Data: []byte("h\x00e\x00l\x00l\x00o\x00")}, job.FormatPlain, ModelText, ""},
		{"UTF-16 without BOM named .csv", Input{Name: "u.csv", Data: []byte("a\x00,\x00b\x00\n\x001\x00,\x002\x00")}, job.FormatMarkdown, "csv", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := New(Config{}).Convert(context.Background(), tt.in)
			if tt.unsupported != "" {
				var ue *UnsupportedError
				if !errors.As(err, &ue) {
					t.Fatalf("Convert = %+v, %v; want *UnsupportedError", out, err)
				}
				if ue.Type != tt.unsupported || err.Error() != "unsupported file type "+tt.unsupported {
					t.Fatalf("error = %q (Type %q), want type %s", err, ue.Type, tt.unsupported)
				}
				return
			}
			if err != nil {
				t.Fatalf("Convert: %v", err)
			}
			if out.Format != tt.wantFormat || out.Model != tt.wantModel {
				t.Errorf("Format, Model = %s, %s; want %s, %s", out.Format, out.Model, tt.wantFormat, tt.wantModel)
			}
		})
	}
}

func TestText(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want string
	}{
		{"UTF-8 kept", Input{Name: "a.txt", Data: []byte("Grüße, мир, 世界")}, "Grüße, мир, 世界"},
		{"CRLF and CR become LF", Input{Name: "a.txt", Data: []byte("a\r\nb\rc\n")}, "a\nb\nc\n"},
		{"controls dropped, tab kept, form feed a line break", Input{Name: "a.txt", Data: []byte("a\tb\x1bc\x0cd")}, "a\tbc\nd"},
		{"declared charset used for non-UTF-8", Input{Name: "a.txt", ContentType: "text/plain; charset=koi8-r", Data: []byte{0xf0, 0xd2, 0xc9, 0xd7, 0xc5, 0xd4}}, "Привет"},
		{"windows-1252 smart quotes", Input{Name: "a.txt", Data: []byte("a \x93quoted\x94 word")}, "a “quoted” word"},
		{"C1 code points read as windows-1252", Input{Name: "a.txt", Data: []byte("(2\u009766 MHz) it\u0092s POWER\u0099")}, "(2—66 MHz) it’s POWER™"},
		{"C1 code points windows-1252 leaves undefined become a space", Input{Name: "a.txt", Data: []byte("a\u0081b\u009dc")}, "a b c"},
		{"NEL stays a line break", Input{Name: "a.txt", Data: []byte("a\u0085b")}, "a\nb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := convert(t, tt.in).Content; got != tt.want {
				t.Errorf("Content = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestTextThatIsNotTXTIsMarkdown: the spec's table makes only .txt plain;
// the rest of text comes back as markdown, JSON fenced so that its lines
// stay code, CSV and TSV as a table bounded like an XLSX sheet.
func TestTextThatIsNotTXTIsMarkdown(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want string
	}{
		{"markdown as it is", Input{Name: "a.md", Data: []byte("# T\n\n- x\n")}, "# T\n\n- x\n"},
		{"a log as it is", Input{Name: "a.log", Data: []byte("# not a heading\r\nline")}, "# not a heading\nline"},
		{"JSON fenced", Input{Name: "a.json", Data: []byte("{\"a\": [1, 2]}\n")}, "```json\n{\"a\": [1, 2]}\n```"},
		{"JSON holding a fence gets a longer one", Input{Name: "a.json", Data: []byte("{\"md\": \"```go\"}")}, "````json\n{\"md\": \"```go\"}\n````"},
		{"blank JSON stays blank", Input{Name: "a.json", Data: []byte("  \n")}, "  \n"},
		{"CSV as a table", Input{Name: "a.csv", Data: []byte("name,total\r\n\"Smith, J\",12\r\nx|y,\"two\nlines\"\r\n")},
			"| name | total |\n| --- | --- |\n| Smith, J | 12 |\n| x\\|y | two<br>lines |"},
		{"ragged CSV rows padded", Input{Name: "a.csv", Data: []byte("a,b,c\n1\n")}, "| a | b | c |\n| --- | --- | --- |\n| 1 |  |  |"},
		{"semicolon CSV split at semicolons, decimal commas kept", Input{Name: "a.csv", Data: []byte("Name;Betrag\nMüller;1.234,56\n")}, "| Name | Betrag |\n| --- | --- |\n| Müller | 1.234,56 |"},
		{"TSV as a table", Input{Name: "a.tsv", Data: []byte("a\tb\n1\t2\n")}, "| a | b |\n| --- | --- |\n| 1 | 2 |"},
		{"CSV cells escaped for markdown", Input{Name: "a.csv", Data: []byte("h\n*not bold*\n")}, "| h |\n| --- |\n| \\*not bold\\* |"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := convert(t, tt.in)
			if out.Content != tt.want || out.Format != job.FormatMarkdown {
				t.Errorf("Content (%s) =\n%q\nwant\n%q", out.Format, out.Content, tt.want)
			}
		})
	}
}

func TestALongCSVIsCutLikeAnXLSXSheet(t *testing.T) {
	var b strings.Builder
	b.WriteString("n,square\n")
	for i := range 30 {
		fmt.Fprintf(&b, "%d,%d\n", i, i*i)
	}
	out, err := New(Config{Office: office.Config{MaxRows: 10}}).Convert(context.Background(), Input{Name: "a.csv", Data: []byte(b.String())})
	if err != nil {
		t.Fatal(err)
	}
	if rows := strings.Count(out.Content, "\n| "); rows != 10 || !strings.HasSuffix(out.Content, "| 8 | 64 |\n\n… 21 more rows omitted") {
		t.Fatalf("%d lines after the header:\n%s\nwant the delimiter, 9 rows (10 with the header) and a note on the 21 cut", rows, out.Content)
	}
}

func TestHTML(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"script, style and friends removed", `<p>a</p><script>x()</script><style>p{}</style><noscript>n</noscript><template>t</template><iframe src="x"></iframe><object>o</object><embed src="e">`, `<p>a</p>`},
		{"comments removed", `<p>a<!-- secret --></p>`, `<p>a</p>`},
		{"event handlers and styling removed", `<p onclick="x()" style="color:red" class="c" id="i">a</p>`, `<p>a</p>`},
		{"javascript and data URLs removed", `<p><a href="javascript:x()">a</a> <a href="JaVaScRiPt&colon;x()">b</a> <img src="data:image/png;base64,AA" alt="c"></p>`, `<p><a>a</a> <a>b</a> <img alt="c"/></p>`},
		{"safe links kept", `<p><a href="https://e.com/?a=1&amp;b=2">a</a> <a href="/r">b</a> <a href="#s">c</a> <a href="mailto:x@e.com">d</a></p>`, `<p><a href="https://e.com/?a=1&amp;b=2">a</a> <a href="/r">b</a> <a href="#s">c</a> <a href="mailto:x@e.com">d</a></p>`},
		{"headings and lists kept", `<h2>T</h2><ul><li>a</li><li>b</li></ul>`, "<h2>T</h2>\n<ul>\n<li>a</li>\n<li>b</li></ul>"},
		{"table geometry kept", `<table><tr><th colspan="2" scope="col">H</th></tr><tr><td>1</td><td></td></tr></table>`, "<table>\n<tbody>\n<tr>\n<th colspan=\"2\" scope=\"col\">H</th></tr>\n<tr>\n<td>1</td>\n<td></td></tr></tbody></table>"},
		{"empty wrappers removed", `<div><span> </span></div><p></p><ul><li></li></ul><p>x</p>`, `<p>x</p>`},
		{"layout divs unwrapped", `<div><div><p>a</p><p>b</p></div></div>`, "<p>a</p>\n<p>b</p>"},
		{"divs with text kept", `<div>a <b>b</b></div>`, `<div>a <b>b</b></div>`},
		{"whitespace collapsed outside pre", "<p>  a \n\n b  </p><pre> x\n  y </pre>", "<p>a b</p>\n<pre> x\n  y </pre>"},
		{"custom elements unwrapped", `<my-card><p>a</p></my-card>`, `<p>a</p>`},
		{"form unwrapped, empty controls and buttons removed", `<form><p>Intro</p><p><label>Name <input name="n"></label><button>Send</button></p></form>`, "<p>Intro</p>\n<p>Name</p>"},
		{"labels and input values kept as text", `<p><label for="n">Name:</label> <input id="n" value="Jane Doe"> </p><p><label>Born <input type="date" value="1980-02-03"></label></p>`, "<p>Name: Jane Doe</p>\n<p>Born 1980-02-03</p>"},
		{"checkbox and radio states kept", `<p><input type="checkbox" checked><label>Married</label> <input type="CHECKBOX"> Divorced</p><p>Paid <input type="radio" name="p" checked="checked">yes <input type="radio" name="p">no</p>`, "<p>☒ Married ☐ Divorced</p>\n<p>Paid ☒ yes ☐ no</p>"},
		{"task list boxes from provider markdown kept", "<ul>\n<li><input checked=\"\" disabled=\"\" type=\"checkbox\"> Married</li>\n<li><input disabled=\"\" type=\"checkbox\"> Divorced</li>\n</ul>", "<ul>\n<li>☒ Married</li>\n<li>☐ Divorced</li></ul>"},
		{"textarea text kept with its lines", "<p><label>Notes</label><textarea>Deliver to back door,\ncode 4711</textarea></p>", "<p>Notes Deliver to back door,<br/>code 4711</p>"},
		{"selected option kept", `<p>Country <select><option>France</option><optgroup label="D"><option selected>Germany</option></optgroup></select></p>`, "<p>Country Germany</p>"},
		{"option label attribute read", `<p>Size <select><option>S<option label="Large" selected>L</select></p>`, "<p>Size Large</p>"},
		{"drop-down without a selection shows its first option", `<p>Country <select><option>France</option><option>Germany</option></select></p>`, "<p>Country France</p>"},
		{"multiple selection keeps every selected option", `<p>Tags <select multiple><option selected>a</option><option>b</option><option selected>c</option></select> <select multiple><option>none</option></select> <select size="3"><option>none</option></select></p>`, "<p>Tags a, c</p>"},
		{"hidden fields, passwords and buttons show nothing", `<p>Login <input type="hidden" value="tok"><input type="password" value="hunter2"><input type="submit" value="Go"><button>Send</button></p>`, "<p>Login</p>"},
		{"output kept", `<p>Total: <output>99.50 EUR</output></p>`, "<p>Total: 99.50 EUR</p>"},
		{"open dialog kept, closed dialog dropped", `<dialog open>Visible text</dialog><dialog>Closed text</dialog>`, "<div>Visible text</div>"},
		{"svg chart text kept as a paragraph", `<figure><svg><title>Revenue</title><desc>by quarter</desc><style>text{}</style><rect width="5"/><g><text x="1">Q1: <tspan>1.2M</tspan></text><text>Two<tspan x="0" dy="1em">lines</tspan></text></g></svg><figcaption>Figure 1</figcaption></figure>`, "<figure>\n<p>Revenue by quarter Q1: 1.2M Two lines</p>\n<figcaption>Figure 1</figcaption></figure>"},
		{"svg text inside a paragraph stays inline", `<p>See <a href="/"><svg><title>Home</title><path d="M0 0"/></svg></a> now</p>`, `<p>See <a href="/">Home</a> now</p>`},
		{"svg drawing without text removed", `<p>a</p><svg><path d="M0 0"/></svg>`, `<p>a</p>`},
		{"aria-hidden svg icon removed", `<p><svg aria-hidden="true"><title>search</title></svg>Search</p>`, `<p>Search</p>`},
		{"hidden and display:none removed", `<div hidden>A</div><div style="color:red; DISPLAY : none !important">B</div><p>C</p>`, `<p>C</p>`},
		{"until-found, visibility:hidden and aria-hidden kept", `<p hidden="until-found">A</p><p style="visibility:hidden">B</p><p aria-hidden="true">C</p>`, "<p>A</p>\n<p>B</p>\n<p>C</p>"},
		{"right-to-left direction kept", `<html dir="rtl" lang="ar"><body><p>مرحبا</p></body></html>`, "<div dir=\"rtl\" lang=\"ar\">\n<p>مرحبا</p>\n</div>"},
		{"entities decoded and re-escaped", `<p>a &lt;b&gt; &amp; &copy;</p>`, `<p>a &lt;b&gt; &amp; ©</p>`},
		{"no body content", `<html><head><title>t</title></head></html>`, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := convert(t, Input{Name: "a.html", Data: []byte(tt.in)})
			if out.Content != tt.want {
				t.Errorf("Content =\n%s\nwant\n%s", out.Content, tt.want)
			}
		})
	}
}

// TestHTMLWithAPlaintextElementReadsBackAsThePage: a parser reads all
// after a <plaintext> start tag as its text, so nothing may be written
// after one (the direction wrapper's end tag, a table the parser put
// after it, the end tags html.Render writes inside MathML); its text is
// preformatted. Each output must parse and render
// back to itself, which no output with markup read as text does.
func TestHTMLWithAPlaintextElementReadsBackAsThePage(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"right to left, ending the page",
			`<html dir="rtl" lang="ar"><body><p>a</p><plaintext>b <i>c</i></div>`,
			"<div dir=\"rtl\" lang=\"ar\">\n<p>a</p>\n<plaintext>b <i>c</i></div>"},
		{"right to left, inside a container",
			`<body dir="rtl"><div>x<plaintext>b  c`,
			"<div dir=\"rtl\">\n<div>x\n<plaintext>b  c"},
		{"spaces and lines kept",
			"<p>a</p><plaintext>a   b\n  c",
			"<p>a</p>\n<plaintext>a   b\n  c"},
		{"put before a table by the parser",
			`<p>a</p><table><tr><td>x</td></tr><plaintext>a  b</table>`,
			"<p>a</p>\n<pre>a  b&lt;/table&gt;</pre>\n<table>\n<tbody>\n<tr>\n<td>x</td></tr></tbody></table>"},
		{"put before a table, right to left, first line break",
			"<body dir=\"rtl\"><table><tr><td>x</td></tr><plaintext>\n<b>a</b>",
			"<div dir=\"rtl\">\n<pre>\n\n&lt;b&gt;a&lt;/b&gt;</pre>\n<table>\n<tbody>\n<tr>\n<td>x</td></tr></tbody></table>\n</div>"},
		{"inside MathML",
			`<p>a</p><math><mtext><plaintext>x &lt; y</math>`,
			"<p>a</p><math><mtext>\n<pre>x &amp;lt; y&lt;/math&gt;</pre></mtext></math>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := convert(t, Input{Name: "a.html", Data: []byte(tt.in)})
			if out.Content != tt.want {
				t.Errorf("Content =\n%q\nwant\n%q", out.Content, tt.want)
			}
			if back := reRendered(t, out.Content); back != out.Content {
				t.Errorf("output parses back as\n%q\nnot\n%q", back, out.Content)
			}
		})
	}
}

// reRendered parses HTML content as a document and renders its body's
// children.
func reRendered(t *testing.T, content string) string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	body := findBody(doc)
	var sb strings.Builder
	for c := body.FirstChild; c != nil; c = c.NextSibling {
		if err := html.Render(&sb, c); err != nil {
			t.Fatal(err)
		}
	}
	return sb.String()
}

func TestHTMLDeepNesting(t *testing.T) {
	nested := func(depth int) []byte {
		return []byte(strings.Repeat("<blockquote>", depth) + "deep text" + strings.Repeat("</blockquote>", depth))
	}
	t.Run("flattened below the output limit", func(t *testing.T) {
		out := convert(t, Input{Name: "deep.html", Data: nested(400)})
		if !strings.Contains(out.Content, "deep text") {
			t.Fatalf("deep text lost")
		}
		if n := strings.Count(out.Content, "<blockquote>"); n > maxHTMLDepth {
			t.Errorf("output nests %d blockquotes, want at most %d", n, maxHTMLDepth)
		}
	})
	t.Run("control values and svg text kept when flattened", func(t *testing.T) {
		doc := strings.Repeat("<blockquote>", 400) + `Name <input value="Jane"> <svg><text>Q1</text></svg> <div hidden>gone</div>` + strings.Repeat("</blockquote>", 400)
		out := convert(t, Input{Name: "deep.html", Data: []byte(doc)})
		if !strings.Contains(out.Content, "Name Jane Q1") || strings.Contains(out.Content, "gone") {
			t.Fatalf("flattened text = %q, want Name Jane Q1 and no hidden text", out.Content)
		}
	})
	t.Run("textarea and svg text kept beyond the parser's limit", func(t *testing.T) {
		doc := strings.Repeat("<font>", 5000) + "Notes <textarea>back door</textarea><p><svg><text>Q1</text></svg>"
		out := convert(t, Input{Name: "deep.html", Data: []byte(doc)})
		if want := "<p>Notes back door</p>\n<p>Q1</p>"; out.Content != want {
			t.Fatalf("Content = %q, want %q", out.Content, want)
		}
	})
	t.Run("text kept beyond the parser's limit", func(t *testing.T) {
		doc := "<p>intro</p><script>x()</script>" + strings.Repeat("<font>", 5000) + "deep &amp; text<br>next line"
		out := convert(t, Input{Name: "deep.html", Data: []byte(doc)})
		if want := "<p>intro</p>\n<p>deep &amp; text</p>\n<p>next line</p>"; out.Content != want {
			t.Fatalf("Content = %q, want %q", out.Content, want)
		}
	})
}

func TestXML(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string // "" means: same as in
		wantErr string
	}{
		{name: "well-formed kept as given", in: "<?xml version=\"1.0\"?>\n<!-- c -->\n<a x=\"1\"><b>t &amp; u</b><![CDATA[<raw>]]></a>\n"},
		{name: "namespaces kept", in: `<ubl:Invoice xmlns:ubl="urn:x"><ubl:ID>1</ubl:ID></ubl:Invoice>`},
		{name: "DOCTYPE without entities accepted", in: `<!DOCTYPE note SYSTEM "note.dtd"><note/>`},
		{name: "mismatched tags", in: `<a><b></a>`, wantErr: "the XML is not well-formed: line 1: element <b> closed by </a>"},
		{name: "unclosed root", in: "<a>\n<b/>", wantErr: "the XML is not well-formed: line 2: unexpected EOF"},
		{name: "two roots", in: `<a/><b/>`, wantErr: "a second root element <b>"},
		{name: "text outside the root", in: `<a/>trailing`, wantErr: "text outside the root element"},
		{name: "no root", in: `<?xml version="1.0"?>`, wantErr: "no root element"},
		{name: "entity declarations refused", in: `<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]><lolz>&lol2;</lolz>`, wantErr: "XML documents that declare entities are not accepted"},
		{name: "external entity refused", in: `<!DOCTYPE foo [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><foo>&xxe;</foo>`, wantErr: "declare entities"},
		{name: "HTML named entities of an external DTD accepted", in: "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE article PUBLIC \"-//NLM//DTD JATS (Z39.96) Journal Publishing DTD v1.1 20151215//EN\" \"http://jats.nlm.nih.gov/publishing/1.1/JATS-journalpublishing1.dtd\">\n<article><title>Caf&eacute; &amp; na&iuml;ve &mdash; test</title><p>a&nbsp;b</p></article>\n"},
		{name: "unknown entity kept as its literal text", in: `<a>&foo; and &x.y-z;</a>`},
		{name: "bare ampersand refused", in: `<a>fish & chips</a>`, wantErr: "the XML is not well-formed"},
		{name: "unterminated entity refused", in: `<a>&eacute</a>`, wantErr: "the XML is not well-formed"},
		{name: "too deep", in: strings.Repeat("<a>", maxXMLDepth+1) + strings.Repeat("</a>", maxXMLDepth+1), wantErr: "deeper than 256 levels"},
		{name: "exactly at the depth limit", in: strings.Repeat("<a>", maxXMLDepth) + strings.Repeat("</a>", maxXMLDepth)},
		{name: "declared encoding rewritten to UTF-8", in: "<?xml version=\"1.0\" encoding=\"windows-1252\"?><a>\x93q\x94</a>", want: "<?xml version=\"1.0\" encoding=\"UTF-8\"?><a>“q”</a>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := New(Config{}).Convert(context.Background(), Input{Name: "a.xml", Data: []byte(tt.in)})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Convert = %v, want error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Convert: %v", err)
			}
			want := tt.want
			if want == "" {
				want = tt.in
			}
			if out.Content != want || out.Format != job.FormatXML {
				t.Errorf("Output = %q (%s), want %q", out.Content, out.Format, want)
			}
		})
	}
}

// TestSVG: an SVG file gives the text a reader sees of it, as an inline
// <svg> in HTML does: titles, descriptions, text labels and the HTML of
// foreignObject, not the drawing's markup.
func TestSVG(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"a chart's title, description and labels", `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">
<svg xmlns="http://www.w3.org/2000/svg" width="100" height="50"><title>Revenue</title><desc>by quarter</desc>
<style>text{font:10px sans-serif}</style><rect width="5" height="5"/>
<g><text x="1" y="10">Q1: <tspan>1.2M</tspan></text><text>Two<tspan x="0" dy="1em">lines</tspan></text></g></svg>`,
			"Revenue by quarter Q1: 1.2M Two lines"},
		{"a diagram's labels in foreignObject", `<svg xmlns="http://www.w3.org/2000/svg"><foreignObject width="80" height="20"><div xmlns="http://www.w3.org/1999/xhtml">Start <b>here</b></div></foreignObject></svg>`,
			"Start here"},
		{"CDATA text", `<svg xmlns="http://www.w3.org/2000/svg"><text><![CDATA[a < b]]></text></svg>`, "a < b"},
		{"a root marked aria-hidden is still the document", `<svg xmlns="http://www.w3.org/2000/svg" aria-hidden="true"><text>kept</text></svg>`, "kept"},
		{"a drawing without text is empty", `<svg xmlns="http://www.w3.org/2000/svg"><path d="M0 0L5 5"/><script>alert(1)</script></svg>`, ""},
		{"latin-1 declared in the XML declaration", "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><svg><text>caf\xe9</text></svg>", "café"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := New(Config{}).Convert(context.Background(), Input{Name: "drawing.svg", Data: []byte(tt.in)})
			if err != nil {
				t.Fatalf("Convert: %v", err)
			}
			if out.Content != tt.want || out.Format != job.FormatMarkdown {
				t.Errorf("Convert = %q (%s), want %q (markdown)", out.Content, out.Format, tt.want)
			}
		})
	}
}

func TestSizeLimits(t *testing.T) {
	big := make([]byte, maxHTMLBytes+1)
	for i := range big {
		big[i] = 'a'
	}
	copy(big, "<html>")
	_, err := New(Config{}).Convert(context.Background(), Input{Name: "big.html", Data: big})
	if err == nil || !strings.Contains(err.Error(), "larger than the 32 MiB conversion limit") {
		t.Fatalf("Convert(33 MiB HTML) = %v, want a size error", err)
	}
}

func TestCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(Config{}).Convert(ctx, Input{Name: "a.txt", Data: []byte("x")}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Convert(cancelled) = %v, want context.Canceled", err)
	}
}

func TestDetectType(t *testing.T) {
	if got := DetectType([]byte("%PDF-1.4\n")); got != "application/pdf" {
		t.Errorf("DetectType(PDF) = %q", got)
	}
	if got := DetectType([]byte("hello")); got != "text/plain" {
		t.Errorf("DetectType(text) = %q", got)
	}
}

// corpusDir is the shared corpus of real documents, when present.
func corpusDir(t *testing.T, sub string) string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "shared", "corpus", sub)
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("corpus not available: %v", err)
	}
	return dir
}

var words = regexp.MustCompile(`[\p{L}\p{N}]+`)

// textOfHTML is the visible text of an HTML document.
func textOfHTML(t *testing.T, s string) string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return textOf(doc)
}

// TestCorpusHTML runs the Readability test pages: the output keeps the
// article text Readability extracted (its expected.html) and carries no
// script, style or event handler.
func TestCorpusHTML(t *testing.T) {
	dir := corpusDir(t, filepath.Join("html", "readability"))
	pages, _ := filepath.Glob(filepath.Join(dir, "*", "source.html"))
	if len(pages) == 0 {
		t.Skip("no readability pages")
	}
	for _, src := range pages {
		page := filepath.Base(filepath.Dir(src))
		t.Run(page, func(t *testing.T) {
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			expected, err := os.ReadFile(filepath.Join(filepath.Dir(src), "expected.html"))
			if err != nil {
				t.Fatal(err)
			}
			out := convert(t, Input{Name: "source.html", Data: data})
			if out.Format != job.FormatHTML {
				t.Fatalf("Format = %s", out.Format)
			}
			lower := strings.ToLower(out.Content)
			for _, bad := range []string{"<script", "<style", "<iframe", "<!--", " onclick=", " onload=", "javascript:"} {
				if strings.Contains(lower, bad) {
					t.Errorf("output contains %q", bad)
				}
			}
			have := map[string]bool{}
			for _, w := range words.FindAllString(strings.ToLower(textOfHTML(t, out.Content)), -1) {
				have[w] = true
			}
			want := words.FindAllString(strings.ToLower(textOfHTML(t, string(expected))), -1)
			missing := 0
			for _, w := range want {
				if !have[w] {
					missing++
				}
			}
			for _, w := range want {
				if !have[w] {
					t.Logf("missing %q", w)
				}
			}
			if len(want) == 0 || float64(missing) > 0.02*float64(len(want)) {
				t.Errorf("%d of %d article words missing from the output", missing, len(want))
			}
		})
	}
}

// TestCorpusXML runs the XRechnung invoices: each is returned as given and
// keeps every business value the expectations list.
func TestCorpusXML(t *testing.T) {
	dir := corpusDir(t, filepath.Join("xml", "einvoice"))
	files, _ := filepath.Glob(filepath.Join(dir, "*.xml"))
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out := convert(t, Input{Name: filepath.Base(f), Data: data})
			if out.Format != job.FormatXML || out.Content != string(data) {
				t.Fatalf("Format %s, content equal to input: %v", out.Format, out.Content == string(data))
			}
			raw, err := os.ReadFile(strings.TrimSuffix(f, ".xml") + ".expected-fields.json")
			if err != nil {
				t.Skip("no expectations")
			}
			var fields map[string]any
			if err := json.Unmarshal(raw, &fields); err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"invoice_number", "currency", "seller_name", "buyer_reference", "grand_total"} {
				if v, ok := fields[key].(string); ok && !strings.Contains(out.Content, v) {
					t.Errorf("%s %q not in output", key, v)
				}
			}
		})
	}
}

// TestCorpusTXT checks the charsets Apache Tika's tests expect.
// TestEBCDICKeepsWindows1252Punctuation: the cp500 sample's text was
// windows-1252 before it became EBCDIC; its dashes, apostrophes and
// trademarks survive as C1 code points and must not vanish, joining a
// range "2–66 MHz" into "266 MHz".
func TestEBCDICKeepsWindows1252Punctuation(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "in", "tika-english.cp500.txt"))
	if err != nil {
		t.Fatal(err)
	}
	out := convert(t, Input{Name: "english.cp500.txt", Data: data})
	for _, want := range []string{"(2—66 MHz (64-bit);", "2—133 MHz", "it’s an easy install", "devices—SpaceBall", "POWER™"} {
		if !strings.Contains(out.Content, want) {
			t.Errorf("content lacks %q", want)
		}
	}
}

func TestCorpusTXT(t *testing.T) {
	dir := corpusDir(t, "txt")
	raw, err := os.ReadFile(filepath.Join(dir, "expectations.json"))
	if err != nil {
		t.Fatal(err)
	}
	var expectations map[string]json.RawMessage
	if err := json.Unmarshal(raw, &expectations); err != nil {
		t.Fatal(err)
	}
	for name, msg := range expectations {
		if strings.HasPrefix(name, "_") {
			continue
		}
		var e struct {
			Charset   string `json:"charset"`
			FirstLine string `json:"first_line_utf8"`
		}
		if err := json.Unmarshal(msg, &e); err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			out := convert(t, Input{Name: name, Data: data})
			want, _, _ := strings.Cut(e.Charset, " ")
			if !strings.EqualFold(out.Charset, want) {
				t.Errorf("Charset = %s, want %s", out.Charset, want)
			}
			if e.FirstLine != "" {
				if first, _, _ := strings.Cut(out.Content, "\n"); first != e.FirstLine {
					t.Errorf("first line = %q, want %q", first, e.FirstLine)
				}
			}
			if !utf8.ValidString(out.Content) {
				t.Error("content is not valid UTF-8")
			}
		})
	}
}

// FuzzConvert feeds arbitrary bytes under each kind's name: Convert must
// not panic, and whatever it returns must be valid UTF-8 in its format,
// with no script surviving in HTML and XML that is well-formed.
func FuzzConvert(f *testing.F) {
	inputs, _ := filepath.Glob(filepath.Join("testdata", "in", "*"))
	for _, p := range inputs {
		if data, err := os.ReadFile(p); err == nil && len(data) < 8<<10 {
			f.Add(data, uint8(0))
		}
	}
	f.Add([]byte("<p onclick=x>a<script>b</script></p>"), uint8(1))
	f.Add([]byte(`<?xml version="1.0"?><a><b/></a>`), uint8(2))
	f.Add([]byte("\xff\xfeh\x00i\x00"), uint8(0))
	f.Add([]byte(`<body dir="rtl"><p>a</p><plaintext>b <i>c</i>`), uint8(1))
	f.Add([]byte(`<table><tr><td>x</td></tr><plaintext>a</table>`), uint8(1))
	names := []string{"f.txt", "f.html", "f.xml", "f", "f.md", "f.csv", "f.tsv", "f.json"}
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		name := names[int(which)%len(names)]
		out, err := New(Config{}).Convert(context.Background(), Input{Name: name, Data: data})
		if err != nil {
			return
		}
		if !utf8.ValidString(out.Content) {
			t.Fatalf("content is not valid UTF-8: %q", out.Content)
		}
		switch out.Format {
		case job.FormatHTML:
			doc, err := html.Parse(strings.NewReader(out.Content))
			if err != nil {
				t.Fatal(err)
			}
			var walk func(*html.Node)
			walk = func(n *html.Node) {
				if n.Type == html.ElementNode {
					if dropped[n.DataAtom] && n.Parent != nil && n.DataAtom != 0 && n.DataAtom.String() != "head" && n.DataAtom.String() != "title" {
						t.Fatalf("<%s> survived in %q", n.Data, out.Content)
					}
					for _, a := range n.Attr {
						if strings.HasPrefix(strings.ToLower(a.Key), "on") {
							t.Fatalf("event handler %s survived in %q", a.Key, out.Content)
						}
					}
				}
				for c := n.FirstChild; c != nil; c = c.NextSibling {
					walk(c)
				}
			}
			walk(doc)
		case job.FormatXML:
			if err := checkXML(context.Background(), out.Content); err != nil {
				t.Fatalf("returned XML does not check: %v", err)
			}
		}
	})
}

// scriptingOCR answers every page with HTML that tries to run code.
type scriptingOCR struct{}

func (scriptingOCR) Recognize(context.Context, provider.Document) (provider.Recognition, error) {
	return provider.Recognition{Text: `<p onclick="steal()">Total 42</p><script>steal()</script><a href="javascript:steal()">x</a>`,
		Format: "html", Model: "vision"}, nil
}

func TestProviderHTMLForPDFPagesIsCleanedLikeHTMLSources(t *testing.T) {
	data, err := os.ReadFile("pdf/testdata/scan-page2.pdf")
	if err != nil {
		t.Fatal(err)
	}
	out, err := New(Config{}).Convert(context.Background(), Input{Name: "a.pdf", Data: data, OCR: scriptingOCR{}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.Content, "steal") && (strings.Contains(out.Content, "<script") || strings.Contains(out.Content, "onclick") || strings.Contains(out.Content, "javascript:")) {
		t.Fatalf("provider HTML kept code: %s", out.Content)
	}
	if !strings.Contains(out.Content, "Total 42") || !strings.Contains(out.Content, `data-page="2"`) {
		t.Fatalf("cleaning lost the page or its text: %s", out.Content)
	}
}

// answeringOCR answers every page with the same text in the same format.
type answeringOCR struct{ text, format string }

func (o answeringOCR) Recognize(context.Context, provider.Document) (provider.Recognition, error) {
	return provider.Recognition{Text: o.text, Format: o.format, Model: "vision"}, nil
}

// TestProviderAnswersForFormPagesKeepTheirFields: a vision model writes a
// scanned form as HTML controls or as a markdown task list; the fields and
// which boxes are ticked must reach the row.
func TestProviderAnswersForFormPagesKeepTheirFields(t *testing.T) {
	data, err := os.ReadFile("pdf/testdata/scan-page2.pdf")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		answer answeringOCR
		want   []string
	}{
		{"html form", answeringOCR{`<h2>Application form</h2><p><label>Name:</label> <input value="Jane Doe"> </p><p><label>Date of birth: 1980-02-03</label></p><p><input type="checkbox" checked> <label>Married</label></p><p><label for=a>IBAN</label> DE89370400440532013000</p>`, "html"},
			[]string{"<p>Name: Jane Doe</p>", "<p>Date of birth: 1980-02-03</p>", "<p>☒ Married</p>", "<p>IBAN DE89370400440532013000</p>"}},
		{"markdown task list", answeringOCR{"## Form\n\n- [x] Married\n- [ ] Divorced", "markdown"},
			[]string{"<li>☒ Married</li>", "<li>☐ Divorced</li>"}},
		{"markdown subscript", answeringOCR{"We find H~2~O, ~~not this~~", "markdown"},
			[]string{"<p>We find H~2~O, <del>not this</del></p>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := New(Config{}).Convert(context.Background(), Input{Name: "a.pdf", Data: data, OCR: tt.answer})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out.Content, w) {
					t.Errorf("%q missing from\n%s", w, out.Content)
				}
			}
		})
	}
}

// pagedOCR answers each page with its own HTML.
type pagedOCR map[int]string

func (o pagedOCR) Recognize(_ context.Context, d provider.Document) (provider.Recognition, error) {
	return provider.Recognition{Text: o[d.Page], Format: "html", Model: "vision"}, nil
}

// TestAProviderPageWithAPlaintextElementEndsWhereItDid: a parser reads
// all after a <plaintext> start tag as text, so a page's answer holding
// one took its section's end and every later page as its text.
func TestAProviderPageWithAPlaintextElementEndsWhereItDid(t *testing.T) {
	data, err := os.ReadFile("pdf/testdata/scan-page2.pdf")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		ocr  pagedOCR
		want string
	}{
		{"first page", pagedOCR{1: "<p>a</p><plaintext>x  <b>y</b>\n z", 2: "<p>b</p>"},
			"<section data-page=\"1\">\n<p>a</p>\n<pre>x  &lt;b&gt;y&lt;/b&gt;\n z</pre></section>\n<section data-page=\"2\">\n<p>b</p></section>"},
		{"last page, attributes and a first line break", pagedOCR{1: "<p>a</p>", 2: "<div><plaintext dir=\"rtl\" onclick=\"x()\">\n<i>b</i>"},
			"<section data-page=\"1\">\n<p>a</p></section>\n<section data-page=\"2\">\n<pre dir=\"rtl\">\n\n&lt;i&gt;b&lt;/i&gt;</pre></section>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := New(Config{}).Convert(context.Background(), Input{Name: "a.pdf", Data: data, OCR: tt.ocr, Mode: job.ExtractionOCRAlways})
			if err != nil {
				t.Fatal(err)
			}
			if out.Content != tt.want {
				t.Errorf("Content =\n%q\nwant\n%q", out.Content, tt.want)
			}
			if back := reRendered(t, out.Content); back != out.Content {
				t.Errorf("output parses back as\n%q\nnot\n%q", back, out.Content)
			}
		})
	}
}
