package chunk

import (
	"iter"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// A level cuts a span at one kind of boundary. cuts yields the interior
// cut offsets of s, increasing; none means the level does not apply.
// They are found as they are consumed, never listed: a span of one-token
// lines or words has a cut every two bytes, and a list of them (8 bytes
// each, more while it grows) cost gigabytes for a text of 100 MiB before
// the chunk limit could stop it.
// Cut positions follow the tokenizer's own pre-split (a space goes with
// the word after it, a newline with the text before it) so summed piece
// counts match the whole span's count closely.
type level struct {
	cuts func(s string) iter.Seq[int]
	prio int
	// fill marks the last resort, for text no boundary above divides: it
	// is cut into the longest prefixes that fit (see splitter.fill), and
	// markup keeps those cuts out of entity references.
	fill, markup bool
}

var (
	levelLines     = level{cuts: lineCuts, prio: prioSentence}
	levelSentences = level{cuts: sentenceCuts, prio: prioSentence}
	levelWords     = level{cuts: wordCuts, prio: prioWord}
	levelRunes     = level{prio: prioRune, fill: true}
	levelRunesSafe = level{prio: prioRune, fill: true, markup: true}

	proseLevels  = []level{levelSentences, levelLines, levelWords, levelRunes}
	linesLevels  = []level{levelLines, levelSentences, levelWords, levelRunes}
	rowLevels    = []level{levelWords, levelRunes}
	markupLevels = []level{levelSentences, levelWords, levelRunesSafe}
)

// pieces appends units covering [start,end): one unit when the span fits
// between its contexts, else the parts of the first level that cuts it,
// each in turn split by the finer levels. The last level cuts what is left
// into the longest prefixes that fit (fill); a single character over the
// limit becomes one unit whatever its size, and pack reports it.
func (s *splitter) pieces(start, end, prio int, levels []level, open, close string) {
	if start >= end || s.over {
		return
	}
	limit := s.limit(open, close)
	if n, ok := s.fits(start, end, limit); ok {
		s.add(start, end, n, prio, open, close)
		return
	}
	seg := s.text[start:end]
	for i, l := range levels {
		if l.fill {
			s.fill(start, end, prio, l.markup, open, close, limit)
			return
		}
		if s.cutsOver(seg, l) {
			return
		}
		finer := levels[i+1:]
		first := s.units.len()
		from, p := start, prio
		for c := range l.cuts(seg) {
			s.pieces(from, start+c, p, finer, open, close)
			if s.over {
				return
			}
			from, p = start+c, l.prio
		}
		if from == start {
			continue // the level does not cut the span
		}
		s.pieces(from, end, p, finer, open, close)
		if s.over {
			return
		}
		s.collapse(first, start, end, prio, open, close, limit)
		return
	}
	s.add(start, end, s.count(seg), prio, open, close)
}

// cutsOver reports whether the pieces level l cuts seg into are alone
// more than the chunk limit leaves room for, and then marks the text over
// it. Each piece becomes units of at least one token, so pieces beyond
// the tokens the limit still allows (maxChunks × budget less those
// counted) prove the text over it as surely as counting them would, and
// without a unit (32 bytes) for each piece until the tokens pass
// it: 100 MiB of one-token lines stops here after a scan. A piece is at
// least a byte, so a span no longer than that room is not scanned.
func (s *splitter) cutsOver(seg string, l level) bool {
	if s.maxChunks == 0 || len(seg) <= s.room() {
		return false
	}
	n, room := 1, s.room() // pieces: one more than the cuts
	for range l.cuts(seg) {
		if n++; n > room {
			break
		}
	}
	return s.piecesOver(n)
}

// overFrom reports whether the units from k on alone put the token sum
// over the chunk limit, from tokens0 under it: dropped, they leave the
// text under it again. Not when piecesOver added tokens of no unit.
func (s *splitter) overFrom(k, tokens0 int) bool {
	if !s.over || tokens0 > s.maxChunks*s.budget {
		return false
	}
	n := tokens0
	for i := k; i < s.units.len(); i++ {
		n += int(s.units.at(i).tokens)
	}
	return n == s.tokens
}

// room is how many more tokens the chunk limit allows (with a limit).
func (s *splitter) room() int { return s.maxChunks*s.budget - s.tokens }

// piecesOver marks the text over the chunk limit, and reports it, when n
// more pieces of at least a token each cannot fit the room it leaves.
// s.tokens is then still a lower bound, as TooManyChunksError's AtLeast
// wants: the units so far and a token a piece.
func (s *splitter) piecesOver(n int) bool {
	if s.maxChunks == 0 || n <= s.room() {
		return false
	}
	s.tally(n)
	return true
}

// span is a byte range of the input with the strength of the boundary
// before it.
type span struct{ start, end, prio int }

// lineEnd returns the end of the line of text[:end] that starts at i,
// after its newline (end for the last line).
func lineEnd(text string, i, end int) int {
	if j := strings.IndexByte(text[i:end], '\n'); j >= 0 {
		return i + j + 1
	}
	return end
}

func isBlank(s string) bool { return strings.TrimSpace(s) == "" }

var (
	atxHeading = regexp.MustCompile(`^ {0,3}#{1,6}(?:[ \t]|\r?\n|$)`)
	fenceOpen  = regexp.MustCompile("^ {0,3}(```+|~~~+)")
	tableSep   = regexp.MustCompile(`^ {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*\r?\n?$`)
	listItem   = regexp.MustCompile(`^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]`)
)

// blocks yields the blank-line blocks of text: each block runs from its
// first non-blank line through the blank lines after it (leading blank
// lines belong to the first block). With markdown, a heading line starts a
// block of its own strength, and fenced code keeps its blank lines. The
// blocks are found as they are consumed, so a split that stops early has
// not walked the rest of the text.
func blocks(text string, markdown bool) iter.Seq[span] {
	return func(yield func(span) bool) {
		// A heading alone is no block: it stays with the text it heads,
		// so each block is held until the next one shows whether it is.
		var held span
		holding := false
		emit := func(b span) bool {
			switch {
			case !markdown:
				return yield(b)
			case !holding:
				held, holding = b, true
			case isHeadingOnly(text[held.start:held.end]):
				held.end = b.end
			default:
				ok := yield(held)
				held = b
				return ok
			}
			return true
		}
		cur := span{0, 0, prioBlock}
		// seen: a non-blank line is in cur. Until one is, cur holds only
		// the text's leading blank lines, which are no block of their own.
		prevBlank, inFence, seen := false, false, false
		fence := ""
		for start := 0; start < len(text); {
			end := len(text)
			if j := strings.IndexByte(text[start:], '\n'); j >= 0 {
				end = start + j + 1
			}
			line := text[start:end]
			blank := isBlank(line)
			if seen && !inFence && !blank {
				prio := -1
				switch {
				case markdown && isHeadingLine(line):
					prio = prioHeading
				case prevBlank:
					prio = prioBlock
				}
				if prio >= 0 {
					cur.end = start
					if !emit(cur) {
						return
					}
					cur = span{start, 0, prio}
				}
			}
			if markdown {
				if m := fenceLine(line); m != nil {
					switch {
					case !inFence:
						inFence, fence = true, m[1]
					case closesFence(line, fence):
						inFence = false
					}
				}
			}
			if markdown && !seen && !blank && isHeadingLine(line) {
				// The text's first block is a heading's as any other: it
				// does not end a chunk while its section follows.
				cur.prio = prioHeading
			}
			prevBlank, seen = blank, seen || !blank
			start = end
		}
		cur.end = len(text)
		if emit(cur) && holding {
			yield(held)
		}
	}
}

// isHeadingLine and fenceLine match atxHeading and fenceOpen, after
// checking the character they need after the line's spaces: most lines
// have neither, and two regular expressions a line were most of the time
// a markdown text of 50 million one-token lines took to give up.
func isHeadingLine(line string) bool {
	l := strings.TrimLeft(line, " ")
	return l != "" && l[0] == '#' && atxHeading.MatchString(line)
}

func fenceLine(line string) []string {
	l := strings.TrimLeft(line, " ")
	if l == "" || l[0] != '`' && l[0] != '~' {
		return nil
	}
	return fenceOpen.FindStringSubmatch(line)
}

func isHeadingOnly(block string) bool {
	line, rest, _ := strings.Cut(strings.TrimLeft(block, " \t\r\n"), "\n")
	return atxHeading.MatchString(line+"\n") && isBlank(rest)
}

// plain splits paragraphs, then lines, then sentences and words.
func (s *splitter) plain() {
	for b := range blocks(s.text, false) {
		if s.over {
			return
		}
		s.pieces(b.start, b.end, b.prio, linesLevels, "", "")
	}
}

// closesFence reports whether line closes a code block opened by fence:
// the same character, at least as many, nothing else but white space.
func closesFence(line, fence string) bool {
	line = strings.TrimLeft(line, " ")
	return strings.HasPrefix(line, fence) && isBlank(strings.TrimLeft(line, fence[:1]))
}

// markdown splits at headings and paragraphs; an oversized paragraph by
// sentences, a list by lines, a table by rows with its header repeated, a
// code block by lines with its fence re-opened.
func (s *splitter) markdown() {
	for b := range blocks(s.text, true) {
		if s.over {
			return
		}
		s.markdownBlock(b)
	}
}

func (s *splitter) markdownBlock(b span) {
	if n, ok := s.fits(b.start, b.end, s.budget); ok {
		// The unit pieces would add, without counting the block again.
		s.add(b.start, b.end, n, b.prio, "", "")
		return
	}
	// The block's lines are walked, never listed: a list of them (24
	// bytes a line) was the largest cost of a block of one-token lines.
	h := tableHeader(s.text, b.start, b.end)
	o, fence := fenceAt(s.text, b.start, b.end)
	switch {
	case o >= 0 && (h < 0 || o < h):
		s.code(b, o, fence)
		return
	case h >= 0:
		s.table(b, h)
		return
	}
	levels := proseLevels
	// The text's first block may start with blank lines.
	for p := b.start; p < b.end; {
		e := lineEnd(s.text, p, b.end)
		if line := s.text[p:e]; !isBlank(line) {
			if e < b.end && listItem.MatchString(line) {
				levels = linesLevels
			}
			break
		}
		p = e
	}
	s.pieces(b.start, b.end, b.prio, levels, "", "")
}

// fenceAt returns where the first line of text[start:end] that opens a
// fenced code block starts, and its fence; o is -1 when no line opens one.
func fenceAt(text string, start, end int) (o int, fence string) {
	for p := start; p < end; {
		e := lineEnd(text, p, end)
		if m := fenceLine(text[p:e]); m != nil {
			return p, m[1]
		}
		p = e
	}
	return -1, ""
}

// code splits an oversized block holding a fenced code block whose opening
// line starts at o: text before it as prose, the opening line glued to the
// first line of code, then one unit per line that re-opens the fence when
// a chunk starts there and closes it when a chunk ends there (when both
// take at most half the budget), so every chunk shows code as code; what
// follows the closing line is a block of its own.
func (s *splitter) code(b span, o int, fence string) {
	first := s.units.len()
	// Blank lines before the fence (the text's first) are no prose:
	// they go with the fence line.
	from := leadingBlank(s.text, b.start, o)
	s.pieces(b.start, from, b.prio, proseLevels, "", "")
	oEnd := lineEnd(s.text, o, b.end)
	open := s.text[o:oEnd]
	// A closing fence must stand on a line of its own: after a unit cut
	// inside a line it needs a newline first.
	shut, shutMidLine := fence+"\n", "\n"+fence+"\n"
	if !strings.HasSuffix(open, "\n") || s.ctx(open)+s.ctx(shutMidLine) > s.budget/2 {
		open, shut, shutMidLine = "", "", ""
	}
	// The code's lines run from oEnd to the closing line, or to the
	// block's end when the block does not close it.
	codeEnd, closed := b.end, false
	for p := oEnd; p < b.end; {
		e := lineEnd(s.text, p, b.end)
		if closesFence(s.text[p:e], fence) {
			codeEnd, closed = p, true
			break
		}
		p = e
	}
	rest := b.end
	if closed {
		rest = lineEnd(s.text, codeEnd, b.end)
		// Blank lines after the closing fence stay with it.
		if isBlank(s.text[rest:b.end]) {
			rest = b.end
		}
	}
	// next returns the end of the unit after the one that ends at line's
	// start: the start of the next non-blank line of code but the first
	// (blank lines stay with the line before them: alone they would be a
	// unit, and maybe a chunk, without content), else rest.
	line := oEnd
	next := func() int {
		for line < codeEnd {
			line = lineEnd(s.text, line, b.end)
			if line < codeEnd && !isBlank(s.text[line:lineEnd(s.text, line, b.end)]) {
				return line
			}
		}
		return rest
	}
	if s.maxChunks > 0 && rest-from > s.room() {
		// Each line's unit below is at least a token: count them first,
		// as cutsOver counts a level's pieces, rather than make a unit
		// for each until their tokens pass the chunk limit.
		n, room := 1, s.room()
		for next() != rest && n <= room {
			n++
		}
		if s.piecesOver(n) {
			return
		}
		line = oEnd
	}
	prio := b.prio
	if from > b.start {
		prio = prioSentence
	}
	for i, e := 0, next(); ; i, e = i+1, next() {
		last := e == rest // the lines of code end before rest
		close := shut
		if last && closed {
			close = "" // the source closes the fence itself
		}
		k := s.units.len()
		s.pieces(from, e, prio, rowLevels, open, close)
		if close != "" && !s.over && (s.units.len()-k > 1 || !strings.HasSuffix(s.text[from:e], "\n")) {
			s.drop(k)
			s.pieces(from, e, prio, rowLevels, open, shutMidLine)
		}
		if s.over {
			return
		}
		if i == 0 {
			// The first unit holds the opening line itself. Its parts were
			// sized with the context, so dropping it only makes room.
			for u := s.units.at(k); u != nil; u = s.firstPart(u) {
				u.open = 0
			}
		}
		from, prio = e, prioSentence
		if last {
			break
		}
	}
	s.collapse(first, b.start, rest, b.prio, "", "", s.budget)
	if rest < b.end && !s.over {
		s.markdownBlock(span{rest, b.end, prioSentence})
	}
}

// leadingBlank returns where the text before a block's fence or table
// header, text[start:end], ends as prose: start when it is only blank
// lines, which then go with the line after them, else end.
func leadingBlank(text string, start, end int) int {
	if isBlank(text[start:end]) {
		return start
	}
	return end
}

// tableHeader returns where a pipe table's header line (a line with '|'
// followed by a delimiter line) of text[start:end] starts, or -1.
func tableHeader(text string, start, end int) int {
	for p := start; p < end; {
		e := lineEnd(text, p, end)
		if e == end {
			break // no line follows
		}
		if strings.Contains(text[p:e], "|") {
			d := text[e:lineEnd(text, e, end)]
			if tableSep.MatchString(d) && strings.Contains(d, "-") {
				return p
			}
		}
		p = e
	}
	return -1
}

// table splits an oversized block holding a pipe table whose header line
// starts at h: text before it as prose, the header and delimiter glued to
// the first row (or, when they do not fit together, a unit that goes with
// it), then one unit per row that re-opens with the header (when the
// header takes at most half the budget and fits with the row), then what
// follows as lines.
func (s *splitter) table(b span, h int) {
	first := s.units.len()
	from := leadingBlank(s.text, b.start, h)
	s.pieces(b.start, from, b.prio, proseLevels, "", "")
	delim := lineEnd(s.text, h, b.end) // where the delimiter line starts
	rows := lineEnd(s.text, delim, b.end)
	header := s.text[h:rows]
	open := header
	if s.ctx(header) > s.budget/2 {
		open = ""
	}
	// The rows are the lines with '|' after the delimiter line.
	rowsEnd := rows
	for rowsEnd < b.end {
		e := lineEnd(s.text, rowsEnd, b.end)
		if !strings.Contains(s.text[rowsEnd:e], "|") {
			break
		}
		rowsEnd = e
	}
	// Blank lines closing the block stay with the last row.
	rest := rowsEnd
	if isBlank(s.text[rest:b.end]) {
		rest = b.end
	}
	// unitEnd returns the end of the unit for the row ending at e: rest
	// for the last.
	unitEnd := func(e int) int {
		if e == rowsEnd {
			return rest
		}
		return e
	}
	rowEnd := rows // the first unit ends after the first row, if any
	if rowsEnd > rows {
		rowEnd = lineEnd(s.text, rows, b.end)
	}
	end0 := unitEnd(rowEnd)
	if s.maxChunks > 0 && rest-from > s.room() {
		// A unit a row, each at least a token: count them first (see
		// code).
		n, room := 1, s.room()
		for e := rowEnd; e < rowsEnd && n <= room; n++ {
			e = lineEnd(s.text, e, b.end)
		}
		if s.piecesOver(n) {
			return
		}
	}
	prio := b.prio
	if from > b.start {
		prio = prioSentence
	}
	k, tokens0 := s.units.len(), s.tokens
	s.pieces(from, end0, prio, rowLevels, "", "")
	// Units over the limit that are cut again below prove nothing: cut
	// apart, their pieces may count more tokens than the cut below
	// (fuzz: 39 where the header's own units made 37, a limit of 2
	// chunks of 19 refused for a text Split made 2 of). Pieces stopped
	// short by the limit are cut again as Split, which goes on, would.
	retry := s.overFrom(k, tokens0) && (s.units.len()-k > 1 || int(s.units.at(s.units.len()-1).end) < end0)
	if rowsEnd > rows && (s.units.len()-k > 1 && !s.over || retry) {
		// The first row does not fit with the header: the header and
		// delimiter lines become units of their own, cut only at their
		// line end if need be, that go with the start of the row, which
		// is cut to leave them room and re-opens them in each chunk it
		// continues in.
		s.drop(k)
		s.over = false // back to tokens0, under the limit (overFrom)
		s.pieces(from, rows, prio, linesLevels, "", "")
		for i := k; i < s.units.len(); i++ {
			s.units.at(i).keep = true
		}
		s.pieces(rows, end0, prioSentence, rowLevels, open, "")
	}
	from = end0
	for rowEnd < rowsEnd {
		if s.over {
			return
		}
		rowEnd = lineEnd(s.text, rowEnd, b.end)
		e := unitEnd(rowEnd)
		s.row(from, e, prioSentence, open)
		from = e
	}
	s.pieces(rest, b.end, prioSentence, linesLevels, "", "")
	s.collapse(first, b.start, b.end, b.prio, "", "", s.budget)
}

// row appends a table row, with the header re-opened when a chunk starts
// there if both fit the budget; a row that fits only alone goes alone
// rather than being cut for the header's sake, and a row larger than the
// budget is cut at words, each part re-opening the header.
func (s *splitter) row(start, end, prio int, header string) {
	k := s.units.len()
	s.pieces(start, end, prio, rowLevels, "", "")
	if header == "" || s.over {
		return
	}
	if s.units.len()-k == 1 {
		if u := s.units.at(k); s.ctx(header)+int(u.tokens) <= s.budget {
			s.reopen(u, s.intern(header))
		}
		return
	}
	s.drop(k)
	s.pieces(start, end, prio, rowLevels, header, "")
}

// reopen sets the context a chunk starting at u, or at any of its parts,
// re-opens.
func (s *splitter) reopen(u *unit, open ctxID) {
	u.open = open
	parts := s.partsOf(u)
	for i := range parts {
		s.reopen(&parts[i], open)
	}
}

// lineCuts cuts after each newline that a non-blank line follows; blank
// lines stay with the line before them, and those that lead s with the
// line after them.
func lineCuts(s string) iter.Seq[int] {
	return func(yield func(int) bool) {
		first := strings.IndexFunc(s, isNotSpace)
		if first < 0 {
			return
		}
		for i := 0; i < len(s); {
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				break
			}
			i += j + 1
			k := i
			for k < len(s) && (s[k] == ' ' || s[k] == '\t' || s[k] == '\r' || s[k] == '\n') {
				if s[k] == '\n' {
					i = k + 1
				}
				k++
			}
			if k < len(s) && i < len(s) && i > first && !yield(i) {
				return
			}
		}
	}
}

