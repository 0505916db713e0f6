package convert

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
)

// readsAsText reports whether data, decoded as decodeText would, is text:
// almost no control codes, NULs or undecodable bytes. It admits text that
// sniffing calls binary (EBCDIC, UTF-16 without a byte-order mark).
func readsAsText(data []byte, declared string) bool {
	sample := data[:min(len(data), detectSample)]
	if len(sample) == 0 {
		return true
	}
	s, _ := decodeText(sample, declared)
	var bad, total int
	for _, r := range s {
		total++
		if r == utf8.RuneError || r == 0 || (r < 0x20 && r != '\t' && r != '\n' && r != '\r' && r != '\f') || (r >= 0x7F && r <= 0x9F) {
			bad++
		}
	}
	return total > 0 && bad*100 <= total // at most 1%
}

// cleanText normalizes decoded text: line breaks become \n, form feeds
// (page breaks) become line breaks, and other control codes, which carry
// no text and upset downstream JSON and HTML, are dropped.
//
// C1 code points (U+0080–U+009F) are the exception: in real text they are
// windows-1252 punctuation that went through a Latin-1 or EBCDIC
// conversion (cp500's 0x92/0x97/0x99 decode to U+0092 ’, U+0097 —,
// U+0099 ™), so they are read as windows-1252, like ISO-8859-1 text is
// (legacyCharsets). The five windows-1252 leaves undefined become a space:
// deleting them would join their neighbours ("2–66 MHz" into "266 MHz").
// U+0085 stays a line break: it is EBCDIC's newline (NEL).
func cleanText(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\r', r == '\f', r == '\v', r == 0x85, r == 0x2028, r == 0x2029:
			return '\n'
		case r == '\t', r == '\n':
			return r
		case r >= 0x80 && r <= 0x9F:
			if w := charmap.Windows1252.DecodeByte(byte(r)); w > 0x9F && w != utf8.RuneError {
				return w
			}
			return ' '
		case r < 0x20, r == 0x7F, r == 0xFEFF:
			return -1
		}
		return r
	}, s)
}
