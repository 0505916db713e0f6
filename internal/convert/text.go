package convert

import (
	"strings"
	"unicode/utf8"
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
func cleanText(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\r', r == '\f', r == '\v', r == 0x85, r == 0x2028, r == 0x2029:
			return '\n'
		case r == '\t', r == '\n':
			return r
		case r < 0x20, r >= 0x7F && r <= 0x9F, r == 0xFEFF:
			return -1
		}
		return r
	}, s)
}
