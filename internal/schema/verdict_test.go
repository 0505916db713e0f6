package schema

import (
	"fmt"
	"runtime"
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

// A verdict shows MaxErrors violations however many the answer has, so
// only those get a message: writing one cost about 13 KB, and an answer of
// 200 KB with 100,000 violations allocated 1.3 GB (hunt-consensus F1). The
// list is still the one a full sort would give: first by path, the last
// entry counting the rest.
func TestVerdictWritesOnlyTheViolationsItShows(t *testing.T) {
	s, err := Compile(`{"type":"object","properties":{"items":{"type":"array","items":{"type":"string"}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20000
	answer := `{"items":[` + strings.Repeat("1,", n-1) + "1]}"
	Verdict(s, answer) // warm up the printer's catalog
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	valid, errs := Verdict(s, answer)
	runtime.ReadMemStats(&after)

	if valid || len(errs) != MaxErrors {
		t.Fatalf("Verdict = %v with %d errors, want false with %d", valid, len(errs), MaxErrors)
	}
	for i, e := range errs[:MaxErrors-1] {
		if want := fmt.Sprintf("at /items/%d: got number, want string", i); e != want {
			t.Errorf("errs[%d] = %q, want %q", i, e, want)
		}
	}
	if want := fmt.Sprintf("and %d more violations", n-(MaxErrors-1)); errs[MaxErrors-1] != want {
		t.Errorf("last entry = %q, want %q", errs[MaxErrors-1], want)
	}
	// Validating and keeping 20,000 violations takes about 20 MB; writing
	// each one's message took 270 MB more.
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Errorf("Verdict allocated %d MiB for %d violations, want at most 64 MiB", got>>20, n)
	}
}

// Leaves in one place (path and keyword) are ordered by message, also when
// that tie runs across the cut to MaxErrors.
func TestVerdictBreaksTiesAtTheCutByMessage(t *testing.T) {
	// Every element breaks up to three allOf branches under the same
	// keyword at the same path; their messages differ, and the validator
	// reports them in the other order. The tie at /3 spans the ninth
	// entry, the last one shown, and the tenth and eleventh.
	s, err := Compile(`{"type":"array","items":{"allOf":[{"maxLength":3},{"maxLength":2},{"maxLength":1}]}}`)
	if err != nil {
		t.Fatal(err)
	}
	answer := `["abc","abcd","abcd","abcd","abcd"]` // 2 + 4*3 violations
	_, errs := Verdict(s, answer)
	want := []string{"at /0: maxLength: got 3, want 1", "at /0: maxLength: got 3, want 2"}
	for i := 1; i <= 2; i++ {
		for w := 1; w <= 3; w++ {
			want = append(want, fmt.Sprintf("at /%d: maxLength: got 4, want %d", i, w))
		}
	}
	want = append(want, "at /3: maxLength: got 4, want 1", "and 5 more violations")
	if !slices.Equal(errs, want) {
		t.Errorf("errs =\n%q\nwant\n%q", errs, want)
	}
}

// treeSchema is a recursive schema: an answer may nest as deep as it
// likes and still conform, so only MaxAnswerDepth stops the validator
// from following it.
const treeSchema = `{"type":"object","properties":{"a":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":["array","integer"],"items":{"$ref":"#/$defs/n"}}}}`

// nestedAnswer is {"a":[[…[leaf]…]]} with depth levels in all, the
// object included.
func nestedAnswer(depth int, leaf string) string {
	return `{"a":` + strings.Repeat("[", depth-1) + leaf + strings.Repeat("]", depth-1) + `}`
}

func TestVerdictJudgesNoAnswerDeeperThanMaxAnswerDepth(t *testing.T) {
	s, err := Compile(treeSchema)
	if err != nil {
		t.Fatal(err)
	}
	tooDeep := fmt.Sprintf("at /: the answer is nested deeper than %d levels", MaxAnswerDepth)
	tests := []struct {
		name      string
		answer    string
		wantValid bool
		wantErrs  []string
	}{
		{"a conforming answer at the limit is valid", nestedAnswer(MaxAnswerDepth, "1"), true, nil},
		{"a violation at the limit is named where it is", nestedAnswer(MaxAnswerDepth, `"x"`), false, nil},
		{"one level past the limit is too deep, conforming or not", nestedAnswer(MaxAnswerDepth+1, "1"), false, []string{tooDeep}},
		// Built 9,990 deep, the violation's errors took 859 MiB.
		{"a violation 9,990 deep is not validated", nestedAnswer(9990, `"x"`), false, []string{tooDeep}},
		{"a fenced deep answer is too deep", "```json\n" + nestedAnswer(MaxAnswerDepth+1, "1") + "\n```", false, []string{tooDeep}},
		{"brackets inside strings do not nest", `{"a":[1],"b":"` + strings.Repeat(`[{\"`, 1000) + `"}`, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			valid, errs := Verdict(s, tt.answer)
			if valid != tt.wantValid {
				t.Fatalf("Verdict = %v, %.200q; want valid %v", valid, errs, tt.wantValid)
			}
			if tt.wantErrs != nil && !slices.Equal(errs, tt.wantErrs) {
				t.Fatalf("errors = %.200q, want %q", errs, tt.wantErrs)
			}
			if !valid && len(errs) == 0 {
				t.Fatal("not valid, and no violation named")
			}
		})
	}
}
