package pdf

import (
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Blocks to elements: headings, lists and paragraphs.

type builder struct {
	ls       []line
	body     float64
	boldBody bool // most of the page is bold: bold marks no heading
	out      []element
}

// flush ends the paragraph or list in progress: the next block cannot
// continue it (a table came between).
func (b *builder) flush() {
	if n := len(b.out); n > 0 {
		b.out[n-1].last = nil
	}
}

func (b *builder) addUnit(u *unit) {
	lines := u.lines
	if n := b.headingPrefix(lines); n > 0 {
		b.addHeading(lines[:n])
		lines = lines[n:]
	}
	var prev *line
	inList := false // the unit's current element is a list item
	maxX := u.x1
	for _, i := range lines {
		l := &b.ls[i]
		// "… described in Sections 9 and" / "10. This proposal …": a number
		// that wraps to the start of a line does not start a list.
		wrapped := prev != nil && b.lastIsPara() && !endsSentence(prev.text) && prev.x1 >= maxX-2*prev.size
		if ordered, marker, rest, strong, ok := listMarker(l); ok && !wrapped {
			b.addItem(ordered, strong, marker, rest, l)
			inList, prev = true, l
			continue
		}
		// An item's wrapped lines are indented past its marker, or (items
		// without a hanging indent) continue a full line or a sentence.
		if inList && prev != nil && l.y0-prev.y1 < l.height() && l.x0 >= b.lastItemX()-1 &&
			(l.x0 > b.lastItemX()+1 || startsLower(l.text) || prev.x1 >= maxX-2*prev.size) {
			it := &b.out[len(b.out)-1].items
			(*it)[len(*it)-1].parts = append((*it)[len(*it)-1].parts, l.text)
			b.out[len(b.out)-1].last = l
			prev = l
			continue
		}
		inList = false
		if prev != nil && b.lastIsPara() && !b.newParagraph(prev, l, u, maxX) {
			b.appendLine(l)
		} else if prev == nil && b.continues(l, u) {
			b.appendLine(l)
		} else {
			b.out = append(b.out, element{kind: elemPara, parts: []string{l.text}, last: l, minX: l.x0, maxX: l.x1})
		}
		b.out[len(b.out)-1].blockLines = len(u.lines)
		prev = l
	}
}

func (b *builder) lastIsPara() bool {
	return len(b.out) > 0 && b.out[len(b.out)-1].kind == elemPara
}

func (b *builder) appendLine(l *line) {
	e := &b.out[len(b.out)-1]
	e.parts = append(e.parts, l.text)
	e.last = l
	e.minX, e.maxX = min(e.minX, l.x0), max(e.maxX, l.x1)
}

func (b *builder) lastItemX() float64 {
	e := &b.out[len(b.out)-1]
	if e.last == nil {
		return math.Inf(1)
	}
	return e.minX
}

// headingPrefix returns how many leading lines of a block form a heading:
// up to three short lines set larger than the body, or in bold when the
// body is not, followed by lines that are not.
func (b *builder) headingPrefix(lines []int) int {
	first := &b.ls[lines[0]]
	big := func(l *line) bool { return l.size >= 1.15*b.body }
	bold := func(l *line) bool { return !b.boldBody && l.boldFrac >= 0.9 && l.size >= 0.95*b.body }
	var style func(*line) bool
	switch {
	case big(first):
		style = big
	case bold(first):
		if _, _, _, _, ok := listMarker(first); ok {
			return 0
		}
		if len(lines) == 1 && b.amongLikeLines(lines[0]) {
			return 0
		}
		style = bold
	default:
		return 0
	}
	n, chars, words := 0, 0, 0
	for n < len(lines) && style(&b.ls[lines[n]]) && math.Abs(b.ls[lines[n]].size-first.size) < 0.1*first.size {
		chars += b.ls[lines[n]].chars
		words += len(b.ls[lines[n]].words)
		n++
	}
	maxLines, maxChars := 3, 160
	if !big(first) {
		maxLines, maxChars = 2, 100 // bold body-size text: only short labels are headings
	}
	if n > maxLines || chars > maxChars || words > 25 {
		return 0
	}
	text := strings.TrimSpace(b.ls[lines[n-1]].text)
	if last, _ := utf8.DecodeLastRuneInString(text); last == ',' || last == ';' {
		return 0
	}
	letters := false
	for i := 0; i < n && !letters; i++ {
		for _, r := range b.ls[lines[i]].text {
			if unicode.IsLetter(r) {
				letters = true
				break
			}
		}
	}
	if !letters {
		return 0 // page numbers, figures
	}
	return n
}

// amongLikeLines reports whether line i, a block of its own, is one of a
// run of such one-line blocks set alike: the lines before and after it
// (poppler's order) share its size and left edge, are about as long, and
// sit as far above it as below. A line in a heavier font there is an
// entry shown in that font (a font sample sheet's "Arial Black: …" among
// "Arial: …" and "Verdana: …"), not a heading: a heading is shorter than
// the text it heads, or set closer to it than to the text before.
func (b *builder) amongLikeLines(i int) bool {
	if i == 0 || i+1 >= len(b.ls) || !b.oneLineBlock(i) {
		return false
	}
	l, prev, next := &b.ls[i], &b.ls[i-1], &b.ls[i+1]
	for _, n := range []*line{prev, next} {
		if n.vertical || math.Abs(n.size-l.size) > 0.1*l.size || math.Abs(n.x0-l.x0) > 0.5*l.size ||
			2*n.chars < l.chars || n.chars > 2*l.chars {
			return false
		}
	}
	if !b.oneLineBlock(i-1) || !b.oneLineBlock(i+1) {
		return false
	}
	above, below := l.y0-prev.y1, next.y0-l.y1
	return above >= 0 && below >= 0 && math.Abs(above-below) <= 0.3*l.height()
}

// oneLineBlock reports whether line i is the only line of its block
// (a block's lines are consecutive in poppler's order).
func (b *builder) oneLineBlock(i int) bool {
	blk := b.ls[i].block
	return (i == 0 || b.ls[i-1].block != blk) && (i+1 >= len(b.ls) || b.ls[i+1].block != blk)
}

func (b *builder) addHeading(lines []int) {
	l := &b.ls[lines[0]]
	ratio := l.size / b.body
	level := 3
	switch {
	case ratio >= 1.35:
		level = 1
	case ratio >= 1.15:
		level = 2
	}
	parts := make([]string, 0, len(lines))
	for _, i := range lines {
		parts = append(parts, b.ls[i].text)
	}
	b.out = append(b.out, element{kind: elemHeading, level: level, parts: parts})
}

func (b *builder) addItem(ordered, strong bool, marker, rest string, l *line) {
	if n := len(b.out); n > 0 {
		e := &b.out[n-1]
		if e.kind == elemList && e.ordered == ordered && e.last != nil {
			e.items = append(e.items, listItem{marker: marker, parts: []string{rest}})
			e.last, e.minX = l, l.x0
			e.strong = e.strong || strong
			return
		}
	}
	b.out = append(b.out, element{kind: elemList, ordered: ordered, strong: strong,
		items: []listItem{{marker: marker, parts: []string{rest}}}, last: l, minX: l.x0})
}

// newParagraph reports whether l starts a paragraph after prev in the same
// block: a blank line's gap, an indented first line, or a short line ending
// a sentence before it.
func (b *builder) newParagraph(prev, l *line, u *unit, maxX float64) bool {
	h := prev.height()
	if l.y0-prev.y1 > 0.8*h {
		return true
	}
	em := prev.size
	width := maxX - u.x0
	if prev.rtl && l.rtl {
		// Right to left: the first line is indented from the right, the
		// last one ends short of the left edge.
		if l.x1 < prev.x1-0.8*em && l.x1 < maxX-0.8*em {
			return true
		}
		return prev.x0 > u.x0+max(2*em, 0.12*width) && endsSentence(prev.text)
	}
	if l.x0 > prev.x0+0.8*em && l.x0 > u.x0+0.8*em {
		return true
	}
	return prev.x1 < maxX-max(2*em, 0.12*width) && endsSentence(prev.text)
}

// continues reports whether l, the first line of a block, continues the
// paragraph before it: the sentence runs on into lowercase, or the block
// sits right under a full last line (double-spaced text, where poppler
// makes every line a block).
func (b *builder) continues(l *line, u *unit) bool {
	if !b.lastIsPara() {
		return false
	}
	e := &b.out[len(b.out)-1]
	p := e.last
	if p == nil || math.Abs(p.size-l.size) > 0.1*p.size || (p.boldFrac >= 0.5) != (l.boldFrac >= 0.5) {
		return false
	}
	if !endsSentence(p.text) && startsLower(l.text) {
		// A sentence runs on down its column, or from a column's foot to
		// the next column's head. Reading order that jumps back up the
		// page to a block beside a column that goes on (a magazine scan's
		// text layer) would otherwise splice words of two columns into
		// one ("igno-" + "need" → "ignoneed").
		return l.y0 >= p.y0-1 || b.columnBreak(p, l)
	}
	if e.blockLines != 1 {
		return false // poppler kept the lines before together: its block break is a paragraph break
	}
	gap := l.y0 - p.y1
	if gap < -1 || gap > 1.6*p.height() {
		return false
	}
	if l.x0 > p.x0+2 || l.x0 >= p.x1 || l.x1 <= p.x0 {
		return false
	}
	right := max(e.maxX, u.x1)
	return p.x1 >= right-max(2*p.size, 0.1*(right-e.minX))
}

// columnBreak reports whether l, a block starting higher on the page than
// p, the last line of the paragraph before it, is the head of the column
// after p's: it lies to the right of p, no line follows p closely in p's
// column and none stands closely above l in its own. Only text of their
// size counts: a headline set across the columns under the first one's
// foot (a magazine's title) does not carry the column on.
func (b *builder) columnBreak(p, l *line) bool {
	if l.x0 < p.x1-p.size {
		return false
	}
	for i := range b.ls {
		m := &b.ls[i]
		if m == p || m == l || math.Abs(m.size-p.size) > 0.1*p.size {
			continue
		}
		if overlapX(m, p) && m.y0 >= p.y1-1 && m.y0-p.y1 <= 1.5*p.height() {
			return false
		}
		if overlapX(m, l) && m.y1 <= l.y0+1 && l.y0-m.y1 <= 1.5*l.height() {
			return false
		}
	}
	return true
}

// overlapX reports whether two lines share some of their horizontal
// extent.
func overlapX(a, b *line) bool {
	return min(a.x1, b.x1) > max(a.x0, b.x0)
}

// finish turns list runs that are not lists (one item after a weak marker
// such as "-" or "1.") back into paragraphs.
func (b *builder) finish() []element {
	out := b.out[:0:0]
	for _, e := range b.out {
		if e.kind == elemList && len(e.items) < 2 && !e.strong {
			for _, it := range e.items {
				out = append(out, element{kind: elemPara, parts: append([]string{it.marker}, it.parts...)})
			}
			continue
		}
		out = append(out, e)
	}
	return out
}

// listMarker recognizes a list item's marker as the line's first word:
// a bullet glyph (strong), "-"/"*" (weak), or 1. 1) a) (i) iv. (ordered).
func listMarker(l *line) (ordered bool, marker, rest string, strong, ok bool) {
	if len(l.words) < 2 {
		return false, "", "", false, false
	}
	m := l.words[0].text
	r, n := utf8.DecodeRuneInString(m)
	if n == len(m) {
		switch {
		case strings.ContainsRune("•●○◦▪▫■□‣⁃∙·►▶➢➤✓✔❖◆◇➔→", r), r >= 0xE000 && r <= 0xF8FF:
			return false, m, joinWords(l.words[1:]), true, true
		case r == '-' || r == '*' || r == '–' || r == '—':
			return false, m, joinWords(l.words[1:]), false, true
		}
	}
	if orderedMarker(m) {
		return true, m, joinWords(l.words[1:]), false, true
	}
	return false, "", "", false, false
}

func orderedMarker(m string) bool {
	if len(m) < 2 || len(m) > 6 {
		return false
	}
	open := m[0] == '('
	body := m
	if open {
		body = m[1:]
	}
	end := body[len(body)-1]
	if end != '.' && end != ')' || open && end != ')' {
		return false
	}
	body = body[:len(body)-1]
	if body == "" {
		return false
	}
	digits := true
	for i := 0; i < len(body); i++ {
		digits = digits && body[i] >= '0' && body[i] <= '9'
	}
	if digits {
		return len(body) <= 3
	}
	if len(body) == 1 {
		c := body[0]
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	return strings.Trim(body, "ivxlc") == "" || strings.Trim(body, "IVXLC") == ""
}

func endsSentence(s string) bool {
	s = strings.TrimRight(s, " \"'”’»)")
	r, _ := utf8.DecodeLastRuneInString(s)
	return strings.ContainsRune(".!?:;", r)
}

func startsLower(s string) bool {
	r, _ := utf8.DecodeRuneInString(strings.TrimSpace(s))
	return unicode.IsLower(r)
}

// joinLines joins the lines of a paragraph or cell with spaces, except
// after a line-end hyphen, which goes when the next line starts in
// lowercase ("exam-" "ple").
func joinLines(parts []string) string {
	if len(parts) == 1 {
		return strings.ReplaceAll(parts[0], "\u00ad", "")
	}
	var sb strings.Builder
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if i > 0 && p != "" {
			s := sb.String()
			last, n := utf8.DecodeLastRuneInString(s)
			switch {
			case last == '\u00ad':
				sb.Reset()
				sb.WriteString(s[:len(s)-n])
			case (last == '-' || last == '\u2010') && len(s) > n && letterBefore(s[:len(s)-n]):
				// A word broken at a hyphen: "com-" "plicated" loses the
				// hyphen, "E-" "PRTR" keeps it; neither gets a space.
				if startsLower(p) {
					sb.Reset()
					sb.WriteString(s[:len(s)-n])
				}
			case sb.Len() > 0:
				sb.WriteByte(' ')
			}
		}
		sb.WriteString(p)
	}
	return strings.ReplaceAll(sb.String(), "\u00ad", "")
}

func letterBefore(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return unicode.IsLetter(r)
}