func isSentenceEnd(r rune) bool { return r == '.' || r == '!' || r == '?' || r == '…' }
func isCJKStop(r rune) bool     { return r == '。' || r == '！' || r == '？' }
func isCloser(r rune) bool {
	return r == '"' || r == '\'' || r == ')' || r == ']' || r == '»' || r == '”' || r == '’'
}

// sentenceCuts cuts after sentence-ending punctuation (and closing quotes
// or brackets) that whitespace follows: after the last newline of that
// whitespace, else before its last space so the space leads the next
// sentence as the tokenizer would have it. CJK full stops cut directly.
func sentenceCuts(s string) iter.Seq[int] {
	return func(yield func(int) bool) {
		sentenceCutsTo(s, yield)
	}
}

// sentenceCutsTo gives sentenceCuts' cuts of s to yield until it returns
// false.
func sentenceCutsTo(s string, yield func(int) bool) {
	last := 0 // the last cut yielded
	// add yields c when it is a new interior cut; false when yield
	// asked to stop.
	add := func(c int) bool {
		if c > 0 && c < len(s) && c > last {
			last = c
			return yield(c)
		}
		return true
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case isCJKStop(r):
			if !add(i) {
				return
			}
		case isSentenceEnd(r):
			j := i
			for j < len(s) {
				r2, sz := utf8.DecodeRuneInString(s[j:])
				if !isCloser(r2) && !isSentenceEnd(r2) {
					break
				}
				j += sz
			}
			k := j
			lastSize := 0 // of the last white space character
			for k < len(s) {
				r2, sz := utf8.DecodeRuneInString(s[k:])
				if !unicode.IsSpace(r2) {
					break
				}
				lastSize = sz
				k += sz
			}
			if k == j || k == len(s) {
				i = j
				continue
			}
			c := k - lastSize
			if nl := strings.LastIndexByte(s[j:k], '\n'); nl >= 0 {
				c = j + nl + 1
			}
			if !add(c) {
				return
			}
			i = k
		}
	}
}

