package consensus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// answers makes votable runs of the given answers.
func answers(texts ...string) []Run {
	runs := make([]Run, len(texts))
	for i, s := range texts {
		runs[i] = Run{Answer: s}
	}
	return runs
}

// v is a variant, for short tables.
func v(value string, runs int, included bool) Variant {
	return Variant{Value: value, Runs: runs, Included: included}
}

// d is a disagreement with no dropped variants.
func d(path string, vars ...Variant) Disagreement {
	return Disagreement{FieldPath: path, Variants: vars}
}

// mustVote runs Vote and checks the invariants every result holds.
func mustVote(t *testing.T, runs []Run, lim Limits) Result {
	t.Helper()
	res, err := Vote(runs, lim)
	if err != nil {
		t.Fatalf("Vote: %v", err)
	}
	checkResult(t, res)
	return res
}

// checkResult checks what holds for every result, whatever the answers.
func checkResult(t testing.TB, res Result) {
	t.Helper()
	if !json.Valid(res.Agreed) || !utf8.Valid(res.Agreed) {
		t.Fatalf("agreed answer is not valid JSON: %q", res.Agreed)
	}
	if res.Disagreements == nil {
		t.Fatal("Disagreements is nil; it must marshal as []")
	}
	if len(res.Disagreements) > MaxDisagreements {
		t.Fatalf("%d disagreements kept, cap is %d", len(res.Disagreements), MaxDisagreements)
	}
	if res.Degraded != "" || res.RunsVotable < 2 {
		if res.MinAgreement != 0 || !res.Incomplete || len(res.Disagreements) != 0 {
			t.Fatalf("no vote, yet minAgreement %v incomplete %v %d disagreements", res.MinAgreement, res.Incomplete, len(res.Disagreements))
		}
		return
	}
	if res.MinAgreement <= 0 || res.MinAgreement > 1 {
		t.Fatalf("minAgreement %v out of (0, 1]", res.MinAgreement)
	}
	if (len(res.Disagreements) == 0) != (res.MinAgreement == 1) {
		t.Fatalf("minAgreement %v with %d disagreements", res.MinAgreement, len(res.Disagreements))
	}
	if res.Incomplete != (res.RunsVotable < res.K) {
		t.Fatalf("incomplete %v with %d of %d runs votable", res.Incomplete, res.RunsVotable, res.K)
	}
	for _, dis := range res.Disagreements {
		if len(dis.FieldPath) > MaxPathBytes || !utf8.ValidString(dis.FieldPath) {
			t.Fatalf("fieldPath of %d bytes or invalid UTF-8", len(dis.FieldPath))
		}
		if len(dis.Variants) == 0 || len(dis.Variants) > MaxVariants {
			t.Fatalf("%q has %d variants", dis.FieldPath, len(dis.Variants))
		}
		for i, vr := range dis.Variants {
			if vr.Runs < 1 || vr.Runs > res.RunsVotable || (i > 0 && vr.Runs > dis.Variants[i-1].Runs) {
				t.Fatalf("%q: variants not by runs descending within 1..%d: %+v", dis.FieldPath, res.RunsVotable, dis.Variants)
			}
			if len(vr.Value) > MaxValueBytes || !utf8.ValidString(vr.Value) {
				t.Fatalf("%q: variant value of %d bytes or invalid UTF-8", dis.FieldPath, len(vr.Value))
			}
		}
	}
}

