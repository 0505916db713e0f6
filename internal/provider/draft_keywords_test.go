package provider_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/schema"
)

const (
	d04 = `"$schema":"http://json-schema.org/draft-04/schema#",`
	d06 = `"$schema":"http://json-schema.org/draft-06/schema#",`
	d07 = `"$schema":"http://json-schema.org/draft-07/schema#",`
	d19 = `"$schema":"https://json-schema.org/draft/2019-09/schema",`
	d20 = `"$schema":"https://json-schema.org/draft/2020-12/schema",`
)

// draftCase is a schema in one draft and its 2020-12 copy.
type draftCase struct{ name, in, want string }

// checkDraft2020 runs Draft2020 on each case: the API takes the schema,
// the copy is the one wanted, and it compiles.
func checkDraft2020(t *testing.T, cases []draftCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := schema.Check(c.in); err != nil {
				t.Fatalf("the API refuses the test's schema: %v", err)
			}
			out, changed := provider.Draft2020(json.RawMessage(c.in))
			if string(out) != c.want || changed != (c.in != c.want) {
				t.Errorf("Draft2020 = %s (changed %t)\nwant %s", out, changed, c.want)
			}
			if err := schema.Check(string(out)); err != nil {
				t.Errorf("the 2020-12 copy does not compile: %v", err)
			}
		})
	}
}

// Draft 04–07's dependencies was split in 2019-09 into dependentRequired
// (a property list) and dependentSchemas (a schema); santhosh honours the
// old keyword in every draft, a 2020-12 vendor need not (review1).
func TestDraft2020SplitsDependencies(t *testing.T) {
	checkDraft2020(t, []draftCase{
		{"draft-07: a property list becomes dependentRequired",
			`{` + d07 + `"type":"object","dependencies":{"card":["billing"]}}`,
			`{` + d20 + `"type":"object","dependentRequired":{"card":["billing"]}}`},
		{"draft-07: a schema becomes dependentSchemas, a mix splits in place",
			`{` + d07 + `"type":"object","dependencies":{"a":["b"],"c":{"required":["d"]},"e":["f","g"]},"title":"t"}`,
			`{` + d20 + `"type":"object","dependentRequired":{"a":["b"],"e":["f","g"]},"dependentSchemas":{"c":{"required":["d"]}},"title":"t"}`},
		{"draft-06: a boolean schema becomes dependentSchemas",
			`{` + d06 + `"dependencies":{"x":false}}`,
			`{` + d20 + `"dependentSchemas":{"x":false}}`},
		{"draft-04: dependencies in a nested schema, with its tuple",
			`{` + d04 + `"properties":{"p":{"items":[{"dependencies":{"a":{"properties":{"b":{"minimum":1,"exclusiveMinimum":true}}}}}]}}}`,
			`{` + d20 + `"properties":{"p":{"prefixItems":[{"dependentSchemas":{"a":{"properties":{"b":{"exclusiveMinimum":1}}}}}]}}}`},
		{"a reference into a schema dependency follows it",
			`{` + d07 + `"properties":{"x":{"$ref":"#/dependencies/a/properties/n"}},"dependencies":{"a":{"properties":{"n":{"type":"integer"}}}}}`,
			`{` + d20 + `"properties":{"x":{"$ref":"#/dependentSchemas/a/properties/n"}},"dependentSchemas":{"a":{"properties":{"n":{"type":"integer"}}}}}`},
		{"a dependency named like a keyword is a name",
			`{` + d07 + `"dependencies":{"items":["definitions"],"dependencies":{"required":["id"]}}}`,
			`{` + d20 + `"dependentRequired":{"items":["definitions"]},"dependentSchemas":{"dependencies":{"required":["id"]}}}`},
		{"a repeated name is read as JSON readers do, its last value",
			`{` + d07 + `"dependencies":{"a":["b"],"a":{"required":["c"]}}}`,
			`{` + d20 + `"dependentSchemas":{"a":{"required":["c"]}}}`},
		{"a repeated keyword is read as JSON readers do, its last value, the earlier one gone",
			`{` + d07 + `"dependencies":{"a":["b"]},"type":"object","dependencies":{"c":["d"]},"items":[{"type":"string"}],"items":{}}`,
			`{` + d20 + `"type":"object","dependentRequired":{"c":["d"]},"items":{}}`},
		{"2019-09: lists merge into the dependentRequired beside, each name once",
			`{` + d19 + `"dependentRequired":{"a":["b","c"]},"dependencies":{"a":["c","d"],"e":["f"]}}`,
			`{` + d20 + `"dependentRequired":{"a":["b","c","d"],"e":["f"]}}`},
		{"2019-09: a schema dependentSchemas already has for the name stays in dependencies",
			`{` + d19 + `"dependentSchemas":{"a":{"required":["b"]}},"dependencies":{"a":{"required":["c"]},"d":{"required":["e"]}},"properties":{"r":{"$ref":"#/dependencies/a"}}}`,
			`{` + d20 + `"dependentSchemas":{"a":{"required":["b"]},"d":{"required":["e"]}},"dependencies":{"a":{"required":["c"]}},"properties":{"r":{"$ref":"#/dependencies/a"}}}`},
		{"2020-12: santhosh honours dependencies there too, so it is split",
			`{"type":"object","dependencies":{"a":["b"]}}`,
			`{"type":"object","dependentRequired":{"a":["b"]}}`},
		{"an empty dependencies goes",
			`{` + d07 + `"type":"object","dependencies":{}}`,
			`{` + d20 + `"type":"object"}`},
		{"a reference to the dependencies object itself keeps it whole",
			`{` + d07 + `"properties":{"q":{"$ref":"#/dependencies"}},"dependencies":{"a":["b"]}}`,
			`{` + d20 + `"properties":{"q":{"$ref":"#/dependencies"}},"dependencies":{"a":["b"]}}`},
		{"dependencies in data or as a property name is not touched",
			`{` + d07 + `"properties":{"dependencies":{"type":"object","default":{"dependencies":{"a":["b"]}},"examples":[{"dependencies":{}}]},"e":{"enum":[{"dependencies":{"a":["b"]}}]}},"required":["dependencies"]}`,
			`{` + d20 + `"properties":{"dependencies":{"type":"object","default":{"dependencies":{"a":["b"]}},"examples":[{"dependencies":{}}]},"e":{"enum":[{"dependencies":{"a":["b"]}}]}},"required":["dependencies"]}`},
	})
}

