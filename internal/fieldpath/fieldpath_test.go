package fieldpath

import (
	"slices"
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
		got := Split(path)
		for i := range got {
			got[i] = string([]rune(got[i]))
		}
		if !slices.Equal(got, keys) {
			t.Fatalf("keys %q wrote %q, which reads back as %q", keys, path, got)
		}
	})
}