func TestVote(t *testing.T) {
	tests := []struct {
		name          string
		runs          []Run
		agreed        string
		minAgreement  float64
		incomplete    bool
		disagreements []Disagreement
	}{
		// Agreement.
		{
			name:         "identical answers agree everywhere",
			runs:         answers(`{"a":1,"b":"x"}`, `{"a":1,"b":"x"}`, `{"a":1,"b":"x"}`),
			agreed:       `{"a":1,"b":"x"}`,
			minAgreement: 1,
		},
		{
			name:         "key order never matters and the earliest run's order is kept",
			runs:         answers(`{"b":"x","a":1}`, `{"a":1,"b":"x"}`, `{"a":1,"b":"x"}`),
			agreed:       `{"b":"x","a":1}`,
			minAgreement: 1,
		},
		{
			name:         "1, 1.0 and 1e0 are one value; the earliest run's spelling is kept",
			runs:         answers(`{"n":1.0}`, `{"n":1}`, `{"n":10e-1}`),
			agreed:       `{"n":1.0}`,
			minAgreement: 1,
		},
		{
			name:         "numbers beyond float64 precision still differ",
			runs:         answers(`{"n":12345678901234567890123}`, `{"n":12345678901234567890124}`, `{"n":12345678901234567890123}`),
			agreed:       `{"n":12345678901234567890123}`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("n", v("12345678901234567890123", 2, true), v("12345678901234567890124", 1, false)),
			},
		},
		{
			name:         "exponents beyond float64 compare exactly",
			runs:         answers(`[1e400]`, `[10e399]`, `[0.1e401]`),
			agreed:       `[1e400]`,
			minAgreement: 1,
		},
		{
			name:         "whitespace is dropped, string escapes are kept as written",
			runs:         answers("{ \"s\" : \"caf\\u00e9\" }", `{"s":"café"}`),
			agreed:       `{"s":"caf\u00e9"}`,
			minAgreement: 1,
		},

		// Scalar disputes.
		{
			name:         "one run differing on one field is outvoted",
			runs:         answers(`{"total":10,"cur":"EUR"}`, `{"total":10,"cur":"EUR"}`, `{"total":12,"cur":"EUR"}`),
			agreed:       `{"total":10,"cur":"EUR"}`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("total", v("10", 2, true), v("12", 1, false)),
			},
		},
		{
			name:         "a dispute at the root has the empty path",
			runs:         answers(`"a"`, `"b"`, `"b"`),
			agreed:       `"b"`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("", v(`"b"`, 2, true), v(`"a"`, 1, false)),
			},
		},

		// Null and absence.
		{
			name:         "null and an absent key are the same value",
			runs:         answers(`{"a":1,"b":null}`, `{"a":1}`, `{"a":1}`),
			agreed:       `{"a":1,"b":null}`,
			minAgreement: 1,
		},
		{
			name:         "a null all runs agree on is written when a later run wrote the key",
			runs:         answers(`{"a":1}`, `{"a":1,"b":null}`, `{"a":1,"b":null}`),
			agreed:       `{"a":1,"b":null}`,
			minAgreement: 1,
		},
		{
			name:         "a null key a later run wrote inside an agreed object is written",
			runs:         answers(`{"x":{"a":1}}`, `{"x":{"b":null,"a":1}}`, `{"x":{"a":1,"c":null}}`),
			agreed:       `{"x":{"a":1,"b":null,"c":null}}`,
			minAgreement: 1,
		},
		{
			name:         "a null key a later run wrote in agreed array elements is written",
			runs:         answers(`[{"id":1},{"id":2}]`, `[{"id":1,"n":null},{"id":2}]`, `[{"id":1},{"id":2}]`),
			agreed:       `[{"id":1,"n":null},{"id":2}]`,
			minAgreement: 1,
		},
		{
			name:         "a null key a later run wrote in an element all runs have is written",
			runs:         answers(`[{"id":1},{"id":2}]`, `[{"id":1,"n":null}]`, `[{"id":1},{"id":2}]`),
			agreed:       `[{"id":1,"n":null},{"id":2}]`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("", v(`{"id":2}`, 2, true)),
			},
		},
		{
			name:         "a winning null no run wrote is included with its key omitted",
			runs:         answers(`{"a":1,"b":"x"}`, `{"a":1}`, `{"a":1}`),
			agreed:       `{"a":1}`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("b", v("null", 2, true), v(`"x"`, 1, false)),
			},
		},
		{
			name:         "a winning null a run behind it wrote is written",
			runs:         answers(`{"a":1,"b":"x"}`, `{"a":1,"b":null}`, `{"a":1}`),
			agreed:       `{"a":1,"b":null}`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("b", v("null", 2, true), v(`"x"`, 1, false)),
			},
		},
		{
			name: "a required nullable key that null wins stays in the answer",
			runs: answers(`{"invoice":"INV-7","note":null}`, `{"invoice":"INV-7","note":"paid"}`,
				`{"invoice":"INV-7","note":null}`),
			agreed:       `{"invoice":"INV-7","note":null}`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("note", v("null", 2, true), v(`"paid"`, 1, false)),
			},
		},
		{
			name:         "with two runs a null the earliest run wrote wins the tie and is written",
			runs:         answers(`{"note":null}`, `{"note":"paid"}`),
			agreed:       `{"note":null}`,
			minAgreement: 0.5,
			disagreements: []Disagreement{
				d("note", v("null", 1, true), v(`"paid"`, 1, false)),
			},
		},
		{
			name:         "a winning null inside a matched record is written",
			runs:         answers(`[{"id":1,"a":1,"n":null}]`, `[{"id":1,"a":1,"n":null}]`, `[{"id":1,"a":1,"n":"x"}]`),
			agreed:       `[{"id":1,"a":1,"n":null}]`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("0.n", v("null", 2, true), v(`"x"`, 1, false)),
			},
		},
		{
			name:         "a scalar key one run lacks is a presence dispute at its path",
			runs:         answers(`{"a":1,"note":"late"}`, `{"a":1,"note":"late"}`, `{"a":1}`),
			agreed:       `{"a":1,"note":"late"}`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("note", v(`"late"`, 2, true), v("null", 1, false)),
			},
		},
		{
			name:         "an object one run lacks is a presence dispute; its insides vote among the runs that have it",
			runs:         answers(`{"addr":{"city":"Oslo","zip":"0150"}}`, `{}`, `{"addr":{"city":"Bergen","zip":"0150"}}`),
			agreed:       `{"addr":{"city":"Oslo","zip":"0150"}}`,
			minAgreement: 1.0 / 3,
			disagreements: []Disagreement{
				d("addr.city", v(`"Oslo"`, 1, true), v(`"Bergen"`, 1, false)),
				d("addr", v(`{"city":"Oslo","zip":"0150"}`, 2, true), v("null", 1, false)),
			},
		},
		{
			name:         "an object most runs lack is left out",
			runs:         answers(`{"a":1,"x":{"y":1}}`, `{"a":1}`, `{"a":1}`),
			agreed:       `{"a":1}`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("x", v("null", 2, true), v(`{"y":1}`, 1, false)),
			},
		},
		{
			name:         "an object most runs lack is null when a run behind the null wrote it",
			runs:         answers(`{"a":1,"x":{"y":1}}`, `{"a":1}`, `{"a":1,"x":null}`),
			agreed:       `{"a":1,"x":null}`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("x", v("null", 2, true), v(`{"y":1}`, 1, false)),
			},
		},
		{
			name:         "an object most runs lack shows, as its variant, what the runs that have it agree on",
			runs:         answers(`{"x":{"y":1,"z":1}}`, `{"x":{"y":2,"z":1}}`, `{}`, `{"x":null}`, `{}`),
			agreed:       `{"x":null}`,
			minAgreement: 3.0 / 5,
			disagreements: []Disagreement{
				d("x", v("null", 3, true), v(`{"y":1,"z":1}`, 2, false)),
			},
		},

		// Arrays.
		{
			name:         "reordered arrays agree; the earliest run's order is kept",
			runs:         answers(`{"tags":["a","b","c"]}`, `{"tags":["c","a","b"]}`, `{"tags":["b","c","a"]}`),
			agreed:       `{"tags":["a","b","c"]}`,
			minAgreement: 1,
		},
		{
			name: "reordered records agree; the majority's order is kept, in the earliest run's text",
			runs: answers(`[{"id":1,"t":10},{"id":2,"t":20}]`, `[{"id":2,"t":20},{"id":1,"t":10}]`,
				`[{"t":20,"id":2},{"t":10,"id":1}]`),
			agreed:       `[{"id":2,"t":20},{"id":1,"t":10}]`,
			minAgreement: 1,
		},
		{
			name:         "the order most runs share wins over the earliest run's",
			runs:         answers(`{"lines":["C","B","A"]}`, `{"lines":["A","B","C"]}`, `{"lines":["A","B","C"]}`),
			agreed:       `{"lines":["A","B","C"]}`,
			minAgreement: 1,
		},
		{
			name:         "with no shared order, the run that agrees most with the others gives it",
			runs:         answers(`["B","A","C"]`, `["A","C","B"]`, `["A","B","C"]`),
			agreed:       `["A","B","C"]`,
			minAgreement: 1,
		},
		{
			name:         "a run that lacks an element can give the order; the element goes after its predecessor",
			runs:         answers(`[4,3,2,1]`, `[1,3,4]`, `[1,2,3,4]`),
			agreed:       `[1,2,3,4]`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("", v("2", 2, true)),
			},
		},
		{
			name:         "with two runs the earliest run's order is kept",
			runs:         answers(`["C","B","A"]`, `["A","B","C"]`),
			agreed:       `["C","B","A"]`,
			minAgreement: 1,
		},
		{
			name: "a record one run dropped is kept by the majority, in place",
			runs: answers(`{"items":[{"id":1},{"id":2},{"id":3}]}`, `{"items":[{"id":1},{"id":3}]}`,
				`{"items":[{"id":1},{"id":2},{"id":3}]}`),
			agreed:       `{"items":[{"id":1},{"id":2},{"id":3}]}`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("items", v(`{"id":2}`, 2, true)),
			},
		},
		{
			name: "a record the earliest run dropped is placed after its predecessor in the next run",
			runs: answers(`{"items":[{"id":1},{"id":3}]}`, `{"items":[{"id":1},{"id":2},{"id":3}]}`,
				`{"items":[{"id":1},{"id":2},{"id":3}]}`),
			agreed:       `{"items":[{"id":1},{"id":2},{"id":3}]}`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("items", v(`{"id":2}`, 2, true)),
			},
		},
		{
			name:         "a record one run added is left out",
			runs:         answers(`[{"id":1},{"id":2}]`, `[{"id":1},{"id":2},{"id":9}]`, `[{"id":1},{"id":2}]`),
			agreed:       `[{"id":1},{"id":2}]`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("", v(`{"id":9}`, 1, false)),
			},
		},
		{
			name: "matched records that differ in a field are voted field by field at their agreed index",
			runs: answers(`[{"id":1,"t":10},{"id":2,"t":20}]`, `[{"id":2,"t":21},{"id":1,"t":10}]`,
				`[{"id":1,"t":10},{"id":2,"t":20}]`),
			agreed:       `[{"id":1,"t":10},{"id":2,"t":20}]`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("1.t", v("20", 2, true), v("21", 1, false)),
			},
		},
		{
			name:         "a dropped element that runs matched shows what they agree on",
			runs:         answers(`[{"id":1},{"id":9,"a":1,"b":1}]`, `[{"id":1},{"id":9,"a":2,"b":1}]`, `[{"id":1}]`, `[{"id":1}]`, `[{"id":1}]`),
			agreed:       `[{"id":1}]`,
			minAgreement: 3.0 / 5,
			disagreements: []Disagreement{
				d("", v(`{"id":9,"a":1,"b":1}`, 2, false)),
			},
		},
		{
			name:         "objects sharing under half their fields are not matched",
			runs:         answers(`[{"id":1,"a":1,"b":1}]`, `[{"id":1,"a":2,"b":2}]`, `[{"id":1,"a":1,"b":1}]`),
			agreed:       `[{"id":1,"a":1,"b":1}]`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("", v(`{"id":1,"a":1,"b":1}`, 2, true), v(`{"id":1,"a":2,"b":2}`, 1, false)),
			},
		},
		{
			name:         "repeated equal elements are counted copy by copy",
			runs:         answers(`[1,1,2]`, `[1,2]`, `[2,1,1]`),
			agreed:       `[1,1,2]`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("", v("1", 2, true)),
			},
		},
		{
			name:         "one path carries both a presence and an array-element dispute",
			runs:         answers(`{"items":[1,2]}`, `{"items":[1]}`, `{}`),
			agreed:       `{"items":[1,2]}`,
			minAgreement: 1.0 / 3,
			disagreements: []Disagreement{
				d("items", v("2", 1, true)),
				d("items", v("[1,2]", 2, true), v("null", 1, false)),
			},
		},

		// Type clashes.
		{
			name:         "a type clash votes whole values",
			runs:         answers(`{"a":{"x":1}}`, `{"a":[1]}`, `{"a":[1]}`),
			agreed:       `{"a":[1]}`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("a", v("[1]", 2, true), v(`{"x":1}`, 1, false)),
			},
		},
		{
			name:         "a clash of an object, a scalar and null is one whole-value vote",
			runs:         answers(`{"a":"s"}`, `{"a":{"x":1}}`, `{"a":null}`),
			agreed:       `{"a":"s"}`,
			minAgreement: 1.0 / 3,
			disagreements: []Disagreement{
				d("a", v(`"s"`, 1, true), v(`{"x":1}`, 1, false), v("null", 1, false)),
			},
		},

		// Ties.
		{
			name:         "a tie goes to the variant of the earliest run",
			runs:         answers(`{"a":"x"}`, `{"a":"y"}`),
			agreed:       `{"a":"x"}`,
			minAgreement: 0.5,
			disagreements: []Disagreement{
				d("a", v(`"x"`, 1, true), v(`"y"`, 1, false)),
			},
		},
		{
			name:         "a tie between groups goes to the group whose earliest run is lowest",
			runs:         answers(`"c"`, `"b"`, `"a"`, `"a"`, `"b"`),
			agreed:       `"b"`,
			minAgreement: 0.4,
			disagreements: []Disagreement{
				d("", v(`"b"`, 2, true), v(`"a"`, 2, false), v(`"c"`, 1, false)),
			},
		},
		{
			name:         "a presence tie goes to the earliest run's side",
			runs:         answers(`{}`, `{"a":1}`),
			agreed:       `{}`,
			minAgreement: 0.5,
			disagreements: []Disagreement{
				d("a", v("null", 1, true), v("1", 1, false)),
			},
		},
		{
			name:         "with two runs the agreed answer is the first run's, and a null only the second wrote is written",
			runs:         answers(`{"a":null,"b":1,"e":[1,2]}`, `{"b":2,"a":"x","c":null,"d":{"x":1},"e":[2,1,3]}`),
			agreed:       `{"a":null,"b":1,"e":[1,2],"c":null}`,
			minAgreement: 0.5,
			disagreements: []Disagreement{
				d("a", v("null", 1, true), v(`"x"`, 1, false)),
				d("b", v("1", 1, true), v("2", 1, false)),
				d("e", v("3", 1, false)),
				d("d", v("null", 1, true), v(`{"x":1}`, 1, false)),
			},
		},
		{
			name:         "with two runs an element only the earliest run has is kept",
			runs:         answers(`[1,2]`, `[1,3]`),
			agreed:       `[1,2]`,
			minAgreement: 0.5,
			disagreements: []Disagreement{
				d("", v("2", 1, true), v("3", 1, false)),
			},
		},

		// Paths.
		{
			name:         "dots and backslashes in keys are escaped in paths",
			runs:         answers(`{"a.b":{"c\\d":1}}`, `{"a.b":{"c\\d":2}}`, `{"a.b":{"c\\d":2}}`),
			agreed:       `{"a.b":{"c\\d":2}}`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d(`a\.b.c\\d`, v("2", 2, true), v("1", 1, false)),
			},
		},
		{
			name:         "an empty key is written \\e",
			runs:         answers(`{"":1}`, `{"":2}`, `{"":2}`),
			agreed:       `{"":2}`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d(`\e`, v("2", 2, true), v("1", 1, false)),
			},
		},

		// Entry order.
		{
			name:         "disagreements come worst agreement first, then in document order",
			runs:         answers(`{"a":1,"b":1,"c":1}`, `{"a":2,"b":2,"c":1}`, `{"a":3,"b":1,"c":2}`),
			agreed:       `{"a":1,"b":1,"c":1}`,
			minAgreement: 1.0 / 3,
			disagreements: []Disagreement{
				d("a", v("1", 1, true), v("2", 1, false), v("3", 1, false)),
				d("b", v("1", 2, true), v("2", 1, false)),
				d("c", v("1", 2, true), v("2", 1, false)),
			},
		},

		// Answers that cannot vote.
		{
			name:         "duplicate keys: the last one wins, as encoding/json reads them",
			runs:         answers(`{"a":1,"a":2}`, `{"a":2}`),
			agreed:       `{"a":2}`,
			minAgreement: 1,
		},
		{
			name:         "an invalid run is left out and the other two vote",
			runs:         answers(`{"a":1}`, `{"a":`, `{"a":1}`),
			agreed:       `{"a":1}`,
			minAgreement: 1,
			incomplete:   true,
		},
		{
			name:         "a run the caller found unusable is left out",
			runs:         []Run{{Answer: `{"a":2}`, Unusable: "truncated"}, {Answer: `{"a":1}`}, {Answer: `{"a":3}`}},
			agreed:       `{"a":1}`,
			minAgreement: 0.5,
			incomplete:   true,
			disagreements: []Disagreement{
				d("a", v("1", 1, true), v("3", 1, false)),
			},
		},
		{
			name:       "a single votable run is kept, compacted, without a vote",
			runs:       answers(`not json`, `{ "a" : [1, 2] }`, `{"a":`),
			agreed:     `{"a":[1,2]}`,
			incomplete: true,
		},
		{
			name:       "one run is no vote",
			runs:       answers(`{"a":1}`),
			agreed:     `{"a":1}`,
			incomplete: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustVote(t, tt.runs, Limits{})
			if string(res.Agreed) != tt.agreed {
				t.Errorf("agreed = %s, want %s", res.Agreed, tt.agreed)
			}
			if res.K != len(tt.runs) {
				t.Errorf("k = %d, want %d", res.K, len(tt.runs))
			}
			if math.Abs(res.MinAgreement-tt.minAgreement) > 1e-12 {
				t.Errorf("minAgreement = %v, want %v", res.MinAgreement, tt.minAgreement)
			}
			if res.Incomplete != tt.incomplete {
				t.Errorf("incomplete = %v, want %v", res.Incomplete, tt.incomplete)
			}
			want := tt.disagreements
			if want == nil {
				want = []Disagreement{}
			}
			if !reflect.DeepEqual(res.Disagreements, want) {
				t.Errorf("disagreements:\n got %s\nwant %s", js(res.Disagreements), js(want))
			}
		})
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// The examples the service is tested on end to end.
func TestVoteEndToEndExamples(t *testing.T) {
	t.Run("three runs, one differs on one field", func(t *testing.T) {
		res := mustVote(t, answers(`{"name":"ACME","total":10}`, `{"name":"ACME","total":10}`, `{"name":"ACME","total":11}`), Limits{})
		if res.RunsVotable != 3 || math.Round(res.MinAgreement*1000) != 667 || res.Incomplete {
			t.Errorf("runsVotable %d minAgreement %v incomplete %v", res.RunsVotable, res.MinAgreement, res.Incomplete)
		}
		want := []Disagreement{d("total", v("10", 2, true), v("11", 1, false))}
		if !reflect.DeepEqual(res.Disagreements, want) {
			t.Errorf("disagreements %s", js(res.Disagreements))
		}
	})
	t.Run("one of three invalid: the other two vote", func(t *testing.T) {
		res := mustVote(t, answers(`{"a":1}`, `{"a":1`, `{"a":1}`), Limits{})
		if res.RunsVotable != 2 || !res.Incomplete || res.MinAgreement != 1 || res.Degraded != "" {
			t.Errorf("runsVotable %d incomplete %v minAgreement %v degraded %q", res.RunsVotable, res.Incomplete, res.MinAgreement, res.Degraded)
		}
		if len(res.Unvotable) != 1 || res.Unvotable[0].Run != 2 || !strings.HasPrefix(res.Unvotable[0].Reason, "invalid JSON (") {
			t.Errorf("unvotable %+v", res.Unvotable)
		}
	})
	t.Run("two of three invalid: the one votable answer is the content", func(t *testing.T) {
		res := mustVote(t, answers(`{"a":`, `{"a":2}`, `oops`), Limits{})
		if res.RunsVotable != 1 || res.MinAgreement != 0 || !res.Incomplete || string(res.Agreed) != `{"a":2}` {
			t.Errorf("runsVotable %d minAgreement %v incomplete %v agreed %s", res.RunsVotable, res.MinAgreement, res.Incomplete, res.Agreed)
		}
	})
}

