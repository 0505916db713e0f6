package convert

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Limits of the well-formedness check. Entity names are bounded because
// each distinct one is a map entry (32 MiB of &e1;&e2;… would be four
// million); real documents reference a few dozen beyond the HTML set.
const (
	maxXMLDepth       = 256
	maxXMLTokens      = 4 << 20
	maxXMLEntityNames = 10000
	maxXMLEntityName  = 256 // bytes; a longer reference is not well-formed here
)

// xmlDecl matches an XML declaration and its encoding pseudo-attribute.
var (
	xmlDecl     = regexp.MustCompile(`^<\?xml\s[^>]*\?>`)
	xmlEncoding = regexp.MustCompile(`(\sencoding\s*=\s*)("[^"]*"|'[^']*')`)
	// entityName matches an entity name as the decoder reads one.
	entityName = regexp.MustCompile(`^[\p{L}_:][\p{L}\p{N}_:.\-\x{B7}]*$`)
)

// convertXML checks that data is one well-formed XML document and returns
// it as given, transcoded to UTF-8 (its declaration then says so).
// Entities are never expanded: Go's decoder fetches nothing, and documents
// declaring entities are refused outright, which rules out entity bombs.
// References to entities an external DTD declares (&eacute; in JATS,
// DocBook, XHTML) are accepted without reading the DTD: see checkXML.
func convertXML(ctx context.Context, data []byte, declared string) (string, string, error) {
	if enc := declaredXMLEncoding(data); enc != "" {
		declared = enc
	}
	text, cs := decodeText(data, declared)
	if loc := xmlDecl.FindStringIndex(text); loc != nil {
		decl := xmlEncoding.ReplaceAllString(text[:loc[1]], `${1}"UTF-8"`)
		text = decl + text[loc[1]:]
	}
	if err := checkXML(ctx, text); err != nil {
		return "", cs, err
	}
	return text, cs, nil
}

// declaredXMLEncoding reads the encoding of an ASCII-compatible XML
// declaration, or "".
func declaredXMLEncoding(data []byte) string {
	head := data[:min(len(data), 256)]
	head = bytes.TrimPrefix(head, []byte{0xEF, 0xBB, 0xBF})
	loc := xmlDecl.FindIndex(head)
	if loc == nil {
		return ""
	}
	m := xmlEncoding.FindSubmatch(head[:loc[1]])
	if m == nil {
		return ""
	}
	return strings.Trim(string(m[2]), `"'`)
}

// checkXML verifies well-formedness: matched tags, one root element, no
// text outside it, no entity declarations, bounded depth and size.
func checkXML(ctx context.Context, text string) error {
	d := xml.NewDecoder(strings.NewReader(text))
	d.Strict = true
	entities, err := knownEntities(text)
	if err != nil {
		return err
	}
	d.Entity = entities
	// The text is UTF-8 already and its declaration says so; a decoder
	// asking for another charset means the declaration was not rewritten.
	d.CharsetReader = func(label string, r io.Reader) (io.Reader, error) {
		return r, nil
	}
	var depth, roots, tokens int
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return notWellFormed(err)
		}
		tokens++
		if tokens > maxXMLTokens {
			return fmt.Errorf("the XML document has more than %d tokens", maxXMLTokens)
		}
		if tokens%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
				if roots > 1 {
					return fmt.Errorf("the XML is not well-formed: line %d: a second root element <%s>", line(d, text), t.Name.Local)
				}
			}
			depth++
			if depth > maxXMLDepth {
				return fmt.Errorf("the XML document nests elements deeper than %d levels", maxXMLDepth)
			}
		case xml.EndElement:
			depth--
		case xml.CharData:
			if depth == 0 && len(bytes.TrimSpace(t)) > 0 {
				return fmt.Errorf("the XML is not well-formed: line %d: text outside the root element", line(d, text))
			}
		case xml.Directive:
			if bytes.Contains(t, []byte("<!ENTITY")) {
				return errors.New("XML documents that declare entities are not accepted")
			}
		}
	}
	if roots == 0 {
		return errors.New("the XML is not well-formed: no root element")
	}
	return nil
}

// knownEntities is what checkXML lets the decoder resolve: the HTML/XHTML
// named entities (the ISO sets JATS, DocBook and TEI declare in their
// DTDs), and every other name text references, kept as its literal
// "&name;". A reference to an entity of the external DTD the document
// names is well-formed (the DTD is never fetched: no network, no XXE), so
// an unknown name must not cost the whole document. The values are never
// expanded further, and internal declarations are refused, so no
// reference can grow the text. The references are found by a scan that
// allocates nothing per reference (a regexp's FindAll took 1.2 GiB for
// 32 MiB of &a;), and their names and literals are slices of text.
func knownEntities(text string) (map[string]string, error) {
	m := make(map[string]string, len(xml.HTMLEntity))
	for name, v := range xml.HTMLEntity {
		m[name] = v
	}
	added := 0
	for at := 0; ; {
		i := strings.IndexByte(text[at:], '&')
		if i < 0 {
			return m, nil
		}
		start := at + i + 1 // the name's first byte
		at = start
		j := strings.IndexByte(text[start:min(len(text), start+maxXMLEntityName+1)], ';')
		if j <= 0 {
			continue
		}
		name := text[start : start+j]
		if _, ok := m[name]; ok || !entityName.MatchString(name) {
			continue
		}
		if added == maxXMLEntityNames {
			return nil, fmt.Errorf("the XML document references more than %d different undeclared entities", maxXMLEntityNames)
		}
		m[name] = text[start-1 : start+j+1]
		added++
	}
}

func notWellFormed(err error) error {
	var se *xml.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("the XML is not well-formed: line %d: %s", se.Line, se.Msg)
	}
	return fmt.Errorf("the XML is not well-formed: %v", err)
}

// line is the line of the decoder's current offset in text.
func line(d *xml.Decoder, text string) int {
	off := int(d.InputOffset())
	return strings.Count(text[:min(off, len(text))], "\n") + 1
}
