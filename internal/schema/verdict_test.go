package schema

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
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
		// One fence rule with merge and consensus (internal/fence).
		{"a fenced conforming answer is judged by its inside", "```json\n{\"items\":[{\"price\":1.5}]}\n```", true, 0, ""},
		{"a fenced answer's violations name paths inside the fence", "```\n{\"items\":[{\"price\":\"x\"}]}\n```\n", false, 1, "at /items/0/price"},
		{"two fenced blocks are not JSON", "```json\n{}\n```\n```json\n{}\n```", false, 1, "not valid JSON"},
		{"text before a fence is not JSON", "Here it is:\n```json\n{\"items\":[]}\n```", false, 1, "not valid JSON"},
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

// fourteenViolations compiles a schema of 14 integer properties p00..p13
// and an answer breaking every one of them.
func fourteenViolations(t *testing.T) (*jsonschema.Schema, string) {
	t.Helper()
	var props, answer []string
	for i := range 14 {
		props = append(props, fmt.Sprintf(`"p%02d":{"type":"integer"}`, i))
		answer = append(answer, fmt.Sprintf(`"p%02d":"x"`, i))
	}
	s, err := Compile(`{"type":"object","properties":{` + strings.Join(props, ",") + `}}`)
	if err != nil {
		t.Fatal(err)
	}
	return s, "{" + strings.Join(answer, ",") + "}"
}

func TestVerdictKeepsTheSameViolationsInTheSameOrder(t *testing.T) {
	s, answer := fourteenViolations(t)
	var want []string
	for i := range MaxErrors - 1 {
		want = append(want, fmt.Sprintf("at /p%02d: got string, want integer", i))
	}
	want = append(want, "and 5 more violations")
	// The validator's causes come in Go map order: one run could match
	// by luck, fifty in a row cannot.
	for run := range 50 {
		if _, errs := Verdict(s, answer); !slices.Equal(errs, want) {
			t.Fatalf("run %d: errors %q, want %q", run, errs, want)
		}
	}
}

func TestVerdictOrdersViolationsByInstancePath(t *testing.T) {
	s, err := Compile(`{"type":"object","properties":{` +
		`"items":{"type":"array","items":{"type":"integer"}},` +
		`"a/b":{"type":"integer"},"c~d":{"type":"integer"},"z":{"type":"integer"}},` +
		`"additionalProperties":false}`)
	if err != nil {
		t.Fatal(err)
	}
	answer := `{"z":"x","zz":1,"yy":1,"items":[1,1,"x",1,1,1,1,1,1,1,"x"],"c~d":"x","a/b":"x","xx":1}`
	want := []string{
		`at /: additional properties 'xx', 'yy', 'zz' not allowed`,
		`at /a~1b: got string, want integer`,
		`at /c~0d: got string, want integer`,
		`at /items/2: got string, want integer`,
		`at /items/10: got string, want integer`,
		`at /z: got string, want integer`,
	}
	for run := range 50 {
		if _, errs := Verdict(s, answer); !slices.Equal(errs, want) {
			t.Fatalf("run %d: errors\n%q\nwant\n%q", run, errs, want)
		}
	}
}

func TestCompareToken(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want int
	}{
		{"indices compare as numbers", "2", "10", -1},
		{"equal indices", "7", "7", 0},
		{"an index comes before a name", "9", "1a", -1},
		{"a name comes after an index", "a", "10", 1},
		{"names compare bytewise", "p10", "p9", -1},
		{"a zero-padded key after its number", "2", "02", -1},
		{"the empty key is a name", "", "0", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := compareToken(tt.a, tt.b); got != tt.want {
				t.Fatalf("compareToken(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
		})
	}
}
