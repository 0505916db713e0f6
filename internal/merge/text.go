package merge

import (
	"encoding/binary"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// Markdown and plain text are joined block by block. An answer is cut
// into units: paragraphs, headings, list items, fenced blocks, and each
// line of a pipe table. Where chunk i+1 follows chunk i, the longest run
// of units that ends answer i and starts answer i+1 is the repeated
// overlap and is dropped (when the caller gave the overlap text, only if
// that text accounts for the run, as for JSON records); a table header the
// chunker repeated is dropped too and the rows join the table above them.

type ukind uint8

const (
	uPara ukind = iota
	uHeading
	uItem
	uFence
	uHeader // a pipe table's header line
	uSep    // its delimiter line
	uRow
)

func (k ukind) tableLine() bool { return k >= uHeader }

type tunit struct {
	from, to int // lines [from, to)
	table    int // table lines: index of the table's header unit; -1 when the answer shows none
	first    int // table lines: index of the table's first unit (its header, or its first row)
	key      int // interned normalized text
	kind     ukind
	sig      bool
}

type tdoc struct {
	lines []string
	units []tunit
}

var (
	atxHeading = regexp.MustCompile(`^ {0,3}#{1,6}(?:[ \t]|$)`)
	fenceOpen  = regexp.MustCompile("^ {0,3}(```+|~~~+)")
	tableSep   = regexp.MustCompile(`^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$`)
	listItem   = regexp.MustCompile(`^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]`)
)

func isBlank(s string) bool { return strings.TrimSpace(s) == "" }

func isPipeRow(s string) bool {
	t := strings.TrimSpace(s)
	return len(t) >= 2 && t[0] == '|' && t[len(t)-1] == '|'
}

type textJoiner struct {
	intern map[string]int
}

func (j *textJoiner) parse(s string) *tdoc {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for len(lines) > 0 && isBlank(lines[0]) {
		lines = lines[1:]
	}
	for len(lines) > 0 && isBlank(lines[len(lines)-1]) {
		lines = lines[:len(lines)-1]
	}
	d := &tdoc{lines: lines}
	add := func(from, to int, k ukind, table int) int {
		d.units = append(d.units, tunit{from: from, to: to, kind: k, table: table})
		return len(d.units) - 1
	}
	const noTable = -2
	open, table := -1, noTable // the unit a plain line continues; the table being read
	first := -1                // the first unit of the table being read
	for i := 0; i < len(lines); i++ {
		ln := lines[i]
		if isBlank(ln) {
			open, table = -1, noTable
			continue
		}
		switch {
		case fenceOpen.MatchString(ln):
			marker := fenceOpen.FindStringSubmatch(ln)[1]
			end := len(lines) - 1
			for k := i + 1; k < len(lines); k++ {
				if t := strings.TrimSpace(lines[k]); strings.HasPrefix(t, marker) && strings.Trim(t, marker[:1]) == "" {
					end = k
					break
				}
			}
			add(i, end+1, uFence, -1)
			i, open, table = end, -1, noTable
		case atxHeading.MatchString(ln):
			add(i, i+1, uHeading, -1)
			open, table = -1, noTable
		case table == noTable && strings.Contains(ln, "|") && i+1 < len(lines) && tableSep.MatchString(lines[i+1]) && strings.Contains(lines[i+1], "-"):
			h := add(i, i+1, uHeader, -1)
			d.units[h].table, d.units[h].first = h, h
			d.units[add(i+1, i+2, uSep, h)].first = h
			i, open, table, first = i+1, -1, h, h
		case table != noTable && strings.Contains(ln, "|"), table == noTable && isPipeRow(ln):
			if table == noTable {
				table, first = -1, len(d.units) // rows whose header this answer does not show
			}
			d.units[add(i, i+1, uRow, table)].first = first
			open = -1
		case listItem.MatchString(ln):
			open, table = add(i, i+1, uItem, -1), noTable
		default:
			table = noTable
			if open >= 0 {
				d.units[open].to = i + 1
			} else {
				open = add(i, i+1, uPara, -1)
			}
		}
	}
	for i := range d.units {
		u := &d.units[i]
		norm := normalizeUnit(lines[u.from:u.to], u.kind.tableLine())
		id, ok := j.intern[norm]
		if !ok {
			id = len(j.intern)
			j.intern[norm] = id
		}
		u.key, u.sig = id, u.kind != uSep && hasAlnum(norm)
	}
	return d
}

// normalizeUnit makes renderings that differ only in spacing (or, for
// table lines, in cell padding and outer pipes) compare equal.
func normalizeUnit(lines []string, table bool) string {
	var b strings.Builder
	for i, ln := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		if table {
			cells := strings.Split(strings.Trim(strings.TrimSpace(ln), "|"), "|")
			for c, cell := range cells {
				if c > 0 {
					b.WriteByte('|')
				}
				b.WriteString(strings.Join(strings.Fields(cell), " "))
			}
			continue
		}
		b.WriteString(strings.Join(strings.Fields(ln), " "))
	}
	return b.String()
}