// wordCuts cuts before the last whitespace character ahead of each word
// but the first: whitespace that leads the text stays with its first word,
// or it would be a piece of its own, and a chunk of nothing but it when
// the word after it fills a chunk alone.
func wordCuts(s string) iter.Seq[int] {
	return func(yield func(int) bool) {
		prevSpace, lastSpaceAt, word := false, 0, false
		for i, r := range s {
			sp := unicode.IsSpace(r)
			if sp {
				lastSpaceAt = i
			} else {
				if prevSpace && word && !yield(lastSpaceAt) {
					return
				}
				word = true
			}
			prevSpace = sp
		}
	}
}

// fill cuts text[start:end], which no boundary above a character
// divides (base64, CJK without punctuation, a long run of letters), into
// the longest prefixes that fit limit, each counted while it is found.
// Halving such a span until each part was at most limit bytes (a token is
// at least one byte) left parts of about half the budget for text of
// 1.3–1.6 bytes a token, and two such parts never fit one chunk: twice the
// chunks and provider calls, and a false too-many-chunks refusal.
func (s *splitter) fill(start, end, prio int, markup bool, open, close string, limit int) {
	for start < end && !s.over {
		seg := s.text[start:end]
		cut, n := s.longestPrefix(seg, limit, markup)
		// A piece that fills a chunk alone goes out between its contexts,
		// and tokens can merge across their edges ("<p>" then ">x…"): the
		// sum of the counts is the count only across clean joins (a fence
		// line before code), so confirm it otherwise and aim lower by the
		// excess.
		for l := limit; (open != "" || close != "") && cut > firstCut(seg, markup); {
			over := s.ctx(open) + n + s.ctx(close) - s.budget
			if !s.joins(open, seg[:cut]) || !s.joins(seg[:cut], close) {
				over = s.count(open+seg[:cut]+close) - s.budget
			}
			if over <= 0 {
				break
			}
			l -= over
			cut, n = s.longestPrefix(seg, l, markup)
		}
		s.add(start, start+cut, n, prio, open, close)
		start, prio = start+cut, prioRune
	}
}

