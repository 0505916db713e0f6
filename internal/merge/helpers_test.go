package merge

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// chunks builds the chunks of one file from their answers, index 0 up.
func chunks(file string, answers ...string) []Chunk {
	out := make([]Chunk, len(answers))
	for i, a := range answers {
		out[i] = Chunk{File: file, Index: i, Content: a}
	}
	return out
}

// mergeOne merges and requires exactly one answer, checking the
// invariants every answer must hold.
func mergeOne(t *testing.T, opts Options, cs []Chunk) Answer {
	t.Helper()
	as, err := Merge(cs, opts)
	if err != nil {
		t.Fatalf("Merge: %v", err)
	}
	if len(as) != 1 {
		t.Fatalf("Merge gave %d answers, want 1", len(as))
	}
	checkAnswer(t, as[0])
	return as[0]
}

// checkAnswer checks what holds for every answer: JSON content is valid
// JSON, conflicts respect the caps and are index-aligned, and
// mergeIncomplete matches the list.
func checkAnswer(t testing.TB, a Answer) {
	t.Helper()
	if a.Format == FormatJSON && !json.Valid([]byte(a.Content)) {
		t.Fatalf("JSON answer is not valid JSON: %q", a.Content)
	}
	if len(a.Conflicts) > MaxConflicts {
		t.Fatalf("%d conflicts, cap %d", len(a.Conflicts), MaxConflicts)
	}
	for _, c := range a.Conflicts {
		if len(c.Values) != len(c.Sources) {
			t.Fatalf("conflict %q: %d values, %d sources", c.Field, len(c.Values), len(c.Sources))
		}
		if len(c.Values) < 2 || len(c.Values) > MaxConflictValues {
			t.Fatalf("conflict %q has %d values", c.Field, len(c.Values))
		}
		for _, v := range c.Values {
			if len(v) > MaxValueBytes || !utf8.ValidString(v) {
				t.Fatalf("conflict %q value of %d bytes (valid UTF-8: %v)", c.Field, len(v), utf8.ValidString(v))
			}
		}
	}
	if a.MergeIncomplete != (len(a.IncompleteChunks) > 0) {
		t.Fatalf("mergeIncomplete %v with %d incomplete chunks", a.MergeIncomplete, len(a.IncompleteChunks))
	}
	// A value of another shape than the one kept is not in the content:
	// its chunk must be listed (audit F4).
	if a.Format == FormatJSON && !a.MergeIncomplete {
		for _, c := range a.Conflicts {
			for _, v := range c.Values[1:] {
				if shapeClass(v) != shapeClass(c.Values[0]) {
					t.Fatalf("conflict %q between shapes (%.20s against %.20s) in an answer that says it is complete", c.Field, v, c.Values[0])
				}
			}
		}
	}
}

// shapeClass tells an object and an array from a scalar by a conflict
// value's first byte (values may be cut, never emptied).
func shapeClass(v string) byte {
	if v != "" && (v[0] == '{' || v[0] == '[') {
		return v[0]
	}
	return 's'
}

// jsonEqual compares JSON texts as values (key order and number spelling
// as json.Unmarshal sees them).
func jsonEqual(t testing.TB, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("got is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want is not JSON: %v\n%s", err, want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("merged JSON differs\n got %s\nwant %s", got, want)
	}
}

func refs(a Answer) []ChunkRef {
	var out []ChunkRef
	for _, c := range a.IncompleteChunks {
		out = append(out, c.ChunkRef)
	}
	return out
}

func conflictFields(a Answer) string {
	var fs []string
	for _, c := range a.Conflicts {
		fs = append(fs, c.Field)
	}
	return strings.Join(fs, ",")
}
