package merge

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/docjobs/docjobs/internal/plaintext"
)

// HTML answers are parsed into one tree and joined at the body: where
// chunk i+1 follows chunk i, the longest run of elements ending the merged
// body and starting the next body is the repeated overlap and is dropped
// (when the caller gave the overlap text, only if the text accounts for
// it);
// otherwise, an element the chunker split (a table, list or section closed
// at the end of one chunk and re-opened at the start of the next, with the
// same tag and attributes) is continued: the next one's children join it,
// with the table header the chunker repeated dropped, and the same rules
// apply one level down. A table that opens with a header the one before it
// does not have is another table, as in markdown.

// continuable are the containers whose split halves are joined back.
var continuable = map[atom.Atom]bool{
	atom.Html: true, atom.Body: true, atom.Table: true, atom.Thead: true, atom.Tbody: true,
	atom.Tfoot: true, atom.Ul: true, atom.Ol: true, atom.Dl: true, atom.Div: true,
	atom.Section: true, atom.Article: true, atom.Main: true, atom.Blockquote: true,
}

type htmlJoiner struct {
	memo     map[*html.Node]digest // the body's nodes, for one join
	headMemo map[*html.Node]digest // the head's, kept across joins
	buf      []byte
	removed  int
	ground   *grounder // the overlap text of the chunk being joined, when the caller gave it
	noFreeze bool      // tests: keep the whole tree, to compare outputs
	frozen   int       // nodes rendered before the end (htmlfreeze.go)
}

// parseHTML parses an answer after checking it stays within the limits
// (tokens before parsing, depth after).
func parseHTML(s string, lim Limits) (*html.Node, error) {
	z := html.NewTokenizer(strings.NewReader(s))
	for n := 0; z.Next() != html.ErrorToken; n++ {
		if n >= lim.MaxNodes {
			return nil, fmt.Errorf("more than %d HTML tokens", lim.MaxNodes)
		}
	}
	doc, err := html.Parse(strings.NewReader(s))
	if err != nil {
		return nil, fmt.Errorf("parse HTML: %w", err)
	}
	deepest := 0
	walk(doc, func(_ *html.Node, depth int) { deepest = max(deepest, depth) })
	if deepest > lim.MaxDepth {
		return nil, fmt.Errorf("HTML nested deeper than %d levels", lim.MaxDepth)
	}
	return doc, nil
}

func findElement(n *html.Node, a atom.Atom) *html.Node {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.DataAtom == a {
			return c
		}
	}
	return nil
}

// docParts returns the <head> and <body> of a parsed document.
func docParts(doc *html.Node) (head, body *html.Node) {
	root := findElement(doc, atom.Html)
	if root == nil {
		return nil, nil
	}
	head, body = findElement(root, atom.Head), findElement(root, atom.Body)
	if body == nil {
		body = findElement(root, atom.Frameset)
	}
	return head, body
}

// fullDocument: an answer written as a whole document (not a fragment)
// makes the merged answer a whole document too.
func fullDocument(s string) bool {
	l := strings.ToLower(s)
	return strings.Contains(l, "<html") || strings.Contains(l, "<!doctype")
}

func mergeHTML(g []*part, lim Limits) Answer {
	return (&htmlJoiner{}).merge(g, lim)
}

