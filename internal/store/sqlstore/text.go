package sqlstore

import (
	"strings"
	"unicode/utf8"
)

// storableArgs returns args with every string made storable (storable):
// the one place all text bound to a statement passes, so that both
// databases store, and match, the same thing. PostgreSQL refuses NUL and
// invalid UTF-8 in a TEXT value, where SQLite keeps any bytes: text a
// hostile document, a provider or a client put there (recognized text,
// model answers, file names, error messages, an id in a path) would fail
// the write on one database only, and a failed write of a row is retried
// until its job ends, paying a provider again each time. []byte arguments
// (sealed secrets, BYTEA) are bytes, not text, and stay as they are. args
// is copied only when a string changes.
func storableArgs(args []any) []any {
	var out []any
	for i, a := range args {
		v, ok := a.(string)
		if !ok || isStorable(v) {
			continue
		}
		if out == nil {
			out = append([]any(nil), args...)
		}
		out[i] = storable(v)
	}
	if out == nil {
		return args
	}
	return out
}

// isStorable reports text PostgreSQL stores as it is.
func isStorable(s string) bool {
	return strings.IndexByte(s, 0) < 0 && utf8.ValidString(s)
}

// storable is s with each NUL and each byte that is not part of valid UTF-8
// replaced by U+FFFD, as encoding/json already writes invalid bytes in the
// JSON columns. NUL is replaced rather than dropped so that a reader sees
// that something was there.
func storable(s string) string {
	if isStorable(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		if r == 0 || (r == utf8.RuneError && size == 1) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
		s = s[size:]
	}
	return b.String()
}
