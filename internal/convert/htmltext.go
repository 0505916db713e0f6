package convert

import (
	"strconv"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Form controls and inline SVG hold text a reader sees (a filled-in
// field, a ticked box, a chart's labels) inside markup that means nothing
// in the output. The cleaner puts that text where the element was; vision
// models answer scanned forms with exactly these elements.

// Checkbox and radio states, as the DOCX reader writes legacy form
// checkboxes: one mark for a ticked box whatever the source format.
const (
	boxChecked   = "☒"
	boxUnchecked = "☐"
)

// hidden reports whether a browser never shows n: it has the hidden
// attribute (but not hidden="until-found", which find-in-page and links
// reveal, as in collapsed sections), an inline display:none, or is a
// <dialog> that is not open. aria-hidden is no reason: it hides from
// screen readers what sighted readers still see.
func hidden(n *html.Node) bool {
	if n.Type != html.ElementNode {
		return false
	}
	if n.DataAtom == atom.Dialog && n.Namespace == "" && !hasAttr(n, "open") {
		return true
	}
	for _, a := range n.Attr {
		if a.Namespace != "" {
			continue
		}
		switch a.Key {
		case "hidden":
			if !strings.EqualFold(strings.TrimSpace(a.Val), "until-found") {
				return true
			}
		case "style":
			if displayNone(a.Val) {
				return true
			}
		}
	}
	return false
}

// displayNone reports whether an inline style sets display:none.
// visibility:hidden is not enough: descendants can be visible again.
func displayNone(style string) bool {
	for decl := range strings.SplitSeq(style, ";") {
		prop, val, ok := strings.Cut(decl, ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(prop), "display") {
			continue
		}
		val = strings.TrimSpace(val)
		val = strings.TrimSpace(strings.TrimSuffix(strings.ToLower(val), "!important"))
		if val == "none" {
			return true
		}
	}
	return false
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key && a.Namespace == "" {
			return true
		}
	}
	return false
}

// replacedText is the text that stands for n in the output when n is a
// form control or inline SVG, with ok false for other elements.
func replacedText(n *html.Node) (text string, ok bool) {
	switch {
	case n.Namespace == "svg":
		return svgText(n), true
	case n.Namespace == "" && (n.DataAtom == atom.Input || n.DataAtom == atom.Textarea || n.DataAtom == atom.Select):
		return controlText(n), true
	}
	return "", false
}

// replaceControl puts what a reader sees of form control c (<input>,
// <textarea>, <select>) in its place as text, spaced so that it does not
// run into its label; a textarea's line breaks stay as <br>.
func replaceControl(parent, c *html.Node) {
	if text := controlText(c); strings.TrimSpace(text) != "" {
		before, after := spacing(c)
		lines := strings.Split(before+text+after, "\n")
		for i, line := range lines {
			if i > 0 {
				parent.InsertBefore(&html.Node{Type: html.ElementNode, Data: "br", DataAtom: atom.Br}, c)
			}
			parent.InsertBefore(&html.Node{Type: html.TextNode, Data: line}, c)
		}
	}
	parent.RemoveChild(c)
}

// spacing is the space to put before and after the text replacing c:
// one on each side where something is next to it (tidy collapses
// doubled spaces), none at the edges of its parent, so that a link
// around an icon does not get spaces inside it.
func spacing(c *html.Node) (before, after string) {
	if c.PrevSibling != nil {
		before = " "
	}
	if c.NextSibling != nil {
		after = " "
	}
	return before, after
}

// controlText is what a form control shows: an input's value, a
// checkbox's or radio button's state, a textarea's text, a select's
// chosen options. Buttons, hidden fields, passwords (shown as dots) and
// pickers show no text of the document.
func controlText(c *html.Node) string {
	switch c.DataAtom {
	case atom.Textarea:
		var sb strings.Builder // raw text to the parser: text children only
		for t := c.FirstChild; t != nil; t = t.NextSibling {
			if t.Type == html.TextNode {
				sb.WriteString(t.Data)
			}
		}
		return sb.String()
	case atom.Select:
		return selectedOptions(c)
	}
	switch strings.ToLower(strings.TrimSpace(attr(c, "type"))) {
	case "checkbox", "radio":
		if hasAttr(c, "checked") {
			return boxChecked
		}
		return boxUnchecked
	case "hidden", "password", "submit", "reset", "button", "image", "file", "range", "color":
		return ""
	}
	return attr(c, "value") // text, email, number, date and unknown types
}

// selectedOptions is the text a <select> shows: its selected options,
// or, for a drop-down with none selected, the first one (which a browser
// shows as chosen; a list box, multiple or with a size, shows none chosen).
func selectedOptions(sel *html.Node) string {
	var options []*html.Node
	var collect func(n *html.Node)
	collect = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch {
			case c.Type != html.ElementNode || hidden(c):
			case c.DataAtom == atom.Option:
				options = append(options, c)
			case c.DataAtom == atom.Optgroup:
				collect(c)
			}
		}
	}
	collect(sel) // the parser keeps a select's content flat: options in optgroups
	var chosen []string
	for _, o := range options {
		if hasAttr(o, "selected") {
			chosen = append(chosen, optionText(o))
		}
	}
	size, _ := strconv.Atoi(strings.TrimSpace(attr(sel, "size")))
	if len(chosen) == 0 && len(options) > 0 && !hasAttr(sel, "multiple") && size <= 1 {
		chosen = append(chosen, optionText(options[0]))
	}
	return strings.Join(chosen, ", ")
}

