package merge

import (
	"reflect"
	"strings"
	"testing"
)

// The tests of this file are the audit-merge findings F1 (arrays of
// duplicate records), F4 (values of another shape) and F6 (placeholder
// empty strings).

func TestJSONDuplicateRecordsJoinTheirArrays(t *testing.T) {
	tests := []struct {
		name      string
		opts      Options
		chunks    []Chunk
		want      string
		content   int
		technical int
		conflicts string
	}{
		{
			name: "a record split across chunks keeps every line, the repeated boundary lines once",
			opts: Options{DedupeBy: []string{"number"}, HasSchema: true},
			chunks: chunks("inv.pdf",
				`{"invoices":[{"number":"INV-1","lines":[{"sku":"A"},{"sku":"B"}]}]}`,
				`{"invoices":[{"number":"INV-1","lines":[{"sku":"B"},{"sku":"C"},{"sku":"D"}]}]}`,
				`{"invoices":[{"number":"INV-1","lines":[{"sku":"D"},{"sku":"E"}]},{"number":"INV-2","lines":[{"sku":"Z"}]}]}`),
			want:      `{"invoices":[{"number":"INV-1","lines":[{"sku":"A"},{"sku":"B"},{"sku":"C"},{"sku":"D"},{"sku":"E"}]},{"number":"INV-2","lines":[{"sku":"Z"}]}]}`,
			content:   2,
			technical: 2,
		},
		{
			name: "the longest repeated run of lines goes, at any depth of the record",
			opts: Options{DedupeBy: []string{"id"}, HasSchema: true},
			chunks: chunks("f",
				`[{"id":1,"detail":{"lines":[1,2,3]}}]`,
				`[{"id":1,"detail":{"lines":[2,3,4]}}]`),
			want:      `[{"id":1,"detail":{"lines":[1,2,3,4]}}]`,
			content:   1,
			technical: 2,
		},
		{
			name: "lines the overlap text does not account for are kept",
			opts: Options{DedupeBy: []string{"number"}, HasSchema: true},
			chunks: []Chunk{
				{File: "f", Index: 0, Content: `[{"number":"INV-1","lines":[{"item":"Widget","price":1250}]}]`},
				{File: "f", Index: 1, Content: `[{"number":"INV-1","lines":[{"item":"Widget","price":1250}]}]`,
					Overlap: "Prices include tax.\n\n"},
			},
			want:    `[{"number":"INV-1","lines":[{"item":"Widget","price":1250},{"item":"Widget","price":1250}]}]`,
			content: 1,
		},
		{
			name: "a line the overlap text quotes is removed",
			opts: Options{DedupeBy: []string{"number"}, HasSchema: true},
			chunks: []Chunk{
				{File: "f", Index: 0, Content: `[{"number":"INV-1","lines":[{"item":"Gadget","price":99},{"item":"Widget","price":1250}]}]`},
				{File: "f", Index: 1, Content: `[{"number":"INV-1","lines":[{"item":"Widget","price":1250},{"item":"Gizmo","price":7}]}]`,
					Overlap: "| Widget | $1,250.00 |\n"},
			},
			want:      `[{"number":"INV-1","lines":[{"item":"Gadget","price":99},{"item":"Widget","price":1250},{"item":"Gizmo","price":7}]}]`,
			content:   1,
			technical: 1,
		},
		{
			name: "nothing is removed where the chunker dropped the overlap",
			opts: Options{DedupeBy: []string{"id"}, HasSchema: true},
			chunks: []Chunk{{File: "f", Index: 0, Content: `[{"id":1,"l":[1,2]}]`},
				{File: "f", Index: 1, Content: `[{"id":1,"l":[2,3]}]`, NoOverlap: true}},
			want:    `[{"id":1,"l":[1,2,2,3]}]`,
			content: 1,
		},
		{
			name: "a record seen again away from the boundary adds only the elements it does not hold",
			opts: Options{DedupeBy: []string{"id"}, HasSchema: true, Scope: ScopeJob},
			chunks: []Chunk{{File: "jan", Index: 0, Content: `[{"id":1,"tags":["vip","eu"]}]`},
				{File: "feb", Index: 0, FileIndex: 1, Content: `[{"id":1,"tags":["eu","vip","new"]}]`}},
			want:    `[{"id":1,"tags":["vip","eu","new"]}]`,
			content: 1,
		},
		{
			name:    "away from the boundary equal elements count as copies: the most any instance gave are kept",
			opts:    Options{DedupeBy: []string{"id"}, HasSchema: true},
			chunks:  chunks("f", `[{"id":1,"l":["a","a","b"]}]`, `[{"id":0}]`, `[{"id":1,"l":["a","b","b","a","a"]}]`),
			want:    `[{"id":1,"l":["a","a","b","b","a"]},{"id":0}]`,
			content: 1,
		},
		{
			name:    "a record repeated inside one answer is another view of it, not its continuation",
			opts:    Options{DedupeBy: []string{"id"}, HasSchema: true},
			chunks:  chunks("f", `[{"id":1,"l":["a","b"]},{"id":1,"l":["b","c"]}]`),
			want:    `[{"id":1,"l":["a","b","c"]}]`,
			content: 1,
		},
		{
			name: "only the first copy in the next chunk continues the boundary",
			opts: Options{DedupeBy: []string{"id"}, HasSchema: true},
			chunks: chunks("f", `[{"id":1,"l":["a","b"]}]`,
				`[{"id":1,"l":["b","c"]},{"id":1,"l":["b","d"]}]`),
			want:      `[{"id":1,"l":["a","b","c","d"]}]`,
			content:   2,
			technical: 1,
		},
		{
			name: "a record removed whole at the boundary still continues into the chunk after",
			opts: Options{DedupeBy: []string{"id"}, HasSchema: true},
			chunks: chunks("f", `[{"id":0},{"id":1,"l":["a","b"]}]`, `[{"id":1,"l":["a","b"]}]`,
				`[{"id":1,"l":["b","c"]}]`),
			want:      `[{"id":0},{"id":1,"l":["a","b","c"]}]`,
			content:   1,
			technical: 2,
		},
		{
			name:      "scalars of duplicates still go by the policy",
			opts:      Options{DedupeBy: []string{"id"}, HasSchema: true},
			chunks:    chunks("f", `[{"id":1,"total":5,"l":[1]}]`, `[{"id":1,"total":6,"l":[2]}]`),
			want:      `[{"id":1,"total":5,"l":[1,2]}]`,
			content:   1,
			conflicts: "0.total",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := mergeOne(t, tt.opts, tt.chunks)
			if a.Content != tt.want {
				t.Errorf("content %s\n          want %s", a.Content, tt.want)
			}
			if a.DedupeRemovedContent != tt.content || a.DedupeRemovedTechnical != tt.technical {
				t.Errorf("removed content %d technical %d, want %d and %d", a.DedupeRemovedContent, a.DedupeRemovedTechnical, tt.content, tt.technical)
			}
			if got := conflictFields(a); got != tt.conflicts {
				t.Errorf("conflicts at %q, want %q (%+v)", got, tt.conflicts, a.Conflicts)
			}
			if a.MergeIncomplete {
				t.Errorf("incomplete: %+v", a.IncompleteChunks)
			}
		})
	}
}

