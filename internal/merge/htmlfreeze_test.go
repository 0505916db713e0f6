package merge

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// htmlParts makes the parts mergeHTML takes from chunks, as Merge does
// for answers within the limits.
func htmlParts(cs []Chunk) []*part {
	g := make([]*part, len(cs))
	for i, c := range cs {
		g[i] = &part{Chunk: c, ref: ChunkRef{File: c.File, Index: c.Index}}
	}
	return g
}

// mergeBothWays merges cs with the body frozen as it goes and with the
// whole tree kept, requires the same answer, and returns how many nodes
// were frozen.
func mergeBothWays(t *testing.T, cs []Chunk) int {
	t.Helper()
	lim := Limits{}.withDefaults()
	whole := (&htmlJoiner{noFreeze: true}).merge(htmlParts(cs), lim)
	j := &htmlJoiner{}
	got := j.merge(htmlParts(cs), lim)
	if got.Content != whole.Content || got.DedupeRemovedTechnical != whole.DedupeRemovedTechnical ||
		len(got.IncompleteChunks) != len(whole.IncompleteChunks) {
		var in strings.Builder
		for _, c := range cs {
			fmt.Fprintf(&in, "  %d %q overlap=%q noOverlap=%v\n", c.Index, c.Content, c.Overlap, c.NoOverlap)
		}
		t.Fatalf("frozen merge differs:\n%s got  %q (removed %d)\n want %q (removed %d)",
			in.String(), got.Content, got.DedupeRemovedTechnical, whole.Content, whole.DedupeRemovedTechnical)
	}
	return j.frozen
}

func TestHTMLMergeFreezesWhatNoJoinReads(t *testing.T) {
	var cs []Chunk
	for i := range 100 {
		cs = append(cs, Chunk{File: "f", Index: i, Content: fmt.Sprintf(`<div id="%d">%s</div>`, i, strings.Repeat("<p>x</p>", 50))})
	}
	// The body keeps its first and last <div>; every other is rendered
	// as soon as the next answers cannot reach it.
	if n := mergeBothWays(t, cs); n < 97 {
		t.Errorf("%d body children frozen, want at least 97", n)
	}
}

func TestHTMLFreezingKeepsTheOutput(t *testing.T) {
	const thead = `<thead><tr><th>h</th></tr></thead>`
	tr := func(s ...string) string {
		var b strings.Builder
		for _, c := range s {
			b.WriteString("<tr><td>" + c + "</td></tr>")
		}
		return b.String()
	}
	li := func(s ...string) string {
		var b strings.Builder
		for _, c := range s {
			b.WriteString("<li>" + c + "</li>")
		}
		return b.String()
	}
	tests := []struct {
		name   string
		chunks []Chunk
		frozen bool // whether the case must freeze something
	}{
		{"a table continued across chunks, header repeated", chunks("f",
			`<table>`+thead+`<tbody>`+tr("1", "2", "3", "4", "5", "6")+`</tbody></table>`,
			`<table>`+thead+`<tbody>`+tr("6", "7")+`</tbody></table>`,
			`<table>`+thead+`<tbody>`+tr("7", "8")+`</tbody></table>`), true},
		{"a table whose header is its first row, continued", chunks("f",
			`<table><tr><th>h</th></tr>`+tr("1", "2", "3", "4", "5")+`</table>`,
			`<table><tr><th>h</th></tr>`+tr("5", "6")+`</table>`,
			`<table><tr><th>h</th></tr>`+tr("6", "7")+`</table>`), true},
		{"rows behind a header that stays repeat the rows above", chunks("f",
			`<table><tbody>`+tr("1", "2", "3", "4", "5")+`</tbody></table>`,
			`<table><tbody>`+tr("5", "6")+`</tbody></table>`,
			`<table>`+thead+`<tbody>`+tr("6")+`</tbody></table>`), true},
		{"another header after frozen rows is another table", chunks("f",
			`<table>`+thead+`<tbody>`+tr("1", "2", "3", "4", "5")+`</tbody></table>`,
			`<table>`+thead+`<tbody>`+tr("6")+`</tbody></table>`,
			`<table><thead><tr><th>other</th></tr></thead><tbody>`+tr("7")+`</tbody></table>`), true},
		{"nested lists continued at the boundary", chunks("f",
			`<ul>`+li("a", "b", "c", "d")+`<ul>`+li("1", "2", "3", "4", "5")+`</ul></ul>`,
			`<ul><ul>`+li("5", "6")+`</ul></ul>`,
			`<ul><ul>`+li("7")+`</ul>`+li("e")+`</ul>`), true},
		{"inline content at the boundaries after frozen blocks", chunks("f",
			`<p>1</p><p>2</p><p>3</p><p>4</p><b>Total</b>: <span>5</span>`,
			`<b>Name</b>: x`,
			`more text`), true},
		{"a frozen section is not the repeat of a short one", chunks("f",
			`<section class="s"><p>a</p><p>b</p><p>c</p><p>d</p></section>`,
			`<section class="s"><p>d</p></section><p>e</p>`,
			`<section class="s"><p>a</p><p>b</p></section>`), true},
		{"whole documents with frozen bodies", chunks("f",
			`<!DOCTYPE html><html><head><title>T</title></head><body><p>a</p><p>b</p><p>c</p><p>d</p></body></html>`,
			`<!DOCTYPE html><html><head><style>p{}</style></head><body><p>d</p><p>e</p></body></html>`,
			`<p>f</p>`), true},
		{"a plaintext element is frozen as the end renders it", chunks("f",
			`<!DOCTYPE html><p>a</p><p>b</p><p>c</p><p>d</p>`,
			`<p>e</p><plaintext><p>f`,
			`<p>g</p>`,
			`<p>h</p>`), true},
		{"a plaintext element in a continued container", chunks("f",
			`<div><p>a</p><p>b</p></div>`,
			`<div><p>c</p><plaintext>d</div>`,
			`<div><p>e</p></div>`,
			`<div><p>f</p></div>`,
			`<p>g</p>`), true},
		{"a plaintext element that ends the answer", chunks("f",
			`<p>a</p><p>b</p><p>c</p>`,
			`<p>d</p>`,
			`<p>e</p><plaintext>f`), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := mergeBothWays(t, tc.chunks)
			if tc.frozen != (n > 0) {
				t.Errorf("%d nodes frozen, want some: %v", n, tc.frozen)
			}
		})
	}
}

