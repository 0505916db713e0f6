package merge

import (
	"reflect"
	"testing"
)

func TestJoinText(t *testing.T) {
	tests := []struct {
		name    string
		format  string
		chunks  []Chunk
		want    string
		removed int
	}{
		{
			name:    "the paragraph repeated at the boundary appears once",
			format:  FormatMarkdown,
			chunks:  chunks("f", "# Title\n\nOne.\n\nTwo.", "Two.\n\nThree."),
			want:    "# Title\n\nOne.\n\nTwo.\n\nThree.",
			removed: 1,
		},
		{
			name:    "spacing differences do not hide the repeat",
			format:  FormatText,
			chunks:  chunks("f", "a b\nc\n\n", "\n\n  a  b\nc  \n\nd\r\n"),
			want:    "a b\nc\n\nd",
			removed: 1,
		},
		{
			name:    "a table split with its header repeated becomes one table",
			format:  FormatMarkdown,
			chunks:  chunks("f", "Intro.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |", "|a|b|\n|:-|-:|\n| 3 | 4 |\n| 5 | 6 |\n\nAfter."),
			want:    "Intro.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n| 5 | 6 |\n\nAfter.",
			removed: 1,
		},
		{
			name:   "rows continue the table without the overlap row too",
			format: FormatMarkdown,
			chunks: []Chunk{{File: "f", Index: 0, Content: "| a |\n|---|\n| 1 |"},
				{File: "f", Index: 1, Content: "| a |\n|---|\n| 2 |", NoOverlap: true}},
			want: "| a |\n|---|\n| 1 |\n| 2 |",
		},
		{
			name:    "rows given without the header join the table",
			format:  FormatMarkdown,
			chunks:  chunks("f", "| a |\n|---|\n| 1 |\n| 2 |", "| 2 |\n| 3 |"),
			want:    "| a |\n|---|\n| 1 |\n| 2 |\n| 3 |",
			removed: 1,
		},
		{
			name:   "a table with another header is another table",
			format: FormatMarkdown,
			chunks: chunks("f", "| a |\n|---|\n| 1 |", "| b |\n|---|\n| 2 |"),
			want:   "| a |\n|---|\n| 1 |\n\n| b |\n|---|\n| 2 |",
		},
		{
			name:   "a header repeated after an answer of rows without one is dropped, and the overlap row with it",
			format: FormatMarkdown,
			chunks: chunks("f", "| sku | qty |\n|---|---|\n| S1 | 1 |\n| S2 | 2 |", "| S2 | 2 |\n| S3 | 3 |",
				"|sku|qty|\n|-|-|\n| S3 | 3 |\n| S4 | 4 |"),
			want:    "| sku | qty |\n|---|---|\n| S1 | 1 |\n| S2 | 2 |\n| S3 | 3 |\n| S4 | 4 |",
			removed: 2,
		},
		{
			name:   "plain text drops a header repeated after rows without one the same way",
			format: FormatText,
			chunks: chunks("f", "| sku | qty |\n|---|---|\n| S1 | 1 |", "| S1 | 1 |\n| S2 | 2 |", "| S3 | 3 |",
				"| sku | qty |\n|---|---|\n| S3 | 3 |\n| S4 | 4 |"),
			want:    "| sku | qty |\n|---|---|\n| S1 | 1 |\n| S2 | 2 |\n| S3 | 3 |\n| S4 | 4 |",
			removed: 2,
		},
		{
			name:    "rows without a header after a paragraph do not inherit the table above",
			format:  FormatMarkdown,
			chunks:  chunks("f", "| a |\n|---|\n| 1 |\n\nNote.", "Note.\n\n| 2 |", "| a |\n|---|\n| 2 |\n| 3 |"),
			want:    "| a |\n|---|\n| 1 |\n\nNote.\n\n| 2 |\n\n| a |\n|---|\n| 3 |",
			removed: 2,
		},
		{
			name:    "the overlap row after a header that stays is removed",
			format:  FormatMarkdown,
			chunks:  chunks("f", "| a |\n|---|\n| 1 |\n| 2 |", "| b |\n|---|\n| 2 |\n| 3 |\n\nAfter."),
			want:    "| a |\n|---|\n| 1 |\n| 2 |\n\n| b |\n|---|\n| 3 |\n\nAfter.",
			removed: 1,
		},
		{
			name:    "a header whose rows all repeat the tail goes with them",
			format:  FormatMarkdown,
			chunks:  chunks("f", "| a |\n|---|\n| 1 |\n| 2 |", "| b |\n|---|\n| 2 |"),
			want:    "| a |\n|---|\n| 1 |\n| 2 |",
			removed: 1,
		},
		{
			name:   "a part of a paragraph is not a repeat",
			format: FormatText,
			chunks: chunks("f", "First line\nsecond line", "second line\nthird line"),
			want:   "First line\nsecond line\n\nsecond line\nthird line",
		},
		{
			name:   "rules and punctuation alone are not a repeat",
			format: FormatMarkdown,
			chunks: chunks("f", "A\n\n---", "---\n\nB"),
			want:   "A\n\n---\n\n---\n\nB",
		},
		{
			name:    "list items are units of their own",
			format:  FormatMarkdown,
			chunks:  chunks("f", "- a\n- b\n  more b", "- b\n  more b\n- c"),
			want:    "- a\n- b\n  more b\n- c",
			removed: 1,
		},
		{
			name:    "a fenced block is one unit, blank lines and all",
			format:  FormatMarkdown,
			chunks:  chunks("f", "x\n\n```\ncode\n\nmore\n```", "```\ncode\n\nmore\n```\n\ny"),
			want:    "x\n\n```\ncode\n\nmore\n```\n\ny",
			removed: 1,
		},
		{
			name:   "no repeat removed where the chunker dropped the overlap",
			format: FormatText,
			chunks: []Chunk{{File: "f", Index: 0, Content: "A.\n\nB."}, {File: "f", Index: 1, Content: "B.\n\nC.", NoOverlap: true}},
			want:   "A.\n\nB.\n\nB.\n\nC.",
		},
		{
			name:   "files are joined but not compared",
			format: FormatText,
			chunks: []Chunk{{File: "a", Index: 0, Content: "A.\n\nB."}, {File: "b", Index: 0, Content: "B.\n\nC."}},
			want:   "A.\n\nB.\n\nB.\n\nC.",
		},
		{
			name:    "an answer that is all repeat adds nothing",
			format:  FormatText,
			chunks:  chunks("f", "A.\n\nB.", "B.", "B.\n\nC."),
			want:    "A.\n\nB.\n\nC.",
			removed: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := mergeOne(t, Options{Format: tt.format, Scope: ScopeJob}, tt.chunks)
			if a.Content != tt.want {
				t.Errorf("content\n%q\nwant\n%q", a.Content, tt.want)
			}
			if a.DedupeRemovedTechnical != tt.removed {
				t.Errorf("removed %d, want %d", a.DedupeRemovedTechnical, tt.removed)
			}
			if a.MergeIncomplete {
				t.Errorf("incomplete: %+v", a.IncompleteChunks)
			}
		})
	}
}

