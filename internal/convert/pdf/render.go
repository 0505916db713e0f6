package pdf

import (
	"bytes"
	"html"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	gmast "github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// renderHTML writes a page's elements as HTML. All text is escaped.
func renderHTML(sb *strings.Builder, els []element) {
	for _, e := range els {
		switch e.kind {
		case elemHeading:
			tag := "h" + strconv.Itoa(e.level)
			sb.WriteString("<" + tag + ">")
			sb.WriteString(html.EscapeString(joinLines(e.parts)))
			sb.WriteString("</" + tag + ">\n")
		case elemPara:
			sb.WriteString("<p>")
			sb.WriteString(html.EscapeString(joinLines(e.parts)))
			sb.WriteString("</p>\n")
		case elemList:
			tag := "ul"
			if e.ordered {
				tag = "ol"
			}
			sb.WriteString("<" + tag + ">\n")
			for _, it := range e.items {
				sb.WriteString("<li>")
				sb.WriteString(html.EscapeString(itemText(e, it)))
				sb.WriteString("</li>\n")
			}
			sb.WriteString("</" + tag + ">\n")
		case elemTable:
			sb.WriteString("<table>\n")
			for k, r := range e.rows {
				cell := "td"
				if k < e.head {
					cell = "th"
				}
				sb.WriteString("<tr>")
				for _, c := range r {
					sb.WriteString("<" + cell + ">")
					sb.WriteString(html.EscapeString(c))
					sb.WriteString("</" + cell + ">")
				}
				sb.WriteString("</tr>\n")
			}
			sb.WriteString("</table>\n")
		}
	}
}

// renderMarkdown writes a page's elements as markdown.
func renderMarkdown(sb *strings.Builder, els []element) {
	for i, e := range els {
		if i > 0 {
			sb.WriteString("\n")
		}
		switch e.kind {
		case elemHeading:
			sb.WriteString(strings.Repeat("#", e.level) + " " + joinLines(e.parts) + "\n")
		case elemPara:
			sb.WriteString(joinLines(e.parts) + "\n")
		case elemList:
			for _, it := range e.items {
				if !e.ordered {
					sb.WriteString("- ")
				}
				sb.WriteString(itemText(e, it) + "\n")
			}
		case elemTable:
			for k, r := range e.rows {
				sb.WriteString("|")
				for _, c := range r {
					sb.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
				}
				sb.WriteString("\n")
				if k == 0 {
					sb.WriteString("|" + strings.Repeat(" --- |", len(r)) + "\n")
				}
			}
		}
	}
}

// itemText is a list item's text. Ordered items keep their marker: "15.",
// "(a)" and "iv." are part of the text (references point at them), while
// a bullet glyph is only decoration.
func itemText(e element, it listItem) string {
	if e.ordered {
		return joinLines(append([]string{it.marker}, it.parts...))
	}
	return joinLines(it.parts)
}

// markdownToHTML converts a provider's page markdown (GitHub flavoured:
// tables are common in OCR output). Raw HTML in it is kept, as the
// provider's HTML answers are: vision models put <br> and whole tables
// into markdown. Task list boxes come out as checkbox inputs, which the
// HTML cleaner turns into ☒/☐. A line break inside a paragraph is kept
// (<br>): the answer is a transcription, so its lines are the page's
// lines, and an address, a signature block or a plain-text answer's
// lines read run together as one sentence without it.
func markdownToHTML(md string) (string, error) {
	// extension.GFM without its Strikethrough, which also strikes single
	// tildes: vision models write subscripts as H~2~O and "about" as ~5.
	gm := goldmark.New(
		goldmark.WithExtensions(extension.Linkify, extension.Table, doubleTildeStrikethrough{}, extension.TaskList),
		goldmark.WithRendererOptions(gmhtml.WithUnsafe(), gmhtml.WithHardWraps()))
	var buf bytes.Buffer
	if err := gm.Convert([]byte(md), &buf); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// doubleTildeStrikethrough is goldmark's Strikethrough for ~~text~~ only;
// a single tilde stays a literal character. goldmark has no option for
// this, so its parser is wrapped.
type doubleTildeStrikethrough struct{}

func (doubleTildeStrikethrough) Extend(m goldmark.Markdown) {
	m.Parser().AddOptions(parser.WithInlineParsers(
		util.Prioritized(doubleTildeParser{extension.NewStrikethroughParser()}, 500),
	))
	m.Renderer().AddOptions(renderer.WithNodeRenderers(
		util.Prioritized(extension.NewStrikethroughHTMLRenderer(), 500),
	))
}

type doubleTildeParser struct {
	parser.InlineParser
}

// Parse lets the wrapped parser see runs of exactly two tildes. A run of
// one (or three and more, which goldmark refuses anyway) is left as text:
// goldmark then reads its first tilde as a literal and, for longer runs,
// the wrapped parser refuses the rest because a tilde precedes them.
func (p doubleTildeParser) Parse(parent gmast.Node, block text.Reader, pc parser.Context) gmast.Node {
	line, _ := block.PeekLine()
	run := 0
	for run < len(line) && line[run] == '~' {
		run++
	}
	if run != 2 {
		return nil
	}
	return p.InlineParser.Parse(parent, block, pc)
}
