package consensus

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// TestVoteTuples votes rows written as tuples (arrays inside an array):
// arrays of one length are matched by the share of equal cells, position by
// position, and a matched group is voted cell by cell, so a run that differs
// in one cell disputes that cell instead of losing the row (hunt-tuples).
func TestVoteTuples(t *testing.T) {
	tests := []struct {
		name          string
		runs          []string
		agreed        string
		minAgreement  float64
		disagreements []Disagreement
	}{
		{
			name:         "tuples differing in one cell each are one row whose cell is disputed",
			runs:         []string{`{"rows":[["A",1,"x"]]}`, `{"rows":[["A",2,"x"]]}`, `{"rows":[["A",3,"x"]]}`},
			agreed:       `{"rows":[["A",1,"x"]]}`,
			minAgreement: 1.0 / 3,
			disagreements: []Disagreement{
				d("rows.0.1", v("1", 1, true), v("2", 1, false), v("3", 1, false)),
			},
		},
		{
			name: "a cell outvoted in a reordered table",
			runs: []string{
				`{"rows":[["A",1,"x"],["B",2,"y"]]}`,
				`{"rows":[["B",2,"y"],["A",5,"x"]]}`,
				`{"rows":[["A",1,"x"],["B",2,"y"]]}`,
			},
			agreed:       `{"rows":[["A",1,"x"],["B",2,"y"]]}`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("rows.0.1", v("1", 2, true), v("5", 1, false)),
			},
		},
		{
			name:         "tuples of different lengths are never matched",
			runs:         []string{`[["A",1,"x"]]`, `[["A",1]]`, `[["A",1,"x","y"]]`},
			agreed:       `[]`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("", v(`["A",1,"x"]`, 1, false), v(`["A",1]`, 1, false), v(`["A",1,"x","y"]`, 1, false)),
			},
		},
		{
			name:         "a tuple of another length is outvoted whole",
			runs:         []string{`[["A",1,"x"]]`, `[["A",1]]`, `[["A",2,"x"]]`},
			agreed:       `[["A",1,"x"]]`,
			minAgreement: 1.0 / 3,
			disagreements: []Disagreement{
				d("0.1", v("1", 1, true), v("2", 1, false)),
				d("", v(`["A",1,"x"]`, 2, true), v(`["A",1]`, 1, false)),
			},
		},
		{
			name:         "tuples sharing less than half of their cells are never matched",
			runs:         []string{`[["A",1,"x"]]`, `[["B",2,"x"]]`, `[["C",3,"x"]]`},
			agreed:       `[]`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("", v(`["A",1,"x"]`, 1, false), v(`["B",2,"x"]`, 1, false), v(`["C",3,"x"]`, 1, false)),
			},
		},
		{
			name:         "a null cell keeps its place and null wins like any value",
			runs:         []string{`[["A",null,"x"]]`, `[["A",2,"x"]]`, `[["A",null,"x"]]`},
			agreed:       `[["A",null,"x"]]`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("0.1", v("null", 2, true), v("2", 1, false)),
			},
		},
		{
			name:         "tuples of objects: a matched cell object is voted key by key",
			runs:         []string{`{"rows":[[{"n":"A"},{"q":1}]]}`, `{"rows":[[{"n":"A"},{"q":2}]]}`, `{"rows":[[{"n":"A"},{"q":1}]]}`},
			agreed:       `{"rows":[[{"n":"A"},{"q":1}]]}`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("rows.0.1.q", v("1", 2, true), v("2", 1, false)),
			},
		},
		{
			name: "nested tuples: a list of tuples in a cell is matched in turn",
			runs: []string{
				`[["A",[["x",1],["y",2]]]]`,
				`[["A",[["x",1],["y",3]]]]`,
				`[["A",[["y",2],["x",1]]]]`,
			},
			agreed:       `[["A",[["x",1],["y",2]]]]`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("0.1.1.1", v("2", 2, true), v("3", 1, false)),
			},
		},
		{
			name:         "a plain array in a cell is still voted as a list",
			runs:         []string{`[["A",[1,2]]]`, `[["A",[1,3]]]`, `[["A",[1,2]]]`},
			agreed:       `[["A",[1,2]]]`,
			minAgreement: 2.0 / 3,
			disagreements: []Disagreement{
				d("0.1", v("2", 2, true), v("3", 1, false)),
			},
		},
		{
			name:         "a matched row only some runs have is one element of the array-element entry",
			runs:         []string{`[["A",1],["B",1]]`, `[["A",1],["B",2]]`, `[["A",1]]`},
			agreed:       `[["A",1],["B",1]]`,
			minAgreement: 1.0 / 3,
			disagreements: []Disagreement{
				d("1.1", v("1", 1, true), v("2", 1, false)),
				d("", v(`["B",1]`, 2, true)),
			},
		},
		{
			name:         "a dropped matched row is shown as what its runs agree on",
			runs:         []string{`[["A",1],["B",1]]`, `[["A",1],["B",2]]`, `[["A",1]]`, `[["A",1]]`, `[["A",1]]`},
			agreed:       `[["A",1]]`,
			minAgreement: 3.0 / 5,
			disagreements: []Disagreement{
				d("", v(`["B",1]`, 2, false)),
			},
		},
		{
			name:         "equal tuples still match first, copy by copy",
			runs:         []string{`[[1,2],[1,2]]`, `[[1,2],[1,3]]`, `[[1,2]]`},
			agreed:       `[[1,2],[1,2]]`,
			minAgreement: 1.0 / 3,
			disagreements: []Disagreement{
				d("1.1", v("2", 1, true), v("3", 1, false)),
				d("", v("[1,2]", 2, true)),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustVote(t, answers(tt.runs...), Limits{})
			if string(res.Agreed) != tt.agreed {
				t.Errorf("agreed = %s, want %s", res.Agreed, tt.agreed)
			}
			if math.Abs(res.MinAgreement-tt.minAgreement) > 1e-12 {
				t.Errorf("minAgreement = %v, want %v", res.MinAgreement, tt.minAgreement)
			}
			if !reflect.DeepEqual(res.Disagreements, tt.disagreements) {
				t.Errorf("disagreements:\n got %s\nwant %s", js(res.Disagreements), js(tt.disagreements))
			}
		})
	}
}

// TestVoteTuplesReportCap checks that a table of tuples that differ in a
// cell each reports at most MaxDisagreements entries, the rest counted
// (spec: at most 100 per row).
func TestVoteTuplesReportCap(t *testing.T) {
	var a, b []string
	for i := range 150 {
		a = append(a, fmt.Sprintf(`["r%03d",%d,"x"]`, i, i))
		b = append(b, fmt.Sprintf(`["r%03d",%d,"x"]`, i, i+1))
	}
	res := mustVote(t, answers(`{"rows":[`+strings.Join(a, ",")+`]}`, `{"rows":[`+strings.Join(b, ",")+`]}`), Limits{})
	if len(res.Disagreements) != MaxDisagreements || res.DisagreementsDropped != 50 {
		t.Fatalf("%d kept, %d dropped; want %d and 50", len(res.Disagreements), res.DisagreementsDropped, MaxDisagreements)
	}
	if first, last := res.Disagreements[0].FieldPath, res.Disagreements[99].FieldPath; first != "rows.0.1" || last != "rows.99.1" {
		t.Errorf("kept %s..%s, want rows.0.1..rows.99.1", first, last)
	}
	if want := `{"rows":[` + strings.Join(a, ",") + `]}`; string(res.Agreed) != want {
		t.Errorf("with two runs the agreed table must be run 1's, got %.80s…", res.Agreed)
	}
}
