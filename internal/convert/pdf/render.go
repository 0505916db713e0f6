package pdf

import (
	"bytes"
	"html"
	"strconv"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	gmhtml "github.com/yuin/goldmark/renderer/html"
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
// into markdown.
func markdownToHTML(md string) (string, error) {
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(gmhtml.WithUnsafe()))
	var buf bytes.Buffer
	if err := gm.Convert([]byte(md), &buf); err != nil {
		return "", err
	}
	return buf.String(), nil
}