func (j *htmlJoiner) merge(g []*part, lim Limits) Answer {
	var a Answer
	j.memo, j.headMemo = make(map[*html.Node]digest), make(map[*html.Node]digest)
	ahead := j.profiles(g, lim)
	var doc, head, body *html.Node
	var raw []string
	whole := false
	var prev *part
	for i, p := range g {
		if p.skip != "" {
			a.incomplete(p, p.skip)
			if !p.drop && p.Content != "" {
				raw = append(raw, p.Content)
			}
			prev = nil
			continue
		}
		text := stripFence(p.Content)
		d, err := parseHTML(text, lim)
		var h, b *html.Node
		if err == nil {
			if h, b = docParts(d); b == nil {
				err = errors.New("no body in the parsed HTML")
			}
		}
		if err != nil {
			a.incomplete(p, err.Error())
			raw = append(raw, p.Content)
			prev = nil
			continue
		}
		whole = whole || fullDocument(text)
		if doc == nil {
			doc, head, body = d, h, b
			prev = p
			j.freeze(body, at(ahead, i))
			continue
		}
		if head != nil && h != nil {
			j.joinHead(head, h)
		}
		consecutive := p.follows(prev)
		j.ground = nil
		if consecutive && !p.NoOverlap && p.Overlap != "" {
			j.ground = newGrounder(p.Overlap)
		}
		j.join(body, b, consecutive, consecutive && !p.NoOverlap)
		// The joined nodes are never hashed again: a memo kept across
		// joins would hold every node (frozen ones too) to the end.
		j.memo = make(map[*html.Node]digest)
		prev = p
		j.freeze(body, at(ahead, i))
	}
	// Sized once, as the answers' total (the rendering is about as long):
	// a buffer grown by doubling and copied into a string held up to four
	// times the content at once.
	var out strings.Builder
	size := 0
	for _, p := range g {
		if !p.drop {
			size += len(p.Content) + 1
		}
	}
	out.Grow(size)
	if doc != nil {
		top := body
		if whole {
			top = doc
		}
		preformatPlaintext(top, top, len(raw) > 0)
		var err error
		if whole {
			err = html.Render(&out, doc)
		} else {
			for c := body.FirstChild; c != nil && err == nil; c = c.NextSibling {
				err = html.Render(&out, c)
			}
		}
		if err != nil {
			// Rendering a parsed tree does not fail; if it ever does, the
			// answers are still all there, joined as text.
			t := joinText(g)
			t.Content = strings.TrimSpace(t.Content)
			return t
		}
	}
	for _, r := range raw {
		if out.Len() > 0 {
			out.WriteByte('\n')
		}
		out.WriteString(r)
	}
	a.Content = out.String()
	a.DedupeRemovedTechnical = j.removed
	return a
}

// preformatPlaintext renames to <pre> each <plaintext> element at or
// below n that anything is rendered after (after: something follows n
// itself; end: the node up to which siblings are looked for), and each
// one inside MathML or SVG (see foreign). A parser
// reads all that follows a <plaintext> start tag as its text, so
// html.Render ends at one: what merging put after it (later chunks, the
// closing tags) would be lost, or read back as text. A <pre> keeps its
// attributes and its text, escaped, so the answer reads back as merged
// but for the name; a <plaintext> that ends the answer stays as written.
func preformatPlaintext(n, end *html.Node, after bool) {
	walk(n, func(x *html.Node, _ int) {
		if plaintext.Is(x) && (after || plaintext.Swallows(x, end)) {
			plaintext.ToPre(x)
		}
	})
}

// at returns s[i], or nil past its end (no profiles: nothing is frozen).
func at(s [][]int, i int) []int {
	if i < len(s) {
		return s[i]
	}
	return nil
}

// joinHead adds the head elements (styles, metadata) not there yet.
func (j *htmlJoiner) joinHead(a, b *html.Node) {
	body := j.memo
	j.memo = j.headMemo
	defer func() { j.memo = body }()
	have := make(map[digest]bool)
	for _, c := range significant(a) {
		have[j.hash(c)] = true
	}
	for _, c := range significant(b) {
		if h := j.hash(c); !have[h] {
			have[h] = true
			b.RemoveChild(c)
			a.AppendChild(c)
		}
	}
	j.touch(a)
}

// join moves b's children to the end of a: without the run that repeats
// a's tail when overlap is set, into a's last child when b's first child
// continues it (consecutive chunks of one file).
func (j *htmlJoiner) join(a, b *html.Node, consecutive, overlap bool) {
	defer j.touch(a)
	bk := significant(b)
	if len(bk) == 0 {
		moveChildren(a, b)
		return
	}
	ak := significant(a)
	if overlap && len(ak) > 0 {
		window := ak[max(0, len(ak)-len(bk)):]
		// Shallow keys find the candidate runs cheaply; digests of whole
		// subtrees (a table grown over many chunks) are computed only to
		// confirm one.
		ks := borders(mapSlice(window, shallowKey), mapSlice(bk, shallowKey))
		k := groundedRun(ks, j.ground, func(i int) (digest, *value) {
			return j.hash(bk[i]), htmlLeaves(bk[i])
		}, func(k int) bool {
			return slices.ContainsFunc(bk[:k], hasContent) && equalRuns(window[len(window)-k:], bk[:k])
		})
		if k > 0 {
			for c := b.FirstChild; c != nil; {
				next := c.NextSibling
				b.RemoveChild(c)
				if c == bk[k-1] {
					break
				}
				c = next
			}
			j.removed += k
			appendChildren(a, b)
			return
		}
	}
	if consecutive && len(ak) > 0 {
		la, fb := ak[len(ak)-1], bk[0]
		if la.Type == html.ElementNode && fb.Type == html.ElementNode && continuable[la.DataAtom] &&
			la.DataAtom == fb.DataAtom && la.Data == fb.Data && sameAttrs(la, fb) {
			if la.DataAtom != atom.Table || j.continueTable(la, fb, overlap) {
				j.join(la, fb, consecutive, overlap)
				b.RemoveChild(fb)
			}
		}
	}
	appendChildren(a, b)
}

