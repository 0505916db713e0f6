package pdf

import (
	"regexp"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/docjobs/docjobs/internal/plaintext"
	"github.com/docjobs/docjobs/internal/provider"
)

// A vision model asked for an HTML fragment does not always write one:
// small models often answer markdown, or plain text, whatever the prompt
// says, and the chat adapters can only report the format they asked for.
// Kept as HTML, such an answer showed "# Title" literally and lost its
// paragraph breaks; these patterns tell it apart so it is converted.
var (
	// htmlTag is a start, end or empty tag of an element the transcription
	// prompt asks for, or of another common one. Plain text such as
	// "a < b" or "<illegible>" does not match.
	htmlTag = regexp.MustCompile(`(?i)</?(?:p|h[1-6]|ul|ol|li|table|thead|tbody|tfoot|tr|th|td|caption|br|hr|div|span|section|article|header|footer|blockquote|pre|code|b|i|u|s|em|strong|sub|sup|small|mark|del|ins|a|img|dl|dt|dd|figure|figcaption)(?:\s[^<>]*)?/?>`)
	// markdownStart is markdown block syntax opening the answer: a heading,
	// a table row, a list item, a quote or a fence.
	markdownStart = regexp.MustCompile("^ {0,3}(?:#{1,6}(?:[ \\t]|$)|\\||[-*+][ \\t]|\\d{1,9}[.)][ \\t]|>|```|~~~)")
	// markdownBlock is a line no HTML fragment has: an ATX heading or a
	// table's delimiter row, so markdown around an inline <br> still counts.
	markdownBlock = regexp.MustCompile(`(?m)^ {0,3}(?:#{1,6}[ \t]+\S|\|?[ \t]*:?-{3,}:?[ \t]*\|[-:| \t]*$)`)
	// plaintextTag may start a <plaintext> element (the parser decides).
	plaintextTag = regexp.MustCompile(`(?i)<plaintext(?:[\t\n\f\r />]|$)`)
)

// answerFormat is the format a page's transcription is really in. Answers
// in markdown are taken at their word; an answer asked as HTML is markdown
// when it opens with markdown block syntax, has a markdown heading or table,
// or has no HTML tag at all (plain text is markdown's paragraphs).
func answerFormat(reported, text string) string {
	if reported != "html" {
		return reported
	}
	if markdownStart.MatchString(text) || markdownBlock.MatchString(text) || !htmlTag.MatchString(text) {
		return "markdown"
	}
	return "html"
}

// pageText is the transcription of a page from a provider's recognition,
// trimmed, with the format it is in. An answer asked as HTML comes from a
// chat model; its code fence and blank-page token are removed again here
// (the adapters do it, a cached or future one might not), before sniffing,
// since a fenced HTML answer would otherwise read as markdown.
func pageText(rec provider.Recognition) (text, format string) {
	text = rec.Text
	if strings.TrimSpace(text) == "" && len(rec.Pages) > 0 {
		text = strings.Join(rec.Pages, "\n\n")
	}
	if rec.Format == "html" {
		text = provider.CleanTranscription(text)
	}
	text = strings.TrimSpace(text)
	return text, answerFormat(rec.Format, text)
}

// preformatPlaintext writes each <plaintext> element of a page's HTML as
// a <pre> of the same attributes and text. A parser reads all after a
// <plaintext> start tag as its text, to the end of the input, and the
// page is followed by its section's end tag and the later pages: they
// would all become this page's text. A <pre> is what a <plaintext>
// displays as; its text is escaped, so the page ends where it did.
// Pages without one are returned as they are.
func preformatPlaintext(page string) string {
	if !plaintextTag.MatchString(page) {
		return page
	}
	section := &html.Node{Type: html.ElementNode, Data: "section", DataAtom: atom.Section}
	nodes, err := html.ParseFragment(strings.NewReader(page), section)
	if err != nil {
		// Only the parser's nesting limit fails it on a string; the
		// document's cleaning, which parses the same nesting, then
		// keeps its text only, pages and all.
		return page
	}
	var sb strings.Builder
	for _, n := range nodes {
		stack := []*html.Node{n}
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if plaintext.Is(x) {
				plaintext.ToPre(x)
			}
			for c := x.FirstChild; c != nil; c = c.NextSibling {
				stack = append(stack, c)
			}
		}
		if err := html.Render(&sb, n); err != nil {
			return page // a parsed tree renders; if not, as it was
		}
	}
	return sb.String()
}
