package pdf

import (
	"math"
	"slices"
	"sort"
	"strings"
)

// Tables: rows of aligned cells rebuilt from line boxes.

// row is lines at the same height, left to right.
type row struct {
	lines  []int
	y0, y1 float64
}

type interval struct{ a, b float64 }

// table is a grid of line indices: rows of columns of lines.
type table struct {
	grid           [][][]int
	cols           []interval
	x0, y0, x1, y1 float64
	order          int
}

func (t *table) text(ls []line) [][]string {
	out := make([][]string, 0, len(t.grid))
	for _, r := range t.grid {
		cells := make([]string, len(t.cols))
		for c, idx := range r {
			parts := make([]string, 0, len(idx))
			for _, i := range idx {
				parts = append(parts, ls[i].text)
			}
			cells[c] = joinLines(parts)
		}
		out = append(out, cells)
	}
	return out
}

// headerRows returns how many leading rows of the table are its header:
// rows whose every line is bold, above a row that has text not in bold. A
// table set all in bold (or all plain) has none.
func (t *table) headerRows(ls []line) int {
	allBold := func(r [][]int) bool {
		for _, c := range r {
			for _, i := range c {
				if ls[i].boldFrac < 0.9 {
					return false
				}
			}
		}
		return true
	}
	for n, r := range t.grid {
		if !allBold(r) {
			return n
		}
	}
	return 0
}

// Limits that keep hostile pages (100 000 lines) linear: a longer table
// continues as a new one, and a page of more blocks keeps poppler's order.
const (
	maxTableRows  = 400
	maxOrderUnits = 4000
)

// findTables finds aligned multi-cell rows and marks their lines in inTable.
// It returns the page's rows too, for the steps after it.
func findTables(ls []line, inTable []bool) ([]*table, []row) {
	rows := groupRows(ls)
	multi := make([]bool, len(rows))
	for k := range rows {
		multi[k] = cellRow(ls, &rows[k])
	}

	f := tableFinder{ls: ls, rows: rows, multi: multi, inTable: inTable}
	var run []int // row indices: multi rows and the single rows between them
	var cols []interval
	var pending []int
	for k := range rows {
		if !multi[k] {
			if len(run) > 0 {
				pending = append(pending, k)
			}
			continue
		}
		if len(run) > 0 {
			if nc, ok := f.extend(run, cols, pending, k); ok && len(run) < maxTableRows {
				run = append(append(run, pending...), k)
				cols = nc
				pending = nil
				continue
			}
			f.close(f.tail(run, cols, pending), cols)
		}
		run, cols, pending = []int{k}, f.cells(k), nil
	}
	if len(run) > 0 {
		f.close(f.tail(run, cols, pending), cols)
	}
	return f.tables, rows
}

