package fieldpath

import (
	"slices"
	"strings"
	"testing"
)

func TestKey(t *testing.T) {
	tests := []struct{ name, key, want string }{
		{"a plain key is itself", "total", "total"},
		{"a dot is escaped", "a.b", `a\.b`},
		{"a backslash is escaped", `a\b`, `a\\b`},
		{"both, in order", `a\.`, `a\\\.`},
		{"the empty key has a name", "", `\e`},
		{"multi-byte characters are kept", "é.", `é\.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Key(tt.key); got != tt.want {
				t.Errorf("Key(%q) = %q, want %q", tt.key, got, tt.want)
			}
		})
	}
}

// FuzzKeyPathsReadBackOneWay: keys written with Key and joined by dots
// read back as exactly those keys, so two different places never share a
// path (the key "a.b" against "b" inside "a", "" against "e"). Invalid
// UTF-8 is compared as the reports write it, each bad byte U+FFFD.
func FuzzKeyPathsReadBackOneWay(f *testing.F) {
	f.Add("a.b", "", `\e`)
	f.Add(`a\`, ".", "e")
	f.Add("é.", `\\`, "\xff.")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		keys := []string{string([]rune(a)), string([]rune(b)), string([]rune(c))}
		path := Key(a) + "." + Key(b) + "." + Key(c)
		got := readPath(path)
		for i := range got {
			got[i] = string([]rune(got[i]))
		}
		if !slices.Equal(got, keys) {
			t.Fatalf("keys %q wrote %q, which reads back as %q", keys, path, got)
		}
	})
}

// readPath splits a dot-path into its keys, undoing Key's escapes.
func readPath(path string) []string {
	var keys []string
	var seg strings.Builder
	for i := 0; i < len(path); i++ {
		switch {
		case path[i] == '\\' && i+1 < len(path):
			i++
			if path[i] != 'e' {
				seg.WriteByte(path[i])
			}
		case path[i] == '.':
			keys = append(keys, seg.String())
			seg.Reset()
		default:
			seg.WriteByte(path[i])
		}
	}
	return append(keys, seg.String())
}
