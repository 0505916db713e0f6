package office

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// fuzzConfig keeps each fuzz input cheap and makes the limits easy to hit.
var fuzzConfig = Config{
	MaxEntries: 200, MaxInflatedBytes: 4 << 20, MaxRows: 500, MaxCells: 5000,
	MaxOutputBytes: 1 << 20,
	// Legacy formats must not start LibreOffice from a fuzz input.
	Soffice: "/nonexistent/docjobs-no-soffice",
}

// A fuzz input is a whole package, or, when it is not a zip, the main XML
// part of one: mutations of a zip mostly break its checksums, so the XML
// readers are reached far more often through a fixed package around
// fuzzed XML.
func fuzzKind(f *testing.F, kind string, wrap func(t *testing.T, xml []byte) []byte, seeds ...string) {
	for _, s := range seeds {
		data, err := os.ReadFile(filepath.Join("testdata", "corpus", filepath.FromSlash(s)))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		if main := mainXML(f, data); main != nil {
			f.Add(main)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !bytes.HasPrefix(data, []byte("PK")) {
			data = wrap(t, data)
		}
		md, _, err := Markdown(context.Background(), fuzzConfig, kind, data)
		if err != nil {
			for _, class := range []error{ErrInvalid, ErrZipBomb, ErrEncrypted, ErrUnsupported, ErrNoLibreOffice} {
				if errors.Is(err, class) {
					return
				}
			}
			t.Fatalf("unclassified error: %v", err)
		}
		// The budget bounds the output; notes on what was cut add a line.
		if int64(len(md)) > fuzzConfig.MaxOutputBytes+4096 {
			t.Fatalf("%d bytes of markdown over a budget of %d", len(md), fuzzConfig.MaxOutputBytes)
		}
	})
}

// mainXML is the main story part of a corpus package, as an XML seed.
func mainXML(f *testing.F, data []byte) []byte {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil
	}
	for _, name := range []string{"word/document.xml", "ppt/slides/slide1.xml", "xl/worksheets/sheet1.xml"} {
		if rc, err := zr.Open(name); err == nil {
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				f.Fatal(err)
			}
			return b
		}
	}
	return nil
}

// wrapper returns a function that puts fuzzed XML in place of one part of
// pkg, whose parts are read once.
func wrapper(f *testing.F, pkg []byte, name string) func(t *testing.T, xml []byte) []byte {
	parts := partsOf(f, pkg)
	return func(t *testing.T, xml []byte) []byte {
		replaced := make([][2]string, len(parts))
		for i, p := range parts {
			if p[0] == name {
				p[1] = string(xml)
			}
			replaced[i] = p
		}
		return zipOf(t, replaced...)
	}
}

func FuzzDOCX(f *testing.F) {
	base := buildDOCX(f, docxParts{styles: testStyles, numbering: testNumbering, body: p("", "x"),
		footnotes: `<w:footnote w:id="1"><w:p><w:r><w:t>note</w:t></w:r></w:p></w:footnote>`,
		links:     map[string]string{"rIdL1": "https://example.com/"}})
	f.Add([]byte(`<w:document ` + wNS + `><w:body>` + styled("Heading2", "H") + numbered("2", "1", "item") +
		`<w:tbl>` + tr(tc(`<w:tcPr><w:gridSpan w:val="3"/></w:tcPr>`+p("", "a")), tc(p("", "b"))) + `</w:tbl>` +
		`<w:p><w:hyperlink r:id="rIdL1"><w:r><w:rPr><w:b/></w:rPr><w:t>l</w:t></w:r></w:hyperlink><w:r><w:footnoteReference w:id="1"/></w:r></w:p>` +
		`</w:body></w:document>`))
	fuzzKind(f, DOCX, wrapper(f, base, "word/document.xml"),
		"docx/testWORD.docx", "docx/testWORD_various.docx", "docx/checkboxes.docx",
		"docx/mammoth/footnotes.docx", "docx/mammoth/text-box.docx", "docx/mammoth/strict-format.docx",
		"docx/textract/paragraphs_and_tables.docx", "malformed/testWORD_truncated.docx")
}

func FuzzPPTX(f *testing.F) {
	base := buildPPTX(f, []string{shape(`<p:ph type="title"/>`, aPara("", "T"))}, map[int]string{0: "n"})
	f.Add([]byte(`<p:sld ` + pNS + `><p:cSld><p:spTree>` + shape(`<p:ph type="title"/>`, aPara("", "T")) +
		shape(`<p:ph idx="1"/>`, aPara(`<a:pPr lvl="1"/>`, "x")+aPara(`<a:pPr><a:buAutoNum type="arabicPeriod"/></a:pPr>`, "y")) +
		`</p:spTree></p:cSld></p:sld>`))
	fuzzKind(f, PPTX, wrapper(f, base, "ppt/slides/slide1.xml"),
		"pptx/sample.pptx", "pptx/testPPT_various.pptx")
}

func FuzzXLSX(f *testing.F) {
	base := readTestdata(f, "xlsx/sample.xlsx")
	fuzzKind(f, XLSX, wrapper(f, base, "xl/worksheets/sheet1.xml"),
		"xlsx/sample.xlsx", "xlsx/SampleSS.xlsx", "xlsx/testEXCEL.xlsx")
}
