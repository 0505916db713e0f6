package pdf

import (
	"bytes"
	"html"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/bidi"
	"golang.org/x/text/unicode/norm"
)

// fontZoom is the pdftohtml zoom: its coordinates and font sizes are
// integers, so zoom 2 gives half-point resolution.
const fontZoom = 2

// word is one word of the text layer, in points from the page's top left.
type word struct {
	x0, y0, x1, y1 float64
	text           string
	size           float64 // font size from pdftohtml; 0 when unknown
	bold           bool
}

// textLine is one line as pdftotext grouped it.
type textLine struct {
	x0, y0, x1, y1 float64
	words          []word
	block          int // the pdftotext block it belongs to, page-unique
}

// textPage is one page of the text layer.
type textPage struct {
	number        int
	width, height float64
	lines         []textLine
	blocks        int
}

// parseBBox reads pdftotext -bbox-layout output (XHTML with page, flow,
// block, line and word elements carrying coordinates). It is a scanner for
// that one shape, not an XML parser: poppler writes it regularly, and
// encoding/xml would cost more than poppler itself. Malformed input gives
// fewer words, never an error.
func parseBBox(data []byte, firstPage int) []textPage {
	var pages []textPage
	var cur *textPage
	var ln *textLine
	block := -1
	i := 0
	if k := bytes.Index(data, []byte("<doc>")); k >= 0 {
		i = k // past the document's metadata
	}
	for {
		j := bytes.IndexByte(data[i:], '<')
		if j < 0 {
			break
		}
		i += j + 1
		end := bytes.IndexByte(data[i:], '>')
		if end < 0 {
			break
		}
		tag := data[i : i+end]
		i += end + 1
		name := tagName(tag)
		switch name {
		case "page":
			pages = append(pages, textPage{number: firstPage + len(pages),
				width: attrFloat(tag, "width"), height: attrFloat(tag, "height")})
			cur = &pages[len(pages)-1]
			block = -1
			if attr(tag, "width") != nil && cur.width <= 0 && cur.height <= 0 {
				// A page poppler could not load (a broken page tree) has
				// no size, and pdftotext writes the previous page's words
				// into it again: it stays empty.
				cur = nil
			}
		case "/page":
			cur, ln = nil, nil
		case "block":
			if cur != nil {
				block = cur.blocks
				cur.blocks++
			}
		case "line":
			if cur != nil {
				x0, y0, x1, y1 := box(tag)
				cur.lines = append(cur.lines, textLine{x0: x0, y0: y0, x1: x1, y1: y1, block: max(block, 0)})
				ln = &cur.lines[len(cur.lines)-1]
			}
		case "/line":
			if cur != nil && ln != nil && len(ln.words) == 0 {
				cur.lines = cur.lines[:len(cur.lines)-1]
			}
			ln = nil
		case "word":
			k := bytes.Index(data[i:], []byte("</word>"))
			if k < 0 {
				return pages
			}
			text := cleanText(data[i : i+k])
			i += k + len("</word>")
			if ln != nil && text != "" {
				x0, y0, x1, y1 := box(tag)
				ln.words = append(ln.words, word{x0: x0, y0: y0, x1: x1, y1: y1, text: text})
			}
		}
	}
	return pages
}

func tagName(tag []byte) string {
	n := 0
	if len(tag) > 0 && tag[0] == '/' {
		n = 1
	}
	for n < len(tag) && tag[n] != ' ' && tag[n] != '\t' && tag[n] != '\n' && tag[n] != '/' {
		n++
	}
	switch string(tag[:n]) { // no allocation for these comparisons
	case "page":
		return "page"
	case "/page":
		return "/page"
	case "block":
		return "block"
	case "line":
		return "line"
	case "/line":
		return "/line"
	case "word":
		return "word"
	case "text":
		return "text"
	case "fontspec":
		return "fontspec"
	}
	return ""
}

// attr returns the value of name="…" in tag.
func attr(tag []byte, name string) []byte {
	for off := 0; ; {
		k := bytes.Index(tag[off:], []byte(name))
		if k < 0 {
			return nil
		}
		k += off
		v := k + len(name)
		if (k == 0 || tag[k-1] == ' ' || tag[k-1] == '\t' || tag[k-1] == '\n') && v+1 < len(tag) && tag[v] == '=' && tag[v+1] == '"' {
			e := bytes.IndexByte(tag[v+2:], '"')
			if e < 0 {
				return nil
			}
			return tag[v+2 : v+2+e]
		}
		off = v
	}
}

func attrFloat(tag []byte, name string) float64 {
	return parseNumber(attr(tag, name))
}

// box reads the xMin, yMin, xMax and yMax attributes in one pass.
func box(tag []byte) (x0, y0, x1, y1 float64) {
	for i := 0; ; {
		k := bytes.Index(tag[i:], []byte(`="`))
		if k < 0 {
			return
		}
		k += i
		n := k
		for n > 0 && tag[n-1] != ' ' && tag[n-1] != '\t' && tag[n-1] != '\n' {
			n--
		}
		e := bytes.IndexByte(tag[k+2:], '"')
		if e < 0 {
			return
		}
		v := parseNumber(tag[k+2 : k+2+e])
		switch string(tag[n:k]) {
		case "xMin":
			x0 = v
		case "yMin":
			y0 = v
		case "xMax":
			x1 = v
		case "yMax":
			y1 = v
		}
		i = k + 2 + e + 1
	}
}

