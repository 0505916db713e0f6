package convert

import (
	"fmt"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// maxHTMLNodes bounds the nodes an HTML document may parse into. html.Parse
// builds the whole tree before the cleaner sees it, at 110–190 bytes of
// heap a node with what cleaning and rendering add, and markup makes a
// node every 3 to 5 bytes: 32 MiB of <li>x took 2.5 GiB (docs/decisions.md,
// "What HTML and XML parse into, bounded"). At this limit the worst shape
// measured peaks at 732 MiB; the largest real pages measured (an 8 MiB API
// reference, an 8 MiB highlighted source listing) count 0.86 and 1.13
// million.
const maxHTMLNodes = 4_000_000

// formattingElements are the elements the HTML parser re-opens when a
// block closes them before their end tag (the "list of active formatting
// elements").
var formattingElements = map[atom.Atom]bool{
	atom.A: true, atom.B: true, atom.Big: true, atom.Code: true, atom.Em: true,
	atom.Font: true, atom.I: true, atom.Nobr: true, atom.S: true, atom.Small: true,
	atom.Strike: true, atom.Strong: true, atom.Tt: true, atom.U: true,
}

// scopeBoundaries are the elements across which the parser may ignore a
// formatting element's end tag (it is not "in scope" behind a table, a
// cell, an object, a template, or in SVG and MathML), or ignores it
// outright (in a <select>), leaving the element to be re-opened.
var scopeBoundaries = map[atom.Atom]bool{
	atom.Applet: true, atom.Caption: true, atom.Html: true, atom.Table: true,
	atom.Td: true, atom.Th: true, atom.Marquee: true, atom.Object: true,
	atom.Template: true, atom.Select: true, atom.Frameset: true,
	atom.Svg: true, atom.Math: true, atom.Mi: true, atom.Mo: true, atom.Mn: true,
	atom.Ms: true, atom.Mtext: true, atom.AnnotationXml: true,
	atom.Foreignobject: true, atom.Desc: true, atom.Title: true,
}

// specialElements are the elements that, open inside a formatting
// element, make its end tag run the adoption agency's cloning: the
// parser's special elements that can hold content (void ones close at
// once).
var specialElements = map[atom.Atom]bool{
	atom.Address: true, atom.Applet: true, atom.Article: true, atom.Aside: true,
	atom.Blockquote: true, atom.Body: true, atom.Button: true, atom.Caption: true,
	atom.Center: true, atom.Colgroup: true, atom.Dd: true, atom.Details: true,
	atom.Dir: true, atom.Div: true, atom.Dl: true, atom.Dt: true, atom.Fieldset: true,
	atom.Figcaption: true, atom.Figure: true, atom.Footer: true, atom.Form: true,
	atom.Frameset: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true,
	atom.H5: true, atom.H6: true, atom.Head: true, atom.Header: true, atom.Hgroup: true,
	atom.Html: true, atom.Iframe: true, atom.Li: true, atom.Listing: true, atom.Main: true,
	atom.Marquee: true, atom.Menu: true, atom.Nav: true, atom.Noembed: true,
	atom.Noframes: true, atom.Noscript: true, atom.Object: true, atom.Ol: true, atom.P: true,
	atom.Plaintext: true, atom.Pre: true, atom.Script: true, atom.Search: true,
	atom.Section: true, atom.Select: true, atom.Style: true, atom.Summary: true,
	atom.Table: true, atom.Tbody: true, atom.Td: true, atom.Template: true,
	atom.Textarea: true, atom.Tfoot: true, atom.Th: true, atom.Thead: true, atom.Title: true,
	atom.Tr: true, atom.Ul: true, atom.Xmp: true,
	// MathML and SVG
	atom.Mi: true, atom.Mo: true, atom.Mn: true, atom.Ms: true, atom.Mtext: true,
	atom.AnnotationXml: true, atom.Foreignobject: true, atom.Desc: true,
}

// tableParts make the parser add the elements a writer may leave out
// around them (<tbody>, <tr>, <colgroup>).
var tableParts = map[atom.Atom]int{
	atom.Td: 2, atom.Th: 2, atom.Tr: 1, atom.Col: 1,
}

const (
	// maxReopened is the most elements one re-opening clones: the parser
	// fails a document whose open elements nest deeper than 512.
	maxReopened = 512
	// adoptionClones is the most elements the parser's adoption agency
	// creates for one misnested formatting end tag (8 rounds, each
	// cloning the formatting element and up to 3 elements between it and
	// the block that closed it).
	adoptionClones = 32
)

// formattingStart is a formatting element's start tag whose end tag has
// not come: the count of special and scope-boundary start tags when it
// came.
type formattingStart struct{ blocks, boundaries int }

// nodeCount estimates, without building it, how many nodes html.Parse
// builds from a document: see htmlNodes.
type nodeCount struct {
	nodes int
	// open holds the formatting start tags not yet closed, by element,
	// the latest last; stuck counts those that may never be (see end).
	open  map[atom.Atom][]formattingStart
	stuck int
	// reopenable bounds what one re-opening clones: three of each
	// distinct formatting start tag seen (the parser keeps no more), and
	// one <a> (a new one closes the previous one).
	reopenable int
	identical  map[string]int
	// blocks and boundaries count the start tags of special elements
	// and of scope boundaries.
	blocks, boundaries int
	// foreign is set once an <svg> or <math> start tag has come: inside
	// them the parser reads <title>, <style> and the like as elements,
	// not as raw text, and so must the count, or a document could hide
	// its tags from it behind <svg><title>.
	foreign bool
}

// active is how many formatting elements the parser may have to re-open.
func (c *nodeCount) active() int {
	n := c.stuck
	for _, s := range c.open {
		n += len(s)
	}
	return min(n, c.reopenable, maxReopened)
}

// htmlNodes estimates how many nodes html.Parse would build from text,
// counting tokens without building anything, and stops counting once past
// limit. Every token counts one node (an end tag can make one: </p>
// without a <p>), table parts the elements implied around them, every
// text and start tag the formatting elements the parser may re-open
// before it, and a formatting end tag that closes across a block the
// clones the adoption agency makes. Re-opening is what makes a tree far
// larger than its markup: <li><b id=1>…<b id=400> followed by <li>x
// repeated builds 400 clones for every 5 bytes.
//
// Which formatting elements are still open follows the tags as written:
// an end tag closes the latest start tag of its name, unless a scope
// boundary (a table, a cell, a <select>, SVG, …) started since, behind
// which the parser may ignore it; that element then counts as open for
// the rest of the document.
func htmlNodes(text string, limit int) int {
	c := &nodeCount{open: map[atom.Atom][]formattingStart{}, reopenable: 1, identical: map[string]int{}}
	z := html.NewTokenizer(strings.NewReader(text))
	for c.nodes <= limit {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		c.nodes++
		switch tt {
		case html.TextToken:
			c.nodes += c.active()
		case html.StartTagToken, html.SelfClosingTagToken:
			c.nodes += c.active()
			name, _ := z.TagName()
			a := atom.Lookup(name)
			if a == atom.Svg || a == atom.Math {
				c.foreign = true
			}
			if c.foreign {
				z.NextIsNotRawText()
			}
			c.start(a, z.Raw())
		case html.EndTagToken:
			name, _ := z.TagName()
			c.end(atom.Lookup(name))
		}
	}
	return c.nodes
}

func (c *nodeCount) start(a atom.Atom, raw []byte) {
	c.nodes += tableParts[a]
	if scopeBoundaries[a] {
		c.boundaries++
	}
	if specialElements[a] {
		c.blocks++
	}
	if !formattingElements[a] {
		return
	}
	if a == atom.A || a == atom.Nobr {
		// A new <a> or <nobr> runs the adoption agency on the open one.
		if len(c.open[a]) > 0 {
			c.end(a)
		}
	}
	if a != atom.A && c.reopenable < maxReopened {
		// The raw tag stands for its attributes: two spellings of one
		// set only loosen the bound.
		if sig := string(raw); c.identical[sig] < 3 {
			c.identical[sig]++
			c.reopenable++
		}
	}
	if s := c.open[a]; len(s) < maxReopened {
		c.open[a] = append(s, formattingStart{blocks: c.blocks, boundaries: c.boundaries})
	} else {
		c.stuck++ // beyond what one re-opening clones anyway
	}
}

// end closes the latest open formatting element a, if any.
func (c *nodeCount) end(a atom.Atom) {
	s := c.open[a]
	if !formattingElements[a] || len(s) == 0 {
		return
	}
	last := s[len(s)-1]
	if last.blocks < c.blocks {
		c.nodes += adoptionClones
	}
	if last.boundaries < c.boundaries || c.blocks-last.blocks >= 8 {
		// The parser may ignore this end tag, or give up adopting after
		// 8 rounds: the element stays open, for good, as the count
		// cannot tell when the boundary or the blocks close.
		c.stuck++
	}
	c.open[a] = s[:len(s)-1]
}

// htmlTooLarge is the error for a document over the node limit.
func htmlTooLarge(limit int) error {
	return fmt.Errorf("the HTML document parses into more than %d elements and text runs, over the limit", limit)
}
