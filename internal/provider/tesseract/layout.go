package tesseract

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Reading order from the word boxes.
//
// Tesseract's page segmentation (--psm 1 or 3) cuts a page into blocks and
// writes them one after another. That is right for text columns, but a
// table whose label column and amount column it takes for two blocks comes
// out as a list of labels and, later, a list of amounts: which amount is
// whose is lost. --psm 4 (one column of rows) keeps such rows but reads a
// magazine's columns across. So the blocks are kept, and side-by-side
// blocks that are one table's columns are read row by row instead: most
// lines of each block are level with a line of a block beside it, one to
// one, and one of two such blocks holds short lines (labels, amounts). The
// second test is the one that keeps text columns apart: on the corpus
// magazine pages the columns' lines are set on one grid and pass the
// first test, and read across they lose most of their text order. A
// paragraph (its lines wrap) across a gutter from short lines is text
// beside a sidebar, not a table (mayShareRows), and a table of one row is
// fields, not a table (table.fields).

// TSV columns (tesseract's tsv renderer): level, page_num, block_num,
// par_num, line_num, word_num, left, top, width, height, conf, text.
// Levels 1–4 (page, block, paragraph, line) carry conf -1 and no text;
// level 5 rows are the words.
const (
	colLevel = iota
	colPage
	colBlock
	colPar
	colLine
	colWord
	colLeft
	colTop
	colWidth
	colHeight
	colConf
	colText
	columns
)

const levelWord = "5"

// Limits of the table reading.
const (
	// maxCellWords is the most words a line may have to count as a table
	// cell rather than a line of prose ("Amazon Simple Storage Service").
	maxCellWords = 4
	// minWraps is the fewest wrapped lines that make a block a paragraph
	// (proseLines): one long line that fills its column is as likely a
	// table cell, the widest of its column.
	minWraps = 2
	// cutGap is the widest space, in line heights, between two cells of a
	// one-row table that are one text the engine cut into blocks: cut
	// inside a line, where it also lost letters, the pieces of the corpus
	// pages stand less than three line heights apart ("The letter r"
	// "ands for re"); a footer's fields stand eight and more.
	cutGap = 4
	// maxPairBlocks bounds the block pairs compared on one page (the
	// comparison is quadratic); tesseract finds some tens of blocks on a
	// dense page, so a page with more is left in block order.
	maxPairBlocks = 400
)

// rect is a box in pixels, x1 and y1 exclusive.
type rect struct{ x0, y0, x1, y1 int }

func (r rect) union(o rect) rect {
	return rect{min(r.x0, o.x0), min(r.y0, o.y0), max(r.x1, o.x1), max(r.y1, o.y1)}
}

func (r rect) height() int { return r.y1 - r.y0 }

// level reports whether r and o share a row: they overlap vertically by at
// least half the taller one's height, so lines of text sizes more than
// twice apart never do. Half the lower one's height was too little: the
// lines tesseract makes of a logo's shapes, tall and loose, were level with
// the small lines of the heading beside them.
func (r rect) level(o rect) bool {
	overlap := min(r.y1, o.y1) - max(r.y0, o.y0)
	return overlap > 0 && 2*overlap >= max(r.height(), o.height())
}

// apart reports whether r and o do not overlap horizontally.
func (r rect) apart(o rect) bool { return r.x1 <= o.x0 || o.x1 <= r.x0 }

// tsvWord is one recognized word (a level 5 row).
type tsvWord struct {
	page, block, par, line int
	box                    rect
	text                   string
	conf                   float64 // the engine's confidence, 0–100
}