// parseNumber reads poppler's fixed-point numbers ("123.456000") without
// strconv's generality, which costs more than all of the layout work;
// anything else goes to strconv. NaN and absurd values read as 0.
func parseNumber(b []byte) float64 {
	neg := len(b) > 0 && b[0] == '-'
	i := 0
	if neg {
		i = 1
	}
	var mant uint64
	digits, scale := 0, 0
	frac := false
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9' && digits < 18:
			mant = mant*10 + uint64(c-'0')
			digits++
			if frac {
				scale++
			}
		case c == '.' && !frac:
			frac = true
		default:
			f, err := strconv.ParseFloat(string(b), 64)
			if err != nil || f != f || f > 1e7 || f < -1e7 {
				return 0
			}
			return f
		}
	}
	if digits == 0 {
		return 0
	}
	f := float64(mant) / pow10[scale]
	if neg {
		f = -f
	}
	if f > 1e7 || f < -1e7 {
		return 0
	}
	return f
}

var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18}

// cleanText unescapes XML text and drops what must not reach the output:
// invalid UTF-8, control characters and bidi controls.
func cleanText(b []byte) string {
	s := string(b)
	if bytes.IndexByte(b, '&') >= 0 {
		s = html.UnescapeString(s)
	}
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || r < 0x20 || r == 0x7f || isBidiControl(r) || isPresentationForm(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var sb strings.Builder
	for _, r := range s {
		switch {
		case r == utf8.RuneError, r < 0x20, r == 0x7f, isBidiControl(r):
		case isPresentationForm(r):
			// Ligatures (ﬁ) and Hebrew/Arabic presentation forms are glyph
			// choices; their compatibility decomposition is the text. It
			// is in logical order, the line around it in visual order
			// until logicalOrder: a right-to-left one (lam-alef) goes in
			// as drawn.
			d := []rune(norm.NFKC.String(string(r)))
			if c := bidiClass(d[0]); c == bidi.R || c == bidi.AL {
				reverseClusters(d)
			}
			sb.WriteString(string(d))
		default:
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

func isPresentationForm(r rune) bool {
	return r >= 0xfb00 && r <= 0xfdff || r >= 0xfe70 && r <= 0xfefe
}

func isBidiControl(r rune) bool {
	return r == '\u200e' || r == '\u200f' || (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069')
}

// span is one text run of pdftohtml -xml, in points.
type span struct {
	x0, y0, x1, y1 float64
	size           float64
	bold           bool
}

// parseFonts reads pdftohtml -xml output into spans per page number.
func parseFonts(data []byte, firstPage int) map[int][]span {
	type font struct {
		size float64
		bold bool
	}
	fonts := map[string]font{}
	pages := map[int][]span{}
	page := firstPage - 1
	i := 0
	for {
		j := bytes.IndexByte(data[i:], '<')
		if j < 0 {
			break
		}
		i += j + 1
		end := bytes.IndexByte(data[i:], '>')
		if end < 0 {
			break
		}
		tag := data[i : i+end]
		i += end + 1
		switch tagName(tag) {
		case "page":
			if n, err := strconv.Atoi(string(attr(tag, "number"))); err == nil {
				page = n
			} else {
				page++
			}
		case "fontspec":
			fam := string(attr(tag, "family"))
			fonts[string(attr(tag, "id"))] = font{size: attrFloat(tag, "size") / fontZoom, bold: boldFamily(fam)}
		case "text":
			k := bytes.Index(data[i:], []byte("</text>"))
			if k < 0 {
				return pages
			}
			content := data[i : i+k]
			i += k + len("</text>")
			f := fonts[string(attr(tag, "font"))]
			top, left := attrFloat(tag, "top")/fontZoom, attrFloat(tag, "left")/fontZoom
			w, h := attrFloat(tag, "width")/fontZoom, attrFloat(tag, "height")/fontZoom
			pages[page] = append(pages[page], span{x0: left, y0: top, x1: left + w, y1: top + h,
				size: f.size, bold: f.bold || bytes.Contains(content, []byte("<b>"))})
		}
	}
	return pages
}

func boldFamily(fam string) bool {
	f := strings.ToLower(fam)
	for _, s := range []string{"bold", "black", "heavy", "demi", "semibold", ",b"} {
		if strings.Contains(f, s) {
			return true
		}
	}
	return false
}

// applyFonts gives each word the size and weight of the pdftohtml span its
// centre falls in.
func applyFonts(p *textPage, spans []span) {
	if len(spans) == 0 {
		return
	}
	sort.Slice(spans, func(a, b int) bool { return spans[a].y0 < spans[b].y0 })
	maxH := 0.0
	for _, s := range spans {
		maxH = max(maxH, s.y1-s.y0)
	}
	for li := range p.lines {
		for wi := range p.lines[li].words {
			w := &p.lines[li].words[wi]
			cx, cy := (w.x0+w.x1)/2, (w.y0+w.y1)/2
			k := sort.Search(len(spans), func(i int) bool { return spans[i].y0 > cy+0.5 })
			for k--; k >= 0 && spans[k].y0 >= cy-maxH-0.5; k-- {
				s := spans[k]
				if cy >= s.y0-0.5 && cy <= s.y1+0.5 && cx >= s.x0-0.5 && cx <= s.x1+0.5 {
					w.size, w.bold = s.size, s.bold
					break
				}
			}
		}
	}
}
