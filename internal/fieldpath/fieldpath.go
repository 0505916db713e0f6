// Package fieldpath writes the dot-paths that name a place in a JSON answer
// (consensus fieldPath, merge conflict field), so that both reports spell a
// key the same way and every path reads back one way.
package fieldpath

import "strings"

// Key writes one object key as a path segment: "\" becomes "\\", "."
// becomes "\.", and the empty key is "\e". Without the escape, the key
// "a.b" and the key "b" inside "a" would name the same place.
func Key(key string) string {
	if key == "" {
		return `\e`
	}
	if !strings.ContainsAny(key, `.\`) {
		return key
	}
	var b strings.Builder
	for _, r := range key {
		if r == '.' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Split reads a path back into its segments, undoing Key's escapes: the
// one reading every path has ("a\.b.c" is "a.b" then "c").
func Split(path string) []string {
	var segs []string
	var seg strings.Builder
	for i := 0; i < len(path); i++ {
		switch {
		case path[i] == '\\' && i+1 < len(path):
			i++
			if path[i] != 'e' {
				seg.WriteByte(path[i])
			}
		case path[i] == '.':
			segs = append(segs, seg.String())
			seg.Reset()
		default:
			seg.WriteByte(path[i])
		}
	}
	return append(segs, seg.String())
}