// parseTSV returns the words of tesseract's TSV in its order. Words with
// no text, or without a confidence, are dropped; nothing else is, since
// even low-confidence words are usually the right letters of a hard word
// (a drop cap, a small font) and dropping them costs more than it saves.
func parseTSV(tsv string) []tsvWord {
	var words []tsvWord
	for _, row := range strings.Split(tsv, "\n") {
		f := strings.SplitN(strings.TrimRight(row, "\r"), "\t", columns)
		if len(f) != columns || f[colLevel] != levelWord {
			continue
		}
		text := strings.TrimSpace(f[colText])
		if text == "" {
			continue
		}
		conf, err := strconv.ParseFloat(f[colConf], 64)
		if err != nil || conf < 0 {
			continue
		}
		x, y := atoi(f[colLeft]), atoi(f[colTop])
		words = append(words, tsvWord{
			page: atoi(f[colPage]), block: atoi(f[colBlock]), par: atoi(f[colPar]), line: atoi(f[colLine]),
			box:  rect{x, y, x + max(atoi(f[colWidth]), 0), y + max(atoi(f[colHeight]), 0)},
			text: text, conf: conf,
		})
	}
	return words
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// turn is how a page lies in the scan, as tesseract read it.
type turn int

const (
	upright     turn = iota
	mirrored         // upright, a right-to-left script: words run leftwards, lines downwards
	upsideDown       // words run leftwards, lines upwards
	turnedLeft       // text reads upwards: words run up the scan
	turnedRight      // text reads downwards: words run down the scan
)

// quarterOrHalf reports whether t is a page turned a quarter or half
// round, one that an upright copy of the image can replace.
func (t turn) quarterOrHalf() bool {
	return t == upsideDown || t == turnedLeft || t == turnedRight
}

func (t turn) String() string {
	switch t {
	case mirrored:
		return "right to left"
	case upsideDown:
		return "upside down"
	case turnedLeft:
		return "turned left"
	case turnedRight:
		return "turned right"
	}
	return "upright"
}

// pageTurn tells from the boxes of a page's words how the page lies.
// With orientation detection (--psm 1) tesseract reads a page scanned
// sideways or upside down turned, but reports the boxes on the image as
// scanned: words of a line then follow each other down, up or leftwards,
// and lines are side by side. The direction most steps from a word to the
// next in its line take tells how the page lies.
//
// Words that step leftwards are also an upright page of right-to-left
// script (Arabic, Hebrew), which tesseract lists in reading order. The
// steps from a line to the next in its paragraph tell the two apart: up
// the scan on a page upside down, down it on a right-to-left page.
// Without any such step (no paragraph of two lines) the page is taken as
// upside down, as every such page was before.
func pageTurn(words []tsvWord) turn {
	var right, left, down, up, linesDown, linesUp int
	for i := 1; i < len(words); i++ {
		a, b := words[i-1], words[i]
		if a.block != b.block || a.par != b.par {
			continue
		}
		// Twice the centres' offsets: sums of the edges, integers.
		dx := (b.box.x0 + b.box.x1) - (a.box.x0 + a.box.x1)
		dy := (b.box.y0 + b.box.y1) - (a.box.y0 + a.box.y1)
		if a.line != b.line {
			switch {
			case dy > 0:
				linesDown++
			case dy < 0:
				linesUp++
			}
			continue
		}
		switch {
		case dx > 0 && dx >= abs(dy):
			right++
		case dx < 0 && -dx >= abs(dy):
			left++
		case dy > 0:
			down++
		case dy < 0:
			up++
		}
	}
	switch max(right, left, down, up) {
	case right:
		return upright
	case left:
		if linesDown > linesUp {
			return mirrored
		}
		return upsideDown // lines run upwards
	case up: // lines run rightwards
		return turnedLeft
	default: // down: lines run leftwards
		return turnedRight
	}
}

// uprightBoxes turns the boxes of a page's words into the frame the text
// reads in (see pageTurn): words run rightwards and lines downwards.
// Coordinates may come out negative: only their order matters. A
// right-to-left page is mirrored, not turned: its lines stay in order top
// to bottom and a table's first column is its rightmost, where it reads
// from. Recognize reads a page found turned again from an upright copy of
// the image, so turned boxes reach this only when that could not be done.
func uprightBoxes(words []tsvWord) {
	var turn func(rect) rect
	switch pageTurn(words) {
	case upright:
		return
	case mirrored:
		turn = func(r rect) rect { return rect{-r.x1, r.y0, -r.x0, r.y1} }
	case upsideDown:
		turn = func(r rect) rect { return rect{-r.x1, -r.y1, -r.x0, -r.y0} }
	case turnedLeft:
		turn = func(r rect) rect { return rect{-r.y1, r.x0, -r.y0, r.x1} }
	case turnedRight:
		turn = func(r rect) rect { return rect{r.y0, -r.x1, r.y1, -r.x0} }
	}
	for i := range words {
		words[i].box = turn(words[i].box)
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// textLine is one line of a block: its words and the box around them.
type textLine struct {
	box   rect
	first rect // the first word's box
	gap   int  // the widest space between two of its words
	words []string
}

// textBlock is one of tesseract's blocks: its paragraphs of lines, in the
// engine's order.
type textBlock struct {
	box        rect
	pars       [][]textLine
	lines      []textLine // the lines of all paragraphs, top to bottom, for matching
	cells      bool       // most lines are short enough to be table cells
	prose      bool       // its lines wrap as a paragraph's (proseLines)
	lineHeight int        // the median line's height
}

// blocksOf groups one page's words (in TSV order) into blocks,
// paragraphs and lines, in the order they first appear.
func blocksOf(words []tsvWord) []textBlock {
	type key struct{ block, par, line int }
	var (
		blocks []textBlock
		index  = map[int]int{} // block number → index in blocks
		prev   key
	)
	for i, w := range words {
		k := key{w.block, w.par, w.line}
		bi, ok := index[w.block]
		if !ok {
			bi = len(blocks)
			index[w.block] = bi
			blocks = append(blocks, textBlock{box: w.box})
		}
		b := &blocks[bi]
		b.box = b.box.union(w.box)
		switch {
		case !ok || k.par != prev.par || k.block != prev.block:
			b.pars = append(b.pars, []textLine{{box: w.box, first: w.box}})
		case i > 0 && k.line != prev.line:
			p := &b.pars[len(b.pars)-1]
			*p = append(*p, textLine{box: w.box, first: w.box})
		}
		prev = k
		p := b.pars[len(b.pars)-1]
		l := &p[len(p)-1]
		if len(l.words) > 0 {
			l.gap = max(l.gap, w.box.x0-l.box.x1)
		}
		l.box = l.box.union(w.box)
		l.words = append(l.words, w.text)
	}
	for i := range blocks {
		b := &blocks[i]
		for _, p := range b.pars {
			b.lines = append(b.lines, p...)
		}
		slices.SortStableFunc(b.lines, func(x, y textLine) int {
			return (x.box.y0 + x.box.y1) - (y.box.y0 + y.box.y1)
		})
		b.cells = cellLines(b.lines)
		b.prose = proseLines(b)
		heights := make([]int, len(b.lines))
		for k, l := range b.lines {
			heights[k] = l.box.height()
		}
		slices.Sort(heights)
		b.lineHeight = heights[len(heights)/2]
	}
	return blocks
}

// proseLines reports whether b's lines are a paragraph's: at least
// minWraps of the line breaks inside its paragraphs, and more than half,
// are wraps, and a wrap visibly runs on (the next line starts with a
// lowercase letter, or the line ends with a hyphen or a comma). A wrap is
// a break the width forced: the line is long (more words than a cell has)
// and ends with a hyphen, or the next line's first word would not have
// fit after it, a word space on, before the block's right edge. A
// paragraph breaks its lines so; a column of table cells, one to a line,
// leaves room for the next cell's first word on all but its widest lines,
// and its cells start anew (a capital, a digit). A line with a space
// wider than its height inside is a table's row that tesseract kept in
// one block (a description, a gap, an amount at the right edge) and never
// wraps. The word space is taken as a quarter of the line's height: a
// space is about a quarter of an em, the line's box, ascenders to
// descenders, about an em.
func proseLines(b *textBlock) bool {
	var breaks, wraps int
	runsOn := false
	for _, p := range b.pars {
		for i := 0; i+1 < len(p); i++ {
			l, n := p[i], p[i+1]
			breaks++
			if len(l.words) <= maxCellWords || l.gap > l.box.height() {
				continue
			}
			last := l.words[len(l.words)-1]
			hyphen := strings.HasSuffix(last, "-")
			space := l.box.height() / 4
			if !hyphen && l.box.x1+space+n.first.x1-n.first.x0 <= b.box.x1 {
				continue
			}
			wraps++
			first, _ := utf8.DecodeRuneInString(n.words[0])
			runsOn = runsOn || hyphen || strings.HasSuffix(last, ",") || unicode.IsLower(first)
		}
	}
	return wraps >= minWraps && 2*wraps > breaks && runsOn
}

// matchLines pairs the lines of a and b that are level with each other,
// one to one, walking both top to bottom, and marks the paired lines in
// pa and pb (indexed like a.lines and b.lines).
func matchLines(a, b *textBlock, pa, pb []bool) {
	for i, j := 0, 0; i < len(a.lines) && j < len(b.lines); {
		la, lb := a.lines[i].box, b.lines[j].box
		switch {
		case la.level(lb):
			pa[i], pb[j] = true, true
			i++
			j++
		case la.y0+la.y1 < lb.y0+lb.y1:
			i++
		default:
			j++
		}
	}
}

// cellLines reports whether most lines are short enough to be table
// cells.
func cellLines(lines []textLine) bool {
	short := 0
	for _, l := range lines {
		if len(l.words) <= maxCellWords {
			short++
		}
	}
	return 2*short > len(lines)
}

// mayShareRows reports whether blocks a and b can be columns of one table:
// side by side, over a common stretch of the page, and one of them made
// of short lines (labels or amounts beside prose are notes, and two
// columns of prose are text columns, however level their lines). A
// paragraph (prose: its lines wrap) across a gutter from a list is no
// table's column either, however short the list's lines and however
// level with its own: a newsletter's contents or a CV's margin list set
// on the paragraph's line spacing. Within a line's height of each other,
// the two are one text the engine cut into blocks (it cuts a line of a
// dense page at a word, even inside one), and reading them row by row
// puts its lines back together.
func mayShareRows(a, b *textBlock) bool {
	if !a.box.apart(b.box) || a.box.y1 <= b.box.y0 || b.box.y1 <= a.box.y0 || !(a.cells || b.cells) {
		return false
	}
	gap := max(a.box.x0-b.box.x1, b.box.x0-a.box.x1)
	return !(a.prose && gap > a.lineHeight || b.prose && gap > b.lineHeight)
}

// tableGroups finds the blocks that are columns of tables: two blocks
// that may share rows (mayShareRows) and have lines level with each other
// are linked when most lines of each have a partner on their row in a
// block beside them. Partners are counted over all such neighbours, since
// tesseract may cut one column into several blocks where the column beside
// it is one. It returns, for each block, the index of the first block of
// its group (itself when it stands alone).
func tableGroups(blocks []textBlock) []int {
	group := make([]int, len(blocks))
	for i := range group {
		group[i] = i
	}
	if len(blocks) > maxPairBlocks {
		return group
	}
	type pair struct{ a, b int }
	var pairs []pair
	partnered := make([][]bool, len(blocks))
	for i := range blocks {
		partnered[i] = make([]bool, len(blocks[i].lines))
	}
	for i := range blocks {
		for j := i + 1; j < len(blocks); j++ {
			a, b := &blocks[i], &blocks[j]
			if !mayShareRows(a, b) {
				continue
			}
			pa, pb := make([]bool, len(a.lines)), make([]bool, len(b.lines))
			matchLines(a, b, pa, pb)
			if !slices.Contains(pa, true) {
				continue
			}
			pairs = append(pairs, pair{i, j})
			for k, ok := range pa {
				partnered[i][k] = partnered[i][k] || ok
			}
			for k, ok := range pb {
				partnered[j][k] = partnered[j][k] || ok
			}
		}
	}
	mostly := func(i int) bool {
		n := 0
		for _, ok := range partnered[i] {
			if ok {
				n++
			}
		}
		return 2*n > len(partnered[i])
	}
	find := func(i int) int {
		for group[i] != i {
			group[i] = group[group[i]]
			i = group[i]
		}
		return i
	}
	for _, p := range pairs {
		if mostly(p.a) && mostly(p.b) {
			ra, rb := find(p.a), find(p.b)
			group[max(ra, rb)] = min(ra, rb) // the root is the group's first block
		}
	}
	for i := range group {
		group[i] = find(i)
	}
	return group
}

// item is what a page reads as, in order: a paragraph's lines, or the
// rows of a table (columns of blocks read across).
type item struct {
	lines [][]string // a paragraph: its lines' words
	table *table
}

// table is rows of cells; cols are the columns' horizontal extents, to
// tell whether the next table continues this one.
type table struct {
	cols [][2]int
	rows [][]string
	// span is the stretch of the page the rows cover, line the tallest
	// line's height: a table continues only right below itself.
	span [2]int
	line int
}

// pageItems reads one page's words: blocks in tesseract's order, except
// that blocks that are columns of one table are read row by row where the
// first of them comes.
func pageItems(words []tsvWord) []item {
	uprightBoxes(words)
	blocks := blocksOf(words)
	group := tableGroups(blocks)
	members := map[int][]int{}
	for i, g := range group {
		members[g] = append(members[g], i)
	}
	var items []item
	for i := range blocks {
		m := members[group[i]]
		if len(m) == 1 {
			for _, p := range blocks[i].pars {
				it := item{}
				for _, l := range p {
					it.lines = append(it.lines, l.words)
				}
				items = append(items, it)
			}
			continue
		}
		if m[0] != i {
			continue // read with the table's first block
		}
		t := tableOf(blocks, m)
		if n := len(items); n > 0 && items[n-1].table != nil && items[n-1].table.continuedBy(t) {
			items[n-1].table.extend(t)
			continue
		}
		items = append(items, item{table: t})
	}
	return items
}

// tableOf reads the blocks (indexes into blocks) as one table: a column
// for blocks one above the other, a row for lines level with each other.
func tableOf(blocks []textBlock, members []int) *table {
	bs := slices.Clone(members)
	slices.SortFunc(bs, func(a, b int) int { return blocks[a].box.x0 - blocks[b].box.x0 })
	t := &table{}
	colOf := map[int]int{}
	for _, b := range bs {
		box := blocks[b].box
		c := slices.IndexFunc(t.cols, func(x [2]int) bool { return box.x0 < x[1] && x[0] < box.x1 })
		if c < 0 {
			c = len(t.cols)
			t.cols = append(t.cols, [2]int{box.x0, box.x1})
		}
		t.cols[c] = [2]int{min(t.cols[c][0], box.x0), max(t.cols[c][1], box.x1)}
		colOf[b] = c
	}
	type cell struct {
		box  rect
		col  int
		text string
	}
	var cells []cell
	for _, b := range members {
		for _, l := range blocks[b].lines {
			cells = append(cells, cell{l.box, colOf[b], strings.Join(l.words, " ")})
		}
	}
	slices.SortStableFunc(cells, func(x, y cell) int {
		if d := (x.box.y0 + x.box.y1) - (y.box.y0 + y.box.y1); d != 0 {
			return d
		}
		return x.box.x0 - y.box.x0
	})
	// A cell's lines are joined once the rows are known: joined as they
	// came, a cell of thousands of lines cost time in their square.
	var parts [][][]string
	var rowBox rect
	for i, c := range cells {
		if i == 0 || !c.box.level(rowBox) {
			parts = append(parts, make([][]string, len(t.cols)))
			rowBox = c.box
		}
		row := parts[len(parts)-1]
		row[c.col] = append(row[c.col], c.text)
		rowBox = rowBox.union(c.box)
		if i == 0 {
			t.span = [2]int{c.box.y0, c.box.y1}
		}
		t.span = [2]int{min(t.span[0], c.box.y0), max(t.span[1], c.box.y1)}
		t.line = max(t.line, c.box.height())
	}
	for _, row := range parts {
		cells := make([]string, len(row))
		for k, texts := range row {
			cells[k] = strings.Join(texts, " ")
		}
		t.rows = append(t.rows, cells)
	}
	return t
}

// continuedBy reports whether o is more rows of t: as many columns, each
// over the same stretch of the page, starting right below t's last row
// (within three lines). Tesseract often makes a table's last row (a total)
// blocks of its own; a footer or a running head with as many columns is
// another table.
func (t *table) continuedBy(o *table) bool {
	if len(t.cols) != len(o.cols) {
		return false
	}
	gap := o.span[0] - t.span[1]
	if gap < -max(t.line, o.line)/2 || gap > 3*max(t.line, o.line) {
		return false
	}
	for k, c := range t.cols {
		if o.cols[k][0] >= c[1] || c[0] >= o.cols[k][1] {
			return false
		}
	}
	return true
}

// fields reads a table of one row: one row side by side is no evidence of
// a table, as rows in line are, but of fields set apart. Cells closer than
// cutGap line heights are one text the engine cut into blocks (a running
// head, "CWEB USER MANUAL (VER" "SION 3.64)") and are joined. Two fields
// that read as a label and its value (labelValue) are one line, as the PDF
// path joins them; any other fields are a paragraph of one line each, as
// the page sets them apart: joined on one line, a footer's e-mail address
// and its tax number read as one phrase, and set as paragraphs apart, a
// line item's price and total lose their row.
func (t *table) fields() [][]string {
	var fields [][]string
	end := 0 // the right edge of the last field's column
	for k, c := range t.rows[0] {
		if c == "" {
			continue
		}
		words := strings.Fields(c)
		if n := len(fields); n > 0 && t.cols[k][0]-end < cutGap*t.line {
			fields[n-1] = append(fields[n-1], words...)
		} else {
			fields = append(fields, words)
		}
		end = max(end, t.cols[k][1])
	}
	if len(fields) == 2 && labelValue(fields[0], fields[1]) {
		return [][]string{append(fields[0], fields[1]...)}
	}
	return fields
}

// Limits of a label and its value, as the PDF path has them
// (internal/convert/pdf/pairs.go).
const (
	maxLabelWords = 8
	maxValueWords = 4
)

// labelValue reports whether two fields side by side read as a label and
// its value: the label is words (a letter, no digit: "Total for this
// invoice", "Invoice date:"), the value short and holding a digit (an
// amount, a date, a number). The PDF path lets a label hold digits; on a
// scan a footer's fields do (an address beside a VAT number, a phone
// number beside an account number), and a label rarely does.
func labelValue(label, value []string) bool {
	l, v := strings.Join(label, " "), strings.Join(value, " ")
	return len(label) <= maxLabelWords && len(value) <= maxValueWords &&
		strings.IndexFunc(l, unicode.IsLetter) >= 0 && strings.IndexFunc(l, unicode.IsDigit) < 0 &&
		strings.IndexFunc(v, unicode.IsDigit) >= 0
}

func (t *table) extend(o *table) {
	for k, c := range o.cols {
		t.cols[k] = [2]int{min(t.cols[k][0], c[0]), max(t.cols[k][1], c[1])}
	}
	t.span = [2]int{min(t.span[0], o.span[0]), max(t.span[1], o.span[1])}
	t.line = max(t.line, o.line)
	t.rows = append(t.rows, o.rows...)
}