func TestJSONValuesOfAnotherShape(t *testing.T) {
	tests := []struct {
		name       string
		opts       Options
		chunks     []Chunk
		want       string
		conflicts  []Conflict
		incomplete []ChunkRef
		reason     string // in the first incomplete chunk's reason
	}{
		{
			name: "a chunk whose root has another shape is left out and listed",
			opts: Options{Format: FormatJSON},
			chunks: chunks("f", `[{"id":"C1"},{"id":"C2"}]`, `{"records":[{"id":"C2"},{"id":"C3"}],"note":"page 2"}`,
				`[{"id":"C3"},{"id":"C4"}]`),
			want:       `[{"id":"C1"},{"id":"C2"},{"id":"C3"},{"id":"C4"}]`,
			incomplete: []ChunkRef{{"f", 1}},
			reason:     "its root is an object",
		},
		{
			name:       "the root takes the shape most chunks give, not the first chunk's",
			opts:       Options{HasSchema: true},
			chunks:     chunks("f", `{"records":[1]}`, `[2,3]`, `[3,4]`),
			want:       `[2,3,4]`,
			incomplete: []ChunkRef{{"f", 0}},
			reason:     "its root is an object where most chunks' roots are an array",
		},
		{
			name:       "a root shape tie goes to the earliest shape",
			opts:       Options{HasSchema: true},
			chunks:     chunks("f", `{"a":1}`, `[1]`, `null`, `""`),
			want:       `{"a":1}`,
			incomplete: []ChunkRef{{"f", 1}},
		},
		{
			name:   "a deeper value of another shape is a conflict and its chunk is listed",
			opts:   Options{Format: FormatJSON},
			chunks: chunks("f", `{"a":"text","b":1}`, `{"a":{"k":1},"c":2}`),
			want:   `{"a":"text","b":1,"c":2}`,
			conflicts: []Conflict{{Field: "a", Values: []string{`"text"`, `{"k":1}`},
				Sources: []ChunkRef{{"f", 0}, {"f", 1}}}},
			incomplete: []ChunkRef{{"f", 1}},
			reason:     "left out its object at a, where the merged answer holds a string",
		},
		{
			name:   "an object keeps its shape against a later scalar, and the scalar's chunk is listed",
			opts:   Options{Format: FormatJSON},
			chunks: chunks("f", `{"a":{"k":1}}`, `{"a":5}`),
			want:   `{"a":{"k":1}}`,
			conflicts: []Conflict{{Field: "a", Values: []string{`{"k":1}`, `5`},
				Sources: []ChunkRef{{"f", 0}, {"f", 1}}}},
			incomplete: []ChunkRef{{"f", 1}},
			reason:     "left out its number at a, where the merged answer holds an object",
		},
		{
			name:   "a chunk is listed once, with how many more values it lost",
			opts:   Options{Format: FormatJSON},
			chunks: chunks("f", `{"a":[1],"b":[2],"c":[3]}`, `{"a":1,"b":2,"c":3}`),
			want:   `{"a":[1],"b":[2],"c":[3]}`,
			conflicts: []Conflict{
				{Field: "a", Values: []string{`[1]`, `1`}, Sources: []ChunkRef{{"f", 0}, {"f", 1}}},
				{Field: "b", Values: []string{`[2]`, `2`}, Sources: []ChunkRef{{"f", 0}, {"f", 1}}},
				{Field: "c", Values: []string{`[3]`, `3`}, Sources: []ChunkRef{{"f", 0}, {"f", 1}}},
			},
			incomplete: []ChunkRef{{"f", 1}},
			reason:     "left out its number at a, where the merged answer holds an array, and 2 more such values",
		},
		{
			name: "a clash inside a duplicate record lists the duplicate's chunk, in chunk order",
			opts: Options{DedupeBy: []string{"id"}, HasSchema: true},
			chunks: chunks("f", `[{"id":1,"l":[1]}]`, `[{"id":1,"l":"none"}]`, `nope`,
				`[{"id":2}]`),
			want: `[{"id":1,"l":[1]},{"id":2}]`,
			conflicts: []Conflict{{Field: "0.l", Values: []string{`[1]`, `"none"`},
				Sources: []ChunkRef{{"f", 0}, {"f", 1}}}},
			incomplete: []ChunkRef{{"f", 1}, {"f", 2}},
			reason:     "left out its string at 0.l, where the merged answer holds an array",
		},
		{
			name:   "an empty string does not fix a shape: later arrays fill it",
			opts:   Options{Format: FormatJSON},
			chunks: chunks("f", `{"items":""}`, `{"items":[{"a":1}]}`, `{"items":[{"a":2}]}`),
			want:   `{"items":[{"a":1},{"a":2}]}`,
		},
		{
			name:   "a later empty string where an array is held is no clash",
			opts:   Options{Format: FormatJSON},
			chunks: chunks("f", `{"items":[1]}`, `{"items":""}`),
			want:   `{"items":[1]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := mergeOne(t, tt.opts, tt.chunks)
			if a.Content != tt.want {
				t.Errorf("content %s\n          want %s", a.Content, tt.want)
			}
			if !reflect.DeepEqual(a.Conflicts, tt.conflicts) {
				t.Errorf("conflicts %+v, want %+v", a.Conflicts, tt.conflicts)
			}
			if !reflect.DeepEqual(refs(a), tt.incomplete) || a.MergeIncomplete != (len(tt.incomplete) > 0) {
				t.Errorf("incomplete %v %+v, want %+v", a.MergeIncomplete, a.IncompleteChunks, tt.incomplete)
			}
			if tt.reason != "" && len(a.IncompleteChunks) > 0 && !strings.Contains(a.IncompleteChunks[0].Reason, tt.reason) {
				t.Errorf("reason %q, want it to say %q", a.IncompleteChunks[0].Reason, tt.reason)
			}
		})
	}
}

func TestJSONEmptyStringsArePlaceholders(t *testing.T) {
	tests := []struct {
		name      string
		opts      Options
		answers   []string
		want      string
		conflicts string
		content   int
	}{
		{
			name: "an empty string never wins over a value, and zero is a value",
			answers: []string{`{"number":"","total":0,"records":[]}`, `{"number":"INV-7","total":0,"records":[]}`,
				`{"number":"","total":41.5,"records":[]}`},
			want:      `{"number":"INV-7","total":0,"records":[]}`,
			conflicts: "total",
		},
		{
			name:    "majority counts no empty strings",
			opts:    Options{Policy: Majority},
			answers: []string{`{"n":""}`, `{"n":""}`, `{"n":"INV-7"}`},
			want:    `{"n":"INV-7"}`,
		},
		{
			name:    "a key only ever empty stays empty",
			answers: []string{`{"n":""}`, `{"n":null}`, `{"n":""}`},
			want:    `{"n":""}`,
		},
		{
			name:    "an empty string fills a null",
			answers: []string{`{"n":null}`, `{"n":""}`},
			want:    `{"n":""}`,
		},
		{
			name:    "a record whose dedupeBy field is empty has no key",
			opts:    Options{DedupeBy: []string{"number"}},
			answers: []string{`[{"number":"","t":1}]`, `[{"number":"","t":2}]`},
			want:    `[{"number":"","t":1},{"number":"","t":2}]`,
		},
		{
			name:    "an empty field of a duplicate is filled from the next",
			opts:    Options{DedupeBy: []string{"number"}},
			answers: []string{`[{"number":"INV-7","date":""}]`, `[{"number":"X"}]`, `[{"number":"INV-7","date":"2026-01-31"}]`},
			want:    `[{"number":"INV-7","date":"2026-01-31"},{"number":"X"}]`,
			content: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.HasSchema = true
			a := mergeOne(t, opts, chunks("f", tt.answers...))
			if a.Content != tt.want {
				t.Errorf("content %s, want %s", a.Content, tt.want)
			}
			if got := conflictFields(a); got != tt.conflicts {
				t.Errorf("conflicts at %q, want %q (%+v)", got, tt.conflicts, a.Conflicts)
			}
			if a.DedupeRemovedContent != tt.content {
				t.Errorf("dedupeRemovedContent %d, want %d", a.DedupeRemovedContent, tt.content)
			}
		})
	}
}