// joinText joins markdown or text answers. Answers that cannot be merged
// are appended as they are, in their place.
func joinText(g []*part) Answer {
	var a Answer
	j := &textJoiner{intern: make(map[string]int)}
	var b strings.Builder
	sep := func(s string) {
		if b.Len() > 0 {
			b.WriteString(s)
		}
	}
	var prev *part
	var prevDoc *tdoc
	// The key of the header of the table the merged content ends in, across
	// answers: rows an answer gives without a header continue that table,
	// so the next answer's repeated header is recognised against it, not
	// only against its own answer's (audit-merge2 F1). -1 when the content
	// ends in no table, or in rows whose header no answer showed.
	openHeader := -1
	for _, p := range g {
		if p.skip != "" {
			a.incomplete(p, p.skip)
			if !p.drop && p.Content != "" {
				sep("\n\n")
				b.WriteString(p.Content)
			}
			prev, prevDoc, openHeader = nil, nil, -1
			continue
		}
		d := j.parse(p.Content)
		kept := d // what the next answer's overlap is compared with
		start, cont := 0, false
		cut := 0 // units removed after a leading header that stays
		if p.follows(prev) && len(prevDoc.units) > 0 && len(d.units) > 0 {
			last := prevDoc.units[len(prevDoc.units)-1]
			headed := len(d.units) >= 2 && d.units[0].kind == uHeader && d.units[1].kind == uSep
			headerDropped := false
			if headed && last.kind.tableLine() && d.units[0].key == openHeader {
				start, headerDropped = 2, true
			}
			if !p.NoOverlap {
				var g *grounder
				if p.Overlap != "" {
					g = newGrounder(p.Overlap)
				}
				k := overlapUnits(prevDoc.units, d, start, g)
				start += k
				a.DedupeRemovedTechnical += k
				if k == 0 && headed && !headerDropped {
					// A header is not a record: the repeated rows may
					// follow one that cannot be dropped. Only its own
					// rows: what follows a table of no rows (a list, a
					// paragraph) is not behind its header, and the
					// header stays, as in HTML.
					rows := 2
					for rows < len(d.units) && d.units[rows].kind == uRow && d.units[rows].table == 0 {
						rows++
					}
					behind := &tdoc{lines: d.lines, units: d.units[:rows]}
					if c := overlapUnits(prevDoc.units, behind, 2, g); c > 0 {
						a.DedupeRemovedTechnical += c
						if 2+c == len(d.units) {
							start = len(d.units) // the header heads nothing left
							// and is in no merged content: the next answer
							// repeating it is no overlap.
							kept = &tdoc{lines: d.lines, units: d.units[2:]}
						} else {
							cut = c
						}
					}
				}
			}
			if start < len(d.units) {
				next := d.units[start]
				// Rows continue the table above, items the list above.
				cont = last.kind.tableLine() && next.kind == uRow && (headerDropped || next.table < 0) ||
					last.kind == uItem && next.kind == uItem
			}
		}
		prev, prevDoc = p, kept
		if start >= len(d.units) {
			continue
		}
		if cont {
			sep("\n")
		} else {
			sep("\n\n")
		}
		if cut > 0 {
			// The header and its delimiter, then what follows the removed
			// rows (with the blank lines before it).
			b.WriteString(strings.Join(d.lines[d.units[0].from:d.units[1].to], "\n"))
			b.WriteString("\n")
			b.WriteString(strings.Join(d.lines[d.units[1+cut].to:], "\n"))
		} else {
			b.WriteString(strings.Join(d.lines[d.units[start].from:], "\n"))
		}
		switch last := d.units[len(d.units)-1]; {
		case !last.kind.tableLine():
			openHeader = -1
		case last.table >= 0:
			openHeader = d.units[last.table].key
		case !cont || last.first != d.units[start].first:
			openHeader = -1 // rows of a table of their own, header unknown
		}
	}
	a.Content = b.String()
	return a
}

