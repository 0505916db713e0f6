package office

import (
	"bufio"
	"encoding/xml"
	"io"
	"strings"

	"golang.org/x/net/html/charset"
)

type xmlStart = xml.StartElement

// Namespaces, transitional and ISO/IEC 29500 strict. Elements are matched by
// namespace so that DrawingML's a:p is never taken for WordprocessingML's w:p.
const (
	nsW       = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
	nsWStrict = "http://purl.oclc.org/ooxml/wordprocessingml/main"
	nsA       = "http://schemas.openxmlformats.org/drawingml/2006/main"
	nsAStrict = "http://purl.oclc.org/ooxml/drawingml/main"
	nsP       = "http://schemas.openxmlformats.org/presentationml/2006/main"
	nsPStrict = "http://purl.oclc.org/ooxml/presentationml/main"
	nsR       = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
	nsRStrict = "http://purl.oclc.org/ooxml/officeDocument/relationships"
	nsM       = "http://schemas.openxmlformats.org/officeDocument/2006/math"
	nsMStrict = "http://purl.oclc.org/ooxml/officeDocument/math"
	nsMC      = "http://schemas.openxmlformats.org/markup-compatibility/2006"
	nsW14     = "http://schemas.microsoft.com/office/word/2010/wordml"
	nsWP      = "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"
	nsV       = "urn:schemas-microsoft-com:vml"
)

func isW(n xml.Name) bool  { return n.Space == nsW || n.Space == nsWStrict }
func isA(n xml.Name) bool  { return n.Space == nsA || n.Space == nsAStrict }
func isP(n xml.Name) bool  { return n.Space == nsP || n.Space == nsPStrict }
func isM(n xml.Name) bool  { return n.Space == nsM || n.Space == nsMStrict }
func isMC(n xml.Name) bool { return n.Space == nsMC }

// maxDepth bounds element nesting the converters follow. Real documents
// nest a few dozen deep; a hostile one could nest millions.
const maxDepth = 256

// newXMLDecoder reads one XML part: a UTF-8 byte-order mark is skipped,
// declared legacy encodings are decoded, and the decoder is lenient about
// HTML entities and sloppy markup some producers write. encoding/xml
// never resolves external entities or expands DTD-defined ones.
func newXMLDecoder(r io.Reader) *xml.Decoder {
	br := bufio.NewReader(r)
	if b, err := br.Peek(3); err == nil && string(b) == "\xef\xbb\xbf" {
		_, _ = br.Discard(3)
	}
	dec := xml.NewDecoder(br)
	dec.Strict = false
	dec.CharsetReader = charset.NewReaderLabel
	return dec
}

// attr is the value of the attribute with this local name, in any namespace.
func attr(se xml.StartElement, local string) string {
	for _, a := range se.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

// hasAttr reports whether the attribute is present.
func hasAttr(se xml.StartElement, local string) bool {
	for _, a := range se.Attr {
		if a.Name.Local == local {
			return true
		}
	}
	return false
}

// relAttr is a relationship id attribute (r:id, r:embed…).
func relAttr(se xml.StartElement, local string) string {
	for _, a := range se.Attr {
		if a.Name.Local == local && (a.Name.Space == nsR || a.Name.Space == nsRStrict) {
			return a.Value
		}
	}
	return ""
}

// onOff reads an OOXML on/off property: present without a value is on.
func onOff(se xml.StartElement) bool {
	switch strings.ToLower(attr(se, "val")) {
	case "0", "false", "off", "none":
		return false
	}
	return true
}

// eachChild calls fn for each child element of the element whose start
// was just read, up to its end. fn must consume the child: read it to its
// end or Skip it.
func eachChild(dec *xml.Decoder, fn func(xml.StartElement) error) error {
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if err := fn(t); err != nil {
				return err
			}
		case xml.EndElement:
			return nil
		}
	}
}

// readAlternate reads an mc:AlternateContent: read consumes its first
// mc:Choice (or a lone mc:Fallback), and the rest is skipped, since the
// Fallback repeats the same content for older readers.
func readAlternate(dec *xml.Decoder, read func() error) error {
	done := false
	return eachChild(dec, func(t xml.StartElement) error {
		if !done && isMC(t.Name) && (t.Name.Local == "Choice" || t.Name.Local == "Fallback") {
			done = true
			return read()
		}
		return dec.Skip()
	})
}

// isAlternate reports an mc:AlternateContent element.
func isAlternate(t xml.StartElement) bool {
	return isMC(t.Name) && t.Name.Local == "AlternateContent"
}
