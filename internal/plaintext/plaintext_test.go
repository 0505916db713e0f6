package plaintext

import (
	"strings"
	"testing"

	"golang.org/x/net/html"
)

func TestAPlaintextSwallowsWhatFollowsItOrItsForeignParent(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      bool
	}{
		{"last in the body", `<p>a</p><plaintext>b`, false},
		{"a table the parser put after it", `<table><plaintext>b</table><p>c</p>`, true},
		{"inside MathML", `<math><mtext><plaintext>x < y`, true},
		{"inside SVG", `<svg><foreignObject><plaintext>x`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := html.Parse(strings.NewReader(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			var found *html.Node
			var walk func(*html.Node)
			walk = func(n *html.Node) {
				if Is(n) {
					found = n
				}
				for c := n.FirstChild; c != nil; c = c.NextSibling {
					walk(c)
				}
			}
			walk(doc)
			if found == nil {
				t.Fatalf("no <plaintext> in %q", tc.doc)
			}
			if got := Swallows(found, doc); got != tc.want {
				t.Errorf("Swallows = %v, want %v", got, tc.want)
			}
			ToPre(found)
			if Is(found) || found.Data != "pre" {
				t.Errorf("ToPre left %q", found.Data)
			}
		})
	}
}
