package merge

import (
	"errors"
	"reflect"
	"testing"
)

func TestAutoFormat(t *testing.T) {
	tests := []struct {
		name      string
		hasSchema bool
		chunks    []Chunk
		want      string
	}{
		{"a schema means json", true, chunks("f", "plain words"), FormatJSON},
		{"every answer JSON", false, chunks("f", `{"a":1}`, "```json\n[1]\n```", ` 2 `), FormatJSON},
		{"failed and blank answers do not vote", false, []Chunk{
			{File: "f", Index: 0, Content: `{"a":1}`},
			{File: "f", Index: 1, Content: `not json`, Failed: true},
			{File: "f", Index: 2, Content: "  \n"},
		}, FormatJSON},
		{"well-formed XML", false, chunks("f", `<?xml version="1.0"?><r><i/></r>`, `<r><i/></r>`), FormatXML},
		{"XHTML is html", false, chunks("f", `<table><tr><td>1</td></tr></table>`), FormatHTML},
		{"HTML fragments", false, chunks("f", `<p>a<br>b</p>`, `<ul><li>x</ul>`), FormatHTML},
		{"markdown syntax", false, chunks("f", "Some text.", "## Heading\n\ntext"), FormatMarkdown},
		{"a markdown table", false, chunks("f", "| a | b |\n|---|---|"), FormatMarkdown},
		{"plain prose", false, chunks("f", "Just prose.\n\nMore prose."), FormatText},
		{"nothing to vote", false, []Chunk{{File: "f", Content: "x", Failed: true}}, FormatText},
		{"nothing to vote with a schema", true, []Chunk{{File: "f", Content: "x", Failed: true}}, FormatJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := mergeOne(t, Options{HasSchema: tt.hasSchema}, tt.chunks)
			if a.Format != tt.want {
				t.Errorf("format %q, want %q", a.Format, tt.want)
			}
		})
	}
}

// TestAutoFormatByMostAnswers: one odd answer does not turn a file into
// text; the format most answers have is merged and the odd answers it
// cannot merge are listed.
func TestAutoFormatByMostAnswers(t *testing.T) {
	tests := []struct {
		name       string
		chunks     []Chunk
		format     string
		content    string
		incomplete []ChunkRef
	}{
		{
			name:       "a prose answer among JSON answers is listed",
			chunks:     chunks("f", "```json\n{\"records\":[1,2]}\n```", "No records in this part.", `{"records":[3]}`),
			format:     FormatJSON,
			content:    `{"records":[1,2,3]}`,
			incomplete: []ChunkRef{{"f", 1}},
		},
		{
			name:       "a tie goes to JSON, the prose answer listed",
			chunks:     chunks("f", `{"a":1}`, `sorry, no data`),
			format:     FormatJSON,
			content:    `{"a":1}`,
			incomplete: []ChunkRef{{"f", 1}},
		},
		{
			name:    "a JSON answer among prose answers is prose",
			chunks:  chunks("f", "First part.", `{"a":1}`, "Third part."),
			format:  FormatText,
			content: "First part.\n\n{\"a\":1}\n\nThird part.",
		},
		{
			name:    "numbers among prose are prose, not JSON",
			chunks:  chunks("f", "42", "No data.", "17"),
			format:  FormatText,
			content: "42\n\nNo data.\n\n17",
		},
		{
			name:       "an XML answer cut off in the middle is listed",
			chunks:     chunks("f", `<items><item>a</item></items>`, `<items><item>b</item>`, `<items><item>c</item></items>`),
			format:     FormatXML,
			content:    "<items><item>a</item><item>c</item></items>\n<items><item>b</item>",
			incomplete: []ChunkRef{{"f", 1}},
		},
		{
			name:    "text among HTML answers is HTML text, not glued",
			chunks:  chunks("f", "<h2>Items</h2>\nSome text", "More text\n<p>b</p>"),
			format:  FormatHTML,
			content: "<h2>Items</h2>\nSome text\nMore text\n<p>b</p>",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := mergeOne(t, Options{}, tt.chunks)
			if a.Format != tt.format || a.Content != tt.content {
				t.Errorf("format %q content %q, want %q %q", a.Format, a.Content, tt.format, tt.content)
			}
			if !reflect.DeepEqual(refs(a), tt.incomplete) {
				t.Errorf("incomplete %+v, want %v", a.IncompleteChunks, tt.incomplete)
			}
		})
	}
}

