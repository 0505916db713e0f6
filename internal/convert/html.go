package convert

import (
	"bytes"
	"context"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	htmlcharset "golang.org/x/net/html/charset"

	"github.com/docjobs/docjobs/internal/plaintext"
)

// maxHTMLDepth bounds element nesting in the output; deeper subtrees are
// kept as their text, which keeps rendering and later chunking shallow.
const maxHTMLDepth = 256

// dropped elements go with everything inside them: code, styling, embedded
// objects, buttons and media whose content is fallback noise. Form
// controls and inline SVG are not dropped but replaced by the text a reader
// sees of them (controlText, svgText).
var dropped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Iframe: true, atom.Object: true, atom.Embed: true, atom.Applet: true,
	atom.Frame: true, atom.Frameset: true, atom.Noframes: true,
	atom.Canvas: true, atom.Audio: true, atom.Video: true,
	atom.Source: true, atom.Track: true, atom.Map: true, atom.Area: true,
	atom.Link: true, atom.Meta: true, atom.Base: true, atom.Title: true, atom.Head: true,
	atom.Button: true, atom.Datalist: true,
	atom.Wbr: true, atom.Param: true, atom.Slot: true,
}

// unwrapped elements carry no structure once their attributes are gone:
// their content stays, the tag goes. (<form> may wrap a whole page, as
// ASP.NET pages do; a <label> or <output> is text next to its control.)
var unwrapped = map[atom.Atom]bool{
	atom.Span: true, atom.Font: true, atom.Center: true, atom.Form: true,
	atom.Nobr: true, atom.Big: true, atom.Fieldset: true,
	atom.Picture: true, atom.Html: true, atom.Body: true,
	atom.Label: true, atom.Output: true, atom.Option: true, atom.Optgroup: true,
}

// keptEmpty elements stay even without content: table cells and rows hold
// the grid together, void elements are content themselves.
var keptEmpty = map[atom.Atom]bool{
	atom.Td: true, atom.Th: true, atom.Tr: true, atom.Col: true, atom.Colgroup: true,
	atom.Br: true, atom.Hr: true, atom.Img: true,
}

// blocks start on a line of their own in the output.
var blocks = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true,
	atom.Details: true, atom.Dd: true, atom.Div: true, atom.Dl: true, atom.Dt: true,
	atom.Figcaption: true, atom.Figure: true, atom.Footer: true, atom.H1: true,
	atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
	atom.Header: true, atom.Hgroup: true, atom.Hr: true, atom.Li: true, atom.Main: true,
	atom.Nav: true, atom.Ol: true, atom.P: true, atom.Pre: true, atom.Section: true,
	atom.Table: true, atom.Ul: true, atom.Caption: true, atom.Thead: true,
	atom.Tbody: true, atom.Tfoot: true, atom.Tr: true, atom.Td: true, atom.Th: true,
	atom.Summary: true, atom.Body: true, atom.Menu: true, atom.Legend: true,
	atom.Plaintext: true, // displayed as a <pre>
}

// keptAttrs are the attributes worth keeping: links, image descriptions,
// table geometry, list numbering and language. Everything else (event
// handlers, style, class, id, data-*) goes.
var keptAttrs = map[string]bool{
	"href": true, "src": true, "alt": true, "title": true,
	"lang": true, "dir": true, "colspan": true, "rowspan": true, "headers": true,
	"scope": true, "abbr": true, "start": true, "reversed": true, "value": true,
	"type": true, "datetime": true, "cite": true, "span": true,
	"data-page": true, // the page sections of recognized PDFs
}

// urlAttrs hold URLs, kept only with a harmless scheme.
var urlAttrs = map[string]bool{"href": true, "src": true, "cite": true}