func TestVoteWithoutVotableRuns(t *testing.T) {
	runs := []Run{{Answer: `{"a":`}, {Answer: `{"a":1}`, Unusable: "truncated"}, {Answer: ``}}
	res, err := Vote(runs, Limits{})
	var nv *NoVotableRunsError
	if !errors.As(err, &nv) {
		t.Fatalf("error %v, want a *NoVotableRunsError", err)
	}
	want := "consensus: no votable run: run 1: invalid JSON (unexpected end of JSON input at offset 5); " +
		"run 2: truncated; run 3: invalid JSON (unexpected end of JSON input at offset 0)"
	if err.Error() != want {
		t.Errorf("error text\n got %q\nwant %q", err.Error(), want)
	}
	if len(nv.Runs) != 3 || nv.Runs[1] != (RunError{Run: 2, Reason: "truncated"}) {
		t.Errorf("runs %+v", nv.Runs)
	}
	if res.K != 3 || res.RunsVotable != 0 {
		t.Errorf("k %d runsVotable %d", res.K, res.RunsVotable)
	}
}

func TestVoteRejectsRunCounts(t *testing.T) {
	for _, n := range []int{0, MaxRuns + 1} {
		if _, err := Vote(make([]Run, n), Limits{}); !errors.Is(err, ErrRunCount) {
			t.Errorf("%d runs: error %v, want ErrRunCount", n, err)
		}
	}
}

