package jobmerge

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/docjobs/docjobs/internal/schema"
)

// randDoc writes JSON with what decoding has to get right: escapes,
// invalid UTF-8, multi-byte text, numbers as spelled, repeated keys,
// empty containers and white space.
func randDoc(r *rand.Rand, b *strings.Builder, depth int) {
	scalars := []string{"null", "true", "false", "0", "-1.50", "1e3", "12345678901234567890", `""`, `"a"`,
		`"\u00e9\n\"\\\/"`, "\"\xff\xfe\"", `"é€😀"`, `"\ud800"`, `"<&>"`}
	if depth > 4 || r.IntN(3) == 0 {
		b.WriteString(scalars[r.IntN(len(scalars))])
		return
	}
	if r.IntN(2) == 0 {
		b.WriteString("[ ")
		for i := range r.IntN(4) {
			if i > 0 {
				b.WriteString(" ,\n")
			}
			randDoc(r, b, depth+1)
		}
		b.WriteString("]")
		return
	}
	b.WriteString("{")
	for i := range r.IntN(4) {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(b, "%s :", []string{`"a"`, `"b"`, `"a"`, `"\u0061"`, "\"\xff\"", `"é"`}[r.IntN(6)])
		randDoc(r, b, depth+1)
	}
	b.WriteString("}")
}

// TestDecodeIsJSONSchemasUnmarshal: the document conforms validates is
// the one schema.Verdict validates (jsonschema.UnmarshalJSON), and so is
// the verdict, for valid JSON and for text that is not.
func TestDecodeIsJSONSchemasUnmarshal(t *testing.T) {
	s, err := schema.Compile(`{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"type":"array","minItems":2}]}`)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 3000 {
		var b strings.Builder
		randDoc(r, &b, 0)
		text := b.String()
		if i%10 == 0 {
			text = "```json\n" + text + "\n```"
		}
		if i%25 == 0 {
			text += " x" // not JSON
		}
		want, werr := jsonschema.UnmarshalJSON(strings.NewReader(text))
		if got, ok := decode(text); ok != (werr == nil) || ok && !reflect.DeepEqual(got, want) {
			if i%10 != 0 { // a fenced answer: decode is given it stripped
				t.Fatalf("decode(%q) = %#v, %v; UnmarshalJSON %#v, %v", text, got, ok, want, werr)
			}
		}
		wantValid, _ := schema.Verdict(s, text)
		if got := conforms(`{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"type":"array","minItems":2}]}`, text); *got != wantValid {
			t.Fatalf("conforms(%q) = %v, Verdict says %v", text, *got, wantValid)
		}
	}
}

// TestDecodeSharesSmallValues: a document of small repeated values costs
// its slots, not a boxed header per value (hunt-merge: 64 MiB of one-digit
// numbers judged against a schema peaked at 2.6 GB).
func TestDecodeSharesSmallValues(t *testing.T) {
	for _, text := range []string{
		"[" + strings.Repeat("1,", 10000) + "1]",
		"[" + strings.Repeat(`"ab",`, 10000) + `"ab"]`,
	} {
		allocs := testing.AllocsPerRun(3, func() { decode(text) })
		if allocs > 1000 {
			t.Errorf("decode of 10,001 equal values: %.0f allocations, want a few (the array's)", allocs)
		}
		doc, _ := decode(text)
		want, _ := jsonschema.UnmarshalJSON(strings.NewReader(text))
		if !reflect.DeepEqual(doc, want) {
			t.Errorf("decode(%.20s…) differs from UnmarshalJSON", text)
		}
	}
}

// FuzzDecodeIsJSONSchemasUnmarshal: for any text, decode accepts what
// jsonschema.UnmarshalJSON accepts and builds the same document, so the
// hand-written reader never diverges from the validator's own decoding.
func FuzzDecodeIsJSONSchemasUnmarshal(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 8 {
		var b strings.Builder
		randDoc(r, &b, 0)
		f.Add(b.String())
	}
	for _, s := range []string{``, ` `, `1 2`, `{"a":1,"a":2}`, "\"\xed\xa0\x80\"", `"\ud83d\ude00"`, `[1,]`, ` {} `, "\ufeff{}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		want, werr := jsonschema.UnmarshalJSON(strings.NewReader(text))
		got, ok := decode(text)
		if ok != (werr == nil) || ok && !reflect.DeepEqual(got, want) {
			t.Fatalf("decode(%q) = %#v, %v; UnmarshalJSON %#v, %v", text, got, ok, want, werr)
		}
	})
}