// groupRows groups the lines that are not vertical into rows (lines at the
// same height), top to bottom, each row's lines left to right.
func groupRows(ls []line) []row {
	idx := make([]int, 0, len(ls))
	for i := range ls {
		if !ls[i].vertical {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool {
		la, lb := &ls[idx[a]], &ls[idx[b]]
		if la.y0 != lb.y0 {
			return la.y0 < lb.y0
		}
		return la.x0 < lb.x0
	})
	var rows []row
	for _, i := range idx {
		l := &ls[i]
		if n := len(rows); n > 0 && sameRow(&ls[rows[n-1].lines[0]], l) {
			r := &rows[n-1]
			r.lines = append(r.lines, i)
			r.y0, r.y1 = min(r.y0, l.y0), max(r.y1, l.y1)
			continue
		}
		rows = append(rows, row{lines: []int{i}, y0: l.y0, y1: l.y1})
	}
	for k := range rows {
		r := &rows[k]
		sort.SliceStable(r.lines, func(a, b int) bool { return ls[r.lines[a]].x0 < ls[r.lines[b]].x0 })
	}
	return rows
}

// cellRow reports whether a row's lines may be table cells: two or more,
// side by side without overlapping.
func cellRow(ls []line, r *row) bool {
	if len(r.lines) < 2 {
		return false
	}
	for j := 1; j < len(r.lines); j++ {
		if ls[r.lines[j]].x0 < ls[r.lines[j-1]].x1-0.5 {
			return false // overlapping text, not cells
		}
	}
	return true
}

func sameRow(a, b *line) bool {
	ca, cb := (a.y0+a.y1)/2, (b.y0+b.y1)/2
	return ca >= b.y0 && ca <= b.y1 && cb >= a.y0 && cb <= a.y1
}

type tableFinder struct {
	ls      []line
	rows    []row
	multi   []bool
	inTable []bool
	tables  []*table
}

func (f *tableFinder) cells(k int) []interval {
	var out []interval
	for _, i := range f.rows[k].lines {
		out = append(out, interval{f.ls[i].x0, f.ls[i].x1})
	}
	return mergeIntervals(out)
}

func mergeIntervals(iv []interval) []interval {
	sort.Slice(iv, func(i, j int) bool { return iv[i].a < iv[j].a })
	var out []interval
	for _, v := range iv {
		if n := len(out); n > 0 && v.a < out[n-1].b {
			out[n-1].b = max(out[n-1].b, v.b)
			continue
		}
		out = append(out, v)
	}
	return out
}

// column returns the one column x overlaps, or -1 for none or several.
func column(cols []interval, x0, x1 float64) int {
	found := -1
	for c, v := range cols {
		if x0 < v.b && x1 > v.a {
			if found >= 0 {
				return -1
			}
			found = c
		}
	}
	return found
}

func overlapsNone(cols []interval, x0, x1 float64) bool {
	for _, v := range cols {
		if x0 < v.b && x1 > v.a {
			return false
		}
	}
	return true
}

// extend reports whether multi row k continues the run (with the single
// rows pending between), and the columns after it does.
func (f *tableFinder) extend(run []int, cols []interval, pending []int, k int) ([]interval, bool) {
	// Consecutive rows must be close: about a line apart, or at the
	// table's own pitch.
	prev := run[len(run)-1]
	underHeader := false // k is further down than rowsFollow allows, under a header
	for _, r := range append(slices.Clone(pending), k) {
		if !rowsFollow(f.rows, f.multi, prev, r) {
			if !f.headerGap(run, prev, r, k) {
				return nil, false
			}
			underHeader = true
		}
		prev = r
	}
	nc := slices.Clone(cols)
	for _, i := range f.rows[k].lines {
		nc = append(nc, interval{f.ls[i].x0, f.ls[i].x1})
	}
	nc = mergeIntervals(nc)
	// A single line beside all columns opens one (the first line of a
	// wrapped label whose values sit lower); one across columns does not.
	for _, r := range pending {
		for _, i := range f.rows[r].lines {
			if l := &f.ls[i]; overlapsNone(nc, l.x0, l.x1) {
				nc = mergeIntervals(append(nc, interval{l.x0, l.x1}))
			}
		}
	}
	if len(nc) < 2 {
		return nil, false
	}
	// The row shares a column with the rows before (a header line above a
	// two-column listing shares none).
	shared := false
	for _, i := range f.rows[k].lines {
		c := column(nc, f.ls[i].x0, f.ls[i].x1)
		for _, r := range run {
			for _, j := range f.rows[r].lines {
				shared = shared || c >= 0 && f.multi[r] && column(nc, f.ls[j].x0, f.ls[j].x1) == c
			}
		}
	}
	if !shared {
		return nil, false
	}
	if underHeader && len(nc) != len(cols) {
		return nil, false // under a header, the body must fit its columns
	}
	check := []int{k}
	if len(nc) != len(cols) || underHeader {
		check = append(check, run...) // a merge may have joined two columns
	}
	for _, r := range check {
		if !f.multi[r] {
			continue
		}
		seen := make([]bool, len(nc))
		for _, i := range f.rows[r].lines {
			c := column(nc, f.ls[i].x0, f.ls[i].x1)
			if c < 0 || seen[c] {
				return nil, false
			}
			seen[c] = true
		}
	}
	for _, r := range pending {
		for _, i := range f.rows[r].lines {
			if column(nc, f.ls[i].x0, f.ls[i].x1) < 0 {
				return nil, false // a line across columns: a break in the table
			}
		}
	}
	return nc, true
}

// headerGap reports whether row b, the row after row a, may continue a run
// that is a table's header although it is further below a than rowsFollow
// allows: the run is all bold, row k (the next row of cells) is not, and b
// is at most maxRowGap line heights under a (extend then requires k to fit
// the header's columns). Invoices set their bold column header apart from
// the items, sometimes with a line between ("Contract No. …"); without this
// the header and the items are two tables, and the items' cells lose the
// header's columns (no "Rabatt %" column: amounts shift under wrong labels).
func (f *tableFinder) headerGap(run []int, a, b, k int) bool {
	ra, rb := &f.rows[a], &f.rows[b]
	if rb.y0-ra.y1 > maxRowGap*max(ra.y1-ra.y0, rb.y1-rb.y0) {
		return false
	}
	for _, r := range run {
		for _, i := range f.rows[r].lines {
			if f.ls[i].boldFrac < 0.9 {
				return false
			}
		}
	}
	for _, i := range f.rows[k].lines {
		if f.ls[i].boldFrac >= 0.5 {
			return false
		}
	}
	return true
}

// tail returns the run with the single rows pending after its last row of
// cells that continue it as the rows before continued theirs: an item's
// wrapped description under the last item. Each must lie in one column
// that has such lines higher up in the table, follow the row above as a
// table's rows do, and there may be no more of them than the longest
// stretch of single rows inside the table; a paragraph under the table
// shares none of that.
func (f *tableFinder) tail(run []int, cols []interval, pending []int) []int {
	wrapped := make([]bool, len(cols)) // columns with single-row lines in the run
	stretch, longest := 0, 0
	for _, r := range run {
		if f.multi[r] {
			stretch = 0
			continue
		}
		stretch++
		longest = max(longest, stretch)
		for _, i := range f.rows[r].lines {
			if c := column(cols, f.ls[i].x0, f.ls[i].x1); c >= 0 {
				wrapped[c] = true
			}
		}
	}
	if len(pending) > longest {
		pending = pending[:longest]
	}
	prev := run[len(run)-1]
	n := 0
	for _, r := range pending {
		if !rowsFollow(f.rows, f.multi, prev, r) {
			break
		}
		fits := true
		for _, i := range f.rows[r].lines {
			c := column(cols, f.ls[i].x0, f.ls[i].x1)
			fits = fits && c >= 0 && wrapped[c]
		}
		if !fits {
			break
		}
		prev = r
		n++
	}
	return append(run, pending[:n]...)
}

// close turns a run into a table when it is one.
func (f *tableFinder) close(run []int, cols []interval) {
	nmulti := 0
	for _, r := range run {
		if f.multi[r] {
			nmulti++
		}
	}
	if nmulti < 2 || len(cols) < 2 || f.prose(run, cols) {
		return
	}
	t := &table{cols: cols, x0: math.Inf(1), y0: math.Inf(1), x1: math.Inf(-1), y1: math.Inf(-1), order: math.MaxInt}
	t.grid = f.grid(run, cols)
	f.absorbBelow(t, run[len(run)-1])
	for _, r := range t.grid {
		for _, c := range r {
			for _, i := range c {
				l := &f.ls[i]
				f.inTable[i] = true
				t.x0, t.y0, t.x1, t.y1 = min(t.x0, l.x0), min(t.y0, l.y0), max(t.x1, l.x1), max(t.y1, l.y1)
				t.order = min(t.order, l.order)
			}
		}
	}
	f.tables = append(f.tables, t)
}

// prose reports whether the aligned rows are text columns side by side:
// long cells, or cells continuing each other's sentences.
func (f *tableFinder) prose(run []int, cols []interval) bool {
	cells, words, long := 0, 0, 0
	for _, r := range run {
		if !f.multi[r] {
			continue
		}
		for _, i := range f.rows[r].lines {
			n := len(strings.Fields(f.ls[i].text))
			cells++
			words += n
			if n >= 5 {
				long++
			}
		}
	}
	if cells > 0 && float64(words)/float64(cells) > 4.5 && long*2 > cells {
		return true
	}
	pairs, cont := 0, 0
	for c := range cols {
		prev := ""
		for _, r := range run {
			for _, i := range f.rows[r].lines {
				l := &f.ls[i]
				if column(cols, l.x0, l.x1) != c {
					continue
				}
				// Only lines of several words can run on into the next:
				// "to air" over "kg/year" is a header, not a sentence.
				if len(strings.Fields(prev)) >= 3 {
					pairs++
					if !endsSentence(prev) && startsLower(l.text) {
						cont++
					}
				}
				prev = l.text
			}
		}
	}
	return pairs >= 2 && cont*10 >= pairs*4
}

// grid groups the run's rows into table rows: a single-cell row is a
// wrapped line of the nearer neighbouring row when it sits tight against
// it, else a row of its own; rows that overlap with disjoint columns are
// one row whose cells are centred differently ("200 (as" / "BTEX)" beside
// a one-line label).
func (f *tableFinder) grid(run []int, cols []interval) [][][]int {
	type trow struct {
		cells    [][]int
		y0, y1   float64
		lastCols []bool // columns of the last source row merged in
		merged   int
	}
	var grid []*trow
	var pend []int
	add := func(g *trow, r int) {
		g.lastCols = make([]bool, len(cols))
		for _, i := range f.rows[r].lines {
			if c := column(cols, f.ls[i].x0, f.ls[i].x1); c >= 0 {
				g.cells[c] = append(g.cells[c], i)
				g.lastCols[c] = true
			}
		}
		g.y0, g.y1 = min(g.y0, f.rows[r].y0), max(g.y1, f.rows[r].y1)
		g.merged++
	}
	newRow := func() *trow {
		g := &trow{cells: make([][]int, len(cols)), y0: math.Inf(1), y1: math.Inf(-1)}
		for _, p := range pend {
			add(g, p)
		}
		pend = nil
		grid = append(grid, g)
		return g
	}
	for k, r := range run {
		if f.multi[r] {
			add(newRow(), r)
			continue
		}
		h := f.rows[r].y1 - f.rows[r].y0
		up, down := math.Inf(1), math.Inf(1)
		if k > 0 {
			up = f.rows[r].y0 - f.rows[run[k-1]].y1
		}
		if k+1 < len(run) {
			down = f.rows[run[k+1]].y0 - f.rows[r].y1
		}
		thr := 0.6 * h
		switch {
		case up <= down && up <= thr && len(grid) > 0:
			g := grid[len(grid)-1]
			for _, p := range pend {
				add(g, p)
			}
			pend = nil
			add(g, r)
		case down <= thr:
			pend = append(pend, r)
		default:
			add(newRow(), r)
		}
	}
	if len(pend) > 0 {
		newRow()
	}
	var out [][][]int
	for i := 0; i < len(grid); i++ {
		g := grid[i]
		for i+1 < len(grid) && g.merged < 3 {
			n := grid[i+1]
			h := min(g.y1-g.y0, n.y1-n.y0)
			if n.y0-g.y1 > 0.3*h || !disjoint(g.lastCols, n.cells) {
				break
			}
			for c := range n.cells {
				g.cells[c] = append(g.cells[c], n.cells[c]...)
			}
			g.lastCols = n.lastCols
			g.y1 = max(g.y1, n.y1)
			g.merged += n.merged
			i++
		}
		for _, c := range g.cells { // lines of a cell top to bottom
			sort.SliceStable(c, func(a, b int) bool { return f.ls[c[a]].y0 < f.ls[c[b]].y0 })
		}
		out = append(out, g.cells)
	}
	return out
}

func disjoint(cols []bool, cells [][]int) bool {
	for c := range cells {
		if cols[c] && len(cells[c]) > 0 {
			return false
		}
	}
	return true
}

// absorbBelow adds the lines right under the table that continue one of its
// columns (a wrapped last cell), column by column: a line across columns
// ends the table for those columns only.
func (f *tableFinder) absorbBelow(t *table, lastRow int) {
	bottom := make([]float64, len(t.cols))
	last := t.grid[len(t.grid)-1]
	for c := range t.cols {
		bottom[c] = math.Inf(-1)
		for _, i := range last[c] {
			bottom[c] = max(bottom[c], f.ls[i].y1)
		}
	}
	blocked := make([]bool, len(t.cols))
	for r := lastRow + 1; r < len(f.rows); r++ {
		open := false
		for c := range blocked {
			open = open || !blocked[c] && !math.IsInf(bottom[c], -1)
		}
		if !open {
			return
		}
		for _, i := range f.rows[r].lines {
			l := &f.ls[i]
			c := column(t.cols, l.x0, l.x1)
			if c < 0 {
				for k, v := range t.cols {
					if l.x0 < v.b && l.x1 > v.a {
						blocked[k] = true
					}
				}
				continue
			}
			gap := l.y0 - bottom[c]
			if blocked[c] || math.IsInf(bottom[c], -1) || gap > 0.5*l.height() || gap < -0.5*l.height() {
				blocked[c] = true
				continue
			}
			last[c] = append(last[c], i)
			bottom[c] = l.y1
		}
	}
}

// splitSpanningLines splits a line of a row of cells where it lies over two
// or more cells of the row right under it, between the words over one cell
// and the words over the next. Header labels set close together ("VAT
// Quantity" over "21 %" and "1 PCS") are one line to poppler: that cell
// would span two columns, which keeps the header row out of the table, and
// its labels would read as headings away from their values. A word over
// two cells, or a row under it that is not a row of cells a line apart,
// keeps the line whole, and so does a word over none of the row's cells
// unless it is clear which cell it labels (see cellParts).
// Only the first row of cells is split, where a header sits: a row under
// other cells is a table's body, whose columns the table finder already
// takes from the rows around it.
func splitSpanningLines(ls []line) []line {
	rows := groupRows(ls)
	split := map[int][][]word{}
	for k := 0; k+1 < len(rows); k++ {
		r, next := &rows[k], &rows[k+1]
		if !cellRow(ls, r) || !cellRow(ls, next) {
			continue
		}
		if !closeRows(r, next) || k > 0 && cellRow(ls, &rows[k-1]) && closeRows(&rows[k-1], r) {
			continue // not a header: the row under is apart, or the row continues cells above
		}
		for _, i := range r.lines {
			if parts := cellParts(ls, i, next.lines); len(parts) > 1 {
				split[i] = parts
			}
		}
	}
	if len(split) == 0 {
		return ls
	}
	out := make([]line, 0, len(ls)+len(split))
	for i := range ls {
		parts, ok := split[i]
		if !ok {
			out = append(out, ls[i])
			continue
		}
		for _, ws := range parts {
			tl := textLine{x0: ws[0].x0, y0: ls[i].y0, x1: ws[len(ws)-1].x1, y1: ls[i].y1, words: ws, block: ls[i].block}
			if l, ok := newLine(tl); ok {
				out = append(out, l)
			}
		}
	}
	for i := range out {
		out[i].order = i
	}
	return out
}

// closeRows reports whether row b follows row a about a line apart, as
// rows of one table do.
func closeRows(a, b *row) bool {
	return b.y0-a.y1 <= 1.5*max(a.y1-a.y0, b.y1-b.y0)
}

// Row pitch of widely spaced tables: rows further apart than a line may
// still be one table, up to maxRowGap line heights apart, when the rows of
// cells around them repeat the pitch within pitchTolerance.
const (
	maxRowGap      = 3.0
	pitchTolerance = 1.3
)

// rowsFollow reports whether row b, the row after row a, can continue a
// table with it: about a line apart, or further apart at the table's own
// pitch. Invoices space their item and total rows two lines apart or so;
// a fixed line-sized gap would cut such a table into rows, and its labels
// from their values. The pitch (top to top) counts when the pair of cell
// rows just before a or just after b repeats it: one wide gap between
// unrelated rows does not repeat, and stays a break.
func rowsFollow(rows []row, cells []bool, a, b int) bool {
	ra, rb := &rows[a], &rows[b]
	h := max(ra.y1-ra.y0, rb.y1-rb.y0)
	gap := rb.y0 - ra.y1
	if gap <= 1.5*h {
		return true
	}
	if gap > maxRowGap*h || !cells[a] && !cells[b] {
		return false
	}
	p := rb.y0 - ra.y0
	same := func(i, j int) bool {
		if i < 0 || j >= len(rows) || !cells[i] || !cells[j] {
			return false
		}
		q := rows[j].y0 - rows[i].y0
		return q > 0 && q*pitchTolerance >= p && q <= p*pitchTolerance
	}
	return same(a-1, a) || same(b, b+1)
}

// cellParts groups the words of line i by the line of below each lies
// over. It returns nil when a word lies over two (no evidence of where the
// cells part) or when it cannot tell where words over none belong. Those
// at the line's ends go with the part beside them; those between two parts
// go where exactly one of the possible cuts starts a label, a word that
// does not begin in lowercase: a right-aligned "Prijs incl. BTW" starts
// left of its values, and in "BTW Prijs incl. BTW" over "21%" and
// "€ 399,00" the cut is before "Prijs", not before "incl.".
func cellParts(ls []line, i int, below []int) [][]word {
	ws := ls[i].words
	over := make([]int, len(ws)) // the line of below each word lies over, -1 for none
	for k, w := range ws {
		over[k] = -1
		for _, j := range below {
			if w.x0 < ls[j].x1 && w.x1 > ls[j].x0 {
				if over[k] >= 0 {
					return nil
				}
				over[k] = j
			}
		}
	}
	// cuts[k]: a part starts at word k.
	cuts := make([]bool, len(ws))
	prev := -1 // index of the last word over a line of below
	for k := range ws {
		if over[k] < 0 {
			continue
		}
		if prev >= 0 && over[k] != over[prev] {
			cut := k // adjacent words over two lines: the cut is between them
			if prev+1 < k {
				start := labelStart(ws[prev+1 : k+1])
				if start < 0 {
					return nil
				}
				cut = prev + 1 + start
			}
			cuts[cut] = true
		}
		prev = k
	}
	if prev < 0 {
		return nil
	}
	var parts [][]word
	for k, w := range ws {
		if k == 0 || cuts[k] {
			parts = append(parts, nil)
		}
		parts[len(parts)-1] = append(parts[len(parts)-1], w)
	}
	return parts
}

// labelStart returns the index of the one word of ws that does not begin in
// lowercase, or -1 when none or several do.
func labelStart(ws []word) int {
	found := -1
	for k, w := range ws {
		if !startsLower(w.text) {
			if found >= 0 {
				return -1
			}
			found = k
		}
	}
	return found
}
