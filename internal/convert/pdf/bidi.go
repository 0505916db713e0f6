package pdf

import (
	"slices"

	"golang.org/x/text/unicode/bidi"
)

// Right-to-left text. Poppler's word boxes are in visual order: a Hebrew
// or Arabic line comes left to right with each word's letters as drawn,
// so it reads backwards ("דגבא" for "אבגד"). A line whose letters are
// mostly right-to-left is put back in logical order: reversed (a letter
// keeps its marks after it), then the left-to-right runs in it (Latin
// words, numbers) turned back, and brackets outside them mirrored; in a
// line mostly left to right, each right-to-left run is reversed so.

// strongLetters counts the right-to-left and left-to-right letters of s.
func strongLetters(s string) (rtl, ltr int) {
	for _, r := range s {
		switch bidiClass(r) {
		case bidi.R, bidi.AL:
			rtl++
		case bidi.L:
			ltr++
		}
	}
	return rtl, ltr
}

// rightToLeftLine reports whether the line s is mostly right to left: it
// starts at its right edge, and its paragraph's lines align there.
func rightToLeftLine(s string) bool {
	rtl, ltr := strongLetters(s)
	return rtl > ltr
}

// logicalOrder returns the visual-order line s in logical order.
func logicalOrder(s string) string {
	rtl, ltr := strongLetters(s)
	if rtl == 0 {
		return s
	}
	rs := []rune(s)
	if rtl > ltr {
		return string(rightToLeft(rs))
	}
	for i := 0; i < len(rs); i++ {
		if c := bidiClass(rs[i]); c != bidi.R && c != bidi.AL {
			continue
		}
		end := i
		for k := i + 1; k < len(rs) && bidiClass(rs[k]) != bidi.L; k++ {
			if c := bidiClass(rs[k]); c == bidi.R || c == bidi.AL || c == bidi.NSM {
				end = k
			}
		}
		rightToLeft(rs[i : end+1])
		i = end
	}
	return string(rs)
}

// rightToLeft puts the visual-order right-to-left run rs in logical order,
// in place.
func rightToLeft(rs []rune) []rune {
	reverseClusters(rs)
	for i := 0; i < len(rs); {
		c := bidiClass(rs[i])
		if c != bidi.L && c != bidi.EN && c != bidi.AN {
			if m, ok := mirrored[rs[i]]; ok {
				rs[i] = m
			}
			i++
			continue
		}
		end := runEnd(rs, i, c == bidi.L)
		slices.Reverse(rs[i : end+1])
		i = end + 1
	}
	return rs
}

// reverseClusters reverses rs, each letter keeping the marks that follow
// it after it.
func reverseClusters(rs []rune) {
	slices.Reverse(rs)
	for i := 0; i < len(rs); {
		if bidiClass(rs[i]) != bidi.NSM {
			i++
			continue
		}
		end := i
		for end+1 < len(rs) && bidiClass(rs[end+1]) == bidi.NSM {
			end++
		}
		if end+1 < len(rs) {
			end++ // the marks' letter
		}
		slices.Reverse(rs[i : end+1])
		i = end + 1
	}
}

// runEnd is the index of the last character of the left-to-right run
// starting at i. A run of words goes on across spaces and punctuation up
// to its last letter or digit before a right-to-left letter; a number
// only across its separators ("3.50", "1,000", "10%"), as in a
// right-to-left line "12 - 15" is two numbers.
func runEnd(rs []rune, i int, words bool) int {
	end := i
	for k := i + 1; k < len(rs); k++ {
		switch bidiClass(rs[k]) {
		case bidi.R, bidi.AL:
			return end
		case bidi.L, bidi.EN, bidi.AN:
			end = k
		case bidi.CS, bidi.ES, bidi.ET:
			if !words && k+1 < len(rs) {
				if c := bidiClass(rs[k+1]); c != bidi.EN && c != bidi.AN {
					return end
				}
			}
		default:
			if !words {
				return end
			}
		}
	}
	return end
}

func bidiClass(r rune) bidi.Class {
	p, _ := bidi.LookupRune(r)
	return p.Class()
}

// mirrored are the paired glyphs a right-to-left run draws turned.
var mirrored = map[rune]rune{'(': ')', ')': '(', '[': ']', ']': '[', '{': '}', '}': '{', '<': '>', '>': '<', '«': '»', '»': '«'}
