// Package fence reads a model answer through one code fence wrapped around
// all of it (```json … ```), which models add to JSON, XML and HTML answers
// although asked for the value alone. It is the one rule for that fence:
// merge parses answers through it, the row's schema verdict and the
// consensus vote judge them through it, so one answer is never JSON to one
// of them and not to another. Pure: no I/O.
package fence

import "strings"

// Strip returns the inside of s when s, without surrounding white space, is
// exactly one fenced code block: an opening line of three backticks and an
// optional language word (no further backtick), the content, and a closing
// line of three backticks. Anything else, including two blocks or a fence
// inside the text, is returned as it is.
func Strip(s string) string {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < 6 {
		return s
	}
	nl := strings.IndexByte(t, '\n')
	if nl < 0 {
		return s
	}
	inner := t[nl+1 : len(t)-3]
	if strings.Contains(inner, "\n```") || strings.Contains(t[3:nl], "`") {
		return s // more than one block, or not a fence
	}
	return inner
}