// convertHTML returns the cleaned body content of an HTML document as HTML.
// A document that would parse into more than maxNodes nodes is refused
// before it is parsed: the tree, not the source, is what costs memory.
func convertHTML(ctx context.Context, data []byte, declared string, maxNodes int) (string, string, error) {
	if declared == "" {
		declared = metaCharset(data)
	}
	text, cs := decodeText(data, declared)
	if htmlNodes(text, maxNodes) > maxNodes {
		return "", cs, htmlTooLarge(maxNodes)
	}
	doc, err := html.Parse(strings.NewReader(text))
	if err != nil {
		// With a strings.Reader the parser fails only on its own limits
		// (elements nested more than 512 deep, as in pages with hundreds
		// of unclosed <font> tags); their text is still worth having.
		return flatHTML(text), cs, nil
	}
	if err := ctx.Err(); err != nil {
		return "", cs, err
	}
	body := findBody(doc)
	if body == nil {
		return "", cs, nil
	}
	docAttrs := direction(body)
	clean(body, 0)
	tidy(body, false)

	// Rendering stops at a <plaintext> left as it is: it ends the output.
	endless := preformatPlaintext(body)

	var buf bytes.Buffer
	for c := body.FirstChild; c != nil; c = c.NextSibling {
		if err := html.Render(&buf, c); err != nil {
			return "", cs, err
		}
	}
	content := strings.TrimSpace(buf.String())
	if content != "" && len(docAttrs) > 0 {
		// The document's direction and language would be lost with its
		// <html> and <body>; a wrapper keeps them (right-to-left text).
		var wrapped bytes.Buffer
		wrapper := &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div, Attr: docAttrs}
		wrapper.AppendChild(&html.Node{Type: html.TextNode, Data: "\n"})
		if err := html.Render(&wrapped, wrapper); err != nil {
			return "", cs, err
		}
		open, closing, _ := strings.Cut(wrapped.String(), "\n")
		if endless {
			// A parser would read the end tag as the <plaintext>'s text;
			// it closes the wrapper at the end of the input itself.
			content = open + "\n" + content
		} else {
			content = open + "\n" + content + "\n" + closing
		}
	}
	return content, cs, nil
}

// preformatPlaintext renames to <pre> each <plaintext> element below body
// that a node follows in document order (a table the parser put it in
// front of) or that is inside MathML. A parser reads all that follows a <plaintext> start tag as
// its text and html.Render ends at one, so that node would be written
// where it reads as text; a <pre> is what a <plaintext> displays as, its
// text escaped. It reports whether a <plaintext> is left: the last thing
// of the output, after which no end tag may be written.
func preformatPlaintext(body *html.Node) (left bool) {
	stack := []*html.Node{body}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if plaintext.Is(n) {
			if plaintext.Swallows(n, body) {
				plaintext.ToPre(n)
			} else {
				left = true
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			stack = append(stack, c)
		}
	}
	return left
}

// direction returns the dir attribute of the document (<body> overriding
// <html>) with its lang, or nothing when no direction is set: a wrapper
// for every page's lang="en" would only add nesting.
func direction(body *html.Node) []html.Attribute {
	var dir, lang string
	for _, n := range []*html.Node{body.Parent, body} {
		if n == nil || n.Type != html.ElementNode {
			continue
		}
		if v := strings.TrimSpace(attr(n, "dir")); v != "" {
			dir = v
		}
		if v := strings.TrimSpace(attr(n, "lang")); v != "" {
			lang = v
		}
	}
	if dir == "" {
		return nil
	}
	attrs := []html.Attribute{{Key: "dir", Val: dir}}
	if lang != "" {
		attrs = append(attrs, html.Attribute{Key: "lang", Val: lang})
	}
	return attrs
}

// metaCharset is the charset an HTML document declares in a <meta> within
// its first 1024 bytes, or "".
func metaCharset(data []byte) string {
	head := data[:min(len(data), 1024)]
	if !bytes.Contains(bytes.ToLower(head), []byte("charset")) {
		return "" // DetermineEncoding would answer its windows-1252 default
	}
	_, name, _ := htmlcharset.DetermineEncoding(head, "")
	return name
}

func findBody(n *html.Node) *html.Node {
	if n.Type == html.ElementNode && n.DataAtom == atom.Body {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if b := findBody(c); b != nil {
			return b
		}
	}
	return nil
}

// clean removes from n's subtree what carries no document content and
// reports nothing; n itself stays.
func clean(n *html.Node, depth int) {
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		switch c.Type {
		case html.TextNode:
		case html.ElementNode:
			cleanElement(n, c, depth+1)
		default: // comments, doctypes, stray documents
			n.RemoveChild(c)
		}
		c = next
	}
}

