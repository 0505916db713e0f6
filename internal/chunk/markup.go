package chunk

import (
	"encoding/xml"
	"io"
	"strings"

	"golang.org/x/net/html"
)

type nodeKind int

const (
	kindElement nodeKind = iota
	kindText             // splittable character data
	kindLeaf             // void or self-closing element, comment, doctype, CDATA, stray end tag
)

// node is an element or token of an HTML/XML document by byte offsets
// into the input. Children cover [openEnd, closeStart) contiguously.
type node struct {
	kind       nodeKind
	name       string // as written, for the end tag a split adds
	root       bool   // the document: no tags of its own
	start, end int
	openEnd    int // end of the start tag
	closeStart int // start of the end tag; end when the tag is implied
	children   []*node
	header     *node // a table header row (group) among children, repeated after a split
	// endless: an HTML <plaintext> element, one open where it starts, or
	// its text. All after that start tag is its text, to the input's end,
	// so a chunk that ends there can close nothing: an end tag would be
	// read as text the document does not have.
	endless bool
}

// tree appends units for n, whose start and end have contexts open and
// close. An element that fits is one unit; otherwise its children are, the
// first carrying its start tag and the last its end tag, with the element
// re-opened (and its table header repeated) at every boundary in between.
func (s *splitter) tree(n *node, prio int, open, close string) {
	if s.over {
		return
	}
	switch n.kind {
	case kindText:
		s.pieces(n.start, n.end, prio, markupLevels, open, close)
		return
	case kindLeaf:
		s.leaf(n, prio, open, close)
		return
	}
	// An element whose end tag is implied (still open at the end of the
	// input) is closed by the chunk that ends with it.
	endClose := close
	if !n.root && n.closeStart == n.end {
		endClose = "</" + n.name + ">" + close
	}
	if n.endless {
		endClose = ""
	}
	limit := s.limit(open, endClose)
	if !n.root {
		if tokens, ok := s.fits(n.start, n.end, limit); ok {
			s.add(n.start, n.end, tokens, prio, open, endClose)
			// A heading belongs with the section after it.
			s.units.at(s.units.len() - 1).keep = headings[strings.ToLower(n.name)]
			return
		}
	}
	innerOpen, innerClose := open, close
	if !n.root {
		innerOpen = open + s.text[n.start:n.openEnd]
		innerClose = "</" + n.name + ">" + close
	}
	closeAt := func(c *node) string {
		if c.endless {
			return ""
		}
		return innerClose
	}
	// An element is split at its children while re-opening it (with its
	// ancestors) leaves at least a quarter of the budget for them; deeper,
	// or under a start tag larger than that, it is split as text, so that
	// structure alone never makes a document fail and a chunk never
	// carries mostly re-opened tags. Those chunks carry cut tags and are
	// not well-formed.
	if !n.root && (len(n.children) == 0 || s.ctx(innerOpen)+s.ctx(innerClose) > s.budget-s.budget/4) {
		s.pieces(n.start, n.end, prio, markupLevels, open, endClose)
		return
	}
	withHeader := ""
	if n.header != nil {
		// Repeat the header only while the contexts leave half the
		// budget for the rows themselves.
		withHeader = innerOpen + s.text[n.header.start:n.header.end]
		if s.ctx(withHeader)+s.ctx(innerClose) > s.budget/2 {
			withHeader = ""
		}
	}
	openAt := func(pos int) string {
		if withHeader != "" && pos >= n.header.end {
			return withHeader
		}
		return innerOpen
	}

	first := s.units.len()
	pending := -1 // start of whitespace waiting for the next child
	for _, c := range n.children {
		if c.kind == kindText && isBlank(s.text[c.start:c.end]) {
			// Whitespace between elements is no block of its own: it
			// stays with the unit before it (or after it, at the start).
			if s.units.len() > first {
				u := s.units.at(s.units.len() - 1)
				ws := s.count(s.text[c.start:c.end])
				if s.glueFits(u, ws, u.open, u.close) {
					s.extendEnd(u, c.end, ws, u.close)
					s.tally(ws)
				} else {
					s.add(c.start, c.end, ws, prioBlock, openAt(c.start), innerClose)
				}
			} else if pending < 0 {
				pending = c.start
			}
			continue
		}
		k := s.units.len()
		s.tree(c, prioBlock, openAt(c.start), closeAt(c))
		if s.over {
			return
		}
		if pending >= 0 && s.units.len() > k {
			u := s.units.at(k)
			ws := s.count(s.text[pending:u.start])
			if open := s.intern(openAt(pending)); s.glueFits(u, ws, open, u.close) {
				s.extendStart(u, pending, ws, open, int(u.prio))
			} else {
				s.units.replace(k, k, s.newUnit(pending, int(u.start), ws, int(u.prio), openAt(pending), innerClose, ws))
			}
			s.tally(ws)
			pending = -1
		}
	}
	if pending >= 0 { // only whitespace inside
		s.pieces(pending, n.closeStart, prioBlock, markupLevels, openAt(pending), innerClose)
	}
	if s.units.len() == first || s.over {
		return
	}
	// The start tag joins the first unit and the end tag the last, unless
	// that would overflow them: then each tag is a unit of its own (a
	// chunk "<div></div>" is still well-formed).
	// A glued tag stays a part of its own, so a chunk that cannot take
	// the unit whole (to keep a heading or the XML declaration with it)
	// can still be cut between the tag and the rest.
	f := s.units.at(first)
	tag := s.count(s.text[n.start:f.start])
	switch {
	case n.start == int(f.start):
	case s.glueFits(f, tag, s.intern(open), f.close):
		tagUnit := s.newUnit(n.start, int(f.start), tag, prio, open, innerClose, tag)
		parts := []unit{tagUnit, *f}
		g := s.newUnit(n.start, int(f.end), tag+int(f.tokens), prio, open, "", s.partsCount(parts))
		g.close, g.keep = f.close, f.keep
		s.setParts(&g, parts)
		*f = g
	default:
		s.units.replace(first, first, s.newUnit(n.start, int(f.start), tag, prio, open, innerClose, tag))
	}
	s.tally(tag)
	l := s.units.at(s.units.len() - 1)
	tag = s.count(s.text[l.end:n.end])
	switch {
	case int(l.end) == n.end:
	case s.glueFits(l, tag, l.open, s.intern(endClose)):
		// A heading that ends its element heads nothing after it.
		tagUnit := s.newUnit(int(l.end), n.end, tag, prioBlock, openAt(int(l.end)), endClose, tag)
		parts := []unit{*l, tagUnit}
		g := s.newUnit(int(l.start), n.end, int(l.tokens)+tag, int(l.prio), "", endClose, s.partsCount(parts))
		g.open = l.open
		s.setParts(&g, parts)
		*l = g
	default:
		s.add(int(l.end), n.end, tag, prioBlock, openAt(int(l.end)), endClose)
		tag = 0
	}
	s.tally(tag)
	if !n.root {
		s.collapse(first, n.start, n.end, prio, open, endClose, limit)
		if s.units.len() == first+1 {
			s.units.at(first).keep = headings[strings.ToLower(n.name)]
		}
	}
}

