package consensus

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/docjobs/docjobs/internal/fence"
	"github.com/docjobs/docjobs/internal/fieldpath"
)

// FuzzVote votes up to five arbitrary answers and checks that the vote never
// panics, that every scalar of the agreed answer is a value some votable run
// has at the same place (positions in lists aside, a tuple's kept), and the
// properties of ties, majorities and unanimity.
func FuzzVote(f *testing.F) {
	f.Add(uint8(3), `{"a":1,"b":"x"}`, `{"a":1.0,"b":"y"}`, `{"b":"x"}`, ``, ``)
	f.Add(uint8(3), `{"items":[{"id":1,"t":10},{"id":2}]}`, `{"items":[{"id":2},{"id":1,"t":11}]}`, `{"items":[]}`, ``, ``)
	f.Add(uint8(5), `[1,1,2]`, `[2,1]`, `{"a":[1]}`, `null`, `"s"`)
	f.Add(uint8(3), "```json\n{\"a\":1}\n```", `{"a":1}`, "```\n{\"a\":2}\n```\n", "```\n```", ``)
	f.Add(uint8(2), `{"a":{"x":1},"b":null}`, `{"a":[1],"c":{}}`, ``, ``, ``)
	f.Add(uint8(4), `{"a.b":{"":[{"k":1,"v":[1,2]},{"k":2}]}}`, `{"a.b":{"":[{"k":1,"v":[2]}]}}`, `{"a.b":null}`, `{`, ``)
	f.Add(uint8(3), `{"lines":["C","B","A"]}`, `{"lines":["A","B","C"]}`, `{"lines":["A","B","C"]}`, ``, ``)
	f.Add(uint8(3), `{"a":1,"x":[{"k":1}]}`, `{"a":1,"b":null,"x":[{"k":1,"n":null}]}`, `{"x":[{"n":null,"k":1}],"a":1}`, ``, ``)
	f.Add(uint8(5), `[2,1,4,3]`, `[1,2,3,4]`, `[4,3,2,1]`, `[1,2,3,4]`, `[1,2,3,4]`)
	f.Add(uint8(3), `[{"a":1,"b":2},{"a":1,"b":3},{"a":2,"b":2}]`, `[{"a":1,"b":3},{"a":1}]`, `[{"b":2},{"a":1,"b":2,"c":3}]`, ``, ``)
	f.Add(uint8(3), `{"rows":[["A",1,"x"],["B",2,null]]}`, `{"rows":[["B",2,"y"],["A",2,"x"]]}`, `{"rows":[["A",3,"x"],["B",2]]}`, ``, ``)
	f.Add(uint8(5), `[["A",[["x",1],["y",2]]],[{"q":1},2]]`, `[["A",[["y",3],["x",1]]],[{"q":2},2]]`, `[["A",[1,2]]]`, `[[{"q":1},3]]`, `[[],[null,null]]`)
	f.Fuzz(func(t *testing.T, k uint8, a, b, c, d, e string) {
		checkVote(t, []string{a, b, c, d, e}[:1+int(k)%MaxRuns])
	})
}

// FuzzVoteGenerated votes answers generated from the fuzzer's bytes over a
// tiny vocabulary, so runs agree and disagree in every way often, not just
// when random text happens to be JSON.
func FuzzVoteGenerated(f *testing.F) {
	f.Add([]byte{3, 4, 2, 0, 1, 6, 3, 1, 3, 3, 4, 2, 0, 2, 6, 3, 1, 3, 3})
	f.Add([]byte{2, 6, 4, 4, 3, 0, 1, 4, 1, 0, 2, 6, 4, 4, 1, 0, 1, 4, 3, 0, 2})
	f.Add([]byte{4, 7, 3, 1, 1, 1, 7, 2, 1, 1, 7, 3, 1, 2, 1, 7, 3, 1, 1, 2, 7, 3, 2, 1, 1})
	// Three runs of [[1,2,"x"]], [[1,1,"x"]], [[2,2,"y"]]: tuples that match by their cells.
	f.Add([]byte{2, 7, 1, 7, 3, 1, 0, 1, 2, 2, 0, 7, 1, 7, 3, 1, 0, 1, 0, 2, 0, 7, 1, 7, 3, 1, 2, 1, 2, 2, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		g := &gen{data: data[1:]}
		texts := make([]string, 1+int(data[0])%MaxRuns)
		for i := range texts {
			texts[i] = g.value(0)
		}
		checkVote(t, texts)
	})
}

