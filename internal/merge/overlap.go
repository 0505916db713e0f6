package merge

import (
	"html"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// borders returns every k ≥ 1, longest first, for which the last k items
// of tail equal the first k items of head: the candidate lengths of a
// repeated run at a chunk boundary. Linear time (KMP): only as much of
// tail as head is long can take part.
func borders[T comparable](tail, head []T) []int {
	m := len(head)
	if m == 0 || len(tail) == 0 {
		return nil
	}
	if len(tail) > m {
		tail = tail[len(tail)-m:]
	}
	pi := make([]int, m) // pi[i]: longest proper border of head[:i+1]
	for i, k := 1, 0; i < m; i++ {
		for k > 0 && head[i] != head[k] {
			k = pi[k-1]
		}
		if head[i] == head[k] {
			k++
		}
		pi[i] = k
	}
	q := 0
	for _, t := range tail {
		for q > 0 && (q == m || head[q] != t) {
			q = pi[q-1]
		}
		if head[q] == t {
			q++
		}
	}
	var ks []int
	for ; q > 0; q = pi[q-1] {
		ks = append(ks, q)
	}
	return ks
}

// grounder tells how many copies of a record the overlap text can
// account for. Records extracted from the repeated block quote it, so
// their values occur there; equal records on both sides of a block that
// holds none, or more copies than the block holds, are not overlap and
// stay.
type grounder struct {
	text   string // lower case, entities decoded, white space collapsed
	digits string // text with separators inside numbers removed ("1,234" → "1234")
	budget int    // bytes of text scans left for this boundary
}

// Bounds on grounding work per chunk boundary; past them, records count
// as not grounded, so duplicates are kept rather than records lost.
const (
	maxGroundLeaves = 64       // values checked per record
	maxGroundScan   = 32 << 20 // bytes of overlap text scanned
	minGroundRunes  = 3        // shorter strings and numbers prove nothing
)

func newGrounder(src string) *grounder {
	t := strings.ToLower(strings.Join(strings.Fields(html.UnescapeString(src)), " "))
	var d strings.Builder
	for i := 0; i < len(t); i++ {
		c := t[i]
		if (c == ',' || c == '\'' || c == ' ' || c == '_') && i > 0 && i+1 < len(t) && isDigit(t[i-1]) && isDigit(t[i+1]) {
			continue
		}
		d.WriteByte(c)
	}
	return &grounder{text: t, digits: d.String(), budget: maxGroundScan}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// groundedPrefix returns how many records at the head of a chunk's array
// the overlap text accounts for, counting repeated records: the i-th copy
// of a record is grounded only if at least half of its values occur at
// least i times. Half, not all, because models derive some fields (a
// currency from "$", a normalized date). A record with no value long
// enough to check counts as grounded: there is no evidence against it.
func (g *grounder) groundedPrefix(hs []digest, elems []*value) int {
	limit := make(map[digest]int)
	copies := make(map[digest]int)
	for i, h := range hs {
		c, ok := limit[h]
		if !ok {
			c = g.maxCopies(elems[i])
			limit[h] = c
		}
		if copies[h]++; copies[h] > c {
			return i
		}
	}
	return len(hs)
}

func (g *grounder) maxCopies(v *value) int {
	var counts []int
	var visit func(v *value)
	visit = func(v *value) {
		if len(counts) >= maxGroundLeaves {
			return
		}
		var needle, hay string
		switch v.kind {
		case kString:
			needle, hay = strings.ToLower(strings.Join(strings.Fields(v.s), " ")), g.text
		case kNumber:
			lit := strings.TrimPrefix(v.s, "-")
			if strings.ContainsAny(lit, "eE") {
				return
			}
			whole, frac, _ := strings.Cut(lit, ".")
			needle, hay = whole, g.digits
			if frac = strings.TrimRight(frac, "0"); frac != "" {
				needle += "." + frac
			}
		case kArray, kObject:
			for _, e := range v.arr {
				visit(e)
			}
			return
		default:
			return
		}
		if utf8.RuneCountInString(needle) < minGroundRunes {
			return
		}
		if g.budget -= len(hay); g.budget < 0 {
			counts = append(counts, 0)
			return
		}
		counts = append(counts, strings.Count(hay, needle))
	}
	visit(v)
	if len(counts) == 0 {
		return math.MaxInt
	}
	slices.SortFunc(counts, func(a, b int) int { return b - a })
	return counts[(len(counts)+1)/2-1]
}

// hasAlnum reports whether s holds a letter or digit: a run of rules,
// punctuation or blank markup is no evidence of a repeated block.
func hasAlnum(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}
