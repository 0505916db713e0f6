package office

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The document model DOCX and PPTX are read into, and its markdown.

// span is a run of text with one formatting.
type span struct {
	text                 string
	bold, italic, strike bool
	link                 string // an external URL, or ""
	lineBreak            bool   // a hard line break; text is empty
	raw                  bool   // markdown already (a footnote reference); not escaped
}

// block is a paragraph or a table.
type block interface{ isBlock() }

// para is one paragraph.
type para struct {
	spans   []span
	heading int       // 1–6; 0 for body text
	list    *listItem // nil when not a list item
}

// listItem places a paragraph in a list.
type listItem struct {
	level   int // 0-based nesting level as the source gives it
	ordered bool
	number  int
}

// table is rows of cells; a cell that a merged neighbour covers is empty.
type table struct {
	rows [][]cell
	// omitted counts the rows after rows, left out when they were read
	// (past the cell budget).
	omitted int
}

type cell struct {
	blocks []block
}

func (*para) isBlock()  {}
func (*table) isBlock() {}

func (p *para) empty() bool {
	for _, s := range p.spans {
		if strings.TrimSpace(s.text) != "" {
			return false
		}
	}
	return true
}

// hasText reports whether any of bs has text.
func hasText(bs []block) bool {
	for _, b := range bs {
		switch b := b.(type) {
		case *para:
			if !b.empty() {
				return true
			}
		case *table:
			for _, row := range b.rows {
				for _, c := range row {
					if hasText(c.blocks) {
						return true
					}
				}
			}
		}
	}
	return false
}

// renderer writes blocks as markdown within the file's budgets: table
// cells (Config.MaxCells) and output bytes (Config.MaxOutputBytes). Once
// the byte budget is spent it writes nothing more and says so.
type renderer struct {
	maxCells, cells int
	maxBytes, bytes int64
	truncated       bool
}

func newRenderer(cfg Config) *renderer {
	return &renderer{maxCells: cfg.MaxCells, maxBytes: cfg.MaxOutputBytes}
}

// truncationNote ends output cut at the byte budget.
func (r *renderer) truncationNote() string {
	if !r.truncated {
		return ""
	}
	return fmt.Sprintf("… the rest of the document is omitted: its markdown exceeds the %s limit", sizeString(r.maxBytes))
}

// mdWriter renders a sequence of blocks: paragraphs separated by blank
// lines, consecutive list items by single newlines.
type mdWriter struct {
	r      *renderer
	out    strings.Builder
	stack  []int // source levels of the open list items, outermost first
	inList bool
}

func (r *renderer) writer() *mdWriter { return &mdWriter{r: r} }

// blocks renders bs on their own.
func (r *renderer) blocks(bs []block) string {
	w := r.writer()
	for _, b := range bs {
		if !w.add(b) {
			break
		}
	}
	return w.String()
}

func (w *mdWriter) String() string { return w.out.String() }

// write appends s after the separator, within the byte budget.
func (w *mdWriter) write(list bool, s string) bool {
	sep := ""
	if w.out.Len() > 0 {
		sep = "\n\n"
		if list && w.inList {
			sep = "\n"
		}
	}
	n := int64(len(sep) + len(s))
	if w.r.bytes+n > w.r.maxBytes {
		w.r.truncated = true
		return false
	}
	w.r.bytes += n
	w.out.WriteString(sep)
	w.out.WriteString(s)
	return true
}

// line writes a line of markdown as is, on the line after the previous
// one; false means the byte budget is spent.
func (w *mdWriter) line(s string) bool {
	w.inList = true
	return w.write(true, s)
}

