package pdf

import (
	"math"
	"slices"
)

// Reading order: a recursive XY cut over blocks and tables.

// unit is what reading order arranges: a run of lines of one poppler block,
// or a table.
type unit struct {
	x0, y0, x1, y1 float64
	lines          []int
	table          *table
	order          int
}

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
		cur.x0, cur.y0, cur.x1, cur.y1 = min(cur.x0, l.x0), min(cur.y0, l.y0), max(cur.x1, l.x1), max(cur.y1, l.y1)
	}
	for _, t := range tables {
		out = append(out, &unit{x0: t.x0, y0: t.y0, x1: t.x1, y1: t.y1, table: t, order: t.order})
	}
	return out
}

// xyOrder orders units by recursive XY cut: columns (vertical gaps wider
// than minGap across the whole region) left to right first, else bands
// (horizontal gaps) top to bottom. Bands that share a column gap are cut as
// one region, so paragraph gaps that happen to line up across two columns
// do not interleave the columns. Units that no cut separates keep
// poppler's order.
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
		free := freeRanges(b, x0, x1, minGap)
		if i > 0 {
			var keep []interval
			for _, g := range intersect(gaps, free, minGap) {
				if gutter(cur, b, g) {
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
