package chunk

import (
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// treeNodes returns the nodes under n, n not included (the document's
// root is no node of the input).
func treeNodes(n *node) int {
	count := 0
	for _, c := range n.children {
		count += 1 + treeNodes(c)
	}
	return count
}

// splitWithNodeLimit splits text as Split does with the markup tree
// bounded to maxNodes nodes.
func splitWithNodeLimit(t *testing.T, text, format string, budget, maxNodes int) []Chunk {
	t.Helper()
	c := counter(t)
	s := newSplitter(text, budget, 0, c)
	s.maxNodes = maxNodes
	chunks, err := s.split(format)
	if err != nil {
		t.Fatalf("%s, %d nodes at most: %v", format, maxNodes, err)
	}
	checkInvariants(t, c, text, budget, chunks)
	return chunks
}

// Markup is built into a tree of a node per element, text run or other
// token before the chunk limit can stop anything, so the tree is bounded:
// a document of more nodes than the limit is split as plain text, one
// within it keeps its structure.
func TestSplitMarkupOverTheNodeLimitAsPlainText(t *testing.T) {
	tests := []struct {
		name, format, text string
	}{
		{"HTML line breaks", FormatHTML, "<body>" + strings.Repeat("<br/>word ", 300) + "</body>"},
		{"HTML list items", FormatHTML, "<ul>\n" + strings.Repeat("<li>an item</li>\n", 300) + "</ul>"},
		{"HTML table rows", FormatHTML, "<table><thead><tr><th>k</th></tr></thead><tbody>\n" + strings.Repeat("<tr><td>a cell</td></tr>\n", 200) + "</tbody></table>"},
		{"XML empty elements", FormatXML, "<?xml version=\"1.0\"?><r>" + strings.Repeat("<a/>", 400) + "</r>"},
		{"XML records", FormatXML, "<?xml version=\"1.0\"?>\n<r>\n" + strings.Repeat("<e>lorem ipsum dolor sit amet</e>\n", 200) + "</r>\n"},
	}
	const budget = 60
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parse := parseHTML
			if tt.format == FormatXML {
				parse = parseXML
			}
			root, ok := parse(tt.text, maxMarkupNodes)
			if !ok {
				t.Fatal("the document does not parse")
			}
			nodes := treeNodes(root)
			if _, ok := parse(tt.text, nodes); !ok {
				t.Fatalf("%d nodes refused at a limit of %d", nodes, nodes)
			}
			if _, ok := parse(tt.text, nodes-1); ok {
				t.Fatalf("%d nodes accepted at a limit of %d", nodes, nodes-1)
			}

			structured := splitWithNodeLimit(t, tt.text, tt.format, budget, nodes)
			plain := split(t, tt.text, FormatPlain, budget)
			if slices.Equal(structured, plain) {
				t.Fatal("the document splits as plain text within the limit")
			}
			if whole := split(t, tt.text, tt.format, budget); !slices.Equal(structured, whole) {
				t.Error("within the limit the chunks differ from Split's")
			}
			if over := splitWithNodeLimit(t, tt.text, tt.format, budget, nodes-1); !slices.Equal(over, plain) {
				t.Error("over the limit the chunks are not plain text's")
			}
		})
	}
}

// Building stops at the limit: a document far over it costs the limit's
// worth of nodes, not its own.
func TestParseMarkupStopsAtTheNodeLimit(t *testing.T) {
	const limit = 1000
	tests := []struct {
		name, text string
		parse      func(string, int) (*node, bool)
	}{
		{"HTML", "<body>" + strings.Repeat("<p>x</p>", 100_000) + "</body>", parseHTML},
		{"XML", "<r>" + strings.Repeat("<p>x</p>", 100_000) + "</r>", parseXML},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok := true
			allocs := testing.AllocsPerRun(1, func() { _, ok = tt.parse(tt.text, limit) })
			if ok {
				t.Fatalf("200,000 nodes accepted at a limit of %d", limit)
			}
			// A node is two or three allocations (the node, its name,
			// its parent's children): 2,520 for HTML, 3,020 for XML
			// with the decoder's tokens, 500,041 and 600,041 built whole.
			if allocs > 5*limit {
				t.Errorf("%.0f allocations for a limit of %d nodes: the tree was built past it", allocs, limit)
			}
		})
	}
}

// TestSplitHTMLClosesNothingAfterAPlaintextElement: everything after a
// <plaintext> start tag is its text, to the end of the document, so a
// chunk that ends inside one has no end tag to write: one added would be
// read as text the document does not have.
func TestSplitHTMLClosesNothingAfterAPlaintextElement(t *testing.T) {
	lines := strings.Repeat("<p>word word word</p>\n", 20)
	tests := []struct{ name, text string }{
		{"in a container", "<div><p>a b c</p><plaintext>" + lines + "</div>"},
		{"at the top", "<p>a b c</p><plaintext>" + lines},
		{"in a container that fits a chunk", lines + "<div><p>a</p><plaintext>x <b>y</b></div>"},
	}
	const budget = 60
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := counter(t)
			chunks, err := Split(tt.text, FormatHTML, budget, c)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, c, tt.text, budget, chunks)
			whole, ok := plaintextOf(t, tt.text)
			if !ok {
				t.Fatal("the document holds no <plaintext> element")
			}
			seen := false
			for i, ch := range chunks {
				got, ok := plaintextOf(t, ch.Text)
				seen = seen || ok
				if ok && !strings.Contains(whole, got) {
					t.Errorf("chunk %d's <plaintext> reads %q, not in the document's %q", i, got, whole)
				}
			}
			if !seen {
				t.Error("no chunk holds the <plaintext> element")
			}
		})
	}
}

// plaintextOf returns the text of the <plaintext> element s parses into.
func plaintextOf(t *testing.T, s string) (string, bool) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	for n := range doc.Descendants() {
		if n.Type == html.ElementNode && n.DataAtom == atom.Plaintext {
			var b strings.Builder
			for c := range n.Descendants() {
				if c.Type == html.TextNode {
					b.WriteString(c.Data)
				}
			}
			return b.String(), true
		}
	}
	return "", false
}
