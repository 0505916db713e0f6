package pdf

import (
	"strings"
	"unicode"
)

// Label/value pairs: a label and its value set apart on one text row
// ("Total TTC :" … "56,02 €") outside any table.

// Limits of a label/value pair. Longer lines are text, not a label or a
// value; a row of more lines is a table's or a form's that the table
// finder left alone; a crowded row nearby is no form's sparse
// neighbourhood (and bounds the work on hostile pages).
const (
	maxLabelWords = 8
	maxValueWords = 4
	maxPairRow    = 6  // lines on the pair's row
	maxNearRow    = 16 // lines on a row above or below
	nearRows      = 4  // rows looked at above and below
)

// joinPairs joins a value to the label on its left on the same text row,
// when neither is in a table and poppler made each a block of its own (or
// one block of the two). Read as blocks, a column of labels beside a column
// of values comes out as two runs of paragraphs, or a bold label as a
// heading away from its value: which value goes with which label is lost.
// The value is short and holds a digit (an amount, a date, a number), the
// label is short. A line next to a paragraph (a block of several lines)
// right above or below stays apart: two text columns can have one-line
// headings on one row, and joining them would bridge the gutter. The joined
// line takes the label's place; the value's line is marked placed. rows
// are the page's rows of lines, top to bottom, as findTables made them;
// placed marks the table cells, which take no part.
func joinPairs(ls []line, rows []row, placed []bool) {
	blockLines := map[int]int{}
	for i := range ls {
		blockLines[ls[i].block]++
	}
	for k := range rows {
		r := &rows[k]
		if len(r.lines) < 2 || len(r.lines) > maxPairRow {
			continue
		}
		for j := 0; j+1 < len(r.lines); j++ {
			a, b := r.lines[j], r.lines[j+1]
			if placed[a] || placed[b] || !labelValue(ls, blockLines, a, b) ||
				nearParagraph(ls, rows, blockLines, placed, k, a) || nearParagraph(ls, rows, blockLines, placed, k, b) {
				continue
			}
			order := ls[a].order
			if l, ok := newLine(concatLines(ls[a].textLine, ls[b].textLine)); ok {
				l.order = order
				ls[a] = l
				placed[b] = true
				j++ // the value is taken
			}
		}
	}
}

// labelValue reports whether lines a and b, neighbours on a row, read as a
// label and its value: each its own block, set apart by more than a word
// space, or the two one block.
func labelValue(ls []line, blockLines map[int]int, a, b int) bool {
	la, lb := &ls[a], &ls[b]
	if lb.x0 <= la.x0 {
		return false
	}
	switch {
	case la.block == lb.block:
		if blockLines[la.block] != 2 {
			return false
		}
	case blockLines[la.block] != 1 || blockLines[lb.block] != 1:
		return false
	case lb.x0-la.x1 < min(la.size, lb.size):
		// A word space apart: one line of text that poppler cut into
		// blocks, which reading order already deals with.
		return false
	}
	label, value := strings.Fields(la.text), strings.Fields(lb.text)
	return len(label) <= maxLabelWords && len(value) <= maxValueWords &&
		strings.IndexFunc(la.text, unicode.IsLetter) >= 0 && strings.IndexFunc(lb.text, unicode.IsDigit) >= 0
}

// nearParagraph reports whether a line of a block of several lines (not
// line i's block, nor a table's cell) lies right above or below line i,
// overlapping it horizontally: line i is then a column's heading or text.
func nearParagraph(ls []line, rows []row, blockLines map[int]int, placed []bool, k, i int) bool {
	l := &ls[i]
	h := l.height()
	for _, dir := range []int{-1, 1} {
		for m, n := k+dir, 0; m >= 0 && m < len(rows) && n < nearRows; m, n = m+dir, n+1 {
			r := &rows[m]
			gap := r.y0 - rows[k].y1
			if dir < 0 {
				gap = rows[k].y0 - r.y1
			}
			if gap > 1.5*h {
				break
			}
			if len(r.lines) > maxNearRow {
				return true
			}
			for _, j := range r.lines {
				o := &ls[j]
				if !placed[j] && o.block != l.block && blockLines[o.block] > 1 && o.x0 < l.x1 && o.x1 > l.x0 {
					return true
				}
			}
		}
	}
	return false
}