// A keyword a later draft added is unknown to the job's draft: santhosh,
// validating the answer, ignores it, and 2020-12 applies it, so the copy
// drops it; and each draft's own spelling is converted only where it is
// a keyword (review1, "make sure keywords are converted only where they
// are keywords").
func TestDraft2020ConvertsPerDraft(t *testing.T) {
	t.Run("draft-04", func(t *testing.T) {
		checkDraft2020(t, []draftCase{
			{"const, contains, propertyNames, if/then/else and $id are later drafts' and go",
				`{` + d04 + `"type":"object","properties":{"s":{"type":"string","const":5},"l":{"type":"array","contains":{"type":"null"}},"o":{"propertyNames":{"maxLength":1},"if":{},"then":false}},"$id":"http://example.com/ignored"}`,
				`{` + d20 + `"type":"object","properties":{"s":{"type":"string"},"l":{"type":"array"},"o":{}}}`},
			{"id becomes $id where it names a schema, not as a property name or data",
				`{` + d04 + `"id":"http://example.com/r","type":"object","properties":{"id":{"type":"string","default":{"id":"x"},"enum":["id"]},"n":{"id":"#n","type":"integer"}},"required":["id"]}`,
				`{` + d20 + `"$id":"http://example.com/r","type":"object","properties":{"id":{"type":"string","default":{"id":"x"},"enum":["id"]},"n":{"$anchor":"n","type":"integer"}},"required":["id"]}`},
			{"a false exclusive bound goes and leaves the bound inclusive",
				`{` + d04 + `"maximum":5,"exclusiveMaximum":false,"minimum":1,"exclusiveMinimum":true}`,
				`{` + d20 + `"maximum":5,"exclusiveMinimum":1}`},
			{"examples and $comment, annotations, stay",
				`{` + d04 + `"type":"integer","examples":[1],"$comment":"c"}`,
				`{` + d20 + `"type":"integer","examples":[1],"$comment":"c"}`},
		})
	})
	t.Run("draft-06", func(t *testing.T) {
		checkDraft2020(t, []draftCase{
			{"if/then/else are draft-07's and go; const and contains stay",
				`{` + d06 + `"type":"object","if":{"required":["a"]},"then":{"required":["b"]},"else":false,"properties":{"k":{"const":1},"l":{"contains":{"const":2}}}}`,
				`{` + d20 + `"type":"object","properties":{"k":{"const":1},"l":{"contains":{"const":2}}}}`},
			{"id is no keyword in draft-06 and stays as written",
				`{` + d06 + `"id":"#not-an-anchor","type":"object"}`,
				`{` + d20 + `"id":"#not-an-anchor","type":"object"}`},
		})
	})
	t.Run("draft-07", func(t *testing.T) {
		checkDraft2020(t, []draftCase{
			{"2019-09's and 2020-12's keywords go, $defs and if/then/else stay",
				`{` + d07 + `"type":"object","dependentRequired":{"a":["b"]},"dependentSchemas":{"c":false},"unevaluatedProperties":false,"properties":{"l":{"type":"array","prefixItems":[{"type":"null"}],"contains":{},"minContains":3,"unevaluatedItems":false},"t":{"$anchor":"t","$dynamicAnchor":"t","$recursiveAnchor":true}},"if":{"required":["x"]},"then":{"required":["y"]},"$defs":{"d":{"type":"string"}}}`,
				`{` + d20 + `"type":"object","properties":{"l":{"type":"array","contains":{}},"t":{}},"if":{"required":["x"]},"then":{"required":["y"]},"$defs":{"d":{"type":"string"}}}`},
			{"a later keyword a reference points into stays, the reference resolving",
				`{` + d07 + `"properties":{"a":{"$ref":"#/dependentSchemas/s"}},"dependentSchemas":{"s":{"type":"string"}}}`,
				`{` + d20 + `"properties":{"a":{"$ref":"#/dependentSchemas/s"}},"dependentSchemas":{"s":{"type":"string"}}}`},
			{"additionalItems without an item array, which both drafts ignore, goes",
				`{` + d07 + `"type":"array","items":{"type":"string"},"additionalItems":false}`,
				`{` + d20 + `"type":"array","items":{"type":"string"}}`},
			{"an item array inside a property named items is converted, the name is not",
				`{` + d07 + `"properties":{"items":{"type":"array","items":[{"const":{"items":[1]}}],"examples":[{"items":[2]}]}}}`,
				`{` + d20 + `"properties":{"items":{"type":"array","prefixItems":[{"const":{"items":[1]}}],"examples":[{"items":[2]}]}}}`},
			{"definitions beside a definitions property, its references rewritten",
				`{` + d07 + `"properties":{"definitions":{"$ref":"#/definitions/definitions"}},"definitions":{"definitions":{"type":"array"}}}`,
				`{` + d20 + `"properties":{"definitions":{"$ref":"#/$defs/definitions"}},"$defs":{"definitions":{"type":"array"}}}`},
			{"an embedded resource naming draft-07 too is relabelled with the root",
				`{` + d07 + `"properties":{"a":{"$ref":"#/definitions/x"}},"definitions":{"x":{"$id":"http://example.com/x",` + d07 + `"items":[{"type":"string"}]}}}`,
				`{` + d20 + `"properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"$id":"http://example.com/x",` + d20 + `"prefixItems":[{"type":"string"}]}}}`},
			{"format is kept as written",
				`{` + d07 + `"type":"string","format":"date","definitions":{}}`,
				`{` + d20 + `"type":"string","format":"date","$defs":{}}`},
		})
	})
	t.Run("2019-09", func(t *testing.T) {
		checkDraft2020(t, []draftCase{
			{"prefixItems and $dynamic keywords are 2020-12's and go; 2019-09's stay",
				`{` + d19 + `"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"integer"},"minContains":1,"contains":{"$dynamicRef":"#x","type":"integer"},"$dynamicAnchor":"x","unevaluatedItems":false,"$anchor":"a"}`,
				`{` + d20 + `"type":"array","items":{"type":"integer"},"minContains":1,"contains":{"type":"integer"},"unevaluatedItems":false,"$anchor":"a"}`},
			{"a tuple with additionalItems, its $ref siblings applied as 2019-09 does",
				`{` + d19 + `"$defs":{"s":{"type":"string"}},"type":"array","items":[{"$ref":"#/$defs/s","maxLength":2}],"additionalItems":{"type":"number"}}`,
				`{` + d20 + `"$defs":{"s":{"type":"string"}},"type":"array","prefixItems":[{"$ref":"#/$defs/s","maxLength":2}],"items":{"type":"number"}}`},
		})
	})
	t.Run("2020-12", func(t *testing.T) {
		checkDraft2020(t, []draftCase{
			{"a 2020-12 schema keeps every keyword, $dynamicRef and prefixItems included",
				`{` + d20 + `"$dynamicAnchor":"n","type":"array","prefixItems":[{"$dynamicRef":"#n"}],"additionalItems":false}`,
				`{` + d20 + `"$dynamicAnchor":"n","type":"array","prefixItems":[{"$dynamicRef":"#n"}],"additionalItems":false}`},
		})
	})
}