// add renders one block; false means the byte budget is spent.
func (w *mdWriter) add(b block) bool {
	if w.r.truncated {
		return false
	}
	switch b := b.(type) {
	case *para:
		if b.empty() {
			return true
		}
		if b.list != nil && b.heading == 0 {
			for len(w.stack) > 0 && w.stack[len(w.stack)-1] > b.list.level {
				w.stack = w.stack[:len(w.stack)-1]
			}
			if len(w.stack) == 0 || w.stack[len(w.stack)-1] < b.list.level {
				w.stack = append(w.stack, b.list.level)
			}
			indent := strings.Repeat("    ", len(w.stack)-1)
			marker := "- "
			if b.list.ordered {
				marker = strconv.Itoa(b.list.number) + ". "
			}
			text := escapeLines(inlineMarkdown(b.spans, "  \n", false))
			// Continuation lines of the item are indented to stay in it.
			text = strings.ReplaceAll(text, "\n", "\n"+indent+strings.Repeat(" ", len(marker)))
			ok := w.write(true, indent+marker+text)
			w.inList = true
			return ok
		}
		var text string
		if b.heading > 0 {
			text = strings.Repeat("#", b.heading) + " " + headingText(b.spans)
		} else {
			text = escapeLines(inlineMarkdown(b.spans, "  \n", false))
		}
		if !w.write(false, text) {
			return false
		}
	case *table:
		if len(b.rows) == 0 && b.omitted == 0 {
			return true
		}
		var text string
		// A one-cell table is a frame around content, not data.
		if len(b.rows) == 1 && len(b.rows[0]) == 1 && b.omitted == 0 {
			text = w.r.blocks(b.rows[0][0].blocks)
		} else {
			text = w.r.table(b)
		}
		if w.r.truncated {
			return false
		}
		if text != "" && !w.write(false, text) {
			return false
		}
	}
	w.stack, w.inList = w.stack[:0], false
	return true
}

// table renders a markdown pipe table, its first row the header.
func (r *renderer) table(t *table) string {
	width := 0
	for _, tr := range t.rows {
		width = max(width, len(tr))
	}
	rows := make([][]string, 0, len(t.rows))
	omitted := 0
	for i, tr := range t.rows {
		// Short rows are padded to the width, so they cost the width.
		if r.cells+width > r.maxCells {
			omitted = len(t.rows) - i
			break
		}
		r.cells += width
		row := make([]string, len(tr))
		for j, c := range tr {
			row[j] = r.cellText(c.blocks)
		}
		rows = append(rows, row)
	}
	omitted += t.omitted
	if len(rows) == 0 && omitted == 0 {
		return ""
	}
	var out strings.Builder
	out.WriteString(pipeTable(rows, width))
	if omitted > 0 {
		if out.Len() > 0 {
			out.WriteString("\n\n")
		}
		fmt.Fprintf(&out, "… %d more rows omitted", omitted)
	}
	return out.String()
}

// pipeTable writes rows (already escaped) as a table width columns wide.
func pipeTable(rows [][]string, width int) string {
	if len(rows) == 0 || width == 0 {
		return ""
	}
	var out strings.Builder
	writeRow := func(row []string) {
		out.WriteString("|")
		for j := 0; j < width; j++ {
			c := ""
			if j < len(row) {
				c = row[j]
			}
			out.WriteString(" " + c + " |")
		}
	}
	for i, row := range rows {
		if i > 0 {
			out.WriteString("\n")
		}
		writeRow(row)
		if i == 0 {
			out.WriteString("\n|" + strings.Repeat(" --- |", width))
		}
	}
	return out.String()
}

// cellText flattens a cell's blocks into one table cell: paragraphs
// joined by <br>, nested tables as rows of cells separated by pipes.
func (r *renderer) cellText(bs []block) string {
	var parts []string
	for _, b := range bs {
		switch b := b.(type) {
		case *para:
			if b.empty() {
				continue
			}
			t := escapePipes(inlineMarkdown(b.spans, "<br>", true))
			if b.list != nil {
				marker := "- "
				if b.list.ordered {
					marker = strconv.Itoa(b.list.number) + ". "
				}
				t = marker + t
			}
			parts = append(parts, t)
		case *table:
			for _, tr := range b.rows {
				if r.cells+len(tr) > r.maxCells {
					break
				}
				r.cells += len(tr)
				var cs []string
				for _, c := range tr {
					if t := r.cellText(c.blocks); t != "" {
						cs = append(cs, t)
					}
				}
				if len(cs) > 0 {
					parts = append(parts, strings.Join(cs, ` \| `))
				}
			}
		}
	}
	return strings.Join(parts, "<br>")
}