// fitsWith reports whether piece, of n tokens, fits the budget between
// open and close: summed across clean joins, else counted.
func (s *splitter) fitsWith(open, piece string, n int, close string) bool {
	if open == "" && close == "" || s.joins(open, piece) && s.joins(piece, close) {
		return s.ctx(open)+n+s.ctx(close) <= s.budget
	}
	return s.count(open+piece+close) <= s.budget
}

func isNotSpace(r rune) bool { return !unicode.IsSpace(r) }

// lastCharStart returns where the last character of seg that is not
// white space starts, as a cut cutBefore allows (so an entity reference
// stays whole) and on a grapheme cluster boundary where one is allowed
// there; 0 when seg has none.
func lastCharStart(seg string, markup bool) int {
	i := strings.LastIndexFunc(seg, isNotSpace)
	if i <= 0 {
		return 0
	}
	if g := graphemeCutBefore(seg, i, markup); g > 0 {
		return g
	}
	return cutBefore(seg, i, markup)
}

// longestPrefix returns the longest prefix of seg found to count at most
// limit tokens (the search stops once one counts within limit/128 of
// limit), and its count. Its end is a cut cutBefore allows and, unless a single grapheme
// cluster is longer than the prefix, a grapheme cluster boundary, so a
// flag, an emoji with its skin tone or ZWJ sequence, or a letter with its
// accents stays in one chunk. When no prefix fits, the shortest allowed
// one comes back, over limit, for pack to report.
//
// Cost: the count of a prefix grows nearly linearly with its length, so
// guesses interpolated from the counts so far land close; each count is
// of at most about one chunk's text, a few per chunk, never the rest of
// the span.
func (s *splitter) longestPrefix(seg string, limit int, markup bool) (int, int) {
	if limit <= 0 {
		cut := firstCut(seg, markup)
		return cut, s.count(seg[:cut])
	}
	lo, nlo := 0, 0          // longest prefix known to fit, and its count
	hi, nhi := len(seg)+1, 0 // shortest known not to fit (len+1: none yet)
	// limit bytes hold at most limit tokens.
	g := cutBefore(seg, min(limit, len(seg)), markup)
	for range 48 {
		if g <= lo || g >= hi {
			g = cutBefore(seg, lo+(min(hi, len(seg)+1)-lo)/2, markup)
			if g <= lo {
				break
			}
		}
		n := s.count(seg[:g])
		if n <= limit {
			lo, nlo = g, n
			if g == len(seg) || n >= limit-limit/128 {
				break
			}
		} else {
			hi, nhi = g, n
		}
		// Aim slightly short of the limit by the rate seen so far.
		switch {
		case hi > len(seg) && nlo > 0:
			g = lo + int(float64(lo)*(float64(limit)/float64(nlo)-1)*0.995)
			g = cutBefore(seg, min(g, len(seg)), markup)
		case hi <= len(seg) && nhi > nlo:
			g = cutBefore(seg, lo+int(float64(hi-lo)*float64(limit-nlo)/float64(nhi-nlo)), markup)
		}
	}
	if lo == 0 {
		cut := firstCut(seg, markup)
		return cut, s.count(seg[:cut])
	}
	if g := graphemeCutBefore(seg, lo, markup); g > 0 && g < lo {
		if n := s.count(seg[:g]); n <= limit {
			return g, n
		}
	}
	return lo, nlo
}

