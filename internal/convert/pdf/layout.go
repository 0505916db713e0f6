package pdf

import (
	"math"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Structure inference for one page of the text layer. Poppler groups words
// into lines and lines into blocks in a good reading order for prose but
// scatters tables over many flows, so the page is rebuilt here:
//
//  1. Lines get their text (words joined by their gaps), font size and
//     weight (from pdftohtml spans).
//  2. Tables: lines at the same height form rows (a line over two cells
//     of the row under it is split between them); runs of two or more rows
//     with two or more cells whose columns stay aligned, about a line apart
//     or at the table's own regular pitch, become a table, unless the cells
//     read like prose (two text columns side by side). A bold header row
//     keeps the rows that fit its columns up to three lines below it, and
//     the last row keeps the wrapped lines under it as the rows above did.
//     Leading rows all in bold over rows that are not are the header (<th>).
//  3. A label and a value set apart on one row outside the tables, each a
//     block of its own, become one line.
//  4. The remaining lines keep poppler's blocks, cut (before the tables)
//     at the column gutters their lines share (columns.go); blocks and
//     tables are ordered by a recursive XY cut that prefers column gaps,
//     so a multi-column page is read column by column.
//  5. Blocks become headings (larger or bold short text), list items
//     (bullets, 1. / a) markers) and paragraphs (lines joined,
//     de-hyphenated), merging paragraphs that continue across blocks.

// line is a text line prepared for layout.
type line struct {
	textLine
	text     string
	size     float64 // dominant font size in points
	boldFrac float64 // share of characters in a bold font
	chars    int     // non-space runes
	vertical bool    // rotated text running up or down the page
	rtl      bool    // mostly right-to-left letters: starts at its right edge
	order    int     // poppler's reading order on the page
}

func (l *line) height() float64 { return l.y1 - l.y0 }

// elemKind is what a piece of the page is.
type elemKind int

const (
	elemPara elemKind = iota
	elemHeading
	elemList
	elemTable
)

// element is one piece of the page's structure, in reading order.
type element struct {
	kind    elemKind
	level   int      // headings: 1–3
	ordered bool     // lists
	parts   []string // paragraph and heading lines
	items   []listItem
	rows    [][]string // tables
	head    int        // tables: how many leading rows are header rows

	// Where the paragraph ends, for continuing it in the next block, and
	// how many lines that block had.
	last       *line
	minX, maxX float64
	blockLines int
	strong     bool // lists: a bullet glyph, valid with one item
}

type listItem struct {
	marker string
	parts  []string
}

// layoutPage infers the structure of one page.
func layoutPage(tp *textPage) []element {
	fixStackedBlocks(tp)
	turnUpright(tp)
	joinSplitLines(tp)
	ls := prepareLines(tp)
	if len(ls) == 0 {
		return nil
	}
	ls = splitSpanningLines(ls)
	body := bodySize(ls)
	ls = splitColumns(ls, body)
	minGap := max(0.8*body, 4)
	// placed marks the lines that leave their block: table cells, then
	// values joined to their label.
	placed := make([]bool, len(ls))
	tables, rows := findTables(ls, placed)
	joinPairs(ls, rows, placed)
	units := buildUnits(ls, placed, tables)
	units = xyOrder(units, minGap)
	b := &builder{ls: ls, body: body, boldBody: boldShare(ls) > 0.6}
	for _, u := range units {
		if u.table != nil {
			b.flush()
			b.out = append(b.out, element{kind: elemTable, rows: u.table.text(ls), head: u.table.headerRows(ls)})
			continue
		}
		b.addUnit(u)
	}
	return b.finish()
}

// prepareLines computes each line's text and font statistics.
func prepareLines(tp *textPage) []line {
	ls := make([]line, 0, len(tp.lines))
	for _, tl := range tp.lines {
		if l, ok := newLine(tl); ok {
			ls = append(ls, l)
		}
	}
	for i := range ls {
		ls[i].order = i
	}
	return ls
}

// newLine computes a line's text and font statistics; false for a line
// without text.
func newLine(tl textLine) (line, bool) {
	l := line{textLine: tl}
	visual := joinWords(tl.words)
	l.text = logicalOrder(visual)
	l.rtl = rightToLeftLine(visual)
	if strings.TrimSpace(l.text) == "" {
		return l, false
	}
	w, h := tl.x1-tl.x0, tl.y1-tl.y0
	l.chars = countChars(l.text)
	l.vertical = l.chars >= 2 && h > 1.5*w
	var sizes weights
	bold, total := 0, 0
	for _, wd := range tl.words {
		n := utf8.RuneCountInString(wd.text)
		total += n
		if wd.bold {
			bold += n
		}
		if wd.size > 0 {
			sizes.add(wd.size, n)
		}
	}
	if total > 0 {
		l.boldFrac = float64(bold) / float64(total)
	}
	l.size = sizes.mode()
	if l.size == 0 {
		// No pdftohtml span matched: a line box is about 1.2 font sizes.
		l.size = min(w, h) / 1.2
		if !l.vertical {
			l.size = h / 1.2
		}
	}
	return l, true
}

// joinWords joins a line's words. Poppler splits words at spaces and also
// where the font changes (small caps: "T" "HRESHOLD"); only a real gap
// becomes a space.
func joinWords(ws []word) string {
	if len(ws) == 1 {
		return ws[0].text
	}
	var sb strings.Builder
	for i, w := range ws {
		if i > 0 {
			p := ws[i-1]
			h := max(p.y1-p.y0, w.y1-w.y0)
			ltr := w.x0 >= p.x0 && math.Min(p.y1, w.y1)-math.Max(p.y0, w.y0) > 0.3*h
			if !ltr || w.x0-p.x1 > 0.05*h {
				sb.WriteByte(' ')
			}
		}
		sb.WriteString(w.text)
	}
	return sb.String()
}

func countChars(s string) int {
	n := 0
	for _, r := range s {
		if !unicode.IsSpace(r) {
			n++
		}
	}
	return n
}

// weights counts characters per font size; a line or page has few sizes,
// so a slice beats a map.
type weights struct {
	keys []float64
	vals []int
}

func (w *weights) add(k float64, n int) {
	for i, x := range w.keys {
		if x == k {
			w.vals[i] += n
			return
		}
	}
	w.keys = append(w.keys, k)
	w.vals = append(w.vals, n)
}

// mode returns the key with the largest weight (the smaller key on ties),
// 0 when empty.
func (w *weights) mode() float64 {
	best, bw := 0.0, 0
	for i, k := range w.keys {
		if v := w.vals[i]; v > bw || v == bw && k < best {
			best, bw = k, v
		}
	}
	return best
}

// bodySize is the page's body font size: the size most characters have.
func bodySize(ls []line) float64 {
	var w weights
	for _, l := range ls {
		if !l.vertical {
			w.add(math.Round(l.size*2)/2, l.chars)
		}
	}
	if b := w.mode(); b > 0 {
		return b
	}
	return 10
}

func boldShare(ls []line) float64 {
	bold, total := 0.0, 0
	for _, l := range ls {
		bold += l.boldFrac * float64(l.chars)
		total += l.chars
	}
	if total == 0 {
		return 0
	}
	return bold / float64(total)
}

// fixStackedBlocks repairs blocks that poppler read as vertical text
// although the glyphs sit side by side (fonts with vertical metrics used
// horizontally): every line is one glyph and all share one height. The
// glyphs are regrouped into rows read left to right.
func fixStackedBlocks(tp *textPage) {
	found := false
	for i := 0; i < len(tp.lines) && !found; {
		end := i
		for end < len(tp.lines) && tp.lines[end].block == tp.lines[i].block {
			end++
		}
		found = stacked(tp.lines[i:end])
		i = end
	}
	if !found {
		return
	}
	start := 0
	out := tp.lines[:0:0]
	for start < len(tp.lines) {
		end := start
		for end < len(tp.lines) && tp.lines[end].block == tp.lines[start].block {
			end++
		}
		blk := tp.lines[start:end]
		if stacked(blk) {
			out = append(out, restack(blk)...)
		} else {
			out = append(out, blk...)
		}
		start = end
	}
	tp.lines = out
}

func stacked(blk []textLine) bool {
	if len(blk) < 3 {
		return false
	}
	for _, l := range blk {
		if len(l.words) != 1 || utf8.RuneCountInString(l.words[0].text) != 1 {
			return false
		}
	}
	// Most consecutive glyphs share a row: vertical text would stack them.
	same := 0
	for i := 1; i < len(blk); i++ {
		a, b := blk[i-1], blk[i]
		if math.Abs((a.y0+a.y1)/2-(b.y0+b.y1)/2) < 0.3*(a.y1-a.y0) {
			same++
		}
	}
	return same*10 >= (len(blk)-1)*8
}

// restack rebuilds rows from single-glyph lines. The glyph boxes are the
// vertical advance, not the glyph width, so words are separated where the
// step to the next glyph is clearly longer than the row's usual step.
func restack(blk []textLine) []textLine {
	ws := make([]word, 0, len(blk))
	for _, l := range blk {
		ws = append(ws, l.words[0])
	}
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].y0 < ws[j].y0 })
	var rows [][]word
	for _, w := range ws {
		n := len(rows)
		if n > 0 {
			r := rows[n-1][0]
			if c := (w.y0 + w.y1) / 2; c >= r.y0 && c <= r.y1 {
				rows[n-1] = append(rows[n-1], w)
				continue
			}
		}
		rows = append(rows, []word{w})
	}
	var out []textLine
	for _, r := range rows {
		sort.SliceStable(r, func(i, j int) bool { return r[i].x0 < r[j].x0 })
		steps := make([]float64, 0, len(r))
		for i := 1; i < len(r); i++ {
			steps = append(steps, r[i].x0-r[i-1].x0)
		}
		med := median(steps)
		tl := textLine{x0: r[0].x0, y0: r[0].y0, x1: r[len(r)-1].x1, y1: r[0].y1, block: blk[0].block}
		cur := r[0]
		for i := 1; i < len(r); i++ {
			if r[i].x0-r[i-1].x0 > 1.45*med {
				tl.words = append(tl.words, cur)
				cur = r[i]
				continue
			}
			cur.text += r[i].text
			cur.x1 = r[i].x1
		}
		tl.words = append(tl.words, cur)
		// Word boxes overlap (advance-sized glyphs): space them apart so
		// joinWords sees the gaps it should.
		for i := 1; i < len(tl.words); i++ {
			tl.words[i-1].x1 = min(tl.words[i-1].x1, tl.words[i].x0-1)
		}
		out = append(out, tl)
	}
	return out
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// joinSplitLines puts back together the rows poppler cut into two lines of
// one block. Poppler sorts a block's lines by the top of their boxes, so
// when a glyph taller than the text (a bullet, a symbol from another font)
// starts a row, the rest of the row, which sits on the text's baseline one
// word space to the right, becomes a line of its own sorted before it: the
// row's words are then read in the wrong order, and its tail joins the
// line above. Parts are looked for among a few neighbouring lines of the
// block (poppler keeps them close in its order), which keeps hostile
// pages linear. The joined line takes the place of the earlier part.
func joinSplitLines(tp *textPage) {
	const window = 3
	gone := make([]bool, len(tp.lines))
	joined := false
	for i := range tp.lines {
		if gone[i] {
			continue
		}
		for k := i + 1; k < len(tp.lines) && k <= i+window; k++ {
			a, b := &tp.lines[i], &tp.lines[k]
			if gone[k] || a.block != b.block {
				continue
			}
			switch {
			case rowContinues(a, b):
				*a = concatLines(*a, *b)
			case rowContinues(b, a):
				*a = concatLines(*b, *a)
			default:
				continue
			}
			gone[k], joined = true, true
		}
	}
	if !joined {
		return
	}
	out := tp.lines[:0]
	for i, l := range tp.lines {
		if !gone[i] {
			out = append(out, l)
		}
	}
	tp.lines = out
}