func TestJoinTextAppendsFailedChunksUnchanged(t *testing.T) {
	cs := []Chunk{
		{File: "f", Index: 0, Content: "A.\n\nB."},
		{File: "f", Index: 1, Content: "B.\n\npartial answ", Failed: true},
		{File: "f", Index: 2, Content: "B.\n\nC."},
	}
	a := mergeOne(t, Options{Format: FormatMarkdown}, cs)
	if want := "A.\n\nB.\n\nB.\n\npartial answ\n\nB.\n\nC."; a.Content != want {
		t.Errorf("content %q, want %q", a.Content, want)
	}
	if !reflect.DeepEqual(refs(a), []ChunkRef{{"f", 1}}) || a.DedupeRemovedTechnical != 0 {
		t.Errorf("incomplete %+v, removed %d", a.IncompleteChunks, a.DedupeRemovedTechnical)
	}
}

// TestJoinTextComparesRowsAfterAHeaderThatStays: after a chunk that could
// not be merged, the table rows that follow have no header above them, so
// the next answer's header stays; the overlap row behind it is still the
// previous answer's tail and goes (audit-merge2 F1).
func TestJoinTextComparesRowsAfterAHeaderThatStays(t *testing.T) {
	cs := []Chunk{
		{File: "f", Index: 0, Content: "| sku | qty |\n|---|---|\n| S1 | 1 |\n| S2 | 2 |"},
		{File: "f", Index: 1, Failed: true},
		{File: "f", Index: 2, Content: "| S3 | 3 |\n| S4 | 4 |"},
		{File: "f", Index: 3, Content: "| sku | qty |\n|---|---|\n| S4 | 4 |\n| S5 | 5 |"},
	}
	for _, format := range []string{FormatMarkdown, FormatText} {
		a := mergeOne(t, Options{Format: format}, cs)
		want := "| sku | qty |\n|---|---|\n| S1 | 1 |\n| S2 | 2 |\n\n| S3 | 3 |\n| S4 | 4 |\n\n| sku | qty |\n|---|---|\n| S5 | 5 |"
		if a.Content != want {
			t.Errorf("%s: content\n%s\nwant\n%s", format, a.Content, want)
		}
		if !reflect.DeepEqual(refs(a), []ChunkRef{{"f", 1}}) || a.DedupeRemovedTechnical != 1 {
			t.Errorf("%s: incomplete %+v, removed %d, want f#1 and 1", format, a.IncompleteChunks, a.DedupeRemovedTechnical)
		}
	}
}

