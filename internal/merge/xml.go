package merge

import (
	"crypto/sha256"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// XML answers are joined under a common root element: the first answer's
// prolog and root, then the root's children from every answer in order,
// less the run at the head of each answer that repeats the previous
// answer's tail (when the caller gave the overlap text, only if the text
// accounts for the run, as for JSON records). Only the root is joined: elements below it are records
// whose boundaries merge must not guess. The children are copied byte for
// byte, so the merged answer says what the model said.

// xdoc is a parsed XML answer, by slices of its text.
type xdoc struct {
	prolog   string // before the root
	startTag string
	name     string // the root's name as written (prefix:local)
	attrs    []xml.Attr
	selfEnd  bool // <root/>
	kids     []xkid
	trail    string // white space before the end tag
	endTag   string
	epilog   string
}

// xkid is a child of the root: its text with the white space before it,
// and its canonical digest.
type xkid struct {
	text string
	h    digest
	sig  bool
}

func qname(n xml.Name) string {
	if n.Space != "" {
		return n.Space + ":" + n.Local
	}
	return n.Local
}

// parseXML parses an answer that must be one well-formed element (with
// an optional prolog and trailing comments), within the limits.
func parseXML(s string, lim Limits) (*xdoc, error) {
	d := xml.NewDecoder(strings.NewReader(s))
	d.Strict = true
	x := &xdoc{}
	var stack []string
	var canon []byte // canonical form of the child being read
	rootSeen := false
	prev, kidFrom, tokens := 0, 0, 0
	addKid := func(end int, sig bool, c []byte) {
		x.kids = append(x.kids, xkid{text: s[kidFrom:end], h: sha256.Sum256(c), sig: sig})
		kidFrom = end
	}
	for {
		tok, err := d.RawToken()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not well-formed XML: %w", err)
		}
		if tokens++; tokens > lim.MaxNodes {
			return nil, fmt.Errorf("more than %d XML tokens", lim.MaxNodes)
		}
		start, end := prev, int(d.InputOffset())
		prev = end
		depth := len(stack)
		switch t := tok.(type) {
		case xml.StartElement:
			name := qname(t.Name)
			switch {
			case depth == 0 && rootSeen:
				return nil, errors.New("not well-formed XML: more than one root element")
			case depth == 0:
				rootSeen = true
				x.prolog, x.startTag, x.name, x.attrs = s[:start], s[start:end], name, t.Attr
				kidFrom = end
			case depth == 1:
				canon = canon[:0]
			}
			if depth >= 1 {
				canon = append(canon, 'S')
				canon = append(canon, name...)
				attrs := slices.Clone(t.Attr)
				slices.SortFunc(attrs, func(a, b xml.Attr) int { return strings.Compare(qname(a.Name), qname(b.Name)) })
				for _, a := range attrs {
					canon = append(canon, 0)
					canon = append(canon, qname(a.Name)...)
					canon = append(canon, 0)
					canon = append(canon, a.Value...)
				}
				canon = append(canon, 1)
			}
			if stack = append(stack, name); len(stack) > lim.MaxDepth {
				return nil, fmt.Errorf("XML nested deeper than %d levels", lim.MaxDepth)
			}
		case xml.EndElement:
			if depth == 0 || stack[depth-1] != qname(t.Name) {
				return nil, fmt.Errorf("not well-formed XML: unexpected end tag </%s>", qname(t.Name))
			}
			stack = stack[:depth-1]
			switch depth {
			case 1:
				x.selfEnd = start == end
				x.trail, x.endTag = s[kidFrom:start], s[start:end]
				if x.selfEnd {
					x.trail = ""
				}
				kidFrom = end
			default:
				canon = append(canon, 'E')
				if depth == 2 {
					addKid(end, true, canon)
				}
			}
		case xml.CharData:
			switch {
			case depth == 0 && !isBlank(string(t)):
				return nil, errors.New("not well-formed XML: text outside the root element")
			case depth == 1 && !isBlank(string(t)):
				text := strings.Join(strings.Fields(string(t)), " ")
				addKid(end, hasAlnum(text), append([]byte{'T'}, text...))
			case depth > 1:
				if text := strings.Join(strings.Fields(string(t)), " "); text != "" {
					canon = append(canon, 'T')
					canon = append(canon, text...)
					canon = append(canon, 0)
				}
			}
		default: // comment, processing instruction, directive
			if depth == 1 {
				raw := s[start:end]
				addKid(end, false, append([]byte{'O'}, raw...))
			}
			if depth > 1 {
				if pi, ok := t.(xml.ProcInst); ok {
					canon = append(canon, 'P')
					canon = append(canon, pi.Target...)
					canon = append(canon, 0)
					canon = append(canon, pi.Inst...)
				}
			}
		}
	}
	if !rootSeen {
		return nil, errors.New("not well-formed XML: no root element")
	}
	if len(stack) > 0 {
		return nil, fmt.Errorf("not well-formed XML: <%s> is not closed", stack[len(stack)-1])
	}
	x.epilog = s[kidFrom:]
	return x, nil
}