// For each conversion, the 2020-12 copy accepts and refuses what the
// job's schema does under the validator answers are judged by (santhosh,
// each schema under its own draft): a copy that asks more makes the
// vendor force answers the job refuses, or refuse the schema, every row
// paid for; one that asks less lets the vendor answer what is then
// refused. Each table has answers of both verdicts.
func TestDraft2020CopyAcceptsWhatTheJobsDraftAccepts(t *testing.T) {
	cases := []struct {
		name, in string
		answers  []string
	}{
		{"draft-07 dependencies, a property list",
			`{` + d07 + `"type":"object","dependencies":{"card":["billing","cvc"]}}`,
			[]string{`{}`, `{"card":1,"billing":2,"cvc":3}`, `{"card":1,"billing":2}`, `{"billing":2}`}},
		{"draft-07 dependencies, a schema",
			`{` + d07 + `"type":"object","dependencies":{"card":{"properties":{"n":{"type":"integer"}},"required":["n"]}}}`,
			[]string{`{}`, `{"n":"x"}`, `{"card":1,"n":2}`, `{"card":1}`, `{"card":1,"n":"x"}`}},
		{"draft-06 dependencies, boolean schemas",
			`{` + d06 + `"type":"object","dependencies":{"no":false,"yes":true}}`,
			[]string{`{}`, `{"yes":1}`, `{"no":1}`}},
		{"draft-04 dependencies in a tuple",
			`{` + d04 + `"type":"array","items":[{"dependencies":{"a":["b"],"c":{"maxProperties":1}}}],"additionalItems":false}`,
			[]string{`[]`, `[{"a":1,"b":2}]`, `[{"a":1}]`, `[{"c":1,"d":2}]`, `[{},1]`}},
		{"2019-09 dependencies beside dependentRequired and dependentSchemas",
			`{` + d19 + `"dependentRequired":{"a":["b"]},"dependentSchemas":{"a":{"required":["c"]}},"dependencies":{"a":{"required":["d"]},"e":["f"]}}`,
			[]string{`{"a":1,"b":1,"c":1,"d":1}`, `{"a":1,"b":1,"c":1}`, `{"a":1,"c":1,"d":1}`, `{"e":1}`, `{"e":1,"f":1}`}},
		{"draft-04 exclusive bounds, true and false",
			`{` + d04 + `"type":"object","properties":{"x":{"minimum":0,"exclusiveMinimum":true,"maximum":10,"exclusiveMaximum":false}}}`,
			[]string{`{"x":0}`, `{"x":0.5}`, `{"x":10}`, `{"x":10.5}`}},
		{"draft-04 later keywords the draft ignores",
			`{` + d04 + `"type":"object","properties":{"s":{"type":"string","const":5},"l":{"contains":{"type":"null"}},"o":{"propertyNames":{"maxLength":1},"if":{},"then":false}},"required":["s"]}`,
			[]string{`{"s":"x","l":[1],"o":{"long":1}}`, `{"s":5}`, `{}`}},
		{"draft-04 id and fragment ids, a $id ignored",
			`{` + d04 + `"id":"http://example.com/root.json","type":"object","properties":{"a":{"$ref":"#pos"},"b":{"$ref":"#/definitions/i"}},"definitions":{"p":{"id":"#pos","minimum":1},"i":{"id":"item.json","type":"string"},"x":{"$id":"#pos","type":"null"}}}`,
			[]string{`{"a":1,"b":"s"}`, `{"a":0}`, `{"b":1}`, `{"a":null}`}},
		{"draft-06 if/then/else, which it ignores",
			`{` + d06 + `"type":"object","if":{"required":["a"]},"then":{"required":["b"]},"else":false,"properties":{"k":{"const":1}}}`,
			[]string{`{}`, `{"a":1}`, `{"k":1}`, `{"k":2}`}},
		{"draft-07 tuple, additionalItems and definitions",
			`{` + d07 + `"type":"array","items":[{"$ref":"#/definitions/n"},{"type":"string"}],"additionalItems":{"$ref":"#/items/0"},"definitions":{"n":{"type":"number"}}}`,
			[]string{`[1,"a",2,3]`, `[1,"a","b"]`, `["a"]`, `[]`}},
		{"draft-07 later keywords it ignores, one a reference keeps",
			`{` + d07 + `"type":"object","dependentRequired":{"a":["b"]},"unevaluatedProperties":false,"properties":{"a":{},"l":{"type":"array","prefixItems":[{"type":"null"}],"contains":{"type":"integer"},"minContains":3},"r":{"$ref":"#/dependentSchemas/s"}},"dependentSchemas":{"s":{"type":"string"}}}`,
			[]string{`{"a":1,"z":1,"l":[1,"x"]}`, `{"l":["x"]}`, `{"r":"s"}`, `{"r":1}`}},
		{"draft-07 $id anchors and a property named $id",
			`{` + d07 + `"type":"object","properties":{"$id":{"$ref":"#x:y"},"id":{"type":"string"}},"definitions":{"a":{"$id":"#x:y","type":"integer"}}}`,
			[]string{`{"$id":1,"id":"s"}`, `{"$id":"s"}`, `{"id":1}`}},
		{"2019-09 tuple and later keywords it ignores",
			`{` + d19 + `"type":"array","items":[{"type":"string"}],"additionalItems":{"type":"integer"},"prefixItems":[{"type":"null"}],"unevaluatedItems":false}`,
			[]string{`["a",1,2]`, `["a","b"]`, `[null]`, `[]`}},
		{"draft-07 embedded resource naming draft-07, its tuple converted",
			`{` + d07 + `"properties":{"a":{"$ref":"#/definitions/x"}},"definitions":{"x":{"$id":"http://example.com/x",` + d07 + `"items":[{"type":"string"}]}}}`,
			[]string{`{"a":["s",1]}`, `{"a":[1]}`}},
		{"2019-09 items alone, with prefixItems it ignores",
			`{` + d19 + `"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"integer"}}`,
			[]string{`[1,2]`, `["a"]`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			job, err := schema.Compile(c.in)
			if err != nil {
				t.Fatalf("the job's schema does not compile: %v", err)
			}
			out, _ := provider.Draft2020(json.RawMessage(c.in))
			if d := dialect(t, out); d != "" && d != "https://json-schema.org/draft/2020-12/schema" {
				t.Fatalf("the copy is not 2020-12: $schema %q", d)
			}
			vendor, err := schema.Compile(string(out))
			if err != nil {
				t.Fatalf("the 2020-12 copy does not compile: %v\n%s", err, out)
			}
			seen := map[bool]bool{}
			for _, a := range c.answers {
				want, _ := schema.Verdict(job, a)
				seen[want] = true
				if got, errs := schema.Verdict(vendor, a); got != want {
					t.Errorf("answer %s: the copy says valid=%t %v, the job's schema %t\ncopy %s", a, got, errs, want, out)
				}
			}
			if !seen[true] || !seen[false] {
				t.Errorf("the answers are all valid=%t for the job's schema: the table tells nothing", seen[true])
			}
		})
	}
}

