package schema

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestVerdict(t *testing.T) {
	s, err := Compile(`{"type":"object","required":["items"],"properties":{"items":{"type":"array","items":{"type":"object","required":["price"],"properties":{"price":{"type":"number"},"name":{"type":"string","maxLength":3}}}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		answer     string
		wantValid  bool
		wantErrs   int
		wantSubstr string
	}{
		{"conforming answer", `{"items":[{"price":1.5}]}`, true, 0, ""},
		{"violation names the instance path", `{"items":[{"price":1},{"price":"x"}]}`, false, 1, "at /items/1/price"},
		{"missing required property", `{}`, false, 1, "items"},
		{"not JSON", `{"items":`, false, 1, "not valid JSON"},
		{"many violations are bounded", `{"items":[` + strings.Repeat(`{"price":"x"},`, 30) + `{"price":"x"}]}`, false, MaxErrors, "more violations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			valid, errs := Verdict(s, tt.answer)
			if valid != tt.wantValid || len(errs) != tt.wantErrs {
				t.Fatalf("Verdict = %v, %q; want %v with %d errors", valid, errs, tt.wantValid, tt.wantErrs)
			}
			if tt.wantSubstr != "" && !strings.Contains(strings.Join(errs, "\n"), tt.wantSubstr) {
				t.Fatalf("errors %q do not mention %q", errs, tt.wantSubstr)
			}
		})
	}
}

func TestVerdictErrorsAreCutOnACharacterBoundary(t *testing.T) {
	s, err := Compile(`{"const":"a"}`)
	if err != nil {
		t.Fatal(err)
	}
	_, errs := Verdict(s, `"`+strings.Repeat("€", 400)+`"`)
	for _, e := range errs {
		if len(e) > MaxErrorBytes || !utf8.ValidString(e) {
			t.Fatalf("error of %d bytes, valid UTF-8 %v", len(e), utf8.ValidString(e))
		}
	}
	if got := clip(strings.Repeat("€", 200)); len(got) > MaxErrorBytes || !utf8.ValidString(got) || len(got) != 510 {
		t.Fatalf("clip gave %d bytes", len(got))
	}
}
