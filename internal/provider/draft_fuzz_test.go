package provider_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/schema"
)

// Whatever schema the API accepts, its 2020-12 copy compiles, is 2020-12
// (but for the 2019-09 recursion and the mixed drafts Draft2020 keeps as
// they are), spells no
// older draft's keyword, and gives an answer the job's schema's verdict;
// and Draft2020 never panics.
func FuzzDraft2020(f *testing.F) {
	for _, s := range [][2]string{
		{`{` + d07 + `"type":"object","dependencies":{"a":["b"],"c":{"required":["d"]}}}`, `{"a":1}`},
		{`{` + d07 + `"properties":{"x":{"$ref":"#/dependencies/a/properties/n"}},"dependencies":{"a":{"properties":{"n":{"type":"integer"}}}}}`, `{"x":"s"}`},
		{`{` + d19 + `"dependentRequired":{"a":["b"]},"dependentSchemas":{"a":{"required":["c"]}},"dependencies":{"a":{"required":["d"]},"e":["f"]}}`, `{"a":1,"b":1,"c":1}`},
		{`{` + d04 + `"id":"http://example.com/r","type":"object","properties":{"s":{"type":"string","const":5},"n":{"id":"#n","minimum":1,"exclusiveMinimum":true}},"$id":"urn:x"}`, `{"s":"x","n":1}`},
		{`{` + d06 + `"if":{"required":["a"]},"then":false,"properties":{"k":{"contains":{"const":1}}}}`, `{"a":1}`},
		{`{` + d07 + `"type":"array","items":[{"$ref":"#/definitions/n"}],"additionalItems":{"$ref":"#/items/0"},"definitions":{"n":{"type":"number"}},"$defs":{"n":{}}}`, `[1,"a"]`},
		{`{` + d07 + `"properties":{"a":{"$ref":"#/definitions/s","minProperties":1,"properties":{"x":{"type":"string"}}},"b":{"$ref":"#/properties/a/properties/x"}},"definitions":{"s":{"type":"object"}},"unevaluatedProperties":false}`, `{"b":1}`},
		{`{` + d19 + `"$recursiveAnchor":true,"type":"object","properties":{"k":{"type":"array","items":{"$recursiveRef":"#"}}},"prefixItems":[false]}`, `{"k":[{"k":[1]}]}`},
		{`{"type":"object","dependencies":{"a":["b"]},"definitions":{"x":{}}}`, `{"a":1}`},
		{`{` + d07 + `"dependencies":{"a":["b"]},"type":"object","dependencies":{"c":["d"]},"items":[{"type":"string"}],"items":{}}`, `{"a":1}`},
		{`{` + d07 + `"properties":{"a":{"$ref":"#/definitions/x"}},"definitions":{"x":{"$id":"http://example.com/x",` + d07 + `"items":[{"type":"string"}]}}}`, `{"a":[1]}`},
		{`{"properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"$id":"http://example.com/x","$schema":"http://json-schema.org/draft-07/schema#","items":[{"type":"string"}]}}}`, `{"a":[1]}`},
		{`{` + d06 + `"properties":{"a":{"$ref":"#/if"}},"if":{"$id":"http://e.com/x","properties":{"b":{"$ref":"#/definitions/y"}},"definitions":{"y":{"type":"integer"}}},"definitions":{"y":{"type":"string"}}}`, `{"a":{"b":1}}`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, text, answer string) {
		out, changed := provider.Draft2020(json.RawMessage(text))
		job, err := schema.Compile(text)
		if err != nil {
			return
		}
		if !changed && string(out) != text {
			t.Fatalf("unchanged, yet %q became %q", text, out)
		}
		vendor, err := schema.Compile(string(out))
		if err != nil && refersToArray([]byte(text)) {
			return // a $ref to a tuple's array, which 2020-12 cannot say
		}
		if err != nil {
			t.Fatalf("%s compiles, its 2020-12 copy %s does not: %v", text, out, err)
		}
		var doc any
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatalf("the copy %s is not JSON: %v", out, err)
		}
		root, _ := doc.(map[string]any)
		if d, _ := root["$schema"].(string); d != "" && !strings.Contains(d, "2020-12") {
			if !strings.Contains(d, "2019-09") || changed {
				t.Fatalf("the copy of %s names %q, not 2020-12:\n%s", text, d, out)
			}
			return // 2019-09 recursion across resources, kept as given
		}
		named := 0
		if _, ok := root["$schema"]; ok {
			named = 1
		}
		if !changed && strings.Count(text, `"$schema"`) > named {
			return // an embedded resource in another draft, kept as given
		}
		// dependencies stays only beside a 2019-09 dependentRequired or
		// dependentSchemas it cannot join, or when referenced whole.
		split := !strings.Contains(text, "dependent") && !strings.Contains(text, `/dependencies"`)
		if k, at := olderKeyword(doc, "", split); k != "" {
			t.Fatalf("the copy %s still spells %s at %s", out, k, at)
		}
		if strings.Contains(text, `"format"`) || strings.Contains(text, `\u`) {
			// format asserts in drafts 04–07 and is an annotation in
			// 2020-12 (santhosh's default): the copy cannot say more.
			return
		}
		want, _ := schema.Verdict(job, answer)
		if got, errs := schema.Verdict(vendor, answer); got != want {
			t.Fatalf("answer %s: the copy %s says valid=%t %v, the job's schema %s %t", answer, out, got, errs, text, want)
		}
	})
}

// olderKeyword returns an older draft's spelling the schema v still
// holds where 2020-12 reads keywords, and where: an item array, a
// definitions, a boolean exclusive bound, and when split a dependencies.
func olderKeyword(v any, at string, split bool) (string, string) {
	obj, ok := v.(map[string]any)
	if !ok {
		return "", ""
	}
	if _, ok := obj["items"].([]any); ok {
		return "an item array", at
	}
	if _, ok := obj["definitions"].(map[string]any); ok {
		return "definitions", at
	}
	if _, ok := obj["dependencies"].(map[string]any); ok && split {
		return "dependencies", at
	}
	for _, k := range []string{"exclusiveMinimum", "exclusiveMaximum"} {
		if _, ok := obj[k].(bool); ok {
			return "a boolean " + k, at
		}
	}
	for k, sub := range obj {
		var subs map[string]any
		switch k {
		case "items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
			"unevaluatedItems", "unevaluatedProperties", "contentSchema":
			subs = map[string]any{"": sub}
		case "allOf", "anyOf", "oneOf", "prefixItems":
			arr, _ := sub.([]any)
			subs = map[string]any{}
			for i, e := range arr {
				subs[string(rune('0'+i%10))+strings.Repeat("'", i/10)] = e
			}
		case "properties", "patternProperties", "$defs", "dependentSchemas", "dependencies":
			subs, _ = sub.(map[string]any)
		}
		for name, s := range subs {
			if k, where := olderKeyword(s, at+"/"+k+"/"+name, split); k != "" {
				return k, where
			}
		}
	}
	return "", ""
}