// TestJoinTextKeepsAHeaderThatWentWithRowsThatRepeated: an answer whose
// other table's header went because every row behind it repeated the rows
// above adds nothing, so the next answer's overlap is compared with its
// rows only. Compared with the header too, the next answer's repeat of
// that header was taken for overlap: the header was in no merged content
// and its new rows joined the table above.
func TestJoinTextKeepsAHeaderThatWentWithRowsThatRepeated(t *testing.T) {
	cs := chunks("f",
		"| sku |\n|---|\n| S1 |\n| S2 |",
		"| qty |\n|---|\n| S2 |",
		"| qty |\n|---|\n| S2 |\n| 9 |")
	for _, format := range []string{FormatMarkdown, FormatText} {
		a := mergeOne(t, Options{Format: format}, cs)
		want := "| sku |\n|---|\n| S1 |\n| S2 |\n\n| qty |\n|---|\n| 9 |"
		if a.Content != want {
			t.Errorf("%s: content\n%s\nwant\n%s", format, a.Content, want)
		}
		if a.DedupeRemovedTechnical != 2 || a.MergeIncomplete {
			t.Errorf("%s: removed %d, want 2; incomplete %+v", format, a.DedupeRemovedTechnical, a.IncompleteChunks)
		}
	}
}

// TestJoinTextComparesOnlyTheRowsBehindAHeader: the run searched behind
// a header that stays is its table's rows. A table of no rows followed by
// what repeats the answer above (a list item, a paragraph) stays with it,
// as in HTML; it went, the header with the repeat after it.
func TestJoinTextComparesOnlyTheRowsBehindAHeader(t *testing.T) {
	tests := []struct {
		name, want string
		chunks     []Chunk
	}{
		{
			name:   "a list item after a table of no rows",
			chunks: chunks("f", "p1\n\n- i0", "| K |\n|---|\n\n- i0"),
			want:   "p1\n\n- i0\n\n| K |\n|---|\n\n- i0",
		},
		{
			name:   "a paragraph after a table of no rows",
			chunks: chunks("f", "p1\n\nSee the table.", "| K |\n|---|\n\nSee the table.\n\nmore"),
			want:   "p1\n\nSee the table.\n\n| K |\n|---|\n\nSee the table.\n\nmore",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := mergeOne(t, Options{Format: FormatMarkdown}, tt.chunks)
			if a.Content != tt.want || a.DedupeRemovedTechnical != 0 {
				t.Errorf("content %q, removed %d\nwant %q, removed 0", a.Content, a.DedupeRemovedTechnical, tt.want)
			}
		})
	}
}

