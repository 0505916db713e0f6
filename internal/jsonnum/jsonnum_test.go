package jsonnum

import (
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
	"testing"
)

func TestCanonicalSpellings(t *testing.T) {
	tests := []struct{ lit, want string }{
		{"0", "0"}, {"-0", "0"}, {"0.000", "0"}, {"0e99", "0"},
		{"1", "1e0"}, {"1.0", "1e0"}, {"1e0", "1e0"}, {"10e-1", "1e0"}, {"0.1e1", "1e0"}, {"1E+0", "1e0"},
		{"100", "1e2"}, {"1.5", "15e-1"}, {"-2.50", "-25e-1"}, {"0.001", "1e-3"},
		{"12345678901234567890123", "12345678901234567890123e0"},
		{"1e0000000000000000000000000007", "1e7"},
		{"1e99999999999999999999", "1e99999999999999999999"},
		{"1.0e-99999999999999999999", "1e-99999999999999999999"},
	}
	for _, tt := range tests {
		if got := Canonical(tt.lit); got != tt.want {
			t.Errorf("Canonical(%s) = %s, want %s", tt.lit, got, tt.want)
		}
	}
}

func TestEqualNumbersShareOneSpellingAndOthersDoNot(t *testing.T) {
	same := [][]string{
		{"1", "1.0", "1.000", "10e-1", "0.1e1", "1E0", "1e+0"},
		{"0", "-0", "0.0", "0e10", "-0.0e-5"},
		{"-12.5", "-125e-1", "-1.25E1"},
		{"1200", "1.2e3", "12e2"},
	}
	for _, group := range same {
		for _, n := range group {
			if Canonical(n) != Canonical(group[0]) {
				t.Errorf("%s canonical %s, %s canonical %s", n, Canonical(n), group[0], Canonical(group[0]))
			}
		}
	}
	for _, pair := range [][2]string{{"1", "-1"}, {"1", "10"}, {"0.1", "1"}, {"1e999999999999999999", "1e999999999999999998"}} {
		if Canonical(pair[0]) == Canonical(pair[1]) {
			t.Errorf("%s and %s share canonical form %s", pair[0], pair[1], Canonical(pair[0]))
		}
	}
}

// FuzzCanonicalIsByValue: for any two JSON number literals, Canonical
// writes a JSON number of the same value, is its own fixed point, and
// gives both one spelling exactly when their values are equal (checked
// with big.Rat, for exponents small enough to expand).
func FuzzCanonicalIsByValue(f *testing.F) {
	for _, p := range [][2]string{{"1", "1.0"}, {"-0", "0e5"}, {"0.001", "1e-3"}, {"12.50", "125E-1"},
		{"1e0000000000000000000000000007", "1e7"}, {"1e99999999999999999999", "1e99999999999999999998"}, {"-1.5", "15e-1"}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if !isNumber(a) || !isNumber(b) {
			return
		}
		ca, cb := Canonical(a), Canonical(b)
		for _, p := range [][2]string{{a, ca}, {b, cb}} {
			if !isNumber(p[1]) {
				t.Fatalf("Canonical(%s) = %s, not a JSON number", p[0], p[1])
			}
			if again := Canonical(p[1]); again != p[1] {
				t.Fatalf("Canonical(%s) = %s, but Canonical(%s) = %s", p[0], p[1], p[1], again)
			}
		}
		ra, okA := rat(a)
		rb, okB := rat(b)
		if !okA || !okB {
			return
		}
		// Moving the point into the exponent can take it past rat's
		// bound (10e2000 is 1e2001): that one is not compared.
		if rc, ok := rat(ca); ok && rc.Cmp(ra) != 0 {
			t.Fatalf("Canonical(%s) = %s, another value", a, ca)
		}
		if (ca == cb) != (ra.Cmp(rb) == 0) {
			t.Fatalf("%s and %s: canonical %s and %s, values equal %v", a, b, ca, cb, ra.Cmp(rb) == 0)
		}
	})
}

// isNumber reports whether s is one JSON number literal.
func isNumber(s string) bool {
	return s != "" && strings.IndexByte("-0123456789", s[0]) >= 0 && s == strings.TrimSpace(s) && json.Valid([]byte(s))
}

// rat is the value of a number literal, when its exponent is small
// enough to expand.
func rat(lit string) (*big.Rat, bool) {
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		if e, err := strconv.Atoi(lit[i+1:]); err != nil || e > 2000 || e < -2000 {
			return nil, false
		}
	}
	r, ok := new(big.Rat).SetString(lit)
	return r, ok
}
