package merge

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"
)

func TestJSONScalars(t *testing.T) {
	tests := []struct {
		name      string
		policy    Policy
		answers   []string
		want      string
		conflicts []Conflict
	}{
		{
			name:    "first non-null keeps the first value and reports the other",
			answers: []string{`{"title":"A"}`, `{"title":"B"}`},
			want:    `{"title":"A"}`,
			conflicts: []Conflict{{Field: "title", Values: []string{`"A"`, `"B"`},
				Sources: []ChunkRef{{"f", 0}, {"f", 1}}}},
		},
		{
			name:    "null is filled by a later value without a conflict",
			answers: []string{`{"total":null,"a":1}`, `{"total":42}`},
			want:    `{"total":42,"a":1}`,
		},
		{
			name:    "a key only ever null stays, as null",
			answers: []string{`{"a":null}`, `{"a":null}`},
			want:    `{"a":null}`,
		},
		{
			name:    "equal numbers spelled differently do not conflict; the first spelling is kept",
			answers: []string{`{"n":1.0}`, `{"n":1}`, `{"n":10e-1}`},
			want:    `{"n":1.0}`,
		},
		{
			name:    "nested objects merge by key, in first-seen key order",
			answers: []string{`{"a":{"x":1}}`, `{"b":2,"a":{"y":3}}`},
			want:    `{"a":{"x":1,"y":3},"b":2}`,
		},
		{
			name:    "a key with a dot is escaped in the conflict path",
			answers: []string{`{"a.b":{"c":1},"a":{"b":{"c":1}}}`, `{"a.b":{"c":2},"a":{"b":{"c":1}}}`},
			want:    `{"a.b":{"c":1},"a":{"b":{"c":1}}}`,
			conflicts: []Conflict{{Field: `a\.b.c`, Values: []string{`1`, `2`},
				Sources: []ChunkRef{{"f", 0}, {"f", 1}}}},
		},
		{
			name:    "majority takes the most frequent value",
			policy:  Majority,
			answers: []string{`{"c":"EUR"}`, `{"c":"USD"}`, `{"c":"USD"}`},
			want:    `{"c":"USD"}`,
			conflicts: []Conflict{{Field: "c", Values: []string{`"USD"`, `"EUR"`},
				Sources: []ChunkRef{{"f", 1}, {"f", 0}}}},
		},
		{
			name:    "majority ties go to the earliest value",
			policy:  Majority,
			answers: []string{`{"c":"B"}`, `{"c":"A"}`, `{"c":"A"}`, `{"c":"B"}`},
			want:    `{"c":"B"}`,
			conflicts: []Conflict{{Field: "c", Values: []string{`"B"`, `"A"`},
				Sources: []ChunkRef{{"f", 0}, {"f", 1}}}},
		},
		{
			name:    "majority ignores nulls",
			policy:  Majority,
			answers: []string{`{"c":null}`, `{"c":null}`, `{"c":"X"}`},
			want:    `{"c":"X"}`,
		},
		{
			name:    "a root scalar conflict has the empty path",
			answers: []string{`"yes"`, `"no"`},
			want:    `"yes"`,
			conflicts: []Conflict{{Field: "", Values: []string{`"yes"`, `"no"`},
				Sources: []ChunkRef{{"f", 0}, {"f", 1}}}},
		},
		{
			name:    "a repeated key in one answer keeps its last value",
			answers: []string{`{"a":1,"a":2}`},
			want:    `{"a":2}`,
		},
		{
			name:    "a fenced JSON answer is read inside its fence",
			answers: []string{"```json\n{\"a\":1}\n```", `{"b":2}`},
			want:    `{"a":1,"b":2}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := mergeOne(t, Options{Policy: tt.policy, Format: FormatJSON}, chunks("f", tt.answers...))
			if a.Content != tt.want {
				t.Errorf("content %s, want %s", a.Content, tt.want)
			}
			if !reflect.DeepEqual(a.Conflicts, tt.conflicts) {
				t.Errorf("conflicts %+v, want %+v", a.Conflicts, tt.conflicts)
			}
			if a.MergeIncomplete {
				t.Errorf("incomplete: %+v", a.IncompleteChunks)
			}
		})
	}
}

func TestJSONTechnicalDedupe(t *testing.T) {
	tests := []struct {
		name    string
		chunks  []Chunk
		want    string
		removed int
	}{
		{
			name:    "the record repeated at the boundary is removed once",
			chunks:  chunks("f", `{"r":[{"id":1},{"id":2}]}`, `{"r":[{"id":2},{"id":3}]}`),
			want:    `{"r":[{"id":1},{"id":2},{"id":3}]}`,
			removed: 1,
		},
		{
			name:    "the longest repeated run is removed",
			chunks:  chunks("f", `[1,2,3,4]`, `[3,4,5]`),
			want:    `[1,2,3,4,5]`,
			removed: 2,
		},
		{
			name:    "equality ignores key order and number spelling",
			chunks:  chunks("f", `[{"a":1,"b":"x"}]`, `[{"b":"x","a":1.0},{"a":2}]`),
			want:    `[{"a":1,"b":"x"},{"a":2}]`,
			removed: 1,
		},
		{
			name:    "identical records inside one answer are both kept",
			chunks:  chunks("f", `[{"a":1},{"a":1},{"a":2}]`, `[{"a":2},{"a":3}]`),
			want:    `[{"a":1},{"a":1},{"a":2},{"a":3}]`,
			removed: 1,
		},
		{
			name:    "identical records away from the boundary are both kept",
			chunks:  chunks("f", `[{"a":1},{"a":2}]`, `[{"a":3},{"a":1}]`),
			want:    `[{"a":1},{"a":2},{"a":3},{"a":1}]`,
			removed: 0,
		},
		{
			name:    "only the run at the boundary goes, not a second copy behind it",
			chunks:  chunks("f", `[{"a":0},{"a":1}]`, `[{"a":1},{"a":1}]`),
			want:    `[{"a":0},{"a":1},{"a":1}]`,
			removed: 1,
		},
		{
			name:    "each array path is compared with the same path",
			chunks:  chunks("f", `{"x":[1],"y":[2]}`, `{"x":[2],"y":[2,3]}`),
			want:    `{"x":[1,2],"y":[2,3]}`,
			removed: 1,
		},
		{
			name: "no dedupe where the chunker dropped the overlap",
			chunks: []Chunk{{File: "f", Index: 0, Content: `[1,2]`},
				{File: "f", Index: 1, Content: `[2,3]`, NoOverlap: true}},
			want: `[1,2,2,3]`,
		},
		{
			name:   "no dedupe across a gap in chunk indexes",
			chunks: []Chunk{{File: "f", Index: 0, Content: `[1,2]`}, {File: "f", Index: 2, Content: `[2,3]`}},
			want:   `[1,2,2,3]`,
		},
		{
			name: "no dedupe across a chunk that could not be merged",
			chunks: []Chunk{{File: "f", Index: 0, Content: `[1,2]`}, {File: "f", Index: 1, Content: `[2`},
				{File: "f", Index: 2, Content: `[2,3]`}},
			want: `[1,2,2,3]`,
		},
		{
			name: "an overlap block without records: equal records on both sides stay",
			chunks: []Chunk{
				{File: "f", Index: 0, Content: `[{"item":"Widget","price":1250}]`},
				{File: "f", Index: 1, Content: `[{"item":"Widget","price":1250}]`, Overlap: "Prices include tax.\n\n"},
			},
			want: `[{"item":"Widget","price":1250},{"item":"Widget","price":1250}]`,
		},
		{
			name: "a record quoted by the overlap text is removed",
			chunks: []Chunk{
				{File: "f", Index: 0, Content: `[{"item":"Gadget","price":99},{"item":"Widget","price":1250.0}]`},
				{File: "f", Index: 1, Content: `[{"item":"Widget","price":1250},{"item":"Gizmo","price":7}]`,
					Overlap: "| Widget | $1,250.00 | USD |\n"},
			},
			want:    `[{"item":"Gadget","price":99},{"item":"Widget","price":1250.0},{"item":"Gizmo","price":7}]`,
			removed: 1,
		},
		{
			name: "the overlap text bounds the copies removed",
			chunks: []Chunk{
				{File: "f", Index: 0, Content: `[{"item":"Widget"},{"item":"Widget"}]`},
				{File: "f", Index: 1, Content: `[{"item":"Widget"},{"item":"Widget"}]`, Overlap: "Widget\n\n"},
			},
			want:    `[{"item":"Widget"},{"item":"Widget"},{"item":"Widget"}]`,
			removed: 1,
		},
		{
			name:   "a key holding NUL is its own path, not a nested one",
			chunks: chunks("f", `{"a":{"b":[{"k":"X1"}]}}`, `{"a\u0000b":[{"k":"X1"}]}`),
			want:   `{"a":{"b":[{"k":"X1"}]},"a\u0000b":[{"k":"X1"}]}`,
		},
		{
			name: "files are not compared with each other at scope job",
			chunks: []Chunk{{File: "a", Index: 0, Content: `[1,2]`},
				{File: "b", Index: 1, Content: `[2,3]`}},
			want: `[1,2,2,3]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := mergeOne(t, Options{Format: FormatJSON, Scope: ScopeJob}, tt.chunks)
			jsonEqual(t, a.Content, tt.want)
			if a.Content != tt.want {
				t.Errorf("content %s, want %s", a.Content, tt.want)
			}
			if a.DedupeRemovedTechnical != tt.removed {
				t.Errorf("dedupeRemovedTechnical %d, want %d", a.DedupeRemovedTechnical, tt.removed)
			}
			if a.DedupeRemovedContent != 0 {
				t.Errorf("dedupeRemovedContent %d without dedupeBy", a.DedupeRemovedContent)
			}
		})
	}
}