// maxAltLen bounds the alternative text kept of one picture.
const maxAltLen = 1024

// imageMarkdown is a picture's alternative text as a markdown image
// without a destination, ![Company logo](): the markdown of the
// <img alt="Company logo"> the HTML reader keeps, with no URL since the
// picture is inside the file. Line breaks become spaces and the brackets
// that would end the text are escaped.
func imageMarkdown(alt string) string {
	alt = collapseSpaces(alt)
	if len(alt) > maxAltLen {
		alt = strings.ToValidUTF8(alt[:maxAltLen], "") + "…"
	}
	alt = strings.NewReplacer(`\`, `\\`, "[", `\[`, "]", `\]`).Replace(alt)
	return "![" + alt + "]()"
}

func escapePipes(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// headingText is a heading's text: one line, no emphasis.
func headingText(spans []span) string {
	var b strings.Builder
	for _, s := range spans {
		switch {
		case s.lineBreak:
			b.WriteString(" ")
		case s.raw:
			b.WriteString(s.text)
		default:
			b.WriteString(escapeText(s.text))
		}
	}
	return collapseSpaces(b.String())
}

// collapseSpaces trims s and turns runs of white space into one space.
func collapseSpaces(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// mark is an emphasis delimiter.
type mark struct {
	on    func(span) bool
	delim string
}

var marks = [...]mark{
	{func(s span) bool { return s.bold }, "**"},
	{func(s span) bool { return s.italic }, "*"},
	{func(s span) bool { return s.strike }, "~~"},
}

// inlineMarkdown renders spans with emphasis and links. br is what a hard
// line break becomes ("  \n" in a paragraph, "<br>" in a table cell).
// Delimiters are kept off white space, which CommonMark requires of them:
// white space at a change of formatting moves outside the delimiters.
func inlineMarkdown(spans []span, br string, cell bool) string {
	var out strings.Builder
	// Group consecutive spans with the same link; render each group.
	for i := 0; i < len(spans); {
		j := i + 1
		for j < len(spans) && spans[j].link == spans[i].link {
			j++
		}
		group := renderEmphasis(spans[i:j], br)
		if link := spans[i].link; link != "" && strings.TrimSpace(group) != "" {
			lead, core, trail := splitSpace(group)
			out.WriteString(lead + "[" + core + "](" + linkTarget(link) + ")" + trail)
		} else {
			out.WriteString(group)
		}
		i = j
	}
	s := out.String()
	// Trim white space around the whole and around each line.
	lines := strings.Split(s, br)
	kept := lines[:0]
	for _, l := range lines {
		l = strings.TrimFunc(l, unicode.IsSpace)
		kept = append(kept, l)
	}
	// Drop breaks at the start and end.
	for len(kept) > 0 && kept[0] == "" {
		kept = kept[1:]
	}
	for len(kept) > 0 && kept[len(kept)-1] == "" {
		kept = kept[:len(kept)-1]
	}
	if cell {
		for i, l := range kept {
			kept[i] = strings.ReplaceAll(l, "\n", " ")
		}
	}
	return strings.Join(kept, br)
}

// renderEmphasis renders spans that share a link.
func renderEmphasis(spans []span, br string) string {
	var out strings.Builder
	var open []int // indexes into marks, in the order opened
	pending := ""  // white space held until the next change of formatting
	closeAll := func(keep func(int) bool) {
		// Close from the innermost until only marks kept remain.
		for len(open) > 0 {
			allKept := true
			for _, m := range open {
				if !keep(m) {
					allKept = false
				}
			}
			if allKept {
				return
			}
			out.WriteString(marks[open[len(open)-1]].delim)
			open = open[:len(open)-1]
		}
	}
	for _, s := range spans {
		if s.lineBreak {
			closeAll(func(int) bool { return false })
			pending = ""
			out.WriteString(br)
			continue
		}
		text := s.text
		if !s.raw {
			text = escapeText(text)
		}
		lead, core, trail := splitSpace(text)
		if core == "" {
			pending += text
			continue
		}
		closeAll(func(m int) bool { return marks[m].on(s) })
		out.WriteString(pending + lead)
		for m := range marks {
			if marks[m].on(s) && !contains(open, m) {
				out.WriteString(marks[m].delim)
				open = append(open, m)
			}
		}
		out.WriteString(core)
		pending = trail
	}
	closeAll(func(int) bool { return false })
	out.WriteString(pending)
	return out.String()
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// splitSpace splits s into leading white space, the rest, and trailing white space.
func splitSpace(s string) (lead, core, trail string) {
	core = strings.TrimLeftFunc(s, unicode.IsSpace)
	lead = s[:len(s)-len(core)]
	trimmed := strings.TrimRightFunc(core, unicode.IsSpace)
	trail = core[len(trimmed):]
	return lead, trimmed, trail
}

// linkTarget writes a URL as a link destination; one with spaces or
// parentheses goes in angle brackets.
func linkTarget(u string) string {
	if strings.ContainsAny(u, " ()<>") {
		return "<" + strings.NewReplacer("<", "%3C", ">", "%3E", " ", "%20").Replace(u) + ">"
	}
	return u
}

// maxLinkLen bounds a kept link target: one long target referenced many
// times would otherwise multiply the output.
const maxLinkLen = 2048

// safeLink returns u if it is a link worth keeping (web or mail), else "".
func safeLink(u string) string {
	u = strings.TrimSpace(u)
	if len(u) > maxLinkLen {
		return ""
	}
	l := strings.ToLower(u)
	for _, p := range []string{"http://", "https://", "mailto:", "ftp://"} {
		if strings.HasPrefix(l, p) && len(u) > len(p) && !strings.ContainsAny(u, "\n\r") {
			return u
		}
	}
	return ""
}

// escapeText escapes the characters that would start inline markdown
// constructs. It escapes little on purpose: the text is read by people and
// models far more than rendered, so only what would change the structure
// is escaped.
func escapeText(s string) string {
	if !strings.ContainsAny(s, "\\*_`<[]~") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	var prev rune = ' '
	for i, c := range s {
		next, _ := utf8.DecodeRuneInString(s[i+utf8.RuneLen(c):])
		if i+utf8.RuneLen(c) >= len(s) {
			next = ' '
		}
		switch c {
		case '\\':
			// A backslash escapes only ASCII punctuation.
			if isASCIIPunct(next) {
				b.WriteByte('\\')
			}
		case '*', '`':
			b.WriteByte('\\')
		case '_':
			// Intraword underscores never make emphasis.
			if !isWordRune(prev) || !isWordRune(next) {
				b.WriteByte('\\')
			}
		case '~':
			if next == '~' || prev == '~' {
				b.WriteByte('\\')
			}
		case '<':
			if next < utf8.RuneSelf && (unicode.IsLetter(next) || next == '/' || next == '!' || next == '?') {
				b.WriteByte('\\')
			}
		case ']':
			// "](" and "][" would close a link, "]:" define one.
			if next == '(' || next == '[' || next == ':' {
				b.WriteByte('\\')
			}
		}
		b.WriteRune(c)
		prev = c
	}
	return b.String()
}

func isASCIIPunct(r rune) bool {
	return r < utf8.RuneSelf && r > ' ' && !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != 0x7f
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// escapeLines escapes what would make a line of a paragraph a block of its
// own: a heading, quote, list item, thematic break or fence (escapeText
// has already defused link reference definitions).
func escapeLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = escapeLineStart(l)
	}
	return strings.Join(lines, "\n")
}

func escapeLineStart(l string) string {
	if l == "" {
		return l
	}
	switch c := l[0]; c {
	case '#', '>', '~', '=':
		return `\` + l
	case '-', '+':
		if len(l) == 1 || l[1] == ' ' || l[1] == '\t' || l[1] == c {
			return `\` + l
		}
	case '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		n := 0
		for n < len(l) && n < 10 && l[n] >= '0' && l[n] <= '9' {
			n++
		}
		if n < len(l) && (l[n] == '.' || l[n] == ')') && (n+1 == len(l) || l[n+1] == ' ' || l[n+1] == '\t') {
			return l[:n] + `\` + l[n:]
		}
	}
	return l
}