func cleanElement(parent, c *html.Node, depth int) {
	if dropped[c.DataAtom] || hidden(c) {
		parent.RemoveChild(c)
		return
	}
	switch {
	case c.Namespace == "svg":
		replaceSVG(parent, c)
		return
	case c.DataAtom == atom.Input || c.DataAtom == atom.Textarea || c.DataAtom == atom.Select:
		replaceControl(parent, c)
		return
	case c.DataAtom == atom.Dialog:
		// An open dialog is on screen, a box like a <div>; hidden()
		// dropped the closed ones.
		c.Data, c.DataAtom = "div", atom.Div
	}
	if depth > maxHTMLDepth {
		parent.InsertBefore(&html.Node{Type: html.TextNode, Data: textOf(c)}, c)
		parent.RemoveChild(c)
		return
	}
	c.Attr = keepAttrs(c.Attr)
	clean(c, depth)
	// Unknown and custom elements (<my-widget>) are unwrapped too: they
	// mean nothing to a reader of the output.
	if unwrapped[c.DataAtom] || (c.DataAtom == 0 && c.Namespace == "") {
		unwrap(parent, c)
		return
	}
	// Layout wrappers: a <div> holding only blocks adds nesting, not
	// structure; its blocks stand on their own.
	if c.DataAtom == atom.Div && onlyBlocks(c) {
		unwrap(parent, c)
		return
	}
	// An image without alternative text says nothing to a text reader.
	if c.DataAtom == atom.Img && strings.TrimSpace(attr(c, "alt")) == "" {
		parent.RemoveChild(c)
		return
	}
	if !keptEmpty[c.DataAtom] && !hasContent(c) {
		parent.RemoveChild(c)
	}
}

// unwrap replaces c by its children.
func unwrap(parent, c *html.Node) {
	for gc := c.FirstChild; gc != nil; {
		next := gc.NextSibling
		c.RemoveChild(gc)
		parent.InsertBefore(gc, c)
		gc = next
	}
	parent.RemoveChild(c)
}

// onlyBlocks reports whether n has children and all are block elements or
// whitespace.
func onlyBlocks(n *html.Node) bool {
	found := false
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		switch {
		case c.Type == html.TextNode && strings.TrimSpace(c.Data) == "":
		case isBlock(c) && c.DataAtom != atom.Li && c.DataAtom != atom.Tr && c.DataAtom != atom.Td && c.DataAtom != atom.Th:
			found = true
		default:
			return false
		}
	}
	return found
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key && a.Namespace == "" {
			return a.Val
		}
	}
	return ""
}

func keepAttrs(attrs []html.Attribute) []html.Attribute {
	kept := attrs[:0]
	for _, a := range attrs {
		if a.Namespace != "" || !keptAttrs[a.Key] {
			continue
		}
		if urlAttrs[a.Key] && !safeURL(a.Val) {
			continue
		}
		kept = append(kept, a)
	}
	return kept
}

// safeURL admits relative URLs and http, https, mailto and tel links; it
// rejects javascript:, data: and the like, also when disguised with the
// whitespace and control characters browsers ignore.
func safeURL(v string) bool {
	v = strings.Map(func(r rune) rune {
		if r <= 0x20 || r == 0x7F {
			return -1
		}
		return r
	}, v)
	i := strings.IndexAny(v, ":/?#")
	if i < 0 || v[i] != ':' {
		return true // relative
	}
	switch strings.ToLower(v[:i]) {
	case "http", "https", "mailto", "tel":
		return true
	}
	return false
}

// hasContent reports whether n's subtree holds text or an image.
func hasContent(n *html.Node) bool {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		switch {
		case c.Type == html.TextNode && strings.TrimSpace(c.Data) != "":
			return true
		case c.Type == html.ElementNode && c.DataAtom == atom.Img:
			return true
		case c.Type == html.ElementNode && hasContent(c):
			return true
		}
	}
	return false
}

// textOf concatenates the text of n's subtree without recursion, so that
// pathological nesting cannot exhaust the stack.
func textOf(n *html.Node) string {
	var sb strings.Builder
	stack := []*html.Node{n}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if c.Type == html.TextNode {
			sb.WriteString(c.Data)
			continue
		}
		if (c.Type != html.ElementNode && c.Type != html.DocumentNode) || dropped[c.DataAtom] || hidden(c) {
			continue
		}
		if t, ok := replacedText(c); ok {
			sb.WriteString(" " + t + " ")
			continue
		}
		if blocks[c.DataAtom] || c.DataAtom == atom.Br {
			// Blocks are separated from what precedes and follows them.
			sb.WriteByte(' ')
			stack = append(stack, &html.Node{Type: html.TextNode, Data: " "})
		}
		for gc := c.LastChild; gc != nil; gc = gc.PrevSibling {
			stack = append(stack, gc)
		}
	}
	return sb.String()
}

