package convert

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/net/html"
)

// convertSVG returns the text a reader sees of an SVG file, as markdown:
// the spec's table puts images under markdown, and an SVG is a drawing,
// not a document whose markup means anything to an extraction. Its text
// is read as the HTML converter reads an inline <svg> (svgContent): the
// <title>, <desc> and <text> elements and the HTML in <foreignObject>.
// The HTML parser reads it (SVG is foreign content to it, as inline), so
// the bound on the tree is the HTML one.
func convertSVG(ctx context.Context, data []byte, declared string, maxNodes int) (string, string, error) {
	if enc := declaredXMLEncoding(data); enc != "" {
		declared = enc
	}
	text, cs := decodeText(data, declared)
	if htmlNodes(text, maxNodes) > maxNodes {
		return "", cs, fmt.Errorf("the SVG document parses into more than %d elements and text runs, over the limit", maxNodes)
	}
	doc, err := html.Parse(strings.NewReader(text))
	if err != nil {
		// Only the parser's own limits (elements nested more than 512
		// deep) fail it on a strings.Reader.
		return "", cs, fmt.Errorf("read SVG: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return "", cs, err
	}
	root := findSVG(doc)
	if root == nil {
		return "", cs, nil
	}
	return svgContent(root), cs, nil
}

// findSVG returns the first <svg> element under n, or nil.
func findSVG(n *html.Node) *html.Node {
	if n.Type == html.ElementNode && n.Namespace == "svg" && n.Data == "svg" {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if s := findSVG(c); s != nil {
			return s
		}
	}
	return nil
}