// optionText is an option's label attribute, or else its text.
func optionText(o *html.Node) string {
	if l := strings.TrimSpace(attr(o, "label")); l != "" {
		return l
	}
	return strings.TrimSpace(collapseSpace(textOf(o)))
}

// replaceSVG puts the text of inline SVG c in its place: a paragraph
// where blocks may stand (a chart in a <figure>), plain text inside a
// paragraph or a link (an icon's title names the link). The drawing goes.
func replaceSVG(parent, c *html.Node) {
	text := svgText(c)
	if text != "" {
		if holdsBlocks(parent) {
			p := &html.Node{Type: html.ElementNode, Data: "p", DataAtom: atom.P}
			p.AppendChild(&html.Node{Type: html.TextNode, Data: text})
			parent.InsertBefore(p, c)
		} else {
			before, after := spacing(c)
			parent.InsertBefore(&html.Node{Type: html.TextNode, Data: before + text + after}, c)
		}
	}
	parent.RemoveChild(c)
}

// phrasingOnly blocks hold text, not paragraphs.
var phrasingOnly = map[atom.Atom]bool{
	atom.P: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true,
	atom.H5: true, atom.H6: true, atom.Pre: true, atom.Summary: true, atom.Legend: true,
}

func holdsBlocks(n *html.Node) bool {
	return isBlock(n) && !phrasingOnly[n.DataAtom]
}

// svgText is the text of an inline SVG: its <title>, <desc> and <text>
// elements (a chart's title and data labels) and the HTML inside
// <foreignObject> (diagram tools put their labels there), one space
// between them. An SVG marked aria-hidden is a decorative icon: its title
// would only repeat the text beside it.
func svgText(svg *html.Node) string {
	if strings.EqualFold(strings.TrimSpace(attr(svg, "aria-hidden")), "true") {
		return ""
	}
	return svgContent(svg)
}

// svgContent is the text of the SVG element svg, whatever its own
// attributes say: an SVG file is the document, not an icon beside text.
func svgContent(svg *html.Node) string {
	var pieces []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode || hidden(c) {
				continue
			}
			switch {
			case c.Namespace == "svg" && (c.Data == "title" || c.Data == "desc" || c.Data == "text"):
				var sb strings.Builder
				svgLabel(&sb, c)
				pieces = append(pieces, sb.String())
			case c.Namespace == "svg" && c.Data == "foreignObject":
				for h := c.FirstChild; h != nil; h = h.NextSibling {
					pieces = append(pieces, textOf(h))
				}
			case c.Namespace == "svg" && (c.Data == "style" || c.Data == "script"):
			default:
				walk(c)
			}
		}
	}
	walk(svg)
	var kept []string
	for _, p := range pieces {
		if p = strings.TrimSpace(collapseSpace(p)); p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, " ")
}

// svgLabel writes the text of a <text> (or <title>, <desc>) element. A
// <tspan> placed with x, y or dy starts a line of its own, so it is
// set off by a space; others continue the word they are in.
func svgLabel(sb *strings.Builder, n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		switch {
		case c.Type == html.TextNode:
			sb.WriteString(c.Data)
		case c.Type == html.ElementNode && !hidden(c):
			if hasAttr(c, "x") || hasAttr(c, "y") || hasAttr(c, "dy") {
				sb.WriteByte(' ')
			}
			svgLabel(sb, c)
		}
	}
}
