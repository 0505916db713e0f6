package merge_test

import (
	"fmt"

	"github.com/docjobs/docjobs/internal/merge"
)

func show(as []merge.Answer, err error) {
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range as {
		fmt.Printf("file=%q format=%s\n%s\n", a.File, a.Format, a.Content)
		fmt.Printf("technical=%d content=%d incomplete=%v\n", a.DedupeRemovedTechnical, a.DedupeRemovedContent, a.MergeIncomplete)
		for _, c := range a.Conflicts {
			fmt.Printf("conflict %s: %v from %v\n", c.Field, c.Values, c.Sources)
		}
		for _, c := range a.IncompleteChunks {
			fmt.Printf("incomplete %s#%d: %s\n", c.File, c.Index, c.Reason)
		}
	}
}

// Three chunks of one invoice. Chunk 1 repeats the B2 line (the block the
// chunker overlapped), chunk 2 repeats C3; the total is null until the
// last chunk sees it; the currency is read two ways.
func ExampleMerge_firstNonNull() {
	show(merge.Merge([]merge.Chunk{
		{File: "inv.pdf", Index: 0, Content: `{"number":"INV-7","currency":"EUR","lines":[{"sku":"A1","qty":2},{"sku":"B2","qty":1}]}`},
		{File: "inv.pdf", Index: 1, Content: `{"number":"INV-7","currency":"USD","total":null,"lines":[{"sku":"B2","qty":1},{"sku":"C3","qty":5}]}`},
		{File: "inv.pdf", Index: 2, Content: `{"currency":"USD","total":41.50,"lines":[{"qty":5,"sku":"C3"}]}`},
	}, merge.Options{HasSchema: true}))
	// Output:
	// file="inv.pdf" format=json
	// {"number":"INV-7","currency":"EUR","lines":[{"sku":"A1","qty":2},{"sku":"B2","qty":1},{"sku":"C3","qty":5}],"total":41.50}
	// technical=2 content=0 incomplete=false
	// conflict currency: ["EUR" "USD"] from [{inv.pdf 0} {inv.pdf 1}]
}

func ExampleMerge_majority() {
	show(merge.Merge([]merge.Chunk{
		{File: "inv.pdf", Index: 0, Content: `{"currency":"EUR"}`},
		{File: "inv.pdf", Index: 1, Content: `{"currency":"USD"}`},
		{File: "inv.pdf", Index: 2, Content: `{"currency":"USD"}`},
	}, merge.Options{HasSchema: true, Policy: merge.Majority}))
	// Output:
	// file="inv.pdf" format=json
	// {"currency":"USD"}
	// technical=0 content=0 incomplete=false
	// conflict currency: ["USD" "EUR"] from [{inv.pdf 1} {inv.pdf 0}]
}

// Two files list customers; C2 appears in both, with a phone number only
// in the second file. At scope JOB with dedupeBy ["id"] it is one record.
func ExampleMerge_dedupeBy() {
	show(merge.Merge([]merge.Chunk{
		{File: "jan.csv", Index: 0, Content: `[{"id":"C1","name":"Ada"},{"id":"C2","name":"Bo","phone":null}]`},
		{File: "feb.csv", Index: 0, Content: `[{"id":"C2","name":"Bo","phone":"555-0101"},{"id":"C3","name":"Cy"}]`},
	}, merge.Options{Scope: merge.ScopeJob, HasSchema: true, DedupeBy: []string{"id"}}))
	// Output:
	// file="" format=json
	// [{"id":"C1","name":"Ada"},{"id":"C2","name":"Bo","phone":"555-0101"},{"id":"C3","name":"Cy"}]
	// technical=0 content=1 incomplete=false
}

// The second chunk's answer is cut off: it is left out of the JSON and
// named, and the merged content is still valid JSON.
func ExampleMerge_incomplete() {
	show(merge.Merge([]merge.Chunk{
		{File: "a.pdf", Index: 0, Content: `{"items":[1,2]}`},
		{File: "a.pdf", Index: 1, Content: `{"items":[2,3`},
		{File: "a.pdf", Index: 2, Content: `{"items":[4]}`, Failed: true},
	}, merge.Options{HasSchema: true}))
	// Output:
	// file="a.pdf" format=json
	// {"items":[1,2]}
	// technical=0 content=0 incomplete=true
	// incomplete a.pdf#1: not valid JSON: unexpected end of JSON input
	// incomplete a.pdf#2: the chunk has no answer: its model call or its file's recognition failed
}

