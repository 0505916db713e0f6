package merge

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/json_outputs.golden from the current code")

// randJSON writes a JSON answer of the kinds extraction answers and
// hostile ones take: records in arrays (with ids that repeat across
// chunks), nested arrays, repeated keys, escapes, invalid UTF-8, the
// placeholders null and "", numbers spelled differently, and deep nests.
func randJSON(r *rand.Rand, b *strings.Builder, depth int) {
	if depth > 6 {
		b.WriteString([]string{"null", `""`, "1", "1.0", `"x"`, "true"}[r.IntN(6)])
		return
	}
	switch r.IntN(12) {
	case 0:
		b.WriteString("null")
	case 1:
		b.WriteString(`""`)
	case 2:
		fmt.Fprintf(b, "%d", r.IntN(5))
	case 3:
		b.WriteString([]string{"1.0", "1e0", "-0", "10.50", "2"}[r.IntN(5)])
	case 4:
		b.WriteString([]string{`"a"`, `"b"`, `"\u0041\n"`, "\"\xff\"", `"<&>"`, `"é"`, `"\ud800"`, `"a b  c"`}[r.IntN(8)])
	case 5:
		b.WriteString([]string{"true", "false"}[r.IntN(2)])
	case 6, 7: // an array of records
		b.WriteString("[")
		for i := range r.IntN(6) {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(b, `{"id":%d,"k":%d,"v":`, r.IntN(4), r.IntN(2))
			randJSON(r, b, depth+2)
			if r.IntN(3) == 0 {
				b.WriteString(`,"l":[`)
				for j := range r.IntN(4) {
					if j > 0 {
						b.WriteString(",")
					}
					fmt.Fprintf(b, "%d", r.IntN(3))
				}
				b.WriteString("]")
			}
			b.WriteString("}")
		}
		b.WriteString("]")
	case 8: // an array of anything
		b.WriteString("[")
		for i := range r.IntN(4) {
			if i > 0 {
				b.WriteString(",")
			}
			randJSON(r, b, depth+1)
		}
		b.WriteString("]")
	default: // an object, sometimes with a key twice
		b.WriteString("{")
		keys := []string{"a", "b", "r", "t", "id", "a\u0000b", "é"}
		for i := range r.IntN(5) {
			if i > 0 {
				b.WriteString(" , ")
			}
			fmt.Fprintf(b, "%q:", keys[r.IntN(len(keys))])
			randJSON(r, b, depth+1)
		}
		b.WriteString("}")
	}
}

// equivalenceCases are varied JSON merges, the same at every run.
func equivalenceCases() [][]Chunk {
	r := rand.New(rand.NewPCG(1, 2))
	var cases [][]Chunk
	for range 3000 {
		n := 1 + r.IntN(6)
		var cs []Chunk
		file, index := 0, 0
		for i := range n {
			if i > 0 && r.IntN(5) == 0 {
				file, index = file+1, 0
			}
			var b strings.Builder
			switch r.IntN(20) {
			case 0:
				b.WriteString("{\"a\":[1,2") // not JSON
			case 1:
				b.WriteString("```json\n")
				randJSON(r, &b, 0)
				b.WriteString("\n```")
			case 2:
				b.WriteString(strings.Repeat("[", 12) + "1" + strings.Repeat("]", 12)) // deeper than the test's limit
			default:
				if r.IntN(2) == 0 {
					b.WriteString(`{"t":"T","r":`)
					randJSON(r, &b, 1)
					b.WriteString("}")
				} else {
					randJSON(r, &b, 0)
				}
			}
			c := Chunk{File: string(rune('a' + file)), Index: index, Content: b.String(),
				Failed: r.IntN(15) == 0, NoOverlap: r.IntN(4) == 0, Unread: r.IntN(30) == 0}
			if r.IntN(2) == 0 {
				c.Overlap = []string{"id 1 k 0", "1 2 x", "a b c", "0 1 2 3"}[r.IntN(4)]
			}
			index += 1 + r.IntN(2)
			cs = append(cs, c)
		}
		cases = append(cases, cs)
	}
	return cases
}

// TestJSONMergeOutputsUnchanged: the merge's answers, for varied inputs
// under every option, are those the merge gave before its memory was cut
// (mergemem, 2026-11-24): testdata/json_outputs.golden holds a digest of
// each case's answers under the 16 option sets as that code gave them.
func TestJSONMergeOutputsUnchanged(t *testing.T) {
	var got []string
	for i, cs := range equivalenceCases() {
		h := sha256.New()
		for flags := range uint8(16) {
			opts := Options{Limits: Limits{MaxDepth: 10, MaxNodes: 60}}
			if flags&1 != 0 {
				opts.Policy = Majority
			}
			if flags&2 != 0 {
				opts.Scope = ScopeJob
			}
			if flags&4 != 0 {
				opts.HasSchema, opts.DedupeBy = true, []string{"id"}
			}
			if flags&8 != 0 {
				opts.DedupeBy = append(opts.DedupeBy, "k")
				opts.Limits = Limits{MaxTotalBytes: 200}
			}
			as, err := Merge(cs, opts)
			if err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
			fmt.Fprintf(h, "%#v\n", as)
		}
		got = append(got, fmt.Sprintf("%d %x", i, h.Sum(nil)[:8]))
	}
	const golden = "testdata/json_outputs.golden"
	if *updateGolden {
		if err := os.WriteFile(golden, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(want) != len(got) {
		t.Fatalf("%d cases, the golden file has %d", len(got), len(want))
	}
	bad := 0
	for i := range got {
		if got[i] != want[i] {
			if bad++; bad <= 10 {
				t.Errorf("answers changed: %s, was %s", got[i], want[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d cases changed", bad, len(got))
	}
}