// headings are the HTML elements a chunk does not end with.
var headings = set("h1", "h2", "h3", "h4", "h5", "h6")

// leaf appends units for a comment, CDATA section, declaration or a tag
// without content. One larger than the room between its contexts is cut
// as text, since nothing in it can be re-opened: a comment or CDATA
// section into pieces each re-opened and closed with its delimiters, so
// the chunks stay well-formed, anything else (a tag with a giant
// attribute value) at words and characters.
func (s *splitter) leaf(n *node, prio int, open, close string) {
	text := s.text[n.start:n.end]
	// Counted whole, not by fits: a tag is a few times more bytes than
	// tokens, and one that fits must stay whole.
	if tokens := s.count(text); tokens <= s.limit(open, close) {
		s.add(n.start, n.end, tokens, prio, open, close)
		// The XML declaration or doctype alone is no content: it goes
		// with what follows.
		lower := strings.ToLower(text[:min(len(text), 9)])
		s.units.at(s.units.len() - 1).keep = strings.HasPrefix(lower, "<?xml") || strings.HasPrefix(lower, "<!doctype")
		return
	}
	for _, d := range []struct{ start, end, reopen, reclose string }{
		{"<![CDATA[", "]]>", "<![CDATA[", "]]>"},
		// Spaces keep a piece ending or starting with "-" from making
		// "--->" or "<!--->".
		{"<!--", "-->", "<!-- ", " -->"},
	} {
		from, to := n.start+len(d.start), n.end-len(d.end)
		if from >= to || !strings.HasPrefix(text, d.start) || !strings.HasSuffix(text, d.end) {
			continue
		}
		first := s.units.len()
		s.pieces(from, to, prio, markupLevels, open+d.reopen, d.reclose+close)
		if s.over || s.units.len() == first {
			return
		}
		// The section's own delimiters join its first and last pieces,
		// which then need no re-opened or added ones.
		f := s.units.at(first)
		tok := s.count(d.start)
		if s.glueFits(f, tok, s.intern(open), f.close) {
			s.extendStart(f, n.start, tok, s.intern(open), prio)
		} else {
			s.units.replace(first, first, s.newUnit(n.start, from, tok, prio, open, d.reclose+close, tok))
		}
		s.tally(tok)
		l := s.units.at(s.units.len() - 1)
		if tok := s.count(d.end); s.glueFits(l, tok, l.open, s.intern(close)) {
			s.extendEnd(l, n.end, tok, s.intern(close))
			s.tally(tok)
		} else {
			s.add(to, n.end, tok, prioBlock, open+d.reopen, close)
		}
		return
	}
	s.pieces(n.start, n.end, prio, markupLevels, open, close)
}

