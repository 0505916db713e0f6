package fieldpath

import "testing"

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
