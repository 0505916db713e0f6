package merge

import (
	"encoding/xml"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// checkWellFormedHTML requires every start tag (but void ones) to be
// closed in order.
func checkWellFormedHTML(t testing.TB, s string) {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(s))
	var stack []string
	for {
		switch z.Next() {
		case html.ErrorToken:
			if z.Err() != io.EOF {
				t.Fatal(z.Err())
			}
			if len(stack) > 0 {
				t.Fatalf("unclosed %v in %s", stack, s)
			}
			return
		case html.StartTagToken:
			name, _ := z.TagName()
			if !voidHTML[string(name)] {
				stack = append(stack, string(name))
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			if len(stack) == 0 || stack[len(stack)-1] != string(name) {
				t.Fatalf("stray </%s> (open %v) in %s", name, stack, s)
			}
			stack = stack[:len(stack)-1]
		}
	}
}

var voidHTML = map[string]bool{"br": true, "hr": true, "img": true, "meta": true, "link": true, "input": true, "col": true}

func checkWellFormedXML(t testing.TB, s string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(s))
	roots, depth := 0, 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, s)
		}
		switch tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
			}
			depth++
		case xml.EndElement:
			depth--
		}
	}
	if roots != 1 {
		t.Fatalf("%d root elements in %s", roots, s)
	}
}

