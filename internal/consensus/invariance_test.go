package consensus

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/docjobs/docjobs/internal/schema"
)

// TestVoteDoesNotDependOnRunOrder votes answers in every order of the runs.
// Runs answer in whatever order the provider does, so where a majority
// decides every place (no ties), the agreed answer, its agreement and its
// disagreements must not depend on which run came first (audit-merge F3,
// F9).
func TestVoteDoesNotDependOnRunOrder(t *testing.T) {
	tests := []struct {
		name   string
		runs   []string
		agreed string
	}{
		{
			name:   "array order: two runs against one that answered first",
			runs:   []string{`{"lines":["C","B","A"]}`, `{"lines":["A","B","C"]}`, `{"lines":["A","B","C"]}`},
			agreed: `{"lines":["A","B","C"]}`,
		},
		{
			name:   "array order: three of five share one, two differ from it and each other",
			runs:   []string{`[1,2,3,4]`, `[4,3,2,1]`, `[1,2,3,4]`, `[2,1,4,3]`, `[1,2,3,4]`},
			agreed: `[1,2,3,4]`,
		},
		{
			name: "records: reordered by one run, one field outvoted",
			runs: []string{
				`{"items":[{"id":1,"q":1},{"id":2,"q":2},{"id":3,"q":3}]}`,
				`{"items":[{"id":3,"q":3},{"id":2,"q":5},{"id":1,"q":1}]}`,
				`{"items":[{"id":1,"q":1},{"id":2,"q":2},{"id":3,"q":3}]}`,
			},
			agreed: `{"items":[{"id":1,"q":1},{"id":2,"q":2},{"id":3,"q":3}]}`,
		},
		{
			name: "tuples: reordered by one run, a cell no copy of the row has a majority for",
			runs: []string{
				`{"rows":[["A",1,"x"],["B",2,"y"]]}`,
				`{"rows":[["B",5,"y"],["A",1,"x"]]}`,
				`{"rows":[["A",1,"x"],["B",2,"y"]]}`,
				`{"rows":[["A",1,"x"],["B",7,"y"]]}`,
				`{"rows":[["A",1,"x"],["B",9,"y"]]}`,
			},
			agreed: `{"rows":[["A",1,"x"],["B",2,"y"]]}`,
		},
		{
			name:   "array order: a run lacking an element still counts for the order",
			runs:   []string{`[4,3,2,1]`, `[1,3,4]`, `[1,2,3,4]`},
			agreed: `[1,2,3,4]`,
		},
		{
			name:   "a winning null two runs wrote stays written",
			runs:   []string{`{"invoice":"INV-7","note":null}`, `{"invoice":"INV-7","note":"paid"}`, `{"invoice":"INV-7","note":null}`},
			agreed: `{"invoice":"INV-7","note":null}`,
		},
		{
			name:   "a winning null one run wrote and one left out is written",
			runs:   []string{`{"a":1,"b":null}`, `{"a":1}`, `{"a":1,"b":"x"}`},
			agreed: `{"a":1,"b":null}`,
		},
		{
			name:   "a container null wins is written when a run wrote the null",
			runs:   []string{`{"x":{"y":1}}`, `{"x":null}`, `{}`},
			agreed: `{"x":null}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := mustVote(t, answers(tt.runs...), Limits{})
			if string(want.Agreed) != tt.agreed {
				t.Fatalf("agreed = %s, want %s", want.Agreed, tt.agreed)
			}
			for _, perm := range permutations(len(tt.runs)) {
				texts := make([]string, len(perm))
				for i, p := range perm {
					texts[i] = tt.runs[p]
				}
				got := mustVote(t, answers(texts...), Limits{})
				if string(got.Agreed) != string(want.Agreed) || got.MinAgreement != want.MinAgreement {
					t.Fatalf("runs in order %v: agreed %s (minAgreement %v), in the given order %s (%v)",
						perm, got.Agreed, got.MinAgreement, want.Agreed, want.MinAgreement)
				}
				if g, w := canonical(got.Disagreements), canonical(want.Disagreements); g != w {
					t.Fatalf("runs in order %v: disagreements\n %s\nin the given order\n %s", perm, g, w)
				}
			}
		})
	}
}

// permutations lists every order of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var res [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			res = append(res, slices.Insert(slices.Clone(p), i, n-1))
		}
	}
	return res
}

// canonical writes disagreements with each entry's variants sorted by value:
// variants with equal runs are ordered by their earliest run, which the
// order of the runs decides.
func canonical(ds []Disagreement) string {
	ds = slices.Clone(ds)
	for i := range ds {
		ds[i].Variants = slices.Clone(ds[i].Variants)
		slices.SortFunc(ds[i].Variants, func(a, b Variant) int { return strings.Compare(a.Value, b.Value) })
	}
	return js(ds)
}

// strictSchema is the shape the service asks models for in strict mode:
// every property required, "no value" written as null, no other keys; ref
// is the one optional key, and is never null.
const strictSchema = `{
  "type": "object",
  "properties": {
    "invoice": {"type": "string"},
    "note": {"type": ["string", "null"]},
    "total": {"type": ["number", "null"]},
    "ref": {"type": "string"},
    "seller": {
      "type": ["object", "null"],
      "properties": {"name": {"type": "string"}, "vat": {"type": ["string", "null"]}},
      "required": ["name", "vat"],
      "additionalProperties": false
    },
    "items": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}, "memo": {"type": ["string", "null"]}},
        "required": ["sku", "qty", "memo"],
        "additionalProperties": false
      }
    }
  },
  "required": ["invoice", "note", "total", "seller", "items"],
  "additionalProperties": false
}`

// TestAgreedAnswerOfConformingRunsConforms votes random answers that all
// conform to strictSchema, drawn from small vocabularies so that runs
// disagree in every way (null against a value, a container against null,
// dropped, added and reordered records, fields of matched records), and
// requires the agreed answer to conform too (audit-merge F3: a null that won
// used to drop its required key).
func TestAgreedAnswerOfConformingRunsConforms(t *testing.T) {
	s, err := schema.Compile(strictSchema)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 1000 {
		k := 2 + rng.IntN(MaxRuns-1)
		texts := make([]string, k)
		for r := range texts {
			texts[r] = strictAnswer(rng)
			if ok, errs := schema.Verdict(s, texts[r]); !ok {
				t.Fatalf("generated run %s does not conform: %v", texts[r], errs)
			}
		}
		res := mustVote(t, answers(texts...), Limits{})
		if ok, errs := schema.Verdict(s, string(res.Agreed)); !ok {
			t.Fatalf("case %d: runs\n %s\nall conform, the agreed answer\n %s\ndoes not: %v",
				i, strings.Join(texts, "\n "), res.Agreed, errs)
		}
	}
}

// strictAnswer writes a random answer conforming to strictSchema.
func strictAnswer(rng *rand.Rand) string {
	pick := func(vals ...any) any { return vals[rng.IntN(len(vals))] }
	var b strings.Builder
	fmt.Fprintf(&b, `{"invoice":%s,"note":%s,"total":%s`,
		pick(`"INV-7"`, `"INV-7"`, `"INV-1"`), pick(`null`, `null`, `"paid"`, `"late"`), pick(`null`, `118`, `118.00`, `181`))
	if rng.IntN(2) == 0 {
		fmt.Fprintf(&b, `,"ref":%s`, pick(`"R1"`, `"R2"`))
	}
	if rng.IntN(3) == 0 {
		b.WriteString(`,"seller":null`)
	} else {
		fmt.Fprintf(&b, `,"seller":{"name":%s,"vat":%s}`, pick(`"ACME"`, `"ACME Corp"`), pick(`null`, `"DE1"`))
	}
	b.WriteString(`,"items":[`)
	skus := rng.Perm(5)[:rng.IntN(6)]
	for i, sku := range skus {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"sku":"S%d","qty":%s,"memo":%s}`, sku, pick(`1`, `1`, `2`), pick(`null`, `null`, `"gift"`))
	}
	b.WriteString(`]}`)
	return b.String()
}

// TestInversions checks the merge-sort count against counting every pair.
func TestInversions(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range 40 {
		for range 20 {
			perm := rng.Perm(n)
			a := make([]int32, n)
			for i, p := range perm {
				a[i] = int32(p)
			}
			var want int64
			for i := range a {
				for j := i + 1; j < n; j++ {
					if a[i] > a[j] {
						want++
					}
				}
			}
			before := slices.Clone(a)
			if got := inversions(a, make([]int32, n)); got != want {
				t.Fatalf("inversions(%v) = %d, want %d", before, got, want)
			}
		}
	}
}