// rowContinues reports whether b continues a's row: b's first word sits on
// the same text row as a's last word, no more than a word space to its
// right. A column gap, or text above or below, keeps them apart.
func rowContinues(a, b *textLine) bool {
	if len(a.words) == 0 || len(b.words) == 0 {
		return false
	}
	p, n := a.words[len(a.words)-1], b.words[0]
	hp, hn := p.y1-p.y0, n.y1-n.y0
	h := min(hp, hn)
	if h <= 0 || max(hp, hn) > 1.3*h || upright(a) || upright(b) {
		return false
	}
	if math.Abs((p.y0+p.y1)/2-(n.y0+n.y1)/2) > 0.15*h {
		return false
	}
	gap := n.x0 - p.x1
	return gap >= -0.1*h && gap <= 0.6*h && b.x0 >= p.x1-0.1*h
}

// upright reports whether l runs up or down the page (as prepareLines
// decides): its words' boxes are not rows.
func upright(l *textLine) bool {
	chars := 0
	for _, w := range l.words {
		chars += utf8.RuneCountInString(w.text)
	}
	return chars >= 2 && l.y1-l.y0 > 1.5*(l.x1-l.x0)
}

// concatLines is the line made of a's words followed by b's.
func concatLines(a, b textLine) textLine {
	words := make([]word, 0, len(a.words)+len(b.words))
	words = append(append(words, a.words...), b.words...)
	return textLine{x0: min(a.x0, b.x0), y0: min(a.y0, b.y0), x1: max(a.x1, b.x1), y1: max(a.y1, b.y1),
		words: words, block: a.block}
}
