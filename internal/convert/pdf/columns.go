package pdf

import (
	"math"
	"slices"
)

// Column gutters inside poppler's blocks. Poppler sometimes makes one
// block of lines that stand in two or three columns side by side (a
// magazine scan's text layer: the lines of a column, a photo caption and
// the next column, interleaved top to bottom), and may even join words of
// two columns into one line. Read as a block, the page then runs across
// its columns line by line. A gutter is a vertical band of whitespace,
// free of every word box, that many consecutive lines of the block share
// with text on both sides; the block is cut there, into one block per
// column (and per stretch of the block the gutters run down), before the
// tables and the reading order are decided, so each column reads top to
// bottom and the XY cut orders the columns.
//
// A table's columns are set apart by such bands too, and a table must
// keep its rows: a gutter counts only between text columns, whose lines
// are prose on both sides (see gutterBetweenColumns).

// Gutter thresholds: lines with text on each side of a gutter (within the
// stretch it runs down), its width, how near the columns' lines come to
// it, and blocks too large to look at (kept as poppler made them, which
// keeps hostile pages linear).
const (
	minGutterLines   = 3
	minGutterEm      = 1.2 // wider than a justified line's widest word spaces
	abutEm           = 3.0 // a column's lines end within this of its gutter (ragged right)
	gutterOverSpace  = 2.5 // a gutter across a line is this many of its word spaces wide
	maxBlockGutters  = 16  // more in one block: no text columns (a grid of numbers)
	maxGutterBlock   = 2000
	minProseWords    = 3.0 // words per line on each side of a gutter
	strongProseWords = 4.5 // … and on one side at least, as the table finder's prose test
)

// gutterRun is a whitespace band [a, b] free in the lines first…last (of a
// block's lines sorted top to bottom), with left and right counting the
// lines that have text on that side.
type gutterRun struct {
	a, b        float64
	first, last int
	left, right int
}

// splitColumns cuts the blocks of ls at their column gutters. Lines of a
// cut block are reordered column by column and renumbered; a line with
// words on both sides of a gutter is split there. Blocks without a gutter
// keep their lines and order.
func splitColumns(ls []line, body float64) []line {
	minGap := max(minGutterEm*body, 6)
	next := 0
	for i := range ls {
		next = max(next, ls[i].block+1)
	}
	var out []line
	changed := false
	for start := 0; start < len(ls); {
		end := start
		for end < len(ls) && ls[end].block == ls[start].block {
			end++
		}
		blk := ls[start:end]
		if cut, ok := cutBlock(blk, body, minGap, &next); ok {
			if !changed {
				out = append(make([]line, 0, len(ls)+8), ls[:start]...)
				changed = true
			}
			out = append(out, cut...)
		} else if changed {
			out = append(out, blk...)
		}
		start = end
	}
	if !changed {
		return ls
	}
	for i := range out {
		out[i].order = i
	}
	return out
}