// glueFits reports whether u, grown by tokens and with the given
// contexts, still fits the budget alone.
func (s *splitter) glueFits(u *unit, tokens int, open, close ctxID) bool {
	return tokens == 0 || s.ctxTokens(open)+int(u.tokens)+tokens+s.ctxTokens(close) <= s.budget
}

// extendStart moves u's start back to start over text of the given
// tokens (a start tag, whitespace), with the context there; a collapsed
// unit's first part moves with it, so splitting it again loses nothing.
// The grown counts are sums across a join after a tag or before one,
// which is never clean: the text's exact count is no longer known.
func (s *splitter) extendStart(u *unit, start, tokens int, open ctxID, prio int) {
	for ; u != nil; u = s.firstPart(u) {
		u.start, u.tokens, u.open, u.prio, u.count = int32(start), u.tokens+int32(tokens), open, int8(prio), 0
	}
}

// extendEnd moves u's end forward to end, like extendStart.
func (s *splitter) extendEnd(u *unit, end, tokens int, close ctxID) {
	for ; u != nil; u = s.lastPart(u) {
		u.end, u.tokens, u.close, u.count = int32(end), u.tokens+int32(tokens), close, 0
	}
}

func (s *splitter) firstPart(u *unit) *unit {
	parts := s.partsOf(u)
	if len(parts) == 0 {
		return nil
	}
	return &parts[0]
}

func (s *splitter) lastPart(u *unit) *unit {
	parts := s.partsOf(u)
	if len(parts) == 0 {
		return nil
	}
	return &parts[len(parts)-1]
}

// voidElements never have content or an end tag.
var voidElements = set("area", "base", "br", "col", "embed", "hr", "img", "input", "keygen", "link", "meta", "param", "source", "track", "wbr")

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// maxMarkupNodes is the most nodes (elements, text runs, other tokens) an
// HTML or XML document is built into; a document with more is split as
// plain text. The tree is built whole before a unit is counted, so the
// chunk limit (SplitAtMost) cannot stop it, and markup makes a node every
// 3 to 5 bytes at 96 bytes of heap each and more (130 with its units
// while a unit was 104 bytes): at the HTML node limit of recognition
// (internal/convert), 19 MiB of <br/> peaked at 1.2 GiB while chunked. Real pages make a node every 20 bytes
// or more (Node.js's 5.4 MiB API reference 287,248 of them), so every
// real document the default chunk limit admits (about 16 MB of text)
// keeps its structure.
const maxMarkupNodes = 1_000_000

// parseHTML builds the element tree of text with the x/net/html
// tokenizer. It reports false when the tokens do not map back onto the
// input byte for byte, or when the tree would have more than maxNodes
// nodes (it stops there). The tree follows the tags as written, as
// html.Render writes them: an end tag closes the elements opened after
// its own, and elements still open at the end close there; end tags HTML
// lets a writer omit are not inferred (a chunk then closes them itself).
func parseHTML(text string, maxNodes int) (*node, bool) {
	root := &node{kind: kindElement, root: true, end: len(text), closeStart: len(text)}
	stack := []*node{root}
	nodes := 0
	add := func(n *node) {
		nodes++
		top := stack[len(stack)-1]
		top.children = append(top.children, n)
		n.endless = top.endless // text after a <plaintext> start tag
	}
	pop := func(at int) {
		top := stack[len(stack)-1]
		top.closeStart, top.end = at, at
		stack = stack[:len(stack)-1]
	}
	z := html.NewTokenizer(strings.NewReader(text))
	pos := 0
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() != io.EOF {
				return nil, false
			}
			break
		}
		if nodes > maxNodes {
			return nil, false
		}
		raw := z.Raw()
		start := pos
		pos += len(raw)
		if pos > len(text) || text[start:pos] != string(raw) {
			return nil, false
		}
		switch tt {
		case html.TextToken:
			add(&node{kind: kindText, start: start, end: pos})
		case html.StartTagToken:
			b, _ := z.TagName()
			name := string(b)
			if voidElements[name] {
				add(&node{kind: kindLeaf, name: name, start: start, end: pos})
				continue
			}
			n := &node{kind: kindElement, name: name, start: start, openEnd: pos}
			add(n)
			stack = append(stack, n)
			if name == "plaintext" {
				for _, e := range stack[1:] {
					e.endless = true
				}
			}
		case html.EndTagToken:
			b, _ := z.TagName()
			name := string(b)
			at := -1
			for i := len(stack) - 1; i > 0; i-- {
				if stack[i].name == name {
					at = i
					break
				}
			}
			if at < 0 { // stray end tag: keep it as it is
				add(&node{kind: kindLeaf, name: name, start: start, end: pos})
				continue
			}
			for len(stack)-1 > at {
				pop(start)
			}
			n := stack[at]
			n.closeStart, n.end = start, pos
			stack = stack[:at]
		default: // self-closing tag, comment, doctype
			add(&node{kind: kindLeaf, start: start, end: pos})
		}
	}
	if pos != len(text) || nodes > maxNodes {
		return nil, false
	}
	for len(stack) > 1 {
		pop(len(text))
	}
	markTableHeaders(root)
	return root, true
}