// tidy collapses layout whitespace (outside <pre>) and puts each block on
// its own line, so the output reads as the document's structure.
func tidy(n *html.Node, inPre bool) {
	mergeText(n)
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		switch c.Type {
		case html.TextNode:
			if !inPre {
				tidyText(n, c)
			}
		case html.ElementNode:
			// A <plaintext> displays as a <pre>: its spaces and lines
			// are the text.
			tidy(c, inPre || c.DataAtom == atom.Pre || c.DataAtom == atom.Plaintext)
			if blocks[c.DataAtom] && !inPre {
				newlineBefore(n, c)
			}
		}
		c = next
	}
}

// mergeText joins adjacent text children, which unwrapping leaves behind,
// so whitespace between them collapses as one run.
func mergeText(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.TextNode || c.NextSibling == nil || c.NextSibling.Type != html.TextNode {
			continue
		}
		// A builder keeps thousands of unwrapped <span>s linear.
		var sb strings.Builder
		sb.WriteString(c.Data)
		for next := c.NextSibling; next != nil && next.Type == html.TextNode; next = c.NextSibling {
			sb.WriteString(next.Data)
			n.RemoveChild(next)
		}
		c.Data = sb.String()
	}
}

func isBlock(n *html.Node) bool {
	return n != nil && n.Type == html.ElementNode && blocks[n.DataAtom]
}

func tidyText(parent, c *html.Node) {
	s := collapseSpace(c.Data)
	// Whitespace next to a block boundary is layout, not content.
	if c.PrevSibling == nil && isBlock(parent) || isBlock(c.PrevSibling) || isBreak(c.PrevSibling) {
		s = strings.TrimLeft(s, " ")
	}
	if c.NextSibling == nil && isBlock(parent) || isBlock(c.NextSibling) {
		s = strings.TrimRight(s, " ")
	}
	if s == "" {
		parent.RemoveChild(c)
		return
	}
	c.Data = s
}

func isBreak(n *html.Node) bool {
	return n != nil && n.Type == html.ElementNode && n.DataAtom == atom.Br
}

// newlineBefore inserts a line break before block c unless one is there.
func newlineBefore(parent, c *html.Node) {
	prev := c.PrevSibling
	if prev == nil && parent.DataAtom == atom.Body {
		return // the output's first line
	}
	if prev != nil && prev.Type == html.TextNode {
		if strings.HasSuffix(prev.Data, "\n") {
			return
		}
		prev.Data = strings.TrimRight(prev.Data, " ")
	}
	parent.InsertBefore(&html.Node{Type: html.TextNode, Data: "\n"}, c)
}

// collapseSpace turns each run of HTML whitespace into one space.
func collapseSpace(s string) string {
	var sb strings.Builder
	sb.Grow(len(s))
	space := false
	for _, r := range s {
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' {
			space = true
			continue
		}
		if space {
			sb.WriteByte(' ')
			space = false
		}
		sb.WriteRune(r)
	}
	if space {
		sb.WriteByte(' ')
	}
	return sb.String()
}

// flatHTML is the fallback for documents the parser refuses: their text,
// one <p> per block, without the tree.
func flatHTML(text string) string {
	var (
		out  strings.Builder
		para strings.Builder
		skip int // depth inside dropped elements
	)
	flush := func() {
		if p := strings.TrimSpace(collapseSpace(para.String())); p != "" {
			if out.Len() > 0 {
				out.WriteByte('\n')
			}
			out.WriteString("<p>")
			out.WriteString(html.EscapeString(p))
			out.WriteString("</p>")
		}
		para.Reset()
	}
	z := html.NewTokenizer(strings.NewReader(text))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		tok := z.Token()
		switch tt {
		case html.TextToken:
			if skip == 0 {
				para.WriteString(tok.Data)
			}
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			if flatSkipped[tok.DataAtom] {
				switch {
				case tt == html.StartTagToken:
					skip++
				case tt == html.EndTagToken && skip > 0:
					skip--
				}
				continue
			}
			if blocks[tok.DataAtom] || tok.DataAtom == atom.Br {
				flush()
			}
		}
	}
	flush()
	return out.String()
}

// flatSkipped are the elements whose text flatHTML leaves out: the ones
// that are reliably closed (most are raw-text elements to the tokenizer),
// so a missing end tag cannot swallow the rest of the document.
var flatSkipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Title: true, atom.Iframe: true, atom.Noframes: true, atom.Select: true,
}
