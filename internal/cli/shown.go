package cli

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Text from the service (a message, a job's error, a title, a proxy's
// page) is printed for a person to read, most often on a terminal, which
// obeys what it is sent: ESC starts a sequence that recolours, clears the
// screen, retitles the window or writes the clipboard (OSC 52), and U+009B
// and the other C1 characters do the same on many terminals. None of it
// may reach the terminal as it came.

// terminalUnsafe reports a character that text from the service must not
// carry to a terminal: a control character (C0, DEL, C1; a line break or
// tab would also break a table's rows), or a bidirectional embedding,
// override or isolate, which shows the text around it in another order
// than it has.
func terminalUnsafe(r rune) bool {
	return r < ' ' || r >= 0x7f && r <= 0x9f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// shownText is text from the service as one line of a message shows it:
// what terminalUnsafe names, and bytes that are not UTF-8, are written as
// Go escapes (\n, \x1b, \u009b, \xff), so that they can be read and are
// not obeyed. Text without them is returned as it is.
func shownText(s string) string {
	if !strings.ContainsFunc(s, terminalUnsafe) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case terminalUnsafe(r) && r < utf8.RuneSelf:
			fmt.Fprintf(&b, `\x%02x`, r)
		case terminalUnsafe(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// shownLines is a message that may span lines as the command prints it
// last: each line as shownText shows it.
func shownLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = shownText(l)
	}
	return strings.Join(lines, "\n")
}

// tableCell is text for one cell of a printed table: what terminalUnsafe
// names (a tab, a line break, ESC) becomes a space, and bytes that are not
// UTF-8 become U+FFFD, so that the cell neither breaks the table's rows nor
// drives the terminal.
func tableCell(text string) string {
	return strings.Map(func(r rune) rune {
		if terminalUnsafe(r) {
			return ' '
		}
		return r
	}, text)
}