// cutBefore returns the last allowed cut of seg at or before i: on a
// character boundary and, with markup, not inside an entity reference
// such as "&amp;" (a cut there would leave neither half well-formed). 0
// means none.
func cutBefore(seg string, i int, markup bool) int {
	if i >= len(seg) {
		return len(seg)
	}
	for i > 0 && !utf8.RuneStart(seg[i]) {
		i--
	}
	if markup && i > 0 {
		if amp := strings.LastIndexByte(seg[max(0, i-maxEntity):i], '&'); amp >= 0 {
			amp += max(0, i-maxEntity)
			if isEntityName(seg[amp+1 : i]) {
				i = amp
			}
		}
	}
	return i
}

// maxEntity bounds the length of an entity reference looked back for; the
// longest HTML name is 32 bytes with its '&'.
const maxEntity = 40

// isEntityName reports whether s can be the inside of an entity reference
// cut short: name or number characters only, no ';' yet.
func isEntityName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '#' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// firstCut returns the shortest allowed prefix of seg: its first
// character, or with markup a whole entity reference at its start.
func firstCut(seg string, markup bool) int {
	if markup && strings.HasPrefix(seg, "&") {
		i := 1
		for i < len(seg) && i < maxEntity && isEntityName(seg[i:i+1]) {
			i++
		}
		if i < len(seg) && seg[i] == ';' {
			i++
		}
		return i
	}
	_, n := utf8.DecodeRuneInString(seg)
	return n
}

// graphemeCutBefore returns the last grapheme cluster boundary of seg at
// or before i (segmenting from seg's start, which the caller cut at a
// boundary) that cutBefore allows, or 0.
func graphemeCutBefore(seg string, i int, markup bool) int {
	at, rest, state := 0, seg, -1
	for {
		var cluster string
		cluster, rest, _, state = uniseg.FirstGraphemeClusterInString(rest, state)
		if cluster == "" || at+len(cluster) > i {
			break
		}
		at += len(cluster)
	}
	if c := cutBefore(seg, at, markup); c == at {
		return at
	}
	return 0
}