// isNamespaceDecl: xmlns and xmlns:prefix attributes, which the children
// of the root may depend on.
func isNamespaceDecl(a xml.Attr) bool {
	return a.Name.Space == "xmlns" || (a.Name.Space == "" && a.Name.Local == "xmlns")
}

func namespaceDecls(attrs []xml.Attr) map[string]string {
	m := make(map[string]string)
	for _, a := range attrs {
		if isNamespaceDecl(a) {
			m[qname(a.Name)] = a.Value
		}
	}
	return m
}

// attrConflict gathers the distinct values one root attribute took.
type attrConflict struct {
	name   string
	values []string
	srcs   []ChunkRef
}

func mergeXML(g []*part, lim Limits) Answer {
	var a Answer
	var first *xdoc
	var firstRef ChunkRef
	// The merged children are written to body as they are taken; only the
	// digests of the last ones are kept (tail), as many as a later answer
	// can compare with its head, which has at most a child per byte of it.
	// Every child kept whole took 56 bytes, most of a 3 GB peak for 64 MiB
	// of small elements (hunt-merge).
	var body strings.Builder
	var tail []digest
	nkids := 0
	size := 0
	keep := make([]int, len(g)+1) // keep[i]: the longest answer from g[i] on
	for i := len(g) - 1; i >= 0; i-- {
		keep[i] = max(keep[i+1], len(g[i].Content))
		if g[i].skip == "" {
			size += len(g[i].Content)
		}
	}
	body.Grow(size)
	take := func(ks []xkid, i int) {
		for _, k := range ks {
			body.WriteString(k.text)
			tail = append(tail, k.h)
		}
		nkids += len(ks)
		if n := keep[i+1]; len(tail) > 2*n+1024 {
			tail = slices.Clone(tail[len(tail)-n:])
		}
	}
	var raw []string
	var conflicts []*attrConflict
	trail := ""
	attrsChanged := false
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
		x, err := parseXML(stripFence(p.Content), lim)
		if err == nil && first != nil {
			switch {
			case x.name != first.name:
				err = fmt.Errorf("root element <%s> differs from <%s>", x.name, first.name)
			case !mapsEqual(namespaceDecls(x.attrs), namespaceDecls(first.attrs)):
				err = fmt.Errorf("root element <%s> declares other namespaces", x.name)
			}
		}
		if err != nil {
			a.incomplete(p, err.Error())
			raw = append(raw, p.Content)
			prev = nil
			continue
		}
		if first == nil {
			first, firstRef, trail = x, p.ref, x.trail
			take(x.kids, i)
			x.kids = nil
			prev = p
			continue
		}
		// Root attributes: the first answer's values are kept, new ones
		// added, differing ones reported.
		for _, at := range x.attrs {
			if isNamespaceDecl(at) {
				continue
			}
			i := slices.IndexFunc(first.attrs, func(f xml.Attr) bool { return f.Name == at.Name })
			if i < 0 {
				first.attrs = append(first.attrs, at)
				attrsChanged = true
				continue
			}
			if first.attrs[i].Value == at.Value {
				continue
			}
			name := first.name + ".@" + qname(at.Name)
			c := findConflict(conflicts, name)
			if c == nil {
				c = &attrConflict{name: name, values: []string{first.attrs[i].Value}, srcs: []ChunkRef{firstRef}}
				conflicts = append(conflicts, c)
			}
			if !slices.Contains(c.values, at.Value) {
				c.values, c.srcs = append(c.values, at.Value), append(c.srcs, p.ref)
			}
		}
		next := x.kids
		if p.follows(prev) && !p.NoOverlap {
			window := tail[max(0, len(tail)-len(next)):]
			dg := func(k xkid) digest { return k.h }
			var g *grounder
			if p.Overlap != "" {
				g = newGrounder(p.Overlap)
			}
			head := next
			k := groundedRun(borders(window, mapSlice(head, dg)), g, func(i int) (digest, *value) {
				return head[i].h, xmlLeaves(head[i].text)
			}, func(k int) bool {
				return slices.ContainsFunc(head[:k], func(k xkid) bool { return k.sig })
			})
			next = next[k:]
			a.DedupeRemovedTechnical += k
		}
		take(next, i)
		if len(x.kids) > 0 {
			trail = x.trail
		}
		prev = p
	}
	var b strings.Builder
	n := body.Len() + len(raw)
	for _, r := range raw {
		n += len(r)
	}
	if first != nil {
		start, end := first.startTag, first.endTag
		switch {
		case first.selfEnd && (nkids > 0 || attrsChanged):
			start, end = buildStartTag(first.name, first.attrs), "</"+first.name+">"
		case attrsChanged:
			start = buildStartTag(first.name, first.attrs)
		}
		// Written once into its size: grown by appends, the copy of the
		// children doubled on the last bytes.
		b.Grow(n + len(first.prolog) + len(start) + len(trail) + len(end) + len(first.epilog))
		b.WriteString(first.prolog)
		b.WriteString(start)
		b.WriteString(body.String())
		b.WriteString(trail)
		b.WriteString(end)
		b.WriteString(first.epilog)
	} else {
		b.Grow(n)
	}
	for _, r := range raw {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(r)
	}
	a.Content = b.String()
	for _, c := range conflicts {
		a.addConflict(c.name, len(c.values),
			func(i int) string {
				o := &out{max: MaxValueBytes}
				o.str(c.values[i])
				return clip(o.b.String(), MaxValueBytes)
			},
			func(i int) ChunkRef { return c.srcs[i] })
	}
	return a
}

// xmlLeaves returns the words of a child of the root for the grounder:
// its text and attribute values (XML records often carry their data in
// attributes). The child was parsed whole before, so an error here only
// ends the list early.
func xmlLeaves(text string) *value {
	leaves := &value{kind: kArray}
	d := xml.NewDecoder(strings.NewReader(text))
	for len(leaves.arr) < maxGroundLeaves {
		tok, err := d.RawToken()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case xml.StartElement:
			for _, at := range t.Attr {
				wordLeaves(leaves, at.Value)
			}
		case xml.CharData:
			wordLeaves(leaves, string(t))
		}
	}
	return leaves
}

func findConflict(cs []*attrConflict, name string) *attrConflict {
	for _, c := range cs {
		if c.name == name {
			return c
		}
	}
	return nil
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func buildStartTag(name string, attrs []xml.Attr) string {
	var b strings.Builder
	b.WriteString("<" + name)
	for _, a := range attrs {
		b.WriteString(" " + qname(a.Name) + `="`)
		_ = xml.EscapeText(&b, []byte(a.Value))
		b.WriteString(`"`)
	}
	b.WriteString(">")
	return b.String()
}
