package provider_test

import (
	"encoding/json"
	"testing"

	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/schema"
)

// Anthropic validates input_schema as 2020-12 ("It must match JSON Schema
// draft 2020-12", hyperdxio/hyperdx#2925) and Gemini refuses item arrays
// ("use 'prefixItems' instead", oomkapwn/enquire-mcp#360), while the API
// accepts the older drafts zod-to-json-schema, TypeBox and pydantic v1
// write (audit-providers3 F3).
func TestDraft2020(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"a draft-07 tuple becomes prefixItems",
			`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"pt":{"type":"array","minItems":2,"maxItems":2,"items":[{"type":"number"},{"type":"number"}]}},"required":["pt"],"additionalProperties":false}`,
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"pt":{"type":"array","minItems":2,"maxItems":2,"prefixItems":[{"type":"number"},{"type":"number"}]}},"required":["pt"],"additionalProperties":false}`},
		{"additionalItems beside a tuple becomes items",
			`{"$schema":"http://json-schema.org/draft-07/schema#","type":"array","items":[{"type":"string"}],"additionalItems":{"type":"number"}}`,
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"array","prefixItems":[{"type":"string"}],"items":{"type":"number"}}`},
		{"zod-to-json-schema's named root: definitions become $defs, the root $ref follows",
			`{"$ref":"#/definitions/mySchema","definitions":{"mySchema":{"type":"object","properties":{"myString":{"type":"string"}},"required":["myString"],"additionalProperties":false}},"$schema":"http://json-schema.org/draft-07/schema#"}`,
			`{"$ref":"#/$defs/mySchema","$defs":{"mySchema":{"type":"object","properties":{"myString":{"type":"string"}},"required":["myString"],"additionalProperties":false}},"$schema":"https://json-schema.org/draft/2020-12/schema"}`},
		{"a reference into a tuple follows it",
			`{"$schema":"http://json-schema.org/draft-07/schema#","type":"array","items":[{"type":"string"},{"$ref":"#/items/0"}]}`,
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"array","prefixItems":[{"type":"string"},{"$ref":"#/prefixItems/0"}]}`},
		{"definitions beside $defs merge, a name both use takes a suffix",
			`{"type":"object","properties":{"a":{"$ref":"#/definitions/x"},"b":{"$ref":"#/$defs/x"},"c":{"$ref":"#/definitions/y"}},"definitions":{"x":{"type":"string"},"y":{"type":"null"}},"$defs":{"x":{"type":"integer"}}}`,
			`{"type":"object","properties":{"a":{"$ref":"#/$defs/x_2"},"b":{"$ref":"#/$defs/x"},"c":{"$ref":"#/$defs/y"}},"$defs":{"x":{"type":"integer"},"x_2":{"type":"string"},"y":{"type":"null"}}}`},
		{"draft-04: a boolean exclusive bound takes the bound's number, id becomes $id",
			`{"$schema":"http://json-schema.org/draft-04/schema#","id":"http://example.com/s","type":"object","properties":{"n":{"type":"number","minimum":0,"exclusiveMinimum":true,"maximum":9,"exclusiveMaximum":false}}}`,
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"http://example.com/s","type":"object","properties":{"n":{"type":"number","exclusiveMinimum":0,"maximum":9}}}`},
		{"a plain-name fragment id becomes an $anchor, renamed where 2020-12 refuses the name",
			`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"$ref":"#item"},"b":{"$ref":"#x:y"}},"definitions":{"i":{"$id":"#item","type":"string"},"j":{"$id":"#x:y","type":"integer"}}}`,
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"a":{"$ref":"#item"},"b":{"$ref":"#x_y"}},"$defs":{"i":{"$anchor":"item","type":"string"},"j":{"$anchor":"x_y","type":"integer"}}}`},
		{"an enum or const holding schema-like data is not touched",
			`{"type":"object","properties":{"e":{"enum":[{"items":[1],"definitions":{}}]},"k":{"const":{"$ref":"#/definitions/x"}}},"definitions":{"x":{}}}`,
			`{"type":"object","properties":{"e":{"enum":[{"items":[1],"definitions":{}}]},"k":{"const":{"$ref":"#/definitions/x"}}},"$defs":{"x":{}}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := schema.Check(c.in); err != nil {
				t.Fatalf("the API refuses the test's schema: %v", err)
			}
			out, changed := provider.Draft2020(json.RawMessage(c.in))
			if !changed || string(out) != c.want {
				t.Errorf("Draft2020 = %s (changed %t)\nwant %s", out, changed, c.want)
			}
			if err := schema.Check(string(out)); err != nil {
				t.Errorf("the 2020-12 copy does not compile: %v", err)
			}
		})
	}
	t.Run("a 2020-12 schema is kept byte for byte", func(t *testing.T) {
		const in = ` {"type":"array", "prefixItems":[{"type":"string"}], "items":false, "$defs":{"d":{}}} `
		if out, changed := provider.Draft2020(json.RawMessage(in)); changed || string(out) != in {
			t.Errorf("Draft2020 = %s (changed %t), want it unchanged", out, changed)
		}
	})
}

// Anthropic and Gemini convert every schema they send; a 2020-12 schema
// (the usual case) changes nothing.
func BenchmarkDraft2020(b *testing.B) {
	s := json.RawMessage(benchSchema())
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		provider.Draft2020(s)
	}
}
