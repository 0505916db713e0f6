package jsonnum

import "testing"

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