func TestMergeHTML(t *testing.T) {
	const thead = `<thead><tr><th>h</th></tr></thead>`
	tests := []struct {
		name    string
		chunks  []Chunk
		want    string
		removed int
	}{
		{
			name:    "the element repeated at the boundary appears once",
			chunks:  chunks("f", `<h1>T</h1><p>one</p><p>two</p>`, `<p>two</p><p>three</p>`),
			want:    `<h1>T</h1><p>one</p><p>two</p><p>three</p>`,
			removed: 1,
		},
		{
			name: "a table split with its thead repeated is one table",
			chunks: chunks("f",
				`<table>`+thead+`<tbody><tr><td>1</td></tr><tr><td>2</td></tr></tbody></table>`,
				`<table>`+thead+`<tbody><tr><td>2</td></tr><tr><td>3</td></tr></tbody></table><p>after</p>`),
			want:    `<table>` + thead + `<tbody><tr><td>1</td></tr><tr><td>2</td></tr><tr><td>3</td></tr></tbody></table><p>after</p>`,
			removed: 1,
		},
		{
			name: "a table whose header is its first row",
			chunks: chunks("f",
				`<table><tr><th>h</th></tr><tr><td>1</td></tr></table>`,
				`<table><tr><th>h</th></tr><tr><td>1</td></tr><tr><td>2</td></tr></table>`),
			want:    `<table><tbody><tr><th>h</th></tr><tr><td>1</td></tr><tr><td>2</td></tr></tbody></table>`,
			removed: 1,
		},
		{
			name: "a split section continues, its overlap child once",
			chunks: chunks("f",
				`<section class="s"><h2>A</h2><p>x</p><p>y</p></section>`,
				`<section class="s"><p>y</p><p>z</p></section>`),
			want:    `<section class="s"><h2>A</h2><p>x</p><p>y</p><p>z</p></section>`,
			removed: 1,
		},
		{
			name:   "paragraphs are never glued together",
			chunks: chunks("f", `<p>x</p>`, `<p>y</p>`),
			want:   `<p>x</p><p>y</p>`,
		},
		{
			name:   "containers with other attributes stay apart",
			chunks: chunks("f", `<div id="a"><p>x</p></div>`, `<div id="b"><p>y</p></div>`),
			want:   `<div id="a"><p>x</p></div><div id="b"><p>y</p></div>`,
		},
		{
			name: "whole documents give a whole document, head elements once",
			chunks: chunks("f",
				`<!DOCTYPE html><html><head><title>T</title></head><body><p>a</p><p>b</p></body></html>`,
				`<!DOCTYPE html><html><head><title>T</title><style>p{}</style></head><body><p>b</p><p>c</p></body></html>`),
			want:    `<!DOCTYPE html><html><head><title>T</title><style>p{}</style></head><body><p>a</p><p>b</p><p>c</p></body></html>`,
			removed: 1,
		},
		{
			name:   "text from two chunks is not glued together",
			chunks: chunks("f", "Total: 5", "Name: x"),
			want:   "Total: 5\nName: x",
		},
		{
			name:   "inline elements from two chunks are not glued together",
			chunks: chunks("f", "<b>Total</b>: <span>5</span>", "<b>Name</b>: x"),
			want:   "<b>Total</b>: <span>5</span>\n<b>Name</b>: x",
		},
		{
			name:   "the text of a continued container is not glued together",
			chunks: chunks("f", `<div class="c">Total: 5</div>`, `<div class="c">Name: x</div>`),
			want:   "<div class=\"c\">Total: 5\nName: x</div>",
		},
		{
			name: "a header repeated after an answer of rows without one is dropped, and the overlap row with it",
			chunks: chunks("f",
				`<table><tr><th>sku</th></tr><tr><td>S1</td></tr><tr><td>S2</td></tr></table>`,
				`<table><tr><td>S2</td></tr><tr><td>S3</td></tr></table>`,
				`<table><tr><th>sku</th></tr><tr><td>S3</td></tr><tr><td>S4</td></tr></table>`),
			want:    `<table><tbody><tr><th>sku</th></tr>` + rows("S1", "S2", "S3", "S4") + `</tbody></table>`,
			removed: 2,
		},
		{
			name: "a header written as a thead or as a row of th cells is the same header",
			chunks: chunks("f",
				`<table>`+thead+`<tbody>`+rows("1", "2")+`</tbody></table>`,
				`<table><tr><th>h</th></tr>`+rows("2", "3")+`</table>`),
			want:    `<table>` + thead + `<tbody>` + rows("1", "2", "3") + `</tbody></table>`,
			removed: 1,
		},
		{
			name: "a thead of two rows is not the header of one row",
			chunks: chunks("f",
				`<table><thead><tr><th>h</th></tr><tr><th>unit</th></tr></thead><tbody>`+rows("1")+`</tbody></table>`,
				`<table><tr><th>h</th></tr>`+rows("2")+`</table>`),
			want: `<table><thead><tr><th>h</th></tr><tr><th>unit</th></tr></thead><tbody>` + rows("1") + `</tbody></table>` +
				`<table><tbody><tr><th>h</th></tr>` + rows("2") + `</tbody></table>`,
		},
		{
			name: "a table with another header is another table",
			chunks: chunks("f",
				`<table><tr><th>a</th></tr>`+rows("1")+`</table>`,
				`<table><tr><th>b</th></tr>`+rows("2")+`</table>`),
			want: `<table><tbody><tr><th>a</th></tr>` + rows("1") + `</tbody></table>` +
				`<table><tbody><tr><th>b</th></tr>` + rows("2") + `</tbody></table>`,
		},
		{
			name: "the overlap row after a header that stays is removed",
			chunks: chunks("f",
				`<table><tr><th>a</th></tr>`+rows("1", "2")+`</table>`,
				`<table><tr><th>b</th></tr>`+rows("2", "3")+`</table><p>After</p>`),
			want: `<table><tbody><tr><th>a</th></tr>` + rows("1", "2") + `</tbody></table>` +
				`<table><tbody><tr><th>b</th></tr>` + rows("3") + `</tbody></table><p>After</p>`,
			removed: 1,
		},
		{
			name: "the overlap rows after a thead that stays are removed",
			chunks: chunks("f",
				`<table>`+thead+`<tbody>`+rows("1", "2", "3")+`</tbody></table>`,
				`<table><thead><tr><th>k</th></tr></thead><tbody>`+rows("2", "3", "4")+`</tbody></table>`),
			want: `<table>` + thead + `<tbody>` + rows("1", "2", "3") + `</tbody></table>` +
				`<table><thead><tr><th>k</th></tr></thead><tbody>` + rows("4") + `</tbody></table>`,
			removed: 2,
		},
		{
			name: "a header whose rows all repeat the tail goes with them",
			chunks: chunks("f",
				`<table><tr><th>a</th></tr>`+rows("1", "2")+`</table>`,
				`<table><thead><tr><th>b</th></tr></thead><tbody>`+rows("2")+`</tbody></table><p>After</p>`),
			want:    `<table><tbody><tr><th>a</th></tr>` + rows("1", "2") + `</tbody></table><p>After</p>`,
			removed: 1,
		},
		{
			name: "a table of only another header stays",
			chunks: chunks("f",
				`<table><tr><th>a</th></tr>`+rows("1")+`</table>`,
				`<table><thead><tr><th>b</th></tr></thead></table>`),
			want: `<table><tbody><tr><th>a</th></tr>` + rows("1") + `</tbody></table>` +
				`<table><thead><tr><th>b</th></tr></thead></table>`,
		},
		{
			name: "rows without a header after a paragraph do not inherit the table above",
			chunks: chunks("f",
				`<table><tr><th>a</th></tr>`+rows("1")+`</table><p>Note</p>`,
				`<p>Note</p><table>`+rows("2")+`</table>`,
				`<table><tr><th>a</th></tr>`+rows("2", "3")+`</table>`),
			want: `<table><tbody><tr><th>a</th></tr>` + rows("1") + `</tbody></table><p>Note</p>` +
				`<table><tbody>` + rows("2") + `</tbody></table><table><tbody><tr><th>a</th></tr>` + rows("3") + `</tbody></table>`,
			removed: 2,
		},
		{
			name: "rows after another header are not compared where the chunker dropped the overlap",
			chunks: []Chunk{{File: "f", Index: 0, Content: `<table><tr><th>a</th></tr>` + rows("1") + `</table>`},
				{File: "f", Index: 1, Content: `<table><tr><th>b</th></tr>` + rows("1") + `</table>`, NoOverlap: true}},
			want: `<table><tbody><tr><th>a</th></tr>` + rows("1") + `</tbody></table>` +
				`<table><tbody><tr><th>b</th></tr>` + rows("1") + `</tbody></table>`,
		},
		{
			name: "no overlap removed across files",
			chunks: []Chunk{{File: "a", Index: 0, Content: `<p>x</p>`},
				{File: "b", Index: 0, Content: `<p>x</p>`}},
			want: `<p>x</p><p>x</p>`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := mergeOne(t, Options{Format: FormatHTML, Scope: ScopeJob}, tt.chunks)
			if a.Content != tt.want {
				t.Errorf("content\n%s\nwant\n%s", a.Content, tt.want)
			}
			if a.DedupeRemovedTechnical != tt.removed || a.MergeIncomplete {
				t.Errorf("removed %d (want %d), incomplete %+v", a.DedupeRemovedTechnical, tt.removed, a.IncompleteChunks)
			}
			checkWellFormedHTML(t, a.Content)
		})
	}
}