// TestTechnicalDedupeIsGroundedInEveryFormat: with the overlap text, a run
// repeated at a boundary is removed only if the text accounts for it, in
// markdown, text, HTML and XML as in JSON; equal records on both sides of
// a block that holds none are two records.
func TestTechnicalDedupeIsGroundedInEveryFormat(t *testing.T) {
	const noRecord = "Record 4: customer C4, item SKU-4, qty 3."
	const thead = `<thead><tr><th>Item</th></tr></thead>`
	grounded := func(overlap string, answers ...string) []Chunk {
		cs := chunks("f", answers...)
		for i := 1; i < len(cs); i++ {
			cs[i].Overlap = overlap
		}
		return cs
	}
	tests := []struct {
		name    string
		format  string
		chunks  []Chunk
		want    string
		removed int
	}{
		{
			name:   "markdown rows equal across a record-less overlap both stay",
			format: FormatMarkdown,
			chunks: grounded(noRecord, "| Tea | 1.80 |\n| Coffee | 2.50 |", "| Coffee | 2.50 |\n| Bagel | 3.10 |"),
			want:   "| Tea | 1.80 |\n| Coffee | 2.50 |\n| Coffee | 2.50 |\n| Bagel | 3.10 |",
		},
		{
			name:    "a markdown row the overlap text holds is removed",
			format:  FormatMarkdown,
			chunks:  grounded("Coffee ..... $2.50\n", "| Tea | 1.80 |\n| Coffee | 2.50 |", "| Coffee | 2.50 |\n| Bagel | 3.10 |"),
			want:    "| Tea | 1.80 |\n| Coffee | 2.50 |\n| Bagel | 3.10 |",
			removed: 1,
		},
		{
			name:    "no more copies removed than the overlap text holds",
			format:  FormatMarkdown,
			chunks:  grounded("Coffee 2.50", "| Tea | 1.80 |\n| Coffee | 2.50 |\n| Coffee | 2.50 |", "| Coffee | 2.50 |\n| Coffee | 2.50 |\n| Bagel | 3.10 |"),
			want:    "| Tea | 1.80 |\n| Coffee | 2.50 |\n| Coffee | 2.50 |\n| Coffee | 2.50 |\n| Bagel | 3.10 |",
			removed: 1,
		},
		{
			name:   "text paragraphs equal across a record-less overlap both stay",
			format: FormatText,
			chunks: grounded(noRecord, "Invoice paid in full.", "Invoice paid in full.\n\nThank you."),
			want:   "Invoice paid in full.\n\nInvoice paid in full.\n\nThank you.",
		},
		{
			name:    "a text paragraph the overlap text holds is removed, thousands separators and all",
			format:  FormatText,
			chunks:  grounded("Total due: $1,250.00 by March", "Total due 1250.00 by March", "Total due 1250.00 by March\n\nEnd."),
			want:    "Total due 1250.00 by March\n\nEnd.",
			removed: 1,
		},
		{
			name:   "HTML elements equal across a record-less overlap both stay",
			format: FormatHTML,
			chunks: grounded(noRecord, `<p>Subtotal</p><p>Coffee 2.50</p>`, `<p>Coffee 2.50</p><p>Bagel</p>`),
			want:   `<p>Subtotal</p><p>Coffee 2.50</p><p>Coffee 2.50</p><p>Bagel</p>`,
		},
		{
			name:    "an HTML element the overlap text holds is removed",
			format:  FormatHTML,
			chunks:  grounded("<p>Coffee &mdash; 2.50</p>", `<p>Subtotal</p><p>Coffee 2.50</p>`, `<p>Coffee 2.50</p><p>Bagel</p>`),
			want:    `<p>Subtotal</p><p>Coffee 2.50</p><p>Bagel</p>`,
			removed: 1,
		},
		{
			name:   "a continued HTML table keeps an equal row the overlap text does not hold",
			format: FormatHTML,
			chunks: grounded(noRecord,
				`<table>`+thead+`<tbody><tr><td>Tea</td></tr><tr><td>Coffee</td></tr></tbody></table>`,
				`<table>`+thead+`<tbody><tr><td>Coffee</td></tr><tr><td>Bagel</td></tr></tbody></table>`),
			want: `<table>` + thead + `<tbody><tr><td>Tea</td></tr><tr><td>Coffee</td></tr><tr><td>Coffee</td></tr><tr><td>Bagel</td></tr></tbody></table>`,
		},
		{
			name:   "a first row of data cells equal to the table's is a record, not a repeated header",
			format: FormatHTML,
			chunks: grounded(noRecord, `<table><tr><td>Coffee</td></tr></table>`, `<table><tr><td>Coffee</td></tr><tr><td>Bagel</td></tr></table>`),
			want:   `<table><tbody><tr><td>Coffee</td></tr><tr><td>Coffee</td></tr><tr><td>Bagel</td></tr></tbody></table>`,
		},
		{
			name:   "an HTML row behind a header that stays is kept when the overlap text does not hold it",
			format: FormatHTML,
			chunks: grounded(noRecord,
				`<table>`+thead+`<tbody><tr><td>Tea</td></tr><tr><td>Coffee</td></tr></tbody></table>`,
				`<table><thead><tr><th>Drink</th></tr></thead><tbody><tr><td>Coffee</td></tr><tr><td>Bagel</td></tr></tbody></table>`),
			want: `<table>` + thead + `<tbody><tr><td>Tea</td></tr><tr><td>Coffee</td></tr></tbody></table>` +
				`<table><thead><tr><th>Drink</th></tr></thead><tbody><tr><td>Coffee</td></tr><tr><td>Bagel</td></tr></tbody></table>`,
		},
		{
			name:   "an HTML row behind a header that stays is removed when the overlap text holds it",
			format: FormatHTML,
			chunks: grounded("Coffee 2.50",
				`<table>`+thead+`<tbody><tr><td>Tea</td></tr><tr><td>Coffee</td></tr></tbody></table>`,
				`<table><thead><tr><th>Drink</th></tr></thead><tbody><tr><td>Coffee</td></tr><tr><td>Bagel</td></tr></tbody></table>`),
			want: `<table>` + thead + `<tbody><tr><td>Tea</td></tr><tr><td>Coffee</td></tr></tbody></table>` +
				`<table><thead><tr><th>Drink</th></tr></thead><tbody><tr><td>Bagel</td></tr></tbody></table>`,
			removed: 1,
		},
		{
			name:   "XML children equal across a record-less overlap both stay",
			format: FormatXML,
			chunks: grounded(noRecord, `<items><item>Coffee 2.50</item></items>`, `<items><item>Coffee 2.50</item><item>Bagel</item></items>`),
			want:   `<items><item>Coffee 2.50</item><item>Coffee 2.50</item><item>Bagel</item></items>`,
		},
		{
			name:    "an XML child whose attributes the overlap text holds is removed",
			format:  FormatXML,
			chunks:  grounded(noRecord, `<items><item sku="SKU-4" qty="3"/></items>`, `<items><item qty="3" sku="SKU-4"/><item sku="SKU-5"/></items>`),
			want:    `<items><item sku="SKU-4" qty="3"/><item sku="SKU-5"/></items>`,
			removed: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := mergeOne(t, Options{Format: tt.format}, tt.chunks)
			if a.Content != tt.want {
				t.Errorf("content\n%q\nwant\n%q", a.Content, tt.want)
			}
			if a.DedupeRemovedTechnical != tt.removed || a.MergeIncomplete {
				t.Errorf("removed %d (want %d), incomplete %+v", a.DedupeRemovedTechnical, tt.removed, a.IncompleteChunks)
			}
		})
	}
}