func TestVoteDegradesAtLimits(t *testing.T) {
	records := func(n int, t0 int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`{"kind":"line","n":%d}`, t0+i) // all alike: every pair is compared
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	tuples := func(n int, t0 int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`["line",%d]`, t0+i) // the same rows as tuples: as alike
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	tests := []struct {
		name   string
		runs   []Run
		limits Limits
		why    string
	}{
		{"an answer over MaxAnswerBytes", answers(`{"a": 1}`, `{"a":"`+strings.Repeat("x", 100)+`"}`), Limits{MaxAnswerBytes: 64},
			"run 2: answer is larger than 64 bytes"},
		{"an answer nested over MaxDepth", answers(`{"a": 1}`, `[[[[1]]]]`), Limits{MaxDepth: 3},
			"run 2: answer is nested deeper than 3 levels"},
		{"an answer over MaxNodes", answers(`{"a": 1}`, `[1,2,3,4]`), Limits{MaxNodes: 4},
			"run 2: answer has more than 4 JSON values"},
		{"array matching over MaxMatchCost", answers(records(50, 0), records(50, 100)), Limits{MaxMatchCost: 1000},
			`matching array elements at "" went over the budget of 1000 steps`},
		{"tuple matching over MaxMatchCost", answers(`{"t":`+tuples(50, 0)+`}`, `{"t":`+tuples(50, 100)+`}`), Limits{MaxMatchCost: 1000},
			`matching array elements at "t" went over the budget of 1000 steps`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustVote(t, tt.runs, tt.limits)
			if res.Degraded != tt.why {
				t.Errorf("degraded %q, want %q", res.Degraded, tt.why)
			}
			if res.MinAgreement != 0 || !res.Incomplete || res.RunsVotable != 2 {
				t.Errorf("minAgreement %v incomplete %v runsVotable %d", res.MinAgreement, res.Incomplete, res.RunsVotable)
			}
			var want bytes.Buffer
			if err := json.Compact(&want, []byte(tt.runs[0].Answer)); err != nil {
				t.Fatal(err)
			}
			if string(res.Agreed) != want.String() {
				t.Errorf("agreed %s, want the first answer %s", res.Agreed, want.String())
			}
		})
	}
	t.Run("the same answers vote within the default limits", func(t *testing.T) {
		res := mustVote(t, answers(records(50, 0), records(50, 100)), Limits{})
		if res.Degraded != "" || len(res.Disagreements) != 50 {
			t.Errorf("degraded %q, %d disagreements", res.Degraded, len(res.Disagreements))
		}
	})
	t.Run("the same tuples vote within the default limits", func(t *testing.T) {
		res := mustVote(t, answers(tuples(50, 0), tuples(50, 100)), Limits{})
		if res.Degraded != "" || len(res.Disagreements) != 50 {
			t.Errorf("degraded %q, %d disagreements", res.Degraded, len(res.Disagreements))
		}
	})
}

