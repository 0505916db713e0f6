package pdf

import (
	"math"
	"slices"
	"strings"
)

// Reading order: a recursive XY cut over blocks and tables.

// unit is what reading order arranges: a run of lines of one poppler block,
// or a table.
type unit struct {
	x0, y0, x1, y1 float64
	lines          []int
	table          *table
	order          int
	words          int    // in its lines
	rects          []rect // its lines' boxes (a table: its own)
}

type rect struct{ x0, y0, x1, y1 float64 }

// buildUnits splits poppler's blocks around the lines placed elsewhere (in
// a table, or joined to the label on their left).
func buildUnits(ls []line, placed []bool, tables []*table) []*unit {
	var out []*unit
	var cur *unit
	for i := range ls {
		l := &ls[i]
		if placed[i] {
			cur = nil
			continue
		}
		if cur == nil || ls[cur.lines[len(cur.lines)-1]].block != l.block || cur.lines[len(cur.lines)-1] != i-1 {
			cur = &unit{x0: l.x0, y0: l.y0, x1: l.x1, y1: l.y1, order: l.order}
			out = append(out, cur)
		}
		cur.lines = append(cur.lines, i)
		cur.words += len(strings.Fields(l.text))
		cur.rects = append(cur.rects, rect{l.x0, l.y0, l.x1, l.y1})
		cur.x0, cur.y0, cur.x1, cur.y1 = min(cur.x0, l.x0), min(cur.y0, l.y0), max(cur.x1, l.x1), max(cur.y1, l.y1)
	}
	for _, t := range tables {
		out = append(out, &unit{x0: t.x0, y0: t.y0, x1: t.x1, y1: t.y1, table: t, order: t.order,
			rects: []rect{{t.x0, t.y0, t.x1, t.y1}}})
	}
	return out
}

// xyOrder orders units by recursive XY cut: columns (vertical gaps wider
// than minGap across the whole region) left to right first, else bands
// (horizontal gaps) top to bottom. Bands that share a column gap are cut as
// one region, so paragraph gaps that happen to line up across two columns
// do not interleave the columns. A region that no cut separates is cut into
// columns around the captions set in their gutter, if it has such
// islands; else its units keep poppler's order.
func xyOrder(us []*unit, minGap float64) []*unit {
	if len(us) <= 1 {
		return us
	}
	if len(us) > maxOrderUnits {
		out := slices.Clone(us)
		slices.SortStableFunc(out, func(a, b *unit) int { return a.order - b.order })
		return out
	}
	if cols := splitX(us, minGap); len(cols) > 1 {
		var out []*unit
		for _, c := range cols {
			out = append(out, xyOrder(c, minGap)...)
		}
		return out
	}
	bands := splitY(us)
	if len(bands) == 1 {
		if out, ok := aroundIslands(us, minGap); ok {
			return out
		}
		out := slices.Clone(us)
		slices.SortStableFunc(out, func(a, b *unit) int { return a.order - b.order })
		return out
	}
	x0, x1 := math.Inf(1), math.Inf(-1)
	for _, u := range us {
		x0, x1 = min(x0, u.x0), max(x1, u.x1)
	}
	var out []*unit
	for _, g := range groupBands(bands, x0, x1, minGap) {
		if len(g) == len(us) { // no progress: take the bands one by one
			if out, ok := aroundIslands(us, minGap); ok {
				return out
			}
			for _, b := range bands {
				out = append(out, xyOrder(b, minGap)...)
			}
			return out
		}
		out = append(out, xyOrder(g, minGap)...)
	}
	return out
}

func splitX(us []*unit, minGap float64) [][]*unit {
	s := slices.Clone(us)
	slices.SortStableFunc(s, func(a, b *unit) int { return cmpFloat(a.x0, b.x0) })
	var out [][]*unit
	start, right := 0, math.Inf(-1)
	for i, u := range s {
		if i > start && u.x0-right >= minGap {
			out = append(out, s[start:i])
			start = i
		}
		right = max(right, u.x1)
	}
	return append(out, s[start:])
}

// Islands: a caption set in the gutter between two columns, with text of
// both beside it, leaves no gap for a column cut nor a band for a row cut,
// and the region would keep poppler's order, which runs back and forth
// between the columns. A few short units with text on their left and right
// are set aside, the columns cut without them, and read after the columns.
const (
	maxIslands      = 3
	maxIslandHeight = 0.4 // of the region's
	maxIslandUnits  = 200 // regions of more are not looked at (hostile pages stay linear)
)