// appendChildren moves b's children to the end of a, with a line break
// between them where both sides are inline content (text, or phrasing
// elements such as <b> or <span>): "Total: 5" and "Name: x" from two
// chunks must not read "Total: 5Name: x". Blocks need no separator.
func appendChildren(a, b *html.Node) {
	ak, bk := lastSignificant(a), nextSignificant(b.FirstChild)
	if ak != nil && bk != nil && inline(ak) && inline(bk) {
		a.AppendChild(&html.Node{Type: html.TextNode, Data: "\n"})
	}
	moveChildren(a, b)
}

// lastSignificant returns n's last significant child, or nil.
func lastSignificant(n *html.Node) *html.Node {
	for c := n.LastChild; c != nil; c = c.PrevSibling {
		if c.Type == html.ElementNode || (c.Type == html.TextNode && !isBlank(c.Data)) {
			return c
		}
	}
	return nil
}

// phrasing are the inline elements that run on with the text around them.
var phrasing = map[atom.Atom]bool{
	atom.A: true, atom.Abbr: true, atom.B: true, atom.Bdi: true, atom.Bdo: true, atom.Cite: true,
	atom.Code: true, atom.Data: true, atom.Del: true, atom.Dfn: true, atom.Em: true, atom.Font: true,
	atom.I: true, atom.Img: true, atom.Ins: true, atom.Kbd: true, atom.Label: true, atom.Mark: true,
	atom.Q: true, atom.S: true, atom.Samp: true, atom.Small: true, atom.Span: true, atom.Strong: true,
	atom.Sub: true, atom.Sup: true, atom.Time: true, atom.U: true, atom.Var: true,
}

func inline(n *html.Node) bool {
	return n.Type == html.TextNode || n.Type == html.ElementNode && phrasing[n.DataAtom]
}

// htmlLeaves returns the words of n's text for the grounder.
func htmlLeaves(n *html.Node) *value {
	leaves := &value{kind: kArray}
	stack := []*html.Node{n}
	for len(stack) > 0 && len(leaves.arr) < maxGroundLeaves {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if c.Type == html.TextNode {
			wordLeaves(leaves, c.Data)
		}
		for k := c.LastChild; k != nil; k = k.PrevSibling {
			stack = append(stack, k)
		}
	}
	return leaves
}

// continueTable tells whether the table fb, same tag and attributes as
// the table la that ends the merged content, continues it, as markdown
// rows do the table above them. It does unless it opens with a header la
// does not have: then it is another table (another header, or a header
// after rows that had none, as after a chunk that could not be merged).
// A header la has and fb repeats is dropped. Where fb's header stays, the
// rows behind it are still compared with la's last rows when the chunks
// overlap, as a header is not a record, and fb goes with them if its
// header then heads nothing (audit-merge2 F1, in HTML).
func (j *htmlJoiner) continueTable(la, fb *html.Node, overlap bool) bool {
	hb := tableHeader(fb)
	if hb == nil {
		return true
	}
	if ha := tableHeader(la); ha != nil && sameHeader(ha, hb) {
		parent := hb.Parent
		parent.RemoveChild(hb)
		j.touch(parent)
		return true
	}
	if overlap && j.dropRowsBehindHeader(la, fb, hb) && headsNothing(fb, hb) {
		fb.Parent.RemoveChild(fb)
	}
	return false
}

// sameHeader compares two table headers by their rows: a header written
// as a <thead> in one answer and as a first row of <th> cells in the next
// is the same header.
func sameHeader(a, b *html.Node) bool {
	rows := func(h *html.Node) []*html.Node {
		if h.DataAtom == atom.Thead {
			return significant(h)
		}
		return []*html.Node{h}
	}
	ra, rb := rows(a), rows(b)
	return len(ra) == len(rb) && equalRuns(ra, rb)
}