// rows renders one-cell table rows.
func rows(cells ...string) string {
	var b strings.Builder
	for _, c := range cells {
		b.WriteString("<tr><td>" + c + "</td></tr>")
	}
	return b.String()
}

// TestMergeHTMLComparesRowsAfterAHeaderThatStays: after a chunk that could
// not be merged, the table that follows has no header, so the next
// answer's header stays and opens another table; the overlap row behind it
// is still the previous answer's last row and goes, as in markdown
// (audit-merge2 F1).
func TestMergeHTMLComparesRowsAfterAHeaderThatStays(t *testing.T) {
	const header = `<tr><th>sku</th></tr>`
	cs := []Chunk{
		{File: "f", Index: 0, Content: `<table>` + header + rows("S1", "S2") + `</table>`},
		{File: "f", Index: 1, Failed: true},
		{File: "f", Index: 2, Content: `<table>` + rows("S3", "S4") + `</table>`},
		{File: "f", Index: 3, Content: `<table>` + header + rows("S4", "S5") + `</table>`},
	}
	a := mergeOne(t, Options{Format: FormatHTML}, cs)
	want := `<table><tbody>` + header + rows("S1", "S2") + `</tbody></table><table><tbody>` + rows("S3", "S4") +
		`</tbody></table><table><tbody>` + header + rows("S5") + `</tbody></table>`
	if a.Content != want {
		t.Errorf("content\n%s\nwant\n%s", a.Content, want)
	}
	if !reflect.DeepEqual(refs(a), []ChunkRef{{"f", 1}}) || a.DedupeRemovedTechnical != 1 {
		t.Errorf("incomplete %+v, removed %d, want f#1 and 1", a.IncompleteChunks, a.DedupeRemovedTechnical)
	}
}