// aroundIslands orders us column by column after setting its islands
// aside, and the islands after the columns; false when that cuts no
// columns.
func aroundIslands(us []*unit, minGap float64) ([]*unit, bool) {
	cols, islands := splitAroundIslands(us, minGap)
	if len(cols) < 2 {
		return nil, false
	}
	var out []*unit
	for _, c := range cols {
		out = append(out, xyOrder(c, minGap)...)
	}
	return append(out, xyOrder(islands, minGap)...), true
}

// splitAroundIslands returns the columns of us cut without its islands,
// and the islands; no columns when there are none or that does not help.
// A unit with text beside it on both sides that stays within one column
// (a block poppler set apart inside it) goes back to that column.
func splitAroundIslands(us []*unit, minGap float64) (cols [][]*unit, islands []*unit) {
	cands, rest := splitIslands(us, bottom(us)-top(us))
	if len(cands) == 0 || len(rest) < 2 {
		return nil, nil
	}
	if cols = splitX(rest, minGap); len(cols) < 2 {
		return nil, nil
	}
	ext := make([]interval, len(cols))
	for k, c := range cols {
		ext[k] = interval{math.Inf(1), math.Inf(-1)}
		for _, v := range c {
			ext[k] = interval{min(ext[k].a, v.x0), max(ext[k].b, v.x1)}
		}
	}
	for _, u := range cands {
		in, reach := -1, 0
		for k, e := range ext {
			if u.x0 < e.b && e.a < u.x1 {
				in, reach = k, reach+1
			}
		}
		switch reach {
		case 0: // a column of its own between the others: no island
			return nil, nil
		case 1:
			// splitX's columns share one array: the append must not
			// write over the next column's first unit.
			cols[in] = append(slices.Clip(cols[in]), u)
		default: // it reaches into the columns on both sides of a gutter
			islands = append(islands, u)
		}
	}
	if len(islands) == 0 || len(islands) > maxIslands {
		return nil, nil
	}
	return cols, islands
}

// splitIslands parts us into its islands (units of two rows or more, no
// higher than maxIslandHeight of height, with lines of us beside them on
// both sides at their height) and the rest. One row is no caption: poppler
// makes blocks of single words of a spaced-out row, and those between the
// first and the last would be islands.
func splitIslands(us []*unit, height float64) (islands, rest []*unit) {
	if len(us) > maxIslandUnits {
		return nil, us
	}
	for _, u := range us {
		if rowsHigh(u) && u.y1-u.y0 <= maxIslandHeight*height && besideBoth(us, u) {
			islands = append(islands, u)
		} else {
			rest = append(rest, u)
		}
	}
	return islands, rest
}

// rowsHigh reports whether u is two rows of text high or more.
func rowsHigh(u *unit) bool {
	r := u.rects[0]
	return u.table == nil && u.y1-u.y0 >= 1.5*(r.y1-r.y0)
}

// besideBoth reports whether lines of us stand on both sides of u at its
// height (lines: a column's block may widen below a caption beside it).
func besideBoth(us []*unit, u *unit) bool {
	left, right := false, false
	for _, v := range us {
		if v == u || v.y1 <= u.y0 || v.y0 >= u.y1 {
			continue
		}
		for _, r := range v.rects {
			if r.y1 > u.y0 && r.y0 < u.y1 {
				left = left || r.x1 <= u.x0
				right = right || r.x0 >= u.x1
			}
		}
	}
	return left && right
}