// A markdown table split by the chunker: the header it repeated and the
// overlapped row appear once.
func ExampleMerge_markdown() {
	show(merge.Merge([]merge.Chunk{
		{File: "t.docx", Index: 0, Content: "## Stock\n\n| sku | qty |\n|---|---|\n| A1 | 2 |\n| B2 | 1 |"},
		{File: "t.docx", Index: 1, Content: "| sku | qty |\n|---|---|\n| B2 | 1 |\n| C3 | 5 |"},
	}, merge.Options{}))
	// Output:
	// file="t.docx" format=markdown
	// ## Stock
	//
	// | sku | qty |
	// |---|---|
	// | A1 | 2 |
	// | B2 | 1 |
	// | C3 | 5 |
	// technical=1 content=0 incomplete=false
}

// An invoice whose lines continue over three chunks, with dedupeBy
// ["number"]: one INV-1 with every line, the lines the overlapped blocks
// repeated (B2, D4) once.
func ExampleMerge_recordSpanningChunks() {
	show(merge.Merge([]merge.Chunk{
		{File: "inv.pdf", Index: 0, Content: `{"invoices":[{"number":"INV-1","lines":[{"sku":"A1"},{"sku":"B2"}]}]}`},
		{File: "inv.pdf", Index: 1, Content: `{"invoices":[{"number":"INV-1","lines":[{"sku":"B2"},{"sku":"C3"},{"sku":"D4"}]}]}`},
		{File: "inv.pdf", Index: 2, Content: `{"invoices":[{"number":"INV-1","lines":[{"sku":"D4"},{"sku":"E5"}]},{"number":"INV-2","lines":[{"sku":"Z9"}]}]}`},
	}, merge.Options{HasSchema: true, DedupeBy: []string{"number"}}))
	// Output:
	// file="inv.pdf" format=json
	// {"invoices":[{"number":"INV-1","lines":[{"sku":"A1"},{"sku":"B2"},{"sku":"C3"},{"sku":"D4"},{"sku":"E5"}]},{"number":"INV-2","lines":[{"sku":"Z9"}]}]}
	// technical=2 content=2 incomplete=false
}

// A strict schema makes the model write "" and 0 where a chunk does not
// show a field: "" is absent, 0 is a value.
func ExampleMerge_placeholders() {
	show(merge.Merge([]merge.Chunk{
		{File: "inv.pdf", Index: 0, Content: `{"number":"","total":0}`},
		{File: "inv.pdf", Index: 1, Content: `{"number":"INV-7","total":0}`},
		{File: "inv.pdf", Index: 2, Content: `{"number":"","total":41.5}`},
	}, merge.Options{HasSchema: true}))
	// Output:
	// file="inv.pdf" format=json
	// {"number":"INV-7","total":0}
	// technical=0 content=0 incomplete=false
	// conflict total: [0 41.5] from [{inv.pdf 0} {inv.pdf 2}]
}

// One answer's root is an object where the others are arrays: it has no
// place to merge into, so it is left out and named.
func ExampleMerge_rootOfAnotherShape() {
	show(merge.Merge([]merge.Chunk{
		{File: "r.txt", Index: 0, Content: `[{"id":"C1"},{"id":"C2"}]`},
		{File: "r.txt", Index: 1, Content: `{"records":[{"id":"C2"},{"id":"C3"}],"note":"page 2"}`},
		{File: "r.txt", Index: 2, Content: `[{"id":"C3"},{"id":"C4"}]`},
	}, merge.Options{}))
	// Output:
	// file="r.txt" format=json
	// [{"id":"C1"},{"id":"C2"},{"id":"C3"},{"id":"C4"}]
	// technical=0 content=0 incomplete=true
	// incomplete r.txt#1: its root is an object where most chunks' roots are an array
}