// cutBlock returns the block's lines cut at its gutters, and false when it
// has none. next is the next free block number.
func cutBlock(blk []line, body, minGap float64, next *int) ([]line, bool) {
	if len(blk) < 2*minGutterLines || len(blk) > maxGutterBlock {
		return nil, false
	}
	for i := range blk {
		if blk[i].vertical {
			return nil, false
		}
	}
	sorted := slices.Clone(blk)
	sortLines(sorted)
	x0, x1 := math.Inf(1), math.Inf(-1)
	for i := range sorted {
		x0, x1 = min(x0, sorted[i].x0), max(x1, sorted[i].x1)
	}
	var gutters []gutterRun
	var rows []rowWords
	for _, g := range gutterRuns(sorted, x0, x1, minGap) {
		if g.left < minGutterLines || g.right < minGutterLines {
			continue
		}
		if rows == nil {
			rows = make([]rowWords, len(sorted))
			for i := range sorted {
				rows[i] = newRowWords(sorted[i].words)
			}
		}
		if gutterBetweenColumns(rows, g, body) {
			gutters = append(gutters, g)
		}
	}
	if len(gutters) == 0 || len(gutters) > maxBlockGutters {
		return nil, false
	}
	// Stretches: runs of lines under the same gutters.
	active := func(i int) []interval {
		var iv []interval
		for _, g := range gutters {
			if g.first <= i && i <= g.last {
				iv = append(iv, interval{g.a, g.b})
			}
		}
		slices.SortFunc(iv, func(p, q interval) int { return cmpFloat(p.a, q.a) })
		return iv
	}
	// A column goes on from one stretch to the next when it is the only
	// piece of each that the other overlaps: a gutter that ends or starts
	// beside it does not cut it.
	type column struct {
		lines  []line
		x0, x1 float64 // of its piece in the last stretch
	}
	var cols, prev []*column // prev: the previous stretch's pieces
	for s := 0; s < len(sorted); {
		gs := active(s)
		e := s + 1
		for e < len(sorted) && slices.Equal(active(e), gs) {
			e++
		}
		pieces := make([][]line, len(gs)+1)
		for _, l := range sorted[s:e] {
			for c, ws := range splitWords(l.words, gs) {
				if len(ws) == 0 {
					continue
				}
				if len(ws) == len(l.words) {
					pieces[c] = append(pieces[c], l)
					continue
				}
				tl := textLine{x0: math.Inf(1), y0: l.y0, x1: math.Inf(-1), y1: l.y1, words: ws, block: l.block}
				for _, w := range ws {
					tl.x0, tl.x1 = min(tl.x0, w.x0), max(tl.x1, w.x1)
				}
				if p, ok := newLine(tl); ok {
					pieces[c] = append(pieces[c], p)
				}
			}
		}
		ext := make([]interval, len(pieces))
		for k, p := range pieces {
			ext[k] = interval{math.Inf(1), math.Inf(-1)}
			for _, l := range p {
				ext[k] = interval{min(ext[k].a, l.x0), max(ext[k].b, l.x1)}
			}
		}
		var cur []*column
		for k, p := range pieces {
			if len(p) == 0 {
				continue
			}
			var on *column
			for _, c := range prev {
				if c.x0 < ext[k].b && ext[k].a < c.x1 {
					if on != nil {
						on = nil
						break
					}
					on = c
				}
			}
			for j := range pieces {
				if on != nil && j != k && len(pieces[j]) > 0 && ext[j].a < on.x1 && on.x0 < ext[j].b {
					on = nil
				}
			}
			if on == nil {
				on = &column{}
				cols = append(cols, on)
			}
			on.lines = append(on.lines, p...)
			on.x0, on.x1 = ext[k].a, ext[k].b
			cur = append(cur, on)
		}
		prev = cur
		s = e
	}
	var out []line
	for _, c := range cols {
		for i := range c.lines {
			c.lines[i].block = *next
		}
		*next++
		out = append(out, c.lines...)
	}
	return out, true
}

// splitWords sorts words into the columns between gutters (cols sorted,
// no word crosses one).
func splitWords(ws []word, cols []interval) [][]word {
	out := make([][]word, len(cols)+1)
	for _, w := range ws {
		c := 0
		for c < len(cols) && w.x0 >= cols[c].b {
			c++
		}
		out[c] = append(out[c], w)
	}
	return out
}

// gutterRuns sweeps the lines top to bottom, following every band of
// whitespace at least minGap wide from the line where it opens to the last
// line it stays free in. A band narrows as lines reach into it and splits
// where a line stands in its middle (a caption between two columns); a
// band that opens beside the bands followed so far starts a run of its own.
func gutterRuns(sorted []line, x0, x1, minGap float64) []gutterRun {
	var done, open []gutterRun
	for i := range sorted {
		free := freeBands(sorted[i].words, x0, x1, minGap)
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, w := range sorted[i].words {
			lo, hi = min(lo, w.x0), max(hi, w.x1)
		}
		var cont []gutterRun
		k := 0
		for _, g := range open {
			kept := false
			for k > 0 && free[k-1].b > g.a {
				k-- // free bands may overlap several runs: step back
			}
			for ; k < len(free) && free[k].a < g.b; k++ {
				a, b := max(g.a, free[k].a), min(g.b, free[k].b)
				if b-a >= minGap {
					c := gutterRun{a: a, b: b, first: g.first, last: i, left: g.left, right: g.right}
					cont = append(cont, c)
					kept = true
				}
			}
			if !kept {
				done = append(done, g)
			}
		}
		// Bands of this line beside the continued runs open runs.
		var fresh []gutterRun
		k = 0
		for _, f := range free {
			at := f.a
			for k < len(cont) && cont[k].b <= at {
				k++
			}
			for j := k; j < len(cont) && cont[j].a < f.b; j++ {
				if cont[j].a-at >= minGap {
					fresh = append(fresh, gutterRun{a: at, b: cont[j].a, first: i, last: i})
				}
				at = max(at, cont[j].b)
			}
			if f.b-at >= minGap {
				fresh = append(fresh, gutterRun{a: at, b: f.b, first: i, last: i})
			}
		}
		open = append(cont, fresh...)
		slices.SortFunc(open, func(p, q gutterRun) int { return cmpFloat(p.a, q.a) })
		for j := range open {
			if lo < open[j].a {
				open[j].left++
			}
			if hi > open[j].b {
				open[j].right++
			}
		}
	}
	return append(done, open...)
}

