package merge

import (
	"regexp"
	"strings"

	"golang.org/x/net/html"
)

// detect picks the format of a group for MERGE_FORMAT_AUTO by what the
// answers are: json with a schema, or when every answer is JSON, or when
// at least half are and one of them is an object or array; else xml when
// at least half are one well-formed XML element (html when such a root is
// an HTML element); else html when at least half start with HTML markup;
// else markdown when any answer uses markdown syntax; else text. Failed,
// over-limit and blank answers do not vote.
//
// One odd answer (a "No records in this part." among JSON answers, an XML
// answer cut off) must not turn the file into text: the JSON and XML
// merges list it in IncompleteChunks instead, so the client is told. A
// minority of structured answers among prose is more likely prose that
// happens to parse (a number, a quoted word), and the text join keeps
// every answer, so it wins then; a tie goes to the structured format,
// whose merge names what it left out. A scalar alone ("42") is no
// evidence of a JSON job unless every answer is JSON.
func detect(g []*part, hasSchema bool, lim Limits) string {
	if hasSchema {
		return FormatJSON
	}
	var voters []*part
	for _, p := range g {
		if p.skip == "" && strings.TrimSpace(p.Content) != "" {
			voters = append(voters, p)
		}
	}
	if len(voters) == 0 {
		return FormatText
	}
	count := func(ok func(p *part) bool) int {
		n := 0
		for _, p := range voters {
			if ok(p) {
				n++
			}
		}
		return n
	}
	half := func(n int) bool { return 2*n >= len(voters) }
	structured := false
	jsonVotes := count(func(p *part) bool {
		pr := p.json(lim)
		if pr.err == nil && (pr.kind == kObject || pr.kind == kArray) {
			structured = true
		}
		return pr.err == nil
	})
	if jsonVotes == len(voters) || half(jsonVotes) && structured {
		return FormatJSON
	}
	htmlRoot := false
	if half(count(func(p *part) bool {
		x, err := parseXML(stripFence(p.Content), lim)
		if err == nil && htmlElements[strings.ToLower(x.name)] {
			htmlRoot = true
		}
		return err == nil
	})) {
		if htmlRoot {
			return FormatHTML
		}
		return FormatXML
	}
	if half(count(func(p *part) bool { return looksHTML(stripFence(p.Content)) })) {
		return FormatHTML
	}
	for _, p := range voters {
		if looksMarkdown(p.Content) {
			return FormatMarkdown
		}
	}
	return FormatText
}

// htmlElements are the tags that make markup HTML rather than XML.
var htmlElements = map[string]bool{
	"html": true, "head": true, "body": true, "div": true, "p": true, "span": true, "table": true,
	"thead": true, "tbody": true, "tr": true, "td": true, "th": true, "ul": true, "ol": true, "li": true,
	"h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true, "section": true,
	"article": true, "main": true, "a": true, "br": true, "img": true, "pre": true, "code": true,
	"strong": true, "em": true, "b": true, "i": true, "blockquote": true, "dl": true, "dt": true,
	"dd": true, "header": true, "footer": true, "nav": true, "figure": true, "caption": true, "hr": true,
}

// looksHTML: the answer starts with markup and, among its first tokens,
// has a start tag of an HTML element.
func looksHTML(s string) bool {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "<") {
		return false
	}
	z := html.NewTokenizer(strings.NewReader(t))
	for range 200 {
		switch z.Next() {
		case html.ErrorToken:
			return false
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			if htmlElements[string(name)] {
				return true
			}
		}
	}
	return false
}

var markdownSyntax = regexp.MustCompile(`(?m)^ {0,3}(#{1,6}[ \t]|[-*+][ \t]|\d{1,9}[.)][ \t]|\|.*\||` + "```|~~~" + `)|\*\*[^*\n]+\*\*|\[[^\]\n]+\]\([^)\n]+\)`)

func looksMarkdown(s string) bool { return markdownSyntax.MatchString(s) }
