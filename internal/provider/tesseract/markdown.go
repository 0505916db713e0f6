package tesseract

import "strings"

// tsvToMarkdown turns tesseract's TSV into markdown. Each paragraph the
// engine found is a markdown paragraph (separated by a blank line), each
// of its lines stays a line, words are joined by single spaces; blocks
// that are the columns of a table are read row by row (see pageItems) and
// written as a markdown table, as the PDF path writes the tables it finds;
// a table of one row is no table but fields (see table.fields). A page
// with no words gives "". Text is escaped so that markdown renders it as
// the words it is.
func tsvToMarkdown(tsv string) string {
	words := parseTSV(tsv)
	var out strings.Builder
	for start := 0; start < len(words); {
		end := start + 1
		for end < len(words) && words[end].page == words[start].page {
			end++
		}
		for _, it := range pageItems(words[start:end]) {
			if out.Len() > 0 {
				out.WriteString("\n\n")
			}
			writeItem(&out, it)
		}
		start = end
	}
	return out.String()
}

// writeItem writes a paragraph or a table.
func writeItem(out *strings.Builder, it item) {
	if it.table == nil {
		for j, words := range it.lines {
			if j > 0 {
				out.WriteByte('\n')
			}
			out.WriteString(escapeLineStart(escapeWords(words)))
		}
		return
	}
	rows := it.table.rows
	if len(rows) == 1 {
		for j, f := range it.table.fields() {
			if j > 0 {
				out.WriteByte('\n')
			}
			out.WriteString(escapeLineStart(escapeWords(f)))
		}
		return
	}
	for k, r := range rows {
		if k > 0 {
			out.WriteByte('\n')
		}
		out.WriteString("|")
		for _, c := range r {
			out.WriteString(" " + strings.ReplaceAll(escapeInline(c), "|", `\|`) + " |")
		}
		if k == 0 {
			out.WriteString("\n|" + strings.Repeat(" --- |", len(r)))
		}
	}
}

// escapeWords joins words with single spaces, each escaped.
func escapeWords(words []string) string {
	esc := make([]string, len(words))
	for i, w := range words {
		esc[i] = escapeInline(w)
	}
	return strings.Join(esc, " ")
}

// escapeInline backslash-escapes the characters that would make markdown
// change recognized text: emphasis and code markers, raw HTML ("<lazy>"
// would vanish when the page is rendered to HTML) and the backslash.
func escapeInline(s string) string {
	if !strings.ContainsAny(s, "\\`*_<") {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\', '`', '*', '_', '<':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// escapeLineStart escapes a line (already inline-escaped) that markdown
// would read as block syntax: a heading (#), a quote (>), a code fence
// (~~~; backticks are escaped inline), or a rule or setext underline (a
// line of only - or =, which would also turn the line above into a
// heading). Genuine list markers ("- item", "1. item") are left alone: a
// list in the scan is a list.
func escapeLineStart(line string) string {
	if line == "" {
		return line
	}
	switch line[0] {
	case '#', '>', '~':
		return `\` + line
	case '-', '=':
		if strings.Trim(line, string(line[0])+" ") == "" {
			return `\` + line
		}
	}
	return line
}