// freeBands are the stretches of [x0, x1] at least minGap wide that no
// word of the line covers, left to right.
func freeBands(ws []word, x0, x1, minGap float64) []interval {
	iv := make([]interval, 0, len(ws))
	for _, w := range ws {
		iv = append(iv, interval{w.x0, w.x1})
	}
	return uncovered(iv, x0, x1, minGap)
}

// rowWords is a line's words as gutterBetweenColumns looks at them: left
// to right, with the right end of the words up to each, and the spaces
// between them sorted, so that a gutter is weighed in time logarithmic in
// the line's words (a hostile block of long lines crossed by many bands
// stays cheap).
type rowWords struct {
	x0     []float64 // words' left ends, ascending
	right  []float64 // right[k]: the rightmost end of words 0…k
	spaces []float64 // the spaces between consecutive words, ascending
}

func newRowWords(ws []word) rowWords {
	s := slices.Clone(ws)
	slices.SortFunc(s, func(a, b word) int { return cmpFloat(a.x0, b.x0) })
	r := rowWords{x0: make([]float64, len(s)), right: make([]float64, len(s))}
	for k, w := range s {
		r.x0[k], r.right[k] = w.x0, w.x1
		if k > 0 {
			r.right[k] = max(r.right[k], r.right[k-1])
			r.spaces = append(r.spaces, w.x0-r.right[k-1])
		}
	}
	slices.Sort(r.spaces)
	return r
}

// gutterBetweenColumns reports whether run g parts two columns of text:
// at least minGutterLines lines on each side reach to within abutEm of it
// (a gap between words of a spaced-out caption has the columns well away
// on both sides), a line with words on both sides is crossed where its
// space is a gutter's, not a word space's (see gutterSpace), and the lines
// beside it read as text, not a table's: several words per line on both
// sides, and as many as the table finder's prose test asks on one side at
// least. A table's label column ("Menge", "Date:") beside its values has
// few.
func gutterBetweenColumns(rows []rowWords, g gutterRun, body float64) bool {
	var abut, lines, words [2]int
	reach := abutEm * body
	for i := g.first; i <= g.last; i++ {
		r := &rows[i]
		// No word crosses the band: those starting left of it end there.
		k, _ := slices.BinarySearch(r.x0, g.a)
		n := [2]int{k, len(r.x0) - k}
		if k > 0 && g.a-r.right[k-1] <= reach {
			abut[0]++
		}
		if k < len(r.x0) && r.x0[k]-g.b <= reach {
			abut[1]++
		}
		for s := range n {
			if n[s] > 0 {
				lines[s]++
				words[s] += n[s]
			}
		}
		if n[0] > 0 && n[1] > 0 && !gutterSpace(r.spaces, r.x0[k]-r.right[k-1]) {
			return false
		}
	}
	for s := range abut {
		if abut[s] < minGutterLines {
			return false
		}
	}
	return proseCounts(lines, words)
}

// gutterSpace reports whether gap, one of a line's spaces (sorted), where
// a gutter crosses the line (two columns poppler joined into one line), is
// a gutter: well wider than the median of the line's other spaces. In a
// justified line whose spaces are all stretched, a band of them that
// happens to line up over a few lines (a river) is no gutter.
func gutterSpace(spaces []float64, gap float64) bool {
	m := len(spaces) - 1 // the other spaces
	if m <= 0 {
		return true
	}
	at, _ := slices.BinarySearch(spaces, gap)
	mid := m / 2 // the median's index among the others
	if at <= mid {
		mid++ // gap is dropped before it
	}
	return gap >= gutterOverSpace*spaces[mid]
}

// sortLines sorts lines top to bottom, a row's left to right.
func sortLines(ls []line) {
	slices.SortStableFunc(ls, func(a, b line) int {
		if c := cmpFloat(a.y0, b.y0); c != 0 {
			return c
		}
		return cmpFloat(a.x0, b.x0)
	})
}
