package merge

import (
	"bytes"

	"golang.org/x/net/html"
)

// Freezing: the merged body is rendered as it goes, so that it does not
// hold every answer's nodes to the end (64 MiB of <p>x</p> held 2.7 GB
// of nodes). A join reads only the end of each container on the body's
// right spine (the last child, continued, and so on down), a window as
// long as the next answer's container at the same depth has children,
// and a table's first child (its header). Every other child of a spine
// container is rendered now, exactly as the end would render it, and
// replaced by one html.RawNode holding that text.
//
// Which windows are safe to drop is known ahead: before merging, each
// answer is parsed once more on its own (one at a time) for its profile,
// the most significant children a node has at each depth below the body.
// A join of a later answer never reads further back than that profile's
// largest value at the depth. A container that lost children to a RawNode
// had more than any later answer's node at its depth, so it can equal
// none of them: a RawNode is significant (nextSignificant returns it) and
// equal to nothing an answer holds, so comparisons fail as they did on
// the whole container.

// profiles returns, for each part, the largest number of significant
// children a node at each depth below the body has in the parts after it,
// or nil (nothing is frozen) when freezing is off.
func (j *htmlJoiner) profiles(g []*part, lim Limits) [][]int {
	if j.noFreeze {
		return nil
	}
	own := make([][]int, len(g))
	for i, p := range g {
		if p.skip != "" {
			continue
		}
		d, err := parseHTML(stripFence(p.Content), lim)
		if err != nil {
			continue
		}
		if _, b := docParts(d); b != nil {
			own[i] = profile(b)
		}
	}
	ahead := make([][]int, len(g))
	var acc []int
	for i := len(g) - 1; i >= 0; i-- {
		ahead[i] = acc
		if own[i] != nil {
			next := make([]int, max(len(acc), len(own[i])))
			copy(next, acc)
			for d, n := range own[i] {
				next[d] = max(next[d], n)
			}
			acc = next
		}
	}
	return ahead
}

// profile returns the most significant children a node has at each depth
// below n (n's own at 0). It walks the tree by its links: a stack as long
// as the tree is wide would be garbage as large as the answer.
func profile(n *html.Node) []int {
	var prof []int
	walk(n, func(x *html.Node, depth int) {
		k := 0
		for c := x.FirstChild; c != nil; c = c.NextSibling {
			if realSignificant(c) {
				k++
			}
		}
		if depth == len(prof) {
			prof = append(prof, 0)
		}
		prof[depth] = max(prof[depth], k)
	})
	return prof
}

// walk calls f on n and every node below it, in document order, with its
// depth below n.
func walk(n *html.Node, f func(x *html.Node, depth int)) {
	for x, depth := n, 0; ; {
		f(x, depth)
		if x.FirstChild != nil {
			x, depth = x.FirstChild, depth+1
			continue
		}
		for x != n && x.NextSibling == nil {
			x, depth = x.Parent, depth-1
		}
		if x == n {
			return
		}
		x = x.NextSibling
	}
}

// realSignificant: an element or text that is not only white space, as
// an answer has them (not a RawNode).
func realSignificant(c *html.Node) bool {
	return c.Type == html.ElementNode || (c.Type == html.TextNode && !isBlank(c.Data))
}

// freeze renders the children of the body's spine containers that no
// later join reads (ahead: the later answers' profile; nil: freeze
// nothing).
func (j *htmlJoiner) freeze(body *html.Node, ahead []int) {
	if ahead == nil {
		return
	}
	for x, d := body, 0; x != nil; d++ {
		keep := 1 // appendChildren reads the last one
		if d < len(ahead) {
			keep = max(keep, ahead[d])
		}
		j.freezeChildren(x, keep)
		la := lastSignificant(x)
		if la == nil || la.Type != html.ElementNode || !continuable[la.DataAtom] {
			return
		}
		x = la
	}
}

// freezeChildren replaces x's children between its first significant one
// (a table's header) and its last keep significant ones, back to the
// RawNode of an earlier freeze, by a RawNode of their rendering.
func (j *htmlJoiner) freezeChildren(x *html.Node, keep int) {
	first := nextSignificant(x.FirstChild)
	c, n := x.LastChild, 0
	for ; c != nil; c = c.PrevSibling {
		if realSignificant(c) {
			if n++; n == keep {
				break
			}
		}
	}
	if c == nil || first == nil || c == first {
		return
	}
	var run []*html.Node // backwards
	hides := false
	for r := c.PrevSibling; r != nil && r != first && r.Type != html.RawNode; r = r.PrevSibling {
		run = append(run, r)
		hides = hides || realSignificant(r)
	}
	if !hides {
		return // only spacing: nothing to save, and x must still compare as it is
	}
	var buf bytes.Buffer
	for i := len(run) - 1; i >= 0; i-- {
		// c stays after the run: a <plaintext> in it is followed, as the
		// end would find it.
		preformatPlaintext(run[i], run[i], true)
		if err := html.Render(&buf, run[i]); err != nil {
			return // left as it is; the end's rendering fails the same way
		}
	}
	for _, r := range run {
		x.RemoveChild(r)
	}
	x.InsertBefore(&html.Node{Type: html.RawNode, Data: buf.String()}, c)
	j.frozen += len(run)
}