// gen writes JSON from bytes: keys a, b, c and "d.e", small numbers written
// two ways, one string, null, and containers up to four deep.
type gen struct {
	data []byte
	pos  int
}

func (g *gen) next() int {
	if g.pos >= len(g.data) {
		return 0
	}
	g.pos++
	return int(g.data[g.pos-1])
}

func (g *gen) value(depth int) string {
	c := g.next() % 8
	if depth >= 4 && c >= 4 {
		c %= 4
	}
	switch c {
	case 0:
		return "null"
	case 1:
		return []string{"1", "1.0", "2", "-0"}[g.next()%4]
	case 2:
		return []string{`"x"`, `"y"`, `"\u0078"`, `true`}[g.next()%4]
	case 3, 4:
		n := g.next() % 4
		parts := make([]string, n)
		for i := range parts {
			parts[i] = []string{`"a"`, `"b"`, `"c"`, `"d.e"`}[g.next()%4] + ":" + g.value(depth+1)
		}
		return "{" + strings.Join(parts, ",") + "}"
	default:
		n := g.next() % 5
		parts := make([]string, n)
		for i := range parts {
			parts[i] = g.value(depth + 1)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
}

// checkVote votes texts and checks what must hold whatever they are: no
// panic, every scalar of the agreed answer a value some votable run has at
// the same place (positions in lists aside; see leaves), two runs agreeing with the first,
// identical runs with no disagreement, and an answer more than half of the
// runs gave (as a value: key order and null keys aside) agreed whichever
// runs came first, array order included.
func checkVote(t *testing.T, texts []string) {
	t.Helper()
	{
		runs := answers(texts...)
		limits := Limits{MaxAnswerBytes: 1 << 16, MaxMatchCost: 1 << 16}
		res, err := Vote(runs, limits)

		var votable []string
		for _, s := range texts {
			if s := fence.Strip(s); json.Valid([]byte(s)) { // a fenced answer votes by its inside
				votable = append(votable, s)
			}
		}
		var nv *NoVotableRunsError
		if len(votable) == 0 {
			if !errors.As(err, &nv) || len(nv.Runs) != len(texts) {
				t.Fatalf("no votable run, error %v", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Vote: %v", err)
		}
		if res.RunsVotable != len(votable) {
			t.Fatalf("runsVotable %d, want %d", res.RunsVotable, len(votable))
		}
		checkResult(t, res)
		if res.Degraded != "" {
			var first bytes.Buffer
			_ = json.Compact(&first, []byte(votable[0]))
			if string(res.Agreed) != validUTF8(first.String()) {
				t.Fatalf("degraded, yet agreed %s is not the first votable answer", res.Agreed)
			}
			return
		}

		in := newInterner()
		lim := Limits{}.WithDefaults()
		agreed, err := parse(string(res.Agreed), lim, in)
		if err != nil {
			t.Fatalf("agreed answer: %v", err)
		}
		have := map[string]bool{}
		trees := make([]*node, len(votable))
		for i, s := range votable {
			if trees[i], err = parse(s, lim, in); err != nil {
				t.Fatal(err)
			}
			leaves(in, trees[i], "", func(p string) { have[p] = true })
		}
		leaves(in, agreed, "", func(p string) {
			if !have[p] {
				t.Fatalf("agreed scalar %s is in no run", p)
			}
		})
		if len(votable) == 2 && agreed.id != trees[0].id {
			t.Fatalf("two runs: agreed %s is not the first run %s (ties go to it)", res.Agreed, votable[0])
		}
		checkIncluded(t, in, lim, agreed, res)
		allSame := true
		count := map[int32]int{}
		for _, tr := range trees {
			allSame = allSame && tr.id == trees[0].id
			count[tr.id]++
		}
		for id, c := range count {
			if 2*c > len(trees) && agreed.id != id {
				t.Fatalf("%d of %d runs gave one answer, yet agreed %s differs from it", c, len(trees), res.Agreed)
			}
		}
		if allSame && (agreed.id != trees[0].id || len(res.Disagreements) != 0) {
			t.Fatalf("identical runs, yet agreed %s with %d disagreements", res.Agreed, len(res.Disagreements))
		}
	}
}

// checkIncluded checks the report against the agreed answer: a variant
// marked included is the value found at its fieldPath (or, for an
// array-element dispute, one of that array's elements; for a winning null,
// a key absent or null), and the variant that is the field's value has at
// least as many runs as any competitor. Values cut to MaxValueBytes, and
// paths cut to MaxPathBytes, cannot be compared and are passed over.
func checkIncluded(t *testing.T, in *interner, lim Limits, agreed *node, res Result) {
	t.Helper()
	for _, dis := range res.Disagreements {
		if len(dis.FieldPath) > MaxPathBytes-utf8.UTFMax {
			continue // possibly cut to MaxPathBytes: it names no place any more
		}
		at, found := resolve(in, agreed, dis.FieldPath)
		for _, vr := range dis.Variants {
			if !vr.Included || len(vr.Value) >= MaxValueBytes-utf8.UTFMax {
				continue
			}
			vn, err := parse(vr.Value, lim, in)
			if err != nil {
				t.Fatalf("%q: included variant %s is not JSON: %v", dis.FieldPath, vr.Value, err)
			}
			switch {
			case found && at.id == vn.id:
				for _, other := range dis.Variants {
					if other.Runs > vr.Runs {
						t.Fatalf("%q: %s won with %d runs against %s with %d", dis.FieldPath, vr.Value, vr.Runs, other.Value, other.Runs)
					}
				}
			case found && at.kind == kindArray && slices.ContainsFunc(at.vals, func(e *node) bool { return e.id == vn.id }):
			case vn.kind == kindNull && (!found || at.kind == kindNull):
			default:
				t.Fatalf("%q: variant %s is marked included, but the agreed answer %s does not hold it there", dis.FieldPath, vr.Value, res.Agreed)
			}
		}
	}
}

// resolve finds the node a fieldPath names in the agreed answer; a
// segment is a key in an object and an index in an array.
func resolve(in *interner, n *node, path string) (*node, bool) {
	if path == "" {
		return n, true
	}
	segs := fieldpath.Split(path)
	for _, s := range segs {
		switch n.kind {
		case kindObject:
			i := slices.IndexFunc(n.keys, func(k int32) bool { return in.keyNames[k] == s })
			if i < 0 {
				return nil, false
			}
			n = n.vals[i]
		case kindArray:
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(n.vals) {
				return nil, false
			}
			n = n.vals[i]
		default:
			return nil, false
		}
	}
	return n, true
}

// leaves calls fn with "path=value id" for every scalar under n. Positions
// of a list (an array not directly inside an array) are written "*", since
// its elements are matched, not aligned; an array directly inside a list is
// a tuple, matched by position and voted cell by cell, so its positions are
// kept (a shifted column would put a value at a place no run has it); an
// array directly inside a tuple is a list again.
func leaves(in *interner, n *node, path string, fn func(string)) {
	leavesOf(in, n, path, false, fn)
}

func leavesOf(in *interner, n *node, path string, tuple bool, fn func(string)) {
	switch n.kind {
	case kindObject:
		for i, k := range n.keys {
			leavesOf(in, n.vals[i], path+"."+fieldpath.Key(in.keyNames[k]), false, fn)
		}
	case kindArray:
		for i, e := range n.vals {
			at := ".*"
			if tuple {
				at = "." + strconv.Itoa(i)
			}
			leavesOf(in, e, path+at, !tuple, fn)
		}
	default:
		fn(path + "=" + strconv.Itoa(int(n.id)))
	}
}