func TestMergeHTMLAppendsFailedChunks(t *testing.T) {
	cs := []Chunk{
		{File: "f", Index: 0, Content: `<p>a</p>`},
		{File: "f", Index: 1, Content: `<p>b</p><table><tr><td>trunc`, Failed: true},
		{File: "f", Index: 2, Content: `<p>c</p>`},
	}
	a := mergeOne(t, Options{Format: FormatHTML}, cs)
	if want := "<p>a</p><p>c</p>\n<p>b</p><table><tr><td>trunc"; a.Content != want {
		t.Errorf("content %q, want %q", a.Content, want)
	}
	if !reflect.DeepEqual(refs(a), []ChunkRef{{"f", 1}}) {
		t.Errorf("incomplete %+v", a.IncompleteChunks)
	}
}

// TestMergeHTMLGoesOnAfterAPlaintextElement: a parser reads everything
// after a <plaintext> start tag as its text, and html.Render ends there;
// what merging put after one (later chunks, the closing tags) must still
// be in the answer, as markup, so the element becomes a <pre> of the same
// text unless it ends the answer.
func TestMergeHTMLGoesOnAfterAPlaintextElement(t *testing.T) {
	tests := []struct {
		name   string
		chunks []Chunk
		want   string
	}{
		{"a whole document goes on after it", chunks("f",
			`<!DOCTYPE html><p>a</p>`, `<p>e</p><plaintext><p>f`, `<p>h</p>`),
			`<!DOCTYPE html><html><head></head><body><p>a</p><p>e</p><pre>&lt;p&gt;f</pre><p>h</p></body></html>`},
		{"a continued container goes on after it", chunks("f",
			`<div><p>a</p></div>`, `<div><plaintext>x & y</div>`, `<div><p>h</p></div>`),
			`<div><p>a</p><pre>x &amp; y&lt;/div&gt;</pre><p>h</p></div>`},
		{"later fragments go on after it", chunks("f",
			`<p>a</p>`, `<div><plaintext><b>f</b>`, `<p>h</p>`),
			`<p>a</p><div><pre>&lt;b&gt;f&lt;/b&gt;</pre></div><p>h</p>`},
		{"its attributes and first line break stay", chunks("f",
			`<p>a</p>`, "<plaintext class=\"c\">\nx", `<p>h</p>`),
			"<p>a</p><pre class=\"c\">\n\nx</pre><p>h</p>"},
		{"a chunk appended as it is goes on after it", []Chunk{
			{File: "f", Index: 0, Content: `<p>a</p>`},
			{File: "f", Index: 1, Content: `<plaintext>x`},
			{File: "f", Index: 2, Content: `<p>b</p>`, Failed: true}},
			"<p>a</p><pre>x</pre>\n<p>b</p>"},
		{"one that ends the answer stays as written", chunks("f",
			`<p>a</p>`, `<p>e</p><plaintext>x & y`),
			`<p>a</p><p>e</p><plaintext>x & y`},
		{"one inside MathML is a pre even at the end", chunks("f",
			`<p>a</p>`, `<p>e</p><math><mtext><plaintext>x &lt; y`),
			`<p>a</p><p>e</p><math><mtext><pre>x &amp;lt; y</pre></mtext></math>`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := mergeOne(t, Options{Format: FormatHTML}, tc.chunks)
			if a.Content != tc.want {
				t.Fatalf("content\n%q\nwant\n%q", a.Content, tc.want)
			}
			checkReadsBack(t, a.Content)
		})
	}
}