func TestVariantValues(t *testing.T) {
	t.Run("a value is cut to 512 bytes without splitting a character", func(t *testing.T) {
		long := `"` + strings.Repeat("a", 510) + strings.Repeat("é", 10) + `"` // é is 2 bytes: byte 512 is inside one
		res := mustVote(t, answers(`{"s":`+long+`}`, `{"s":"b"}`), Limits{})
		got := res.Disagreements[0].Variants[0].Value
		if want := long[:511]; got != want {
			t.Errorf("value of %d bytes %q..., want the first 511 bytes", len(got), got[len(got)-4:])
		}
	})
	t.Run("a value of exactly 512 bytes is whole", func(t *testing.T) {
		exact := `"` + strings.Repeat("a", 510) + `"`
		res := mustVote(t, answers(`{"s":`+exact+`}`, `{"s":"b"}`), Limits{})
		if got := res.Disagreements[0].Variants[0].Value; got != exact {
			t.Errorf("value of %d bytes, want 512", len(got))
		}
	})
	t.Run("invalid UTF-8 in an answer comes out as U+FFFD", func(t *testing.T) {
		res := mustVote(t, answers("{\"s\":\"a\xffb\"}", `{"s":"c"}`), Limits{})
		if want := `{"s":"a` + "\uFFFD" + `b"}`; string(res.Agreed) != want {
			t.Errorf("agreed %q, want %q", res.Agreed, want)
		}
	})
}