func TestJSONContentDedupe(t *testing.T) {
	tests := []struct {
		name      string
		opts      Options
		chunks    []Chunk
		want      string
		removed   int
		technical int
		conflicts string
	}{
		{
			name: "records sharing the dedupeBy fields are one; nulls are filled from the duplicate",
			opts: Options{DedupeBy: []string{"id"}, HasSchema: true},
			chunks: chunks("f", `{"r":[{"id":1,"name":"a","tel":null},{"id":2}]}`,
				`{"r":[{"id":3}]}`, `{"r":[{"id":1,"tel":"555"}]}`),
			want:    `{"r":[{"id":1,"name":"a","tel":"555"},{"id":2},{"id":3}]}`,
			removed: 1,
		},
		{
			name:    "differing values of duplicates are conflicts at the kept record's path",
			opts:    Options{DedupeBy: []string{"id"}, HasSchema: true},
			chunks:  chunks("f", `{"r":[{"id":0},{"id":1,"p":5}]}`, `{"r":[{"id":9}]}`, `{"r":[{"id":1,"p":6}]}`),
			want:    `{"r":[{"id":0},{"id":1,"p":5},{"id":9}]}`,
			removed: 1, conflicts: "r.1.p",
		},
		{
			name:    "majority decides duplicate fields too",
			opts:    Options{DedupeBy: []string{"id"}, HasSchema: true, Policy: Majority},
			chunks:  chunks("f", `[{"id":1,"p":5}]`, `[{"id":0}]`, `[{"id":1,"p":6},{"id":1,"p":6}]`),
			want:    `[{"id":1,"p":6},{"id":0}]`,
			removed: 2, conflicts: "0.p",
		},
		{
			name:    "all dedupeBy fields must match",
			opts:    Options{DedupeBy: []string{"id", "v"}, HasSchema: true},
			chunks:  chunks("f", `[{"id":1,"v":1},{"id":1,"v":2}]`, `[{"id":0}]`, `[{"v":1,"id":1}]`),
			want:    `[{"id":1,"v":1},{"id":1,"v":2},{"id":0}]`,
			removed: 1,
		},
		{
			name:    "a record missing a dedupeBy field, or holding null, is never a duplicate",
			opts:    Options{DedupeBy: []string{"id"}, HasSchema: true},
			chunks:  chunks("f", `[{"x":1},{"id":null}]`, `[{"id":0}]`, `[{"x":1},{"id":null}]`),
			want:    `[{"x":1},{"id":null},{"id":0},{"x":1},{"id":null}]`,
			removed: 0,
		},
		{
			name:    "dedupe keys compare canonically",
			opts:    Options{DedupeBy: []string{"id"}, HasSchema: true},
			chunks:  chunks("f", `[{"id":{"a":1,"b":2}}]`, `[{"id":0}]`, `[{"id":{"b":2,"a":1.0}}]`),
			want:    `[{"id":{"a":1,"b":2}},{"id":0}]`,
			removed: 1,
		},
		{
			name:    "records are deduped within their own array path only",
			opts:    Options{DedupeBy: []string{"id"}, HasSchema: true},
			chunks:  chunks("f", `{"a":[{"id":1}]}`, `{"b":[{"id":1}]}`),
			want:    `{"a":[{"id":1}],"b":[{"id":1}]}`,
			removed: 0,
		},
		{
			name:    "a key holding NUL is its own array path, not a nested one",
			opts:    Options{DedupeBy: []string{"id"}, HasSchema: true},
			chunks:  chunks("f", `{"a":{"b":[{"id":7,"v":"one"}]}}`, `{"a\u0000b":[{"id":7,"v":"two"}]}`),
			want:    `{"a":{"b":[{"id":7,"v":"one"}]},"a\u0000b":[{"id":7,"v":"two"}]}`,
			removed: 0,
		},
		{
			name:      "technical dedupe runs first and counts apart",
			opts:      Options{DedupeBy: []string{"id"}, HasSchema: true},
			chunks:    chunks("f", `[{"id":1},{"id":2}]`, `[{"id":2},{"id":1}]`),
			want:      `[{"id":1},{"id":2}]`,
			removed:   1,
			technical: 1,
		},
		{
			name:   "without a schema dedupeBy does nothing",
			opts:   Options{DedupeBy: []string{"id"}, Format: FormatJSON},
			chunks: chunks("f", `[{"id":1}]`, `[{"id":0}]`, `[{"id":1}]`),
			want:   `[{"id":1},{"id":0},{"id":1}]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := mergeOne(t, tt.opts, tt.chunks)
			if a.Content != tt.want {
				t.Errorf("content %s, want %s", a.Content, tt.want)
			}
			if a.DedupeRemovedContent != tt.removed || a.DedupeRemovedTechnical != tt.technical {
				t.Errorf("removed content %d technical %d, want %d and %d", a.DedupeRemovedContent, a.DedupeRemovedTechnical, tt.removed, tt.technical)
			}
			if got := conflictFields(a); got != tt.conflicts {
				t.Errorf("conflicts at %q, want %q (%+v)", got, tt.conflicts, a.Conflicts)
			}
		})
	}
}

func TestJSONUnmergeableChunks(t *testing.T) {
	cs := []Chunk{
		{File: "f", Index: 0, Content: `{"r":[1],"t":"a"}`},
		{File: "f", Index: 1, Content: `{"r":[2], "t":`},
		{File: "f", Index: 2, Content: `{"r":[3]}`, Failed: true},
		{File: "f", Index: 3, Content: `{"r":[4]} trailing`},
		{File: "f", Index: 4, Content: ``},
		{File: "f", Index: 5, Content: `{"r":[5]}`},
	}
	a := mergeOne(t, Options{HasSchema: true}, cs)
	if a.Content != `{"r":[1,5],"t":"a"}` {
		t.Errorf("content %s", a.Content)
	}
	want := []ChunkRef{{"f", 1}, {"f", 2}, {"f", 3}, {"f", 4}}
	if !reflect.DeepEqual(refs(a), want) || !a.MergeIncomplete {
		t.Errorf("incomplete %+v, want %+v", a.IncompleteChunks, want)
	}
	for _, c := range a.IncompleteChunks {
		if c.Reason == "" {
			t.Errorf("chunk %d listed without a reason", c.Index)
		}
	}
}

func TestJSONNoMergeableChunkGivesNull(t *testing.T) {
	a := mergeOne(t, Options{HasSchema: true}, chunks("f", `nope`, `{`))
	if a.Content != "null" || len(a.IncompleteChunks) != 2 {
		t.Errorf("content %q, incomplete %+v", a.Content, a.IncompleteChunks)
	}
}

func TestConflictCaps(t *testing.T) {
	t.Run("at most 100 entries, the rest counted", func(t *testing.T) {
		var a, b strings.Builder
		a.WriteString("{")
		b.WriteString("{")
		for i := range 150 {
			if i > 0 {
				a.WriteString(",")
				b.WriteString(",")
			}
			fmt.Fprintf(&a, `"k%03d":1`, i)
			fmt.Fprintf(&b, `"k%03d":2`, i)
		}
		a.WriteString("}")
		b.WriteString("}")
		ans := mergeOne(t, Options{Format: FormatJSON}, chunks("f", a.String(), b.String()))
		if len(ans.Conflicts) != MaxConflicts || ans.ConflictsDropped != 50 {
			t.Errorf("%d conflicts, %d dropped", len(ans.Conflicts), ans.ConflictsDropped)
		}
		if ans.Conflicts[0].Field != "k000" || ans.Conflicts[99].Field != "k099" {
			t.Errorf("conflicts not in document order: %q … %q", ans.Conflicts[0].Field, ans.Conflicts[99].Field)
		}
	})
	t.Run("at most 10 values, index-aligned with their sources", func(t *testing.T) {
		var answers []string
		for i := range 15 {
			answers = append(answers, fmt.Sprintf(`{"v":%d}`, i))
		}
		ans := mergeOne(t, Options{Format: FormatJSON}, chunks("f", answers...))
		c := ans.Conflicts[0]
		if len(c.Values) != MaxConflictValues || c.ValuesDropped != 5 {
			t.Fatalf("%d values, %d dropped", len(c.Values), c.ValuesDropped)
		}
		for i := range c.Values {
			if c.Values[i] != fmt.Sprint(i) || c.Sources[i] != (ChunkRef{"f", i}) {
				t.Errorf("value %d = %s from %+v", i, c.Values[i], c.Sources[i])
			}
		}
	})
	t.Run("values cut to 512 bytes on a character boundary", func(t *testing.T) {
		// `"ab` puts every é at an odd offset, so byte 512 falls inside one.
		long := strings.Repeat("é", 400) // 800 bytes
		big := `{"k":"` + strings.Repeat("x", 100000) + `"}`
		ans := mergeOne(t, Options{Format: FormatJSON},
			chunks("f", `{"s":"ab`+long+`","o":`+big+`}`, `{"s":"cd`+long+`","o":[1]}`))
		for _, c := range ans.Conflicts {
			if len(c.Values[0]) < MaxValueBytes-1 || len(c.Values[0]) > MaxValueBytes || !utf8.ValidString(c.Values[0]) {
				t.Errorf("%s: value of %d bytes (valid UTF-8: %v), want a whole-character cut near %d",
					c.Field, len(c.Values[0]), utf8.ValidString(c.Values[0]), MaxValueBytes)
			}
		}
		if s := ans.Conflicts[0].Values[0]; len(s) != MaxValueBytes-1 || s != `"ab`+long[:len(s)-3] {
			t.Errorf("cut value is not the 511-byte prefix: %d bytes, %q", len(s), s)
		}
	})
}

func TestJSONLimits(t *testing.T) {
	deep := strings.Repeat("[", 20) + strings.Repeat("]", 20)
	wide := "[" + strings.Repeat("1,", 99) + "1]"
	tests := []struct {
		name   string
		lim    Limits
		answer string
		reason string
	}{
		{"too deep", Limits{MaxDepth: 10}, deep, "deeper than 10"},
		{"too many values", Limits{MaxNodes: 50}, wide, "more than 50"},
		{"too large", Limits{MaxAnswerBytes: 100}, wide, "over the 100-byte limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := mergeOne(t, Options{Format: FormatJSON, Limits: tt.lim}, chunks("f", `[0]`, tt.answer))
			if a.Content != "[0]" || len(a.IncompleteChunks) != 1 || !strings.Contains(a.IncompleteChunks[0].Reason, tt.reason) {
				t.Errorf("content %s, incomplete %+v", a.Content, a.IncompleteChunks)
			}
		})
	}
	t.Run("total input", func(t *testing.T) {
		a := mergeOne(t, Options{Format: FormatText, Limits: Limits{MaxTotalBytes: 10}}, chunks("f", "12345", "67890", "abc"))
		if a.Content != "12345\n\n67890" || !reflect.DeepEqual(refs(a), []ChunkRef{{"f", 2}}) {
			t.Errorf("content %q, incomplete %+v", a.Content, a.IncompleteChunks)
		}
	})
}

// TestTotalInputLimit: the chunk that would pass MaxTotalBytes is left out
// and counts for nothing, so a later, smaller chunk that still fits is
// merged (audit-merge2 F5: what docs/merge.md says); a chunk the caller
// left unread for that limit (Unread) is listed the same way.
func TestTotalInputLimit(t *testing.T) {
	big := `{"a":"` + strings.Repeat("x", 90) + `"}` // 97 bytes
	reason := "the merge's input limit of 100 bytes was reached"
	tests := []struct {
		name   string
		chunks []Chunk
		want   string
		left   []ChunkRef
	}{
		{
			name:   "a later, smaller chunk is merged after the one that would pass the limit",
			chunks: chunks("f", `{"b":1}`, big, `{"c":2}`),
			want:   `{"b":1,"c":2}`,
			left:   []ChunkRef{{"f", 1}},
		},
		{
			name: "a chunk the caller left unread is listed as past the limit",
			chunks: []Chunk{{File: "f", Index: 0, Content: `{"b":1}`}, {File: "f", Index: 1, Unread: true},
				{File: "f", Index: 2, Content: `{"c":2}`}},
			want: `{"b":1,"c":2}`,
			left: []ChunkRef{{"f", 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := mergeOne(t, Options{Format: FormatJSON, Limits: Limits{MaxTotalBytes: 100}}, tt.chunks)
			if a.Content != tt.want || !reflect.DeepEqual(refs(a), tt.left) {
				t.Fatalf("content %s, incomplete %+v; want %s and %v", a.Content, a.IncompleteChunks, tt.want, tt.left)
			}
			for _, c := range a.IncompleteChunks {
				if c.Reason != reason {
					t.Errorf("reason %q, want %q", c.Reason, reason)
				}
			}
		})
	}
}

func TestBorders(t *testing.T) {
	tests := []struct {
		tail, head string
		want       []int
	}{
		{"abc", "cde", []int{1}},
		{"abab", "abab", []int{4, 2}},
		{"xaa", "aay", []int{2, 1}},
		{"abc", "xyz", nil},
		{"", "a", nil},
		{"aaaa", "aa", []int{2, 1}},
	}
	for _, tt := range tests {
		if got := borders([]byte(tt.tail), []byte(tt.head)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("borders(%q, %q) = %v, want %v", tt.tail, tt.head, got, tt.want)
		}
	}
}

// TestMergedFieldsBound: past Limits.MaxMergedNodes fields the merged tree
// takes no new field; the chunk that brought one is listed once, with the
// bound as its reason, and fields the tree holds still merge (hunt-merge:
// an answer giving every value its own key took 46 times its input).
func TestMergedFieldsBound(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		answers []string
		want    string
		left    []ChunkRef
		reasons []string
	}{
		{
			name:    "new keys past the bound are left out, known keys still merge",
			opts:    Options{Limits: Limits{MaxMergedNodes: 3}},
			answers: []string{`{"a":1,"b":2}`, `{"a":1,"c":3,"d":4}`, `{"b":2,"e":5}`},
			want:    `{"a":1,"b":2,"c":3}`,
			left:    []ChunkRef{{"f", 1}, {"f", 2}},
			reasons: []string{"left out fields past the merged answer's limit of 3 fields", "left out fields past the merged answer's limit of 3 fields"},
		},
		{
			name:    "nested fields count",
			opts:    Options{Limits: Limits{MaxMergedNodes: 2}},
			answers: []string{`{"a":{"x":1}}`, `{"a":{"x":1,"y":2}}`},
			want:    `{"a":{"x":1}}`,
			left:    []ChunkRef{{"f", 1}},
			reasons: []string{"left out fields past the merged answer's limit of 2 fields"},
		},
		{
			name:    "a chunk that also lost a value to a shape is listed once with both reasons",
			opts:    Options{Limits: Limits{MaxMergedNodes: 2}},
			answers: []string{`{"a":1,"b":2}`, `{"a":{"z":1},"c":3}`},
			want:    `{"a":1,"b":2}`,
			left:    []ChunkRef{{"f", 1}},
			reasons: []string{"left out fields past the merged answer's limit of 2 fields; left out its object at a, where the merged answer holds a number"},
		},
		{
			name:    "a duplicate record's fields count",
			opts:    Options{HasSchema: true, DedupeBy: []string{"id"}, Limits: Limits{MaxMergedNodes: 2}},
			answers: []string{`[{"id":1,"x":1}]`, `[{"id":1,"y":2}]`},
			want:    `[{"id":1,"x":1}]`,
			left:    []ChunkRef{{"f", 1}},
			reasons: []string{"left out fields past the merged answer's limit of 2 fields"},
		},
		{
			name:    "under the bound nothing is left out",
			opts:    Options{Limits: Limits{MaxMergedNodes: 4}},
			answers: []string{`{"a":1,"b":2}`, `{"a":1,"c":3,"d":4}`},
			want:    `{"a":1,"b":2,"c":3,"d":4}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Format = FormatJSON
			a := mergeOne(t, tt.opts, chunks("f", tt.answers...))
			if a.Content != tt.want || !reflect.DeepEqual(refs(a), tt.left) {
				t.Fatalf("content %s, incomplete %+v; want %s and %v", a.Content, a.IncompleteChunks, tt.want, tt.left)
			}
			for i, c := range a.IncompleteChunks {
				if c.Reason != tt.reasons[i] {
					t.Errorf("reason %q, want %q", c.Reason, tt.reasons[i])
				}
			}
			if !a.MergeIncomplete && len(tt.left) > 0 {
				t.Error("mergeIncomplete false")
			}
		})
	}
}

// TestMergedLeafIsSmall: a merged leaf is a node and a candidate, kept
// small as an answer giving every value its own key makes one per key
// (hunt-merge: 160 bytes of node, 48 of candidate and a 96-byte value
// copy, about 350 bytes a key with its map entry; 3 GB at the input limit).
func TestMergedLeafIsSmall(t *testing.T) {
	if n, c := unsafe.Sizeof(mnode{}), unsafe.Sizeof(cand{}); n > 80 || c > 32 {
		t.Errorf("a merged node is %d bytes, a candidate %d; want at most 80 and 32", n, c)
	}
}