// checkReadsBack requires s to parse into the tree it was rendered from:
// rendered again, it is the same text.
func checkReadsBack(t *testing.T, s string) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if fullDocument(s) {
		err = html.Render(&b, doc)
	} else {
		_, body := docParts(doc)
		for c := body.FirstChild; c != nil && err == nil; c = c.NextSibling {
			err = html.Render(&b, c)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != s {
		t.Errorf("reads back as\n%q\nnot\n%q", b.String(), s)
	}
}

func TestMergeXML(t *testing.T) {
	tests := []struct {
		name       string
		chunks     []Chunk
		want       string
		removed    int
		incomplete []ChunkRef
		conflicts  string
	}{
		{
			name: "children of the common root are joined, the repeated one once",
			chunks: chunks("f",
				"<?xml version=\"1.0\"?>\n<items>\n  <item id=\"1\"/>\n  <item id=\"2\"><n>b</n></item>\n</items>\n<!-- end -->",
				"<items>\n  <item id=\"2\"><n> b </n></item>\n  <item id=\"3\"/>\n</items>"),
			want:    "<?xml version=\"1.0\"?>\n<items>\n  <item id=\"1\"/>\n  <item id=\"2\"><n>b</n></item>\n  <item id=\"3\"/>\n</items>\n<!-- end -->",
			removed: 1,
		},
		{
			name:       "another root is not joined but appended and listed",
			chunks:     chunks("f", `<a><x/></a>`, `<b><y/></b>`, `<a><z/></a>`),
			want:       "<a><x/><z/></a>\n<b><y/></b>",
			incomplete: []ChunkRef{{"f", 1}},
		},
		{
			name:       "a root with other namespaces is not joined",
			chunks:     chunks("f", `<a xmlns="urn:1"><x/></a>`, `<a xmlns="urn:2"><x/></a>`),
			want:       "<a xmlns=\"urn:1\"><x/></a>\n<a xmlns=\"urn:2\"><x/></a>",
			incomplete: []ChunkRef{{"f", 1}},
		},
		{
			name:       "XML that is not well-formed is appended and listed",
			chunks:     chunks("f", `<a><x/></a>`, `<a><x></a>`, `<a><y/></a>`),
			want:       "<a><x/><y/></a>\n<a><x></a>",
			incomplete: []ChunkRef{{"f", 1}},
		},
		{
			name:      "root attributes: the first value kept, new ones added, differences reported",
			chunks:    chunks("f", `<a v="1"><x/></a>`, `<a v="2" w="&amp;"><y/></a>`),
			want:      `<a v="1" w="&amp;"><x/><y/></a>`,
			conflicts: "a.@v",
		},
		{
			name:   "an empty root takes the children of later answers",
			chunks: chunks("f", `<a/>`, `<a><x/></a>`),
			want:   `<a><x/></a>`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := mergeOne(t, Options{Format: FormatXML}, tt.chunks)
			if a.Content != tt.want {
				t.Errorf("content\n%s\nwant\n%s", a.Content, tt.want)
			}
			if a.DedupeRemovedTechnical != tt.removed || !reflect.DeepEqual(refs(a), tt.incomplete) {
				t.Errorf("removed %d (want %d), incomplete %+v", a.DedupeRemovedTechnical, tt.removed, a.IncompleteChunks)
			}
			if got := conflictFields(a); got != tt.conflicts {
				t.Errorf("conflicts %q, want %q", got, tt.conflicts)
			}
			if !a.MergeIncomplete {
				checkWellFormedXML(t, a.Content)
			}
		})
	}
}

// TestXMLOverlapComparesTheMergedTail: an answer's head is compared with
// the tail of the merged children, however many answers it spans, and
// after a long answer whose children's digests were cut to what later
// answers can compare (hunt-merge: the children are written as taken and
// only a tail of digests kept, where all of them took 3 GB at 64 MiB).
func TestXMLOverlapComparesTheMergedTail(t *testing.T) {
	var long strings.Builder
	long.WriteString("<r>")
	for i := range 1500 {
		fmt.Fprintf(&long, `<a i="%d"/>`, i)
	}
	long.WriteString("</r>")
	tests := []struct {
		name    string
		answers []string
		want    string
		removed int
	}{
		{
			name:    "the tail spans two short answers",
			answers: []string{"<r><a/></r>", "<r><b/></r>", "<r><a/><b/><c/></r>"},
			want:    "<r><a/><b/><c/></r>",
			removed: 2,
		},
		{
			name:    "after a long answer",
			answers: []string{long.String(), `<r><a i="1498"/><a i="1499"/><c/></r>`, `<r><c/><d/></r>`},
			want:    long.String()[:long.Len()-len("</r>")] + "<c/><d/></r>",
			removed: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := mergeOne(t, Options{Format: FormatXML}, chunks("f", tt.answers...))
			if a.Content != tt.want || a.DedupeRemovedTechnical != tt.removed {
				t.Errorf("content %.80q… (%d bytes), removed %d; want %.80q… (%d bytes), %d",
					a.Content, len(a.Content), a.DedupeRemovedTechnical, tt.want, len(tt.want), tt.removed)
			}
		})
	}
}