func TestLongPathsAreCut(t *testing.T) {
	key := strings.Repeat("é", 600) // 1200 bytes
	res := mustVote(t, answers(`{"a":{"`+key+`":1}}`, `{"a":{"`+key+`":2}}`), Limits{})
	if want := "a." + strings.Repeat("é", 511); res.Disagreements[0].FieldPath != want {
		t.Errorf("fieldPath of %d bytes, want it cut to 1024 between characters", len(res.Disagreements[0].FieldPath))
	}
}

func TestReportCaps(t *testing.T) {
	t.Run("at most 100 disagreements, the rest counted", func(t *testing.T) {
		var a, b []string
		for i := range 150 {
			a = append(a, fmt.Sprintf(`"k%03d":%d`, i, i))
			b = append(b, fmt.Sprintf(`"k%03d":%d`, i, i+1))
		}
		res := mustVote(t, answers("{"+strings.Join(a, ",")+"}", "{"+strings.Join(b, ",")+"}"), Limits{})
		if len(res.Disagreements) != 100 || res.DisagreementsDropped != 50 {
			t.Fatalf("%d kept, %d dropped; want 100 and 50", len(res.Disagreements), res.DisagreementsDropped)
		}
		if first, last := res.Disagreements[0].FieldPath, res.Disagreements[99].FieldPath; first != "k000" || last != "k099" {
			t.Errorf("kept %s..%s, want k000..k099 (document order among equals)", first, last)
		}
	})
	t.Run("the worst disagreements are the ones kept", func(t *testing.T) {
		var a, b, c []string
		for i := range 150 {
			a = append(a, fmt.Sprintf(`"k%03d":1`, i))
			b = append(b, fmt.Sprintf(`"k%03d":2`, i))
			if i < 140 {
				c = append(c, fmt.Sprintf(`"k%03d":1`, i)) // 2 of 3 agree
			} else {
				c = append(c, fmt.Sprintf(`"k%03d":3`, i)) // no two agree
			}
		}
		res := mustVote(t, answers("{"+strings.Join(a, ",")+"}", "{"+strings.Join(b, ",")+"}", "{"+strings.Join(c, ",")+"}"), Limits{})
		var paths []string
		for _, dis := range res.Disagreements {
			paths = append(paths, dis.FieldPath)
		}
		if len(paths) != 100 || paths[0] != "k140" || paths[9] != "k149" || paths[10] != "k000" || paths[99] != "k089" {
			t.Errorf("kept %v", paths)
		}
		if res.DisagreementsDropped != 50 || math.Abs(res.MinAgreement-1.0/3) > 1e-12 {
			t.Errorf("dropped %d, minAgreement %v", res.DisagreementsDropped, res.MinAgreement)
		}
	})
	t.Run("at most 10 variants per disagreement, the rest counted", func(t *testing.T) {
		res := mustVote(t, answers(`[1,2,3,4,5,6,7,8,9,10,11,12]`, `[]`), Limits{})
		dis := res.Disagreements[0]
		if len(dis.Variants) != 10 || dis.VariantsDropped != 2 {
			t.Fatalf("%d variants, %d dropped; want 10 and 2", len(dis.Variants), dis.VariantsDropped)
		}
		if dis.Variants[0].Value != "1" || dis.Variants[9].Value != "10" {
			t.Errorf("variants %s, want the elements 1..10 in order", js(dis.Variants))
		}
	})
}

func TestResultJSONIsTheSpecBlock(t *testing.T) {
	res := mustVote(t, answers(`{"a":1}`, `{"a":2}`, `{"a":1}`), Limits{})
	got := js(res)
	want := `{"k":3,"runsVotable":3,"minAgreement":0.6666666666666666,"incomplete":false,` +
		`"disagreements":[{"fieldPath":"a","variants":[{"value":"1","runs":2,"included":true},` +
		`{"value":"2","runs":1,"included":false}],"variantsDropped":0}],"disagreementsDropped":0}`
	if got != want {
		t.Errorf("JSON\n got %s\nwant %s", got, want)
	}
	if got := js(mustVote(t, answers(`1`, `1`), Limits{})); !strings.Contains(got, `"disagreements":[]`) {
		t.Errorf("no disagreements must marshal as []: %s", got)
	}
}