// markTableHeaders records each table's header: its <thead>, else its
// first row (directly under <table> or under its first <tbody>).
func markTableHeaders(n *node) {
	if n.kind != kindElement {
		return
	}
	if n.name == "table" {
		setTableHeader(n)
	}
	for _, c := range n.children {
		markTableHeaders(c)
	}
}

func setTableHeader(table *node) {
	for _, c := range table.children {
		if c.kind == kindElement && c.name == "thead" {
			table.header = c
			return
		}
	}
	for _, c := range table.children {
		if c.kind != kindElement {
			continue
		}
		switch c.name {
		case "tr":
			table.header = c
			return
		case "tbody":
			for _, r := range c.children {
				if r.kind == kindElement && r.name == "tr" {
					c.header = r
					return
				}
			}
			return
		}
	}
}

// parseXML builds the element tree of text with encoding/xml. It reports
// false for input that is not well-formed, or whose tree would have more
// than maxNodes nodes (it stops there).
// referencedEntities maps every name text references as "&name;" to "":
// the splitter needs where the markup is, not what an entity stands for.
// A reference to an entity of the document's external DTD (JATS, DocBook)
// is well-formed XML that recognition accepts (internal/convert/xml.go),
// and the strict decoder would refuse it, sending the whole file to the
// plain-text splitter. The decoder resolves the predefined five itself.
func referencedEntities(text string) map[string]string {
	m := map[string]string{}
	for rest := text; ; {
		i := strings.IndexByte(rest, '&')
		if i < 0 {
			return m
		}
		rest = rest[i+1:]
		if j := strings.IndexAny(rest, ";& \t\n<"); j > 0 && j <= 64 && rest[j] == ';' && rest[0] != '#' {
			m[rest[:j]] = ""
		}
	}
}

func parseXML(text string, maxNodes int) (*node, bool) {
	root := &node{kind: kindElement, root: true, end: len(text), closeStart: len(text)}
	stack := []*node{root}
	nodes := 0
	add := func(n *node) {
		nodes++
		top := stack[len(stack)-1]
		top.children = append(top.children, n)
	}
	d := xml.NewDecoder(strings.NewReader(text))
	d.Strict = true
	d.Entity = referencedEntities(text)
	prev := 0
	for {
		if nodes > maxNodes {
			return nil, false
		}
		tok, err := d.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false
		}
		start, end := prev, int(d.InputOffset())
		prev = end
		switch t := tok.(type) {
		case xml.StartElement:
			n := &node{kind: kindElement, name: qname(t.Name), start: start, openEnd: end}
			add(n)
			stack = append(stack, n)
		case xml.EndElement:
			top := stack[len(stack)-1]
			if len(stack) < 2 || top.name != qname(t.Name) {
				return nil, false
			}
			stack = stack[:len(stack)-1]
			if start == end { // <empty/>: the decoder adds the end element
				top.kind, top.end = kindLeaf, top.openEnd
				continue
			}
			top.closeStart, top.end = start, end
		case xml.CharData:
			kind := kindText
			if strings.HasPrefix(text[start:end], "<![CDATA[") {
				kind = kindLeaf
			}
			add(&node{kind: kind, start: start, end: end})
		default: // comment, processing instruction, directive
			add(&node{kind: kindLeaf, start: start, end: end})
		}
	}
	if len(stack) != 1 || prev != len(text) || nodes > maxNodes {
		return nil, false
	}
	return root, true
}

func qname(n xml.Name) string {
	if n.Space != "" {
		return n.Space + ":" + n.Local
	}
	return n.Local
}
