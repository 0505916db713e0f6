package office

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readTestdata reads a file under testdata/corpus.
func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "corpus", filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// markdown converts data and fails the test on error.
func markdown(t testing.TB, cfg Config, kind string, data []byte) (string, string) {
	t.Helper()
	md, model, err := Markdown(context.Background(), cfg, kind, data)
	if err != nil {
		t.Fatalf("Markdown(%s): %v", kind, err)
	}
	return md, model
}

// needSoffice skips a test that needs LibreOffice when it is not installed.
func needSoffice(t testing.TB) {
	t.Helper()
	if _, err := sofficePath(Config{}); err != nil {
		t.Skip("LibreOffice (soffice) is not installed")
	}
}

// zipOf builds a zip archive of the given parts (deflated), in name order
// of the slice.
func zipOf(t testing.TB, parts ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, p := range parts {
		w, err := zw.Create(p[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(p[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const (
	wNS = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" ` +
		`xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" ` +
		`xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" ` +
		`xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" ` +
		`xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" ` +
		`xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" ` +
		`xmlns:v="urn:schemas-microsoft-com:vml"`
	relsNS      = `xmlns="http://schemas.openxmlformats.org/package/2006/relationships"`
	relTypeBase = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
)

// docxParts describes a handmade DOCX.
type docxParts struct {
	body      string // the content of w:body
	styles    string // the content of w:styles, or ""
	numbering string // the content of w:numbering, or ""
	footnotes string // the content of w:footnotes, or ""
	links     map[string]string
}

// buildDOCX makes a minimal WordprocessingML package.
func buildDOCX(t testing.TB, d docxParts) []byte {
	t.Helper()
	rels := `<?xml version="1.0" encoding="UTF-8"?><Relationships ` + relsNS + `>`
	parts := [][2]string{
		{"[Content_Types].xml", `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`},
		{"_rels/.rels", `<?xml version="1.0"?><Relationships ` + relsNS + `><Relationship Id="rId1" Type="` + relTypeBase + `officeDocument" Target="word/document.xml"/></Relationships>`},
		{"word/document.xml", `<?xml version="1.0" encoding="UTF-8"?><w:document ` + wNS + `><w:body>` + d.body + `</w:body></w:document>`},
	}
	if d.styles != "" {
		rels += `<Relationship Id="rIdS" Type="` + relTypeBase + `styles" Target="styles.xml"/>`
		parts = append(parts, [2]string{"word/styles.xml", `<w:styles ` + wNS + `>` + d.styles + `</w:styles>`})
	}
	if d.numbering != "" {
		rels += `<Relationship Id="rIdN" Type="` + relTypeBase + `numbering" Target="numbering.xml"/>`
		parts = append(parts, [2]string{"word/numbering.xml", `<w:numbering ` + wNS + `>` + d.numbering + `</w:numbering>`})
	}
	if d.footnotes != "" {
		rels += `<Relationship Id="rIdF" Type="` + relTypeBase + `footnotes" Target="footnotes.xml"/>`
		parts = append(parts, [2]string{"word/footnotes.xml", `<w:footnotes ` + wNS + `>` + d.footnotes + `</w:footnotes>`})
	}
	for id, url := range d.links {
		rels += `<Relationship Id="` + id + `" Type="` + relTypeBase + `hyperlink" Target="` + url + `" TargetMode="External"/>`
	}
	rels += `</Relationships>`
	parts = append(parts, [2]string{"word/_rels/document.xml.rels", rels})
	return zipOf(t, parts...)
}

var (
	mdTableRule  = regexp.MustCompile(`(?m)^\|( --- \|)+$`)
	mdHeading    = regexp.MustCompile(`(?m)^#{1,6} `)
	mdListMarker = regexp.MustCompile(`(?m)^\s*(- |\d+\. )`)
	mdLink       = regexp.MustCompile(`\[([^\]]*)\]\((<[^>]*>|[^)\s]*)\)`)
	mdNoteRef    = regexp.MustCompile(`\[\^(\d+)\]:?`)
	mdEscape     = regexp.MustCompile(`\\([!-/:-@\[-` + "`" + `{-~])`)
)

// plainText reduces markdown to its text, for comparing with the plain
// text upstream extractors produce: table rules and pipes, heading and
// list markers, emphasis and link syntax go; escapes are undone;
// footnote references read "[1]" as Tika and mammoth write them.
func plainText(md string) string {
	s := mdTableRule.ReplaceAllString(md, "")
	s = strings.ReplaceAll(s, "<br>", "\n")
	s = mdHeading.ReplaceAllString(s, "")
	s = mdListMarker.ReplaceAllString(s, "")
	s = mdLink.ReplaceAllString(s, "$1")
	s = mdNoteRef.ReplaceAllString(s, "[$1]")
	// Delimiters are unescaped characters; protect the escaped ones.
	s = strings.NewReplacer(`\|`, "\x00p", `\*`, "\x00s", `\~`, "\x00t").Replace(s)
	s = strings.NewReplacer("|", " ", "**", "", "*", "", "~~", "").Replace(s)
	s = strings.NewReplacer("\x00p", "|", "\x00s", "*", "\x00t", "~").Replace(s)
	return mdEscape.ReplaceAllString(s, "$1")
}

// norm collapses white space.
func norm(s string) string { return strings.Join(strings.Fields(s), " ") }

// htmlTextNodes splits an HTML fragment into its text nodes.
func htmlTextNodes(h string) []string {
	var nodes []string
	for _, part := range regexp.MustCompile(`<[^>]*>`).Split(h, -1) {
		if n := norm(part); n != "" {
			nodes = append(nodes, n)
		}
	}
	return nodes
}

// inOrder reports the first of parts that does not appear in s after the
// previous one, or "".
func inOrder(s string, parts []string) string {
	for _, p := range parts {
		i := strings.Index(s, p)
		if i < 0 {
			return p
		}
		s = s[i+len(p):]
	}
	return ""
}

// removePart returns the zip data without the named part.
func removePart(t testing.TB, data []byte, name string) []byte {
	t.Helper()
	return rewriteZip(t, data, name)
}

// addParts returns the zip data with parts added.
func addParts(t testing.TB, data []byte, parts ...[2]string) []byte {
	t.Helper()
	return rewriteZip(t, data, "", parts...)
}

func rewriteZip(t testing.TB, data []byte, drop string, parts ...[2]string) []byte {
	t.Helper()
	var all [][2]string
	for _, p := range partsOf(t, data) {
		if p[0] != drop {
			all = append(all, p)
		}
	}
	return zipOf(t, append(all, parts...)...)
}

// partsOf reads every part of a zip.
func partsOf(t testing.TB, data []byte) [][2]string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	var all [][2]string
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, [2]string{f.Name, string(b)})
	}
	return all
}
