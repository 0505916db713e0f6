package tesseract

import (
	"strconv"
	"strings"
)

// TSV columns (tesseract's tsv renderer): level, page_num, block_num,
// par_num, line_num, word_num, left, top, width, height, conf, text.
// Levels 1–4 (page, block, paragraph, line) carry conf -1 and no text;
// level 5 rows are the words.
const (
	colLevel = iota
	colPage
	colBlock
	colPar
	colLine
	colWord
	colConf = 10
	colText = 11
	columns = 12
)

const levelWord = "5"

// tsvToMarkdown turns tesseract's TSV into markdown: each paragraph the
// engine found is a markdown paragraph (separated by a blank line), each
// of its lines stays a line, words are joined by single spaces. Words with
// no text are dropped; nothing else is, since even low-confidence words
// are usually the right letters of a hard word (a drop cap, a small font)
// and dropping them costs more than it saves. A page with no words gives
// "". Text is escaped so that markdown renders it as the words it is.
func tsvToMarkdown(tsv string) string {
	type key struct{ page, block, par int }
	var (
		paras   [][][]string // paragraphs of lines of words
		prevKey key
		prevLn  int
	)
	for _, row := range strings.Split(tsv, "\n") {
		f := strings.SplitN(strings.TrimRight(row, "\r"), "\t", columns)
		if len(f) != columns || f[colLevel] != levelWord {
			continue
		}
		text := strings.TrimSpace(f[colText])
		if text == "" {
			continue
		}
		if conf, err := strconv.ParseFloat(f[colConf], 64); err != nil || conf < 0 {
			continue
		}
		k := key{atoi(f[colPage]), atoi(f[colBlock]), atoi(f[colPar])}
		ln := atoi(f[colLine])
		switch {
		case len(paras) == 0 || k != prevKey:
			paras = append(paras, [][]string{{}})
		case ln != prevLn:
			p := &paras[len(paras)-1]
			*p = append(*p, []string{})
		}
		prevKey, prevLn = k, ln
		p := paras[len(paras)-1]
		p[len(p)-1] = append(p[len(p)-1], escapeInline(text))
	}
	var out strings.Builder
	for i, p := range paras {
		if i > 0 {
			out.WriteString("\n\n")
		}
		for j, words := range p {
			if j > 0 {
				out.WriteByte('\n')
			}
			out.WriteString(escapeLineStart(strings.Join(words, " ")))
		}
	}
	return out.String()
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
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