// overlapUnits returns how many units of d from start repeat the tail of
// tail: the longest such run that holds some text and, when g has the
// overlap text, that the text accounts for unit by unit.
func overlapUnits(tail []tunit, d *tdoc, start int, g *grounder) int {
	head := d.units[start:]
	key := func(u tunit) int { return u.key }
	ks := borders(mapSlice(tail, key), mapSlice(head, key))
	return groundedRun(ks, g, func(i int) (digest, *value) {
		u := head[i]
		var h digest
		binary.LittleEndian.PutUint64(h[:], uint64(u.key))
		return h, wordLeaves(nil, strings.Join(d.lines[u.from:u.to], "\n"))
	}, func(k int) bool {
		return slices.ContainsFunc(head[:k], func(u tunit) bool { return u.sig })
	})
}

// groundedRun picks among the candidate lengths ks (longest first) of a
// run repeated at a chunk boundary the longest that passes the format's
// own test ok and, when g holds the overlap text, whose units the text
// accounts for as JSON records are (grounder.groundedPrefix: at least half
// of a unit's values occur in the text, as often as the run repeats the
// unit). Without g the longest that passes ok is taken. unit(i) gives the
// i-th unit of the head: a digest equal for equal units, and its values;
// it is asked only once a run passed ok, so a format's cheap test spares
// digesting whole subtrees. 0 means nothing is removed.
func groundedRun(ks []int, g *grounder, unit func(i int) (digest, *value), ok func(k int) bool) int {
	grounded := -1 // the grounded prefix of the first run that passed ok
	for _, k := range ks {
		if !ok(k) {
			continue
		}
		if g == nil {
			return k
		}
		if grounded < 0 {
			hs, vs := make([]digest, k), make([]*value, k)
			for i := range k {
				hs[i], vs[i] = unit(i)
			}
			grounded = g.groundedPrefix(hs, vs)
		}
		if k <= grounded {
			return k
		}
	}
	return 0
}

// wordLeaves returns the values of a unit of text for the grounder, as an
// array value: its words, less the punctuation and markup around them
// (pipes, emphasis, brackets), a number with thousands separators as a
// number. Words shorter than the grounder's minimum are checked by it, not
// here. leaves, when not nil, is appended to.
func wordLeaves(leaves *value, text string) *value {
	if leaves == nil {
		leaves = &value{kind: kArray}
	}
	words := strings.FieldsFunc(text, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune("|[]()*`<>\"=", r)
	})
	for _, w := range words {
		if len(leaves.arr) >= maxGroundLeaves {
			break
		}
		w = strings.TrimFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if w == "" {
			continue
		}
		if groupedNumber.MatchString(w) {
			leaves.arr = append(leaves.arr, &value{kind: kNumber, s: numberSeparators.Replace(w)})
			continue
		}
		leaves.arr = append(leaves.arr, &value{kind: kString, s: w})
	}
	return leaves
}

var (
	groupedNumber    = regexp.MustCompile(`^\d{1,3}(?:[,'_]\d{3})+(?:\.\d+)?$|^\d+(?:\.\d+)?$`)
	numberSeparators = strings.NewReplacer(",", "", "'", "", "_", "")
)

func mapSlice[T, U any](s []T, f func(T) U) []U {
	out := make([]U, len(s))
	for i, v := range s {
		out[i] = f(v)
	}
	return out
}