// dropRowsBehindHeader removes the rows after fb's header hb that repeat
// the last rows of la's last <tbody>: the longest such run that holds
// content and, with the overlap text, that the text accounts for, counted
// like any overlap run. It reports whether it removed any.
func (j *htmlJoiner) dropRowsBehindHeader(la, fb, hb *html.Node) bool {
	ks := significant(la)
	if len(ks) == 0 || ks[len(ks)-1].Type != html.ElementNode || ks[len(ks)-1].DataAtom != atom.Tbody {
		return false
	}
	tail := significant(ks[len(ks)-1])
	group, head := hb.Parent, []*html.Node(nil)
	if hb.DataAtom == atom.Thead {
		group = nextSignificant(hb.NextSibling)
		if group == nil || group.Type != html.ElementNode || group.DataAtom != atom.Tbody {
			return false
		}
		head = significant(group)
	} else {
		head = significant(group)[1:] // tableHeader: hb is the group's first
	}
	if len(tail) == 0 || len(head) == 0 {
		return false
	}
	window := tail[max(0, len(tail)-len(head)):]
	k := groundedRun(borders(mapSlice(window, shallowKey), mapSlice(head, shallowKey)), j.ground,
		func(i int) (digest, *value) { return j.hash(head[i]), htmlLeaves(head[i]) },
		func(k int) bool {
			return slices.ContainsFunc(head[:k], hasContent) && equalRuns(window[len(window)-k:], head[:k])
		})
	if k == 0 {
		return false
	}
	for c := head[0]; c != nil; {
		next := c.NextSibling
		group.RemoveChild(c)
		if c == head[k-1] {
			break
		}
		c = next
	}
	if group != hb.Parent && nextSignificant(group.FirstChild) == nil {
		fb.RemoveChild(group) // the <tbody> behind a <thead>, emptied
	}
	j.removed += k
	j.touch(group)
	j.touch(fb)
	return true
}

// headsNothing: the table t holds its header hb and nothing else, as when
// every row behind a header that stays repeated the rows above; it goes
// with them, as in markdown.
func headsNothing(t, hb *html.Node) bool {
	for _, c := range significant(t) {
		if c == hb {
			continue
		}
		if c.Type == html.ElementNode && c.DataAtom == atom.Tbody {
			if rs := significant(c); len(rs) == 0 || len(rs) == 1 && rs[0] == hb {
				continue
			}
		}
		return false
	}
	return true
}

// tableHeader returns the first significant thing in a table if it is a
// header: its <thead>, or a first row (directly or in the first <tbody>)
// of <th> cells only. A first row of data cells is a record: equal to the
// table's first row, it may be a genuine repeat, and only the overlap
// rule (counted, grounded) may remove it.
func tableHeader(t *html.Node) *html.Node {
	ks := significant(t)
	if len(ks) == 0 || ks[0].Type != html.ElementNode {
		return nil
	}
	switch ks[0].DataAtom {
	case atom.Thead:
		return ks[0]
	case atom.Tr:
		if headerRow(ks[0]) {
			return ks[0]
		}
	case atom.Tbody:
		if rs := significant(ks[0]); len(rs) > 0 && headerRow(rs[0]) {
			return rs[0]
		}
	}
	return nil
}

// headerRow: a <tr> whose cells are all <th>.
func headerRow(n *html.Node) bool {
	if n.Type != html.ElementNode || n.DataAtom != atom.Tr {
		return false
	}
	cells := significant(n)
	for _, c := range cells {
		if c.Type != html.ElementNode || c.DataAtom != atom.Th {
			return false
		}
	}
	return len(cells) > 0
}

func moveChildren(a, b *html.Node) {
	for c := b.FirstChild; c != nil; {
		next := c.NextSibling
		b.RemoveChild(c)
		a.AppendChild(c)
		c = next
	}
}

// significant returns the children that carry content: elements and text
// that is not only white space (comments and spacing are not compared).
func significant(n *html.Node) []*html.Node {
	var out []*html.Node
	for c := nextSignificant(n.FirstChild); c != nil; c = nextSignificant(c.NextSibling) {
		out = append(out, c)
	}
	return out
}

// nextSignificant returns c or the first significant sibling after it. A
// RawNode (rendered children, htmlfreeze.go) is significant: it stands for
// content that no answer's node equals.
func nextSignificant(c *html.Node) *html.Node {
	for ; c != nil; c = c.NextSibling {
		if c.Type == html.RawNode || realSignificant(c) {
			return c
		}
	}
	return nil
}