// TestHTMLFreezingKeepsTheOutputOfRandomAnswers merges random answers
// made of few words and tags, so that repeats, continued containers and
// headers occur by chance, both ways.
func TestHTMLFreezingKeepsTheOutputOfRandomAnswers(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	word := func() string { return []string{"a", "b", "c"}[r.IntN(3)] }
	var block func(depth int) string
	block = func(depth int) string {
		n := r.IntN(6)
		switch k := r.IntN(9); {
		case k == 0:
			return "<p>" + word() + "</p>"
		case k == 1:
			return []string{word(), "<span>" + word() + "</span>", "<b>" + word() + "</b>", "\n", "<!-- c -->"}[r.IntN(5)]
		case k <= 3:
			var b strings.Builder
			b.WriteString("<table>")
			switch r.IntN(3) {
			case 0:
				b.WriteString("<thead><tr><th>h</th></tr></thead>")
			case 1:
				b.WriteString("<tr><th>h</th></tr>")
			}
			for range n {
				b.WriteString("<tr><td>" + word() + "</td></tr>")
			}
			b.WriteString("</table>")
			return b.String()
		case k <= 5 && depth < 3:
			tag := []string{"ul", "ol"}[r.IntN(2)]
			var b strings.Builder
			b.WriteString("<" + tag + ">")
			for range n {
				if r.IntN(4) == 0 {
					b.WriteString(block(depth + 1))
				} else {
					b.WriteString("<li>" + word() + "</li>")
				}
			}
			b.WriteString("</" + tag + ">")
			return b.String()
		case depth < 3:
			tag := []string{`<section class="s">`, `<div>`, `<div id="x">`}[r.IntN(3)]
			end := "</section>"
			if strings.HasPrefix(tag, "<div") {
				end = "</div>"
			}
			var b strings.Builder
			b.WriteString(tag)
			for range n {
				b.WriteString(block(depth + 1))
			}
			b.WriteString(end)
			return b.String()
		default:
			return "<p>" + word() + "</p>"
		}
	}
	frozen := 0
	for range 3000 {
		var cs []Chunk
		var last []string
		index := 0
		for c := range 2 + r.IntN(6) {
			var bs []string
			if c > 0 && len(last) > 0 && r.IntN(2) == 0 {
				bs = append(bs, last[max(0, len(last)-1-r.IntN(2)):]...) // the overlap
			}
			for range 1 + r.IntN(6-min(c, 4)) {
				bs = append(bs, block(0))
			}
			ch := Chunk{File: "f", Index: index, Content: strings.Join(bs, "")}
			if r.IntN(8) == 0 {
				ch.Content = "<!DOCTYPE html><html><head><title>" + word() + "</title></head><body>" + ch.Content + "</body></html>"
			}
			switch r.IntN(6) {
			case 0:
				ch.NoOverlap = true
			case 1:
				ch.Overlap = word() + " " + word()
			}
			cs = append(cs, ch)
			last = bs
			index += 1 + r.IntN(8)/7 // now and then a chunk is missing
		}
		frozen += mergeBothWays(t, cs)
	}
	if frozen == 0 {
		t.Fatal("nothing was frozen: the cases do not test freezing")
	}
	t.Logf("%d nodes frozen", frozen)
}

func TestHTMLAnswerNestedTooDeepIsIncomplete(t *testing.T) {
	// Below the document, html and body: 8 divs put their text 11 deep.
	deep := `<p>z</p>` + strings.Repeat("<div>", 8) + "x" + strings.Repeat("</div>", 8)
	shallow := strings.Repeat("<div>", 7) + "y" + strings.Repeat("</div>", 7)
	a := mergeOne(t, Options{Format: FormatHTML, Limits: Limits{MaxDepth: 10}}, chunks("f", shallow, deep))
	if len(a.IncompleteChunks) != 1 || a.IncompleteChunks[0].Index != 1 ||
		!strings.Contains(a.IncompleteChunks[0].Reason, "HTML nested deeper than 10 levels") {
		t.Errorf("incomplete %+v", a.IncompleteChunks)
	}
	if !strings.HasPrefix(a.Content, shallow+"\n") {
		t.Errorf("content %q", a.Content)
	}
}
