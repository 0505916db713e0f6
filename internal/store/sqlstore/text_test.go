package sqlstore

import (
	"reflect"
	"testing"
)

func TestStorableReplacesNULAndInvalidBytesOnly(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain text stays", "héllo ☃", "héllo ☃"},
		{"empty stays", "", ""},
		{"NUL", "a\x00b", "a\uFFFDb"},
		{"an invalid byte", "a\xffb", "a\uFFFDb"},
		{"each byte of a cut sequence", "a\xe2\x82", "a\uFFFD\uFFFD"},
		{"a lone surrogate's encoding", "\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"},
		{"other control characters stay", "a\tb\nc\x01\x7f", "a\tb\nc\x01\x7f"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := storable(tt.in); got != tt.want {
				t.Errorf("storable(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestStorableArgsChangesOnlyStringsAndCopiesOnlyWhenNeeded(t *testing.T) {
	clean := []any{"id", 3, []byte("\x00sealed"), nil}
	if got := storableArgs(clean); &got[0] != &clean[0] {
		t.Error("clean arguments were copied")
	}
	args := []any{"a\x00", 3, []byte("\x00sealed"), "ok"}
	got := storableArgs(args)
	want := []any{"a\uFFFD", 3, []byte("\x00sealed"), "ok"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("storableArgs = %q, want %q", got, want)
	}
	if args[0] != "a\x00" {
		t.Error("the caller's arguments were changed")
	}
}