// dialect returns the root $schema of the schema text s, "" without one.
func dialect(t *testing.T, s []byte) string {
	t.Helper()
	var root struct {
		Schema string `json:"$schema"`
	}
	if err := json.Unmarshal(s, &root); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return root.Schema
}

// santhosh reads an embedded resource with its own $schema in that
// draft: converting it in the root's draft changed what it asks (a
// draft-07 tuple under a 2020-12 root became a 2020-12 prefixItems the
// resource's draft ignores, and the copy accepted [1] where the job
// refused it).
func TestDraft2020KeepsASchemaMixingDrafts(t *testing.T) {
	for _, in := range []string{
		`{"properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"$id":"http://example.com/x","$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}]}}}`,
		`{` + d07 + `"properties":{"a":{"$ref":"#/definitions/x"}},"definitions":{"x":{"$id":"http://example.com/x","$schema":"https://json-schema.org/draft/2020-12/schema","prefixItems":[{"type":"string"}]}}}`,
	} {
		if err := schema.Check(in); err != nil {
			t.Fatalf("the API refuses the test's schema: %v", err)
		}
		if out, changed := provider.Draft2020(json.RawMessage(in)); changed || string(out) != in {
			t.Errorf("Draft2020 = %s (changed %t), want it unchanged", out, changed)
		}
	}
}

// What the conversion costs where it walks: a 2020-12 schema that names
// its draft (walked, unchanged) and the same schema in draft-07's
// spelling (definitions, converted).
func BenchmarkDraft2020Walk(b *testing.B) {
	modern := `{` + d20 + benchSchema()[1:]
	older := strings.ReplaceAll(`{`+d07+benchSchema()[1:], "$defs", "definitions")
	for _, c := range []struct{ name, schema string }{{"2020-12", modern}, {"draft-07", older}} {
		b.Run(c.name, func(b *testing.B) {
			s := json.RawMessage(c.schema)
			b.SetBytes(int64(len(s)))
			b.ReportAllocs()
			for b.Loop() {
				provider.Draft2020(s)
			}
		})
	}
}