func splitY(us []*unit) [][]*unit {
	s := slices.Clone(us)
	slices.SortStableFunc(s, func(a, b *unit) int { return cmpFloat(a.y0, b.y0) })
	var out [][]*unit
	start, bottom := 0, math.Inf(-1)
	for i, u := range s {
		if i > start && u.y0 >= bottom-1 {
			out = append(out, s[start:i])
			start = i
		}
		bottom = max(bottom, u.y1)
	}
	return append(out, s[start:])
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// groupBands joins consecutive bands that share a gutter: a vertical gap
// at least minGap wide with text on both sides that poppler read column by
// column (everything left of it before everything right of it). Those bands
// are one multi-column section whose paragraph gaps happen to line up.
// Stanzas laid out in a grid share a gutter too but poppler reads them row
// by row, and so do we.
func groupBands(bands [][]*unit, x0, x1, minGap float64) [][]*unit {
	var out [][]*unit
	var cur []*unit
	var gaps []interval
	for i, b := range bands {
		// A caption in the gutter leaves the gutter free beside it.
		free := freeRanges(b, x0, x1, minGap)
		if islands, rest := splitIslands(b, bottom(b)-min(top(b), top(cur))); len(islands) > 0 && len(islands) <= maxIslands && len(rest) > 0 {
			free = freeRanges(rest, x0, x1, minGap)
		}
		if i > 0 {
			var keep []interval
			tight := top(b)-bottom(cur) < tightBands*minGap
			for _, g := range intersect(gaps, free, minGap) {
				if gutter(cur, b, g) || tight && proseBeside(cur, b, g) {
					keep = append(keep, g)
				}
			}
			if len(keep) > 0 {
				cur = append(cur, b...)
				gaps = keep
				continue
			}
			out = append(out, cur)
		}
		cur, gaps = slices.Clone(b), free
	}
	return append(out, cur)
}

// tightBands is the gap between two bands, in minGaps (0.8 em), under
// which they are lines of the same text: no blank line parts them.
const tightBands = 1.25

func top(us []*unit) float64 {
	y := math.Inf(1)
	for _, u := range us {
		y = min(y, u.y0)
	}
	return y
}

func bottom(us []*unit) float64 {
	y := math.Inf(-1)
	for _, u := range us {
		y = max(y, u.y1)
	}
	return y
}

// proseBeside reports whether the units of sec and b on each side of g
// read as columns of text (as gutterBetweenColumns asks of lines): the
// columns of a magazine page, which poppler may read back and forth
// between line by line, so that its order cannot tell them from stanzas
// set in a grid. Tables, label and value columns and stanzas have fewer
// words to a line, or a blank line between the bands.
func proseBeside(sec, b []*unit, g interval) bool {
	var lines, words [2]int
	for _, part := range [][]*unit{sec, b} {
		for _, u := range part {
			s := -1
			switch {
			case u.x1 <= g.a:
				s = 0
			case u.x0 >= g.b:
				s = 1
			default:
				continue
			}
			if u.table != nil {
				return false
			}
			lines[s] += len(u.lines)
			words[s] += u.words
		}
	}
	return proseCounts(lines, words)
}

// proseCounts reports whether lines with words on two sides are text
// columns: several words per line on both sides, and as many as the table
// finder's prose test asks on one side at least.
func proseCounts(lines, words [2]int) bool {
	strong := false
	for s := range lines {
		if lines[s] == 0 {
			return false
		}
		avg := float64(words[s]) / float64(lines[s])
		if avg < minProseWords {
			return false
		}
		strong = strong || avg > strongProseWords
	}
	return strong
}

// gutter reports whether g separates text of sec and b on both sides, read
// left side first.
func gutter(sec, b []*unit, g interval) bool {
	maxLeft, minRight := -1, math.MaxInt
	for _, part := range [][]*unit{sec, b} {
		for _, u := range part {
			switch {
			case u.x1 <= g.a:
				maxLeft = max(maxLeft, u.order)
			case u.x0 >= g.b:
				minRight = min(minRight, u.order)
			}
		}
	}
	return maxLeft >= 0 && minRight < math.MaxInt && maxLeft < minRight
}

func freeRanges(b []*unit, x0, x1, minGap float64) []interval {
	iv := make([]interval, 0, len(b))
	for _, u := range b {
		iv = append(iv, interval{u.x0, u.x1})
	}
	return uncovered(iv, x0, x1, minGap)
}

// uncovered are the stretches of [x0, x1] at least minGap wide that none
// of iv covers, left to right; iv is reordered.
func uncovered(iv []interval, x0, x1, minGap float64) []interval {
	iv = mergeIntervals(iv)
	var out []interval
	at := x0
	for _, v := range iv {
		if v.a-at >= minGap {
			out = append(out, interval{at, v.a})
		}
		at = max(at, v.b)
	}
	if x1-at >= minGap {
		out = append(out, interval{at, x1})
	}
	return out
}

func intersect(a, b []interval, minGap float64) []interval {
	var out []interval
	for _, u := range a {
		for _, v := range b {
			lo, hi := max(u.a, v.a), min(u.b, v.b)
			if hi-lo >= minGap {
				out = append(out, interval{lo, hi})
			}
		}
	}
	return out
}
