package consensus

import (
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/docjobs/docjobs/internal/fieldpath"
)

// pathString names the current place: keys and agreed-array indexes joined
// by dots, "" for the root. In a key, "\" and "." are escaped with "\", and
// an empty key is written "\e", so every path reads back one way. A path
// longer than MaxPathBytes, which only absurd keys make, is cut like a
// value: an answer must not inflate the report through its key names.
func (v *voter) pathString() string {
	var b []byte
	for i, s := range v.path {
		if len(b) > MaxPathBytes {
			break
		}
		if i > 0 {
			b = append(b, '.')
		}
		if s.key < 0 {
			b = strconv.AppendInt(b, int64(s.index), 10)
			continue
		}
		name := v.in.keyNames[s.key]
		b = append(b, fieldpath.Key(name[:min(len(name), MaxPathBytes+utf8.UTFMax)])...)
	}
	return string(cut(b, MaxPathBytes))
}

// entry is one disagreement before its text is written.
type entry struct {
	path     string
	order    int // document order
	worst    int // runs behind the least supported winner decided in it
	variants []variant
	dropped  int // variants beyond MaxVariants
}

// report keeps the MaxDisagreements entries of worst agreement (first in
// document order among equals) and counts the rest, so a vote with many
// disputes holds no more than it reports.
type report struct {
	seq     int
	heap    []entry // a max-heap by rank: heap[0] is the first to give way
	dropped int
}

// ranksAfter reports whether a ranks after b: better agreement, or equal
// and later in the document.
func ranksAfter(a, b *entry) bool {
	if a.worst != b.worst {
		return a.worst > b.worst
	}
	return a.order > b.order
}

func (r *report) add(e entry) {
	h := r.heap
	if len(h) == MaxDisagreements {
		r.dropped++
		if !ranksAfter(&h[0], &e) {
			return
		}
		h[0] = e
	} else {
		h = append(h, e)
		for i := len(h) - 1; i > 0; { // up
			p := (i - 1) / 2
			if !ranksAfter(&h[i], &h[p]) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		r.heap = h
		return
	}
	for i := 0; ; { // down
		big, l, rt := i, 2*i+1, 2*i+2
		if l < len(h) && ranksAfter(&h[l], &h[big]) {
			big = l
		}
		if rt < len(h) && ranksAfter(&h[rt], &h[big]) {
			big = rt
		}
		if big == i {
			break
		}
		h[i], h[big] = h[big], h[i]
		i = big
	}
}

// disagreements writes the kept entries, worst agreement first.
func (r *report) disagreements() ([]Disagreement, int) {
	kept := slices.Clone(r.heap)
	slices.SortFunc(kept, func(a, b entry) int {
		if a.worst != b.worst {
			return a.worst - b.worst
		}
		return a.order - b.order
	})
	res := make([]Disagreement, len(kept))
	for i, e := range kept {
		d := Disagreement{FieldPath: e.path, Variants: make([]Variant, len(e.variants)), VariantsDropped: e.dropped}
		for j, vr := range e.variants {
			d.Variants[j] = Variant{Value: vr.value(), Runs: vr.runs, Included: vr.included}
		}
		res[i] = d
	}
	return res, r.dropped
}

// variantList keeps the MaxVariants best variants of an entry and counts
// the rest.
type variantList struct {
	kept    []variant
	dropped int
	seq     int
}

// wants reports whether vr would be kept, so a variant whose value is costly
// to show is only worked out when it will be shown.
func (l *variantList) wants(vr variant) bool {
	vr.seq = l.seq
	return len(l.kept) < MaxVariants || byRuns(vr, l.kept[len(l.kept)-1]) < 0
}

// add keeps vr, pushing out the last variant when full; call wants first.
func (l *variantList) add(vr variant) {
	vr.seq = l.seq
	l.seq++
	i, _ := slices.BinarySearchFunc(l.kept, vr, byRuns)
	if i == MaxVariants {
		l.dropped++
		return
	}
	if len(l.kept) == MaxVariants {
		l.kept = l.kept[:MaxVariants-1]
		l.dropped++
	}
	l.kept = slices.Insert(l.kept, i, vr)
}

// value writes the variant as compact JSON cut to MaxValueBytes.
func (vr variant) value() string {
	w := writer{max: MaxValueBytes}
	switch {
	case vr.o != nil:
		w.out(vr.o)
	case vr.n != nil:
		w.node(vr.n)
	default:
		w.write("null")
	}
	return string(cut(w.buf, MaxValueBytes))
}

// cut shortens b to at most max bytes without splitting a UTF-8 character.
func cut(b []byte, max int) []byte {
	if len(b) <= max {
		return b
	}
	i := max
	for i > 0 && !utf8.RuneStart(b[i]) {
		i--
	}
	return b[:i]
}

// writer writes compact JSON. With max > 0 it stops a few bytes past max,
// so a cut value costs no more than its cut.
type writer struct {
	buf []byte
	max int
}

func (w *writer) full() bool { return w.max > 0 && len(w.buf) > w.max }

func (w *writer) write(s string) {
	if w.max > 0 {
		room := w.max + utf8.UTFMax - len(w.buf)
		if room <= 0 {
			return
		}
		s = s[:min(len(s), room)]
	}
	w.buf = append(w.buf, s...)
}

func (w *writer) node(n *node) {
	if w.full() {
		return
	}
	switch n.kind {
	case kindObject:
		w.write("{")
		for i, name := range n.names {
			if i > 0 {
				w.write(",")
			}
			w.write(name)
			w.write(":")
			w.node(n.vals[i])
		}
		w.write("}")
	case kindArray:
		w.write("[")
		for i, e := range n.vals {
			if i > 0 {
				w.write(",")
			}
			w.node(e)
		}
		w.write("]")
	default:
		w.write(n.raw)
	}
}

func (w *writer) out(o *out) {
	if w.full() {
		return
	}
	switch {
	case o.n != nil:
		w.node(o.n)
	case o.kind == kindObject:
		w.write("{")
		for i, name := range o.names {
			if i > 0 {
				w.write(",")
			}
			w.write(name)
			w.write(":")
			w.out(o.vals[i])
		}
		w.write("}")
	default:
		w.write("[")
		for i, e := range o.vals {
			if i > 0 {
				w.write(",")
			}
			w.out(e)
		}
		w.write("]")
	}
}