func hasContent(n *html.Node) bool {
	return n.Type == html.ElementNode || hasAlnum(n.Data)
}

func sameAttrs(a, b *html.Node) bool {
	if len(a.Attr) != len(b.Attr) {
		return false
	}
	return slices.Equal(sortedAttrs(a), sortedAttrs(b))
}

func sortedAttrs(n *html.Node) []html.Attribute {
	as := slices.Clone(n.Attr)
	slices.SortFunc(as, func(x, y html.Attribute) int {
		if c := strings.Compare(x.Namespace, y.Namespace); c != 0 {
			return c
		}
		if c := strings.Compare(x.Key, y.Key); c != 0 {
			return c
		}
		return strings.Compare(x.Val, y.Val)
	})
	return as
}

// hash is a node's canonical digest: tag, sorted attributes, text with
// spacing collapsed, significant children. Memoized; touch forgets a
// changed node and its ancestors.
func (j *htmlJoiner) hash(n *html.Node) digest {
	if h, ok := j.memo[n]; ok {
		return h
	}
	var b []byte
	switch n.Type {
	case html.TextNode:
		b = append(b, 'T')
		b = append(b, strings.Join(strings.Fields(n.Data), " ")...)
	case html.ElementNode:
		b = append(b, 'E')
		b = append(b, n.Namespace...)
		b = append(b, 0)
		b = append(b, n.Data...)
		for _, at := range sortedAttrs(n) {
			b = append(b, 0)
			b = append(b, at.Namespace...)
			b = append(b, 0)
			b = append(b, at.Key...)
			b = append(b, 0)
			b = append(b, at.Val...)
		}
		b = append(b, 1)
		for _, c := range significant(n) {
			h := j.hash(c)
			b = append(b, h[:]...)
		}
	default:
		b = append(b, 'O', byte(n.Type))
		b = append(b, n.Data...)
	}
	h := sha256.Sum256(b)
	j.memo[n] = h
	return h
}

// equalRuns compares runs of nodes as hash would, but walking both trees
// together, so a difference anywhere (a table grown over many chunks
// against a short one) ends the comparison early.
func equalRuns(a, b []*html.Node) bool {
	for i := range a {
		if !equalNodes(a[i], b[i]) {
			return false
		}
	}
	return true
}

func equalNodes(a, b *html.Node) bool {
	if a.Type != b.Type {
		return false
	}
	switch a.Type {
	case html.TextNode:
		return strings.Join(strings.Fields(a.Data), " ") == strings.Join(strings.Fields(b.Data), " ")
	case html.ElementNode:
		if a.Namespace != b.Namespace || a.Data != b.Data || !sameAttrs(a, b) {
			return false
		}
	case html.RawNode:
		return false // rendered children: longer than any answer's node (htmlfreeze.go)
	default:
		return a.Data == b.Data
	}
	ca, cb := nextSignificant(a.FirstChild), nextSignificant(b.FirstChild)
	for ca != nil && cb != nil {
		if !equalNodes(ca, cb) {
			return false
		}
		ca, cb = nextSignificant(ca.NextSibling), nextSignificant(cb.NextSibling)
	}
	return ca == nil && cb == nil
}

// shallowKey is what two equal nodes must share at their own level: kind,
// tag, attributes, text, and how many significant children they have.
func shallowKey(n *html.Node) string {
	var b strings.Builder
	b.WriteByte(byte(n.Type))
	switch n.Type {
	case html.TextNode:
		b.WriteString(strings.Join(strings.Fields(n.Data), " "))
	case html.ElementNode:
		b.WriteString(n.Namespace)
		b.WriteByte(0)
		b.WriteString(n.Data)
		for _, at := range sortedAttrs(n) {
			b.WriteByte(0)
			b.WriteString(at.Namespace)
			b.WriteByte(0)
			b.WriteString(at.Key)
			b.WriteByte(0)
			b.WriteString(at.Val)
		}
		b.WriteByte(0)
		kids := 0
		for c := nextSignificant(n.FirstChild); c != nil; c = nextSignificant(c.NextSibling) {
			kids++
		}
		b.WriteString(strconv.Itoa(kids))
	}
	return b.String()
}

func (j *htmlJoiner) touch(n *html.Node) {
	for ; n != nil; n = n.Parent {
		delete(j.memo, n)
	}
}