// TestEveryFileHasItsAnswer: a file without text (NoText) still has its
// answer at file scope, in its place, with the format's empty content and
// nothing listed; at job scope it adds nothing.
func TestEveryFileHasItsAnswer(t *testing.T) {
	cs := []Chunk{
		{File: "a", FileIndex: 0, Content: `{"x":1}`},
		{File: "empty", FileIndex: 1, NoText: true},
		{File: "failed", FileIndex: 2, Failed: true},
		{File: "blank", FileIndex: 3, NoText: true},
	}
	type entry struct {
		File, Format, Content string
		Incomplete            bool
	}
	tests := []struct {
		name   string
		chunks []Chunk
		opts   Options
		want   []entry
	}{
		{
			name: "file scope with a schema: one JSON answer per file",
			opts: Options{HasSchema: true}, chunks: cs,
			want: []entry{{"a", "json", `{"x":1}`, false}, {"empty", "json", "null", false},
				{"failed", "json", "null", true}, {"blank", "json", "null", false}},
		},
		{
			name:   "file scope without a schema: an empty text answer",
			chunks: cs,
			want: []entry{{"a", "json", `{"x":1}`, false}, {"empty", "text", "", false},
				{"failed", "text", "", true}, {"blank", "text", "", false}},
		},
		{
			name: "a forced format is the empty file's format",
			opts: Options{Format: FormatMarkdown}, chunks: cs[1:2],
			want: []entry{{"empty", "markdown", "", false}},
		},
		{
			name: "job scope: files without text add nothing",
			opts: Options{Scope: ScopeJob, HasSchema: true}, chunks: cs,
			want: []entry{{"", "json", `{"x":1}`, true}},
		},
		{
			name: "job scope with no file holding text: one empty answer",
			opts: Options{Scope: ScopeJob, HasSchema: true}, chunks: []Chunk{cs[1], cs[3]},
			want: []entry{{"", "json", "null", false}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as, err := Merge(tt.chunks, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []entry
			for _, a := range as {
				checkAnswer(t, a)
				got = append(got, entry{a.File, a.Format, a.Content, a.MergeIncomplete})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("answers\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

func TestFormatOverridesDetection(t *testing.T) {
	a := mergeOne(t, Options{Format: FormatText}, chunks("f", `{"a":1}`, `{"a":2}`))
	if a.Format != FormatText || a.Content != "{\"a\":1}\n\n{\"a\":2}" || len(a.Conflicts) != 0 {
		t.Errorf("%+v", a)
	}
}

func TestScopes(t *testing.T) {
	cs := []Chunk{
		{File: "a", Index: 0, Content: `{"x":1}`},
		{File: "a", Index: 1, Content: `{"y":1}`},
		{File: "b", Index: 0, Content: `{"x":2}`},
	}
	t.Run("file scope gives one answer per file, in order", func(t *testing.T) {
		as, err := Merge(cs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(as) != 2 || as[0].File != "a" || as[1].File != "b" || as[0].Content != `{"x":1,"y":1}` || as[1].Content != `{"x":2}` {
			t.Errorf("%+v", as)
		}
		if len(as[0].Conflicts)+len(as[1].Conflicts) != 0 {
			t.Errorf("files conflict with each other at file scope")
		}
	})
	t.Run("job scope gives one answer without a file", func(t *testing.T) {
		a := mergeOne(t, Options{Scope: ScopeJob}, cs)
		if a.File != "" || a.Content != `{"x":1,"y":1}` || len(a.Conflicts) != 1 || a.Conflicts[0].Sources[1] != (ChunkRef{"b", 0}) {
			t.Errorf("%+v", a)
		}
	})
	t.Run("a file listed twice is two files", func(t *testing.T) {
		twice := []Chunk{
			{File: "u", FileIndex: 0, Index: 0, Content: `{"x":1}`},
			{File: "u", FileIndex: 0, Index: 1, Content: `{"y":1}`},
			{File: "u", FileIndex: 1, Index: 0, Content: `{"x":1}`},
			{File: "u", FileIndex: 1, Index: 1, Content: `{"y":1}`},
		}
		as, err := Merge(twice, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(as) != 2 || as[0].File != "u" || as[1].File != "u" || as[0].Content != `{"x":1,"y":1}` || as[1].Content != as[0].Content {
			t.Errorf("%+v", as)
		}
		if a := mergeOne(t, Options{Scope: ScopeJob}, twice); a.Content != `{"x":1,"y":1}` || a.MergeIncomplete {
			t.Errorf("job scope: %+v", a)
		}
	})
	t.Run("no chunks give no answers", func(t *testing.T) {
		for _, s := range []Scope{ScopeFile, ScopeJob} {
			if as, err := Merge(nil, Options{Scope: s}); err != nil || len(as) != 0 {
				t.Errorf("scope %d: %v, %v", s, as, err)
			}
		}
	})
}

func TestMergeRejectsCallerMistakes(t *testing.T) {
	tests := []struct {
		name   string
		chunks []Chunk
		opts   Options
		err    error
	}{
		{"unknown format", nil, Options{Format: "yaml"}, ErrOption},
		{"unknown scope", nil, Options{Scope: 7}, ErrOption},
		{"unknown policy", nil, Options{Policy: 7}, ErrOption},
		{"too many dedupeBy names", nil, Options{DedupeBy: make([]string, 33)}, ErrOption},
		{"indexes going back", []Chunk{{File: "a", Index: 1}, {File: "a", Index: 0}}, Options{}, ErrOrder},
		{"a repeated index", []Chunk{{File: "a", Index: 1}, {File: "a", Index: 1}}, Options{}, ErrOrder},
		{"files interleaved", []Chunk{{File: "a"}, {File: "b"}, {File: "a", Index: 1}}, Options{}, ErrOrder},
		{"listings of one file interleaved", []Chunk{{File: "a"}, {File: "a", FileIndex: 1}, {File: "a", Index: 1}}, Options{}, ErrOrder},
		{"negative index", []Chunk{{File: "a", Index: -1}}, Options{}, ErrOrder},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Merge(tt.chunks, tt.opts); !errors.Is(err, tt.err) {
				t.Errorf("error %v, want %v", err, tt.err)
			}
		})
	}
}

func TestParseEnumNames(t *testing.T) {
	for name, want := range map[string]Scope{"": ScopeFile, "MERGE_SCOPE_UNSPECIFIED": ScopeFile, "MERGE_SCOPE_FILE": ScopeFile, "MERGE_SCOPE_JOB": ScopeJob} {
		if got, err := ParseScope(name); got != want || err != nil {
			t.Errorf("ParseScope(%q) = %v, %v", name, got, err)
		}
	}
	for name, want := range map[string]Policy{"": FirstNonNull, "MERGE_CONFLICT_POLICY_UNSPECIFIED": FirstNonNull,
		"MERGE_CONFLICT_POLICY_FIRST_NON_NULL": FirstNonNull, "MERGE_CONFLICT_POLICY_MAJORITY": Majority} {
		if got, err := ParsePolicy(name); got != want || err != nil {
			t.Errorf("ParsePolicy(%q) = %v, %v", name, got, err)
		}
	}
	for name, want := range map[string]string{"": "", "MERGE_FORMAT_UNSPECIFIED": "", "MERGE_FORMAT_AUTO": "",
		"MERGE_FORMAT_JSON": FormatJSON, "MERGE_FORMAT_XML": FormatXML, "MERGE_FORMAT_HTML": FormatHTML,
		"MERGE_FORMAT_MARKDOWN": FormatMarkdown, "MERGE_FORMAT_TEXT": FormatText} {
		if got, err := ParseFormat(name); got != want || err != nil {
			t.Errorf("ParseFormat(%q) = %q, %v", name, got, err)
		}
	}
	if _, err := ParseScope("MERGE_SCOPE_PAGE"); !errors.Is(err, ErrOption) {
		t.Errorf("unknown scope: %v", err)
	}
	if _, err := ParsePolicy("LAST"); !errors.Is(err, ErrOption) {
		t.Errorf("unknown policy: %v", err)
	}
	if _, err := ParseFormat("json"); !errors.Is(err, ErrOption) {
		t.Errorf("lowercase format name: %v", err)
	}
}
