// Package plaintext keeps HTML's <plaintext> element from taking what is
// written after it: a parser reads all that follows a <plaintext> start
// tag as its text, to the end of the input, so a converter or a merge that
// writes more after one must write it as a <pre>, which displays the same.
package plaintext

import (
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Is reports whether n is an HTML <plaintext> element.
func Is(n *html.Node) bool {
	return n.Type == html.ElementNode && n.Namespace == "" && n.DataAtom == atom.Plaintext
}

// Swallows reports whether the <plaintext> element n, rendered as it is,
// would take or garble something: a node follows it below top in document
// order, or it is inside MathML or SVG, where html.Render writes its text
// escaped and its end tags, which a parser reads, unescaped, as its text.
func Swallows(n, top *html.Node) bool {
	return followed(n, top) || foreign(n)
}

// ToPre renames n to <pre>, keeping its attributes and text (html.Render
// escapes a <pre>'s text and doubles a first line break the parser drops).
func ToPre(n *html.Node) {
	n.Data, n.DataAtom = "pre", atom.Pre
}

func foreign(n *html.Node) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		if p.Type == html.ElementNode && p.Namespace != "" {
			return true
		}
	}
	return false
}

func followed(n, top *html.Node) bool {
	for ; n != nil && n != top; n = n.Parent {
		if n.NextSibling != nil {
			return true
		}
	}
	return false
}
