package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/schema"
)

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad test schema %s: %v", s, err)
	}
	return m
}

func TestStrictSchema(t *testing.T) {
	cases := []struct {
		name   string
		schema string
		want   bool
	}{
		{"a closed object with every property required", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":["integer","null"]}},"required":["a","b"],"additionalProperties":false}`, true},
		{"nested objects, arrays, enums, anyOf, $defs and supported formats",
			`{"type":"object","properties":{"d":{"type":"string","format":"date"},"xs":{"type":"array","minItems":1,"items":{"$ref":"#/$defs/x"}},"k":{"enum":["a","b"]},"u":{"anyOf":[{"type":"number","minimum":0},{"type":"null"}]}},"required":["d","xs","k","u"],"additionalProperties":false,` +
				`"$defs":{"x":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}}}`, true},
		{"an empty closed object", `{"type":"object","properties":{},"additionalProperties":false}`, true},
		{"additionalProperties missing", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, false},
		{"additionalProperties true", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":true}`, false},
		{"an optional property", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false}`, false},
		{"a nested open object", `{"type":"object","properties":{"o":{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}},"required":["o"],"additionalProperties":false}`, false},
		{"an unsupported keyword", `{"type":"object","properties":{"a":{"type":"string","minLength":1}},"required":["a"],"additionalProperties":false}`, false},
		{"allOf", `{"type":"object","properties":{},"additionalProperties":false,"allOf":[]}`, false},
		{"$schema", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{},"additionalProperties":false}`, false},
		{"an unsupported format", `{"type":"object","properties":{"a":{"type":"string","format":"uri"}},"required":["a"],"additionalProperties":false}`, false},
		{"a remote $ref", `{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}},"required":["a"],"additionalProperties":false}`, false},
		{"a root that is not an object", `{"type":"array","items":{"type":"string"}}`, false},
		{"anyOf at the root", `{"type":"object","anyOf":[{"type":"object","properties":{},"additionalProperties":false}],"properties":{},"additionalProperties":false}`, false},
		{"a boolean subschema", `{"type":"object","properties":{"a":true},"required":["a"],"additionalProperties":false}`, false},
		{"an unknown type", `{"type":"object","properties":{"a":{"type":"date"}},"required":["a"],"additionalProperties":false}`, false},
		// OpenAI: "$ref cannot have keywords {'type'}": beside a $ref only
		// annotations, which the sent copy drops, may stand.
		{"a keyword that constrains beside a $ref", `{"type":"object","properties":{"p":{"$ref":"#/$defs/P","type":"object"}},"required":["p"],"additionalProperties":false,"$defs":{"P":{"type":"object","properties":{},"additionalProperties":false}}}`, false},
		{"a default beside a $ref", `{"type":"object","properties":{"p":{"$ref":"#/$defs/P","default":"x"}},"required":["p"],"additionalProperties":false,"$defs":{"P":{"type":"string"}}}`, false},
		// OpenAI: "Objects provided via 'anyOf' must not share identical
		// first keys", a 400 for every row (audit-providers3 F2).
		{"anyOf objects that start with the same property", union(`"name":{"type":"string"},"vat":{"type":"string"}`, `["name","vat"]`, `"name":{"type":"string"},"born":{"type":"string"}`, `["name","born"]`), false},
		{"anyOf objects that require the same key first", union(`"vat":{"type":"string"},"name":{"type":"string"}`, `["name","vat"]`, `"born":{"type":"string"},"name":{"type":"string"}`, `["name","born"]`), false},
		{"anyOf objects with a first key of their own", union(`"kind":{"enum":["company"]},"name":{"type":"string"}`, `["kind","name"]`, `"person":{"type":"boolean"},"name":{"type":"string"}`, `["person","name"]`), true},
		{"anyOf $refs to objects that start with the same property",
			`{"type":"object","properties":{"p":{"anyOf":[{"$ref":"#/$defs/Company"},{"type":"null"},{"$ref":"#/$defs/Person"}]}},"required":["p"],"additionalProperties":false,"$defs":{` +
				`"Company":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false},` +
				`"Person":{"type":"object","properties":{"name":{"type":"string"},"born":{"type":"string"}},"required":["name","born"],"additionalProperties":false}}}`, false},
		{"a nested anyOf of objects that start with the same property",
			`{"type":"object","properties":{"p":{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false},{"anyOf":[{"type":"null"},{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}]}]}},"required":["p"],"additionalProperties":false}`, false},
		{"anyOf objects and scalars", `{"type":"object","properties":{"p":{"anyOf":[{"type":"string"},{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false},{"type":"null"}]}},"required":["p"],"additionalProperties":false}`, true},
		// "the total string length of all enum values cannot exceed 15,000
		// characters when there are more than 250 enum values".
		{"an enum of 251 values totalling over 15,000 characters", enumSchema(251, 60), false},
		{"an enum of 250 values totalling over 15,000 characters", enumSchema(250, 61), true},
		{"an enum of 300 short values", enumSchema(300, 20), true},
		// "the total string length of all property names, definition
		// names, enum values, and const values cannot exceed 120,000".
		{"property names over 120,000 characters in all", longNames(130, 1000), false},
		{"property names under 120,000 characters in all", longNames(110, 1000), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sent, got := provider.StrictSchema(json.RawMessage(c.schema), decode(t, c.schema))
			if got != c.want {
				t.Errorf("strict = %t, want %t", got, c.want)
			}
			if string(sent) != c.schema {
				t.Errorf("sent %s, want the schema byte for byte: %s", sent, c.schema)
			}
		})
	}
	t.Run("nesting deeper than strict mode allows", func(t *testing.T) {
		s := `{"type":"string"}`
		for range 10 {
			s = `{"type":"object","properties":{"a":` + s + `},"required":["a"],"additionalProperties":false}`
		}
		if _, ok := provider.StrictSchema(json.RawMessage(s), decode(t, s)); ok {
			t.Error("11 levels accepted")
		}
	})
}

// union is an object schema whose one property is an anyOf of two closed
// objects with the given properties and required lists.
func union(props1, req1, props2, req2 string) string {
	alt := func(props, req string) string {
		return `{"type":"object","properties":{` + props + `},"required":` + req + `,"additionalProperties":false}`
	}
	return `{"type":"object","properties":{"party":{"anyOf":[` + alt(props1, req1) + `,` + alt(props2, req2) + `]}},"required":["party"],"additionalProperties":false}`
}

// enumSchema is an object schema with one string enum of n values of
// size bytes each.
func enumSchema(n, size int) string {
	vals := make([]string, n)
	for i := range vals {
		v := fmt.Sprintf("%04d", i)
		vals[i] = strconv.Quote(v + strings.Repeat("x", size-len(v)))
	}
	return `{"type":"object","properties":{"c":{"type":"string","enum":[` + strings.Join(vals, ",") + `]}},"required":["c"],"additionalProperties":false}`
}

// longNames is an object schema with n string properties whose names are
// size bytes each.
func longNames(n, size int) string {
	props, req := make([]string, n), make([]string, n)
	for i := range props {
		v := fmt.Sprintf("%04d", i)
		name := strconv.Quote(v + strings.Repeat("n", size-len(v)))
		props[i], req[i] = name+`:{"type":"string"}`, name
	}
	return `{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":[` + strings.Join(req, ",") + `],"additionalProperties":false}`
}

// Pydantic writes a described nested model as {"$ref":…,"description":…},
// which OpenAI's strict mode refuses with a 400 ("$ref cannot have
// keywords {'description'}") for every row. The annotations beside a $ref
// constrain nothing: the strict copy drops them and stays strict.
func TestStrictSchemaDropsAnnotationsBesideARef(t *testing.T) {
	cases := []struct {
		name, schema, want string
	}{
		{"a described nested model",
			`{"type":"object","properties":{"buyer":{"$ref":"#/$defs/Party","description":"who buys"}},"required":["buyer"],"additionalProperties":false,` +
				`"$defs":{"Party":{"type":"object","description":"a party","properties":{"name":{"type":"string","title":"Name"}},"required":["name"],"additionalProperties":false}}}`,
			`{"type":"object","properties":{"buyer":{"$ref":"#/$defs/Party"}},"required":["buyer"],"additionalProperties":false,` +
				`"$defs":{"Party":{"type":"object","description":"a party","properties":{"name":{"type":"string","title":"Name"}},"required":["name"],"additionalProperties":false}}}`},
		{"a titled $ref in array items and anyOf, properties named description and title kept",
			`{"type":"object","properties":{"title":{"type":"array","items":{"title":"T","$ref":"#/$defs/S"}},"description":{"anyOf":[{"$ref":"#/$defs/S","description":"d"},{"type":"null"}]}},"required":["title","description"],"additionalProperties":false,"$defs":{"S":{"type":"string"}}}`,
			`{"type":"object","properties":{"title":{"type":"array","items":{"$ref":"#/$defs/S"}},"description":{"anyOf":[{"$ref":"#/$defs/S"},{"type":"null"}]}},"required":["title","description"],"additionalProperties":false,"$defs":{"S":{"type":"string"}}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sent, ok := provider.StrictSchema(json.RawMessage(c.schema), decode(t, c.schema))
			if !ok {
				t.Fatal("not strict: the schema goes in JSON mode, unenforced")
			}
			if string(sent) != c.want {
				t.Errorf("sent %s\nwant %s", sent, c.want)
			}
		})
	}
}

func TestObjectSchema(t *testing.T) {
	cases := []struct {
		name        string
		schema      string
		wantText    string // exact bytes sent
		wantWrapped bool
	}{
		{"an object schema is kept byte for byte", `{"type":"object", "properties":{"z":{},"a":{}}}`, `{"type":"object", "properties":{"z":{},"a":{}}}`, false},
		{"an array schema is wrapped, property order kept",
			`{"items":{"properties":{"z":{},"a":{}}},"type":"array"}`,
			`{"type":"object","properties":{"value":{"items":{"properties":{"z":{},"a":{}}},"type":"array"}},"required":["value"],"additionalProperties":false}`, true},
		{"$defs and $schema move to the wrapper's root",
			`{"$schema":"x","type":"string","$defs":{"d":{}}}`,
			`{"type":"object","properties":{"value":{"type":"string"}},"required":["value"],"additionalProperties":false,"$schema":"x","$defs":{"d":{}}}`, true},
		{"a schema without a type is wrapped", `{}`,
			`{"type":"object","properties":{"value":{}},"required":["value"],"additionalProperties":false}`, true},
		// An object in all but the type keyword is asked for as an object:
		// wrapped, an answer to it that has a "value" property lost the rest.
		{"properties without a type are sent as an object, the rest byte for byte",
			` {"properties":{"value":{"type":"number"}, "unit":{}},"required":["value"]}`,
			` {"type":"object","properties":{"value":{"type":"number"}, "unit":{}},"required":["value"]}`, false},
		{"required alone without a type is sent as an object", `{"required":["a"]}`, `{"type":"object","required":["a"]}`, false},
		{"a $ref root is wrapped: its target is not read",
			`{"$ref":"#/$defs/kv","$defs":{"kv":{"type":"object"}}}`,
			`{"type":"object","properties":{"value":{"$ref":"#/$defs/kv"}},"required":["value"],"additionalProperties":false,"$defs":{"kv":{"type":"object"}}}`, true},
		{"properties under anyOf at the root are wrapped", `{"properties":{"a":{}},"anyOf":[{"required":["a"]},{"type":"string"}]}`,
			`{"type":"object","properties":{"value":{"properties":{"a":{}},"anyOf":[{"required":["a"]},{"type":"string"}]}},"required":["value"],"additionalProperties":false}`, true},
		{"a type list is wrapped", `{"type":["object","null"],"properties":{"a":{}}}`,
			`{"type":"object","properties":{"value":{"type":["object","null"],"properties":{"a":{}}}},"required":["value"],"additionalProperties":false}`, true},
		// Wrapped, "#" would name the wrapper: the root moves into $defs and
		// its references follow it.
		{"a root that refers to itself moves into $defs",
			`{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"children":{"$ref":"#"}},"required":["name","children"],"additionalProperties":false}}`,
			`{"type":"object","properties":{"value":{"$ref":"#/$defs/root"}},"required":["value"],"additionalProperties":false,` +
				`"$defs":{"root":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"children":{"$ref":"#/$defs/root"}},"required":["name","children"],"additionalProperties":false}}}}`, true},
		{"references into the root and from $defs to it follow it, beside a root of its own",
			`{"$schema":"x","type":"array","items":{"type":"object","properties":{"sub":{"$ref":"#/items"},"d":{"$ref":"#/$defs/n"}}},"$defs":{"root":{"type":"string"},"n":{"items":{"$ref":"#"}}}}`,
			`{"type":"object","properties":{"value":{"$ref":"#/$defs/root_2"}},"required":["value"],"additionalProperties":false,"$schema":"x",` +
				`"$defs":{"root":{"type":"string"},"n":{"items":{"$ref":"#/$defs/root_2"}},"root_2":{"type":"array","items":{"type":"object","properties":{"sub":{"$ref":"#/$defs/root_2/items"},"d":{"$ref":"#/$defs/n"}}}}}}`, true},
		{"references to $defs, anchors, other documents and data are not the root's",
			`{"type":"array","items":{"anyOf":[{"$ref":"#/$defs/a"},{"$ref":"#x"},{"$ref":"other.json#"},{"const":{"$ref":"#"}}]},"$defs":{"a":{}}}`,
			`{"type":"object","properties":{"value":{"type":"array","items":{"anyOf":[{"$ref":"#/$defs/a"},{"$ref":"#x"},{"$ref":"other.json#"},{"const":{"$ref":"#"}}]}}},"required":["value"],"additionalProperties":false,"$defs":{"a":{}}}`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, decoded, wrapped, err := provider.ObjectSchema(c.schema)
			if err != nil {
				t.Fatalf("ObjectSchema: %v", err)
			}
			if string(out) != c.wantText || wrapped != c.wantWrapped {
				t.Errorf("= %s (wrapped %t), want %s (wrapped %t)", out, wrapped, c.wantText, c.wantWrapped)
			}
			if decoded["type"] != "object" {
				t.Errorf("decoded root type = %v", decoded["type"])
			}
		})
	}
	t.Run("Anthropic's tool input: an object root with anyOf, oneOf or allOf is wrapped", func(t *testing.T) {
		for _, c := range []struct{ schema, want string }{
			{`{"type":"object","properties":{"iban":{"type":"string"},"account":{"type":"string"}},"oneOf":[{"required":["iban"]},{"required":["account"]}]}`,
				`{"type":"object","properties":{"value":{"type":"object","properties":{"iban":{"type":"string"},"account":{"type":"string"}},"oneOf":[{"required":["iban"]},{"required":["account"]}]}},"required":["value"],"additionalProperties":false}`},
			{`{"type":"object","anyOf":[{"required":["a"]}],"$defs":{}}`,
				`{"type":"object","properties":{"value":{"type":"object","anyOf":[{"required":["a"]}]}},"required":["value"],"additionalProperties":false,"$defs":{}}`},
			{`{"allOf":[{"type":"object"}]}`, `{"type":"object","properties":{"value":{"allOf":[{"type":"object"}]}},"required":["value"],"additionalProperties":false}`},
			{`{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`, `{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`},
		} {
			out, _, wrapped, err := provider.ToolInputSchema(c.schema)
			if err != nil || string(out) != c.want || wrapped != (c.want != c.schema) {
				t.Errorf("ToolInputSchema(%s) = %s (wrapped %t, err %v), want %s", c.schema, out, wrapped, err, c.want)
			}
		}
		// The other vendors take such a root (OpenAI in JSON mode).
		const root = `{"type":"object","properties":{"a":{}},"oneOf":[{"required":["a"]}]}`
		if out, _, wrapped, _ := provider.ObjectSchema(root); wrapped || string(out) != root {
			t.Errorf("ObjectSchema(%s) = %s, wrapped %t; want it as it is", root, out, wrapped)
		}
	})
	// The row's error names the job's field: it is the job's schema, not
	// the provider, that is wrong (create refuses these since).
	for _, bad := range []string{``, `[]`, `"object"`, `null`, `true`, `false`, `{"a":1} {}`, `{"a":`} {
		_, _, _, err := provider.ObjectSchema(bad)
		if !errors.Is(err, provider.ErrInvalidSchema) || !strings.HasPrefix(fmt.Sprint(err), "responseSchema: ") {
			t.Errorf("ObjectSchema(%q) err = %v, want ErrInvalidSchema naming responseSchema", bad, err)
		}
	}
}

func TestUnwrapAnswer(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"the wrapper's value comes out, compact", `{"value": [1, 2]}`, `[1,2]`},
		{"a string value comes out", ` {"value":"x"} `, `"x"`},
		{"an object without value is left for validation to reject", `{"other":1}`, `{"other":1}`},
		// A server that does not enforce the wrapper (JSON mode, strict
		// false, tool inputs) may answer the user's own schema: a value
		// member among others is part of that answer, not the wrapper.
		{"an answer with value among other members is kept whole", `{"field":"total","value":"118.00","confidence":0.9}`, `{"field":"total","value":"118.00","confidence":0.9}`},
		{"value and an empty member are kept whole", `{"value":3,"unit":""}`, `{"value":3,"unit":""}`},
		{"a repeated value key is one member, the last", `{"value":1,"value":2}`, `2`},
		{"an array answer is kept", `[{"value":1}]`, `[{"value":1}]`},
		{"text is kept", `not json`, `not json`},
		// fence.Strip's rule, as the verdict, merge and vote read answers.
		{"a fenced wrapper's value comes out", "```json\n{\"value\": [1, 2]}\n```", `[1,2]`},
		{"a fenced answer that is not the wrapper is kept as given", "```json\n{\"a\":1}\n```", "```json\n{\"a\":1}\n```"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := provider.UnwrapAnswer(tt.in); got != tt.want {
				t.Errorf("UnwrapAnswer(%s) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestAccountContext(t *testing.T) {
	if got := provider.AccountOf(t.Context()); got != "" {
		t.Errorf("no account set: %q", got)
	}
	if got := provider.AccountOf(provider.WithAccount(t.Context(), "acct-1")); got != "acct-1" {
		t.Errorf("AccountOf = %q", got)
	}
}

type scriptedChat struct {
	errs  []error
	calls int
}

func (s *scriptedChat) Complete(context.Context, provider.ChatRequest) (provider.ChatAnswer, error) {
	s.calls++
	if s.calls <= len(s.errs) {
		return provider.ChatAnswer{}, s.errs[s.calls-1]
	}
	return provider.ChatAnswer{Content: "ok"}, nil
}

func TestWithChatRetry(t *testing.T) {
	policy := provider.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond}
	cases := []struct {
		name      string
		errs      []error
		wantCalls int
		wantErr   bool
	}{
		{"transient failures are retried", []error{perr(provider.CategoryRateLimit, 0), perr(provider.CategoryServer, 0)}, 3, false},
		{"a truncated answer is final", []error{perr(provider.CategoryTruncated, 0)}, 1, true},
		{"attempts are bounded", []error{perr(provider.CategoryServer, 0), perr(provider.CategoryServer, 0), perr(provider.CategoryServer, 0)}, 3, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &scriptedChat{errs: c.errs}
			ans, err := provider.WithChatRetry(s, policy).Complete(t.Context(), provider.ChatRequest{})
			if s.calls != c.wantCalls || (err != nil) != c.wantErr || (err == nil && ans.Content != "ok") {
				t.Errorf("calls %d, err %v; want %d calls, error %t", s.calls, err, c.wantCalls, c.wantErr)
			}
		})
	}
}

// A recursive schema whose root is not an object, wrapped: strict servers
// decode by the schema sent, so the answer the user means must fit it, and
// what it admits must fit the user's schema once unwrapped.
func TestWrappedRecursiveSchemaAdmitsTheUsersAnswers(t *testing.T) {
	const user = `{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"children":{"$ref":"#"}},"required":["name","children"],"additionalProperties":false}}`
	out, decoded, wrapped, err := provider.ObjectSchema(user)
	if err != nil || !wrapped {
		t.Fatalf("ObjectSchema: wrapped %t, err %v", wrapped, err)
	}
	sentText, strict := provider.StrictSchema(out, decoded)
	if !strict {
		t.Errorf("not strict: %s", sentText)
	}
	sent, err := schema.Compile(string(sentText))
	if err != nil {
		t.Fatalf("the sent schema does not compile: %v", err)
	}
	own, err := schema.Compile(user)
	if err != nil {
		t.Fatal(err)
	}
	const meant = `[{"name":"root","children":[{"name":"leaf","children":[]}]}]`
	if ok, errs := schema.Verdict(sent, `{"value":`+meant+`}`); !ok {
		t.Errorf("the user's answer, wrapped, is refused by the schema sent: %v", errs)
	}
	// What the old wrapping forced: every level in the wrapper's shape.
	const forced = `{"value":[{"name":"root","children":{"value":[]}}]}`
	if ok, _ := schema.Verdict(sent, forced); ok {
		t.Errorf("the schema sent admits %s, which the user's schema refuses once unwrapped", forced)
	}
	if ok, errs := schema.Verdict(own, provider.UnwrapAnswer(`{"value":`+meant+`}`)); !ok {
		t.Errorf("unwrapped answer refused by the user's schema: %v", errs)
	}
}

// Whatever the job's schema, what is sent is a JSON object schema that
// compiles wherever the job's did (its references still resolve after
// wrapping), and strict mode gets JSON whose every $ref stands alone. Its
// 2020-12 copy (Draft2020) compiles wherever it does, with no item array.
func FuzzObjectSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"array","items":{"type":"object","properties":{"c":{"$ref":"#"}},"required":["c"],"additionalProperties":false}}`,
		`{"$ref":"#/$defs/a","$defs":{"a":{"items":{"$ref":"#"}},"root":{}}}`,
		`{"type":"object","properties":{"b":{"$ref":"#/$defs/P","description":"d"}},"required":["b"],"additionalProperties":false,"$defs":{"P":{"type":"string"}}}`,
		`{"type":"object","oneOf":[{"required":["a"]}],"properties":{"a":{"$ref":"#/properties/b"},"b":{}}}`,
		`{"items":[{"$ref":"#/items/1"},{"type":"string"}],"definitions":{"x":{"$ref":"#"}}}`,
		`{"anyOf":[{"$ref":"#/anyOf/1"},{"type":"null"}],"properties":{"value":{}}}`,
		`{"type":"string","const":{"$ref":"#"}}`,
		" {\"properties\" : {\"a\\\"b\" : { \"$ref\" : \"#/$defs/x\" ,\"title\":\"t\\u0041\" } } ,\"$defs\":{\"x\":{}}}\n",
		// An $id left inside "value" made it its own resource, where
		// "#/$defs/item" no longer resolves (audit-providers3 F6).
		`{"$id":"urn:example:list","type":"array","items":{"$ref":"#/$defs/item"},"$defs":{"item":{"type":"integer"}}}`,
		`{"$id":"https://example.com/tree","type":"array","items":{"properties":{"kids":{"$ref":"#"},"n":{"$ref":"#/$defs/n"}}},"$defs":{"n":{"type":"integer"}}}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","id":"http://example.com/l","type":"array","items":{"$ref":"#/definitions/i"},"definitions":{"i":{"type":"integer"}}}`,
		// Older drafts the API accepts, in their 2020-12 copy
		// (audit-providers3 F3).
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"array","items":[{"$ref":"#/definitions/p"},{"$ref":"#/items/0"}],"additionalItems":false,"definitions":{"p":{"type":"number"}}}`,
		`{"$ref":"#/definitions/mySchema","definitions":{"mySchema":{"type":"object","properties":{"myString":{"type":"string"}},"required":["myString"],"additionalProperties":false}},"$schema":"http://json-schema.org/draft-07/schema#"}`,
		`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"n":{"minimum":1,"exclusiveMinimum":true},"a":{"$ref":"#a:b"}},"definitions":{"x":{"id":"#a:b"}},"$defs":{"x":{}}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","0000":"00000","items":[{"0000":"000000000000000"},{"$ref":"#/items"}],"00000000000":{"0":{}}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if out, changed := provider.DropRefSiblings(json.RawMessage(text), func(string) bool { return true }); changed || string(out) != text {
			t.Fatalf("keeping every keyword changed %q into %q", text, out)
		}
		if out, _ := provider.DropRefSiblings(json.RawMessage(text), func(string) bool { return false }); json.Valid([]byte(text)) && !json.Valid(out) {
			t.Fatalf("dropping $ref siblings from %q gave %q, not JSON", text, out)
		}
		for _, prepare := range []func(string) (json.RawMessage, map[string]any, bool, error){provider.ObjectSchema, provider.ToolInputSchema} {
			out, decoded, _, err := prepare(text)
			if err != nil {
				return
			}
			if !json.Valid(out) || decoded["type"] != "object" {
				t.Fatalf("%s → %s: not a JSON object schema", text, out)
			}
			if _, err := schema.Compile(text); err == nil {
				if _, err := schema.Compile(string(out)); err != nil {
					t.Fatalf("%s compiles, %s does not: %v", text, out, err)
				}
				modern, _ := provider.Draft2020(out)
				if _, err := schema.Compile(string(modern)); err != nil && !refersToArray(out) {
					t.Fatalf("%s compiles, its 2020-12 copy %s does not: %v", out, modern, err)
				}
				var d any
				if err := json.Unmarshal(modern, &d); err != nil || hasItemArray(d) {
					t.Fatalf("the 2020-12 copy %s has an item array", modern)
				}
			}
			sent, strict := provider.StrictSchema(out, decoded)
			if !json.Valid(sent) {
				t.Fatalf("strict copy of %s is not JSON: %s", out, sent)
			}
			if strict {
				var d map[string]any
				if err := json.Unmarshal(sent, &d); err != nil || !refsAlone(d) {
					t.Fatalf("strict copy %s has a $ref with keywords beside it", sent)
				}
			}
		}
	})
}

// refersToArray reports whether a $ref of the JSON Schema text points at
// an array (an older draft's item array itself), which an older draft's
// compiler lets through and no 2020-12 schema can say.
func refersToArray(text []byte) bool {
	var doc any
	if json.Unmarshal(text, &doc) != nil {
		return false
	}
	var refs []string
	var collect func(v any)
	collect = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if r, ok := v["$ref"].(string); ok {
				refs = append(refs, r)
			}
			for _, e := range v {
				collect(e)
			}
		case []any:
			for _, e := range v {
				collect(e)
			}
		}
	}
	collect(doc)
	for _, r := range refs {
		if !strings.HasPrefix(r, "#/") {
			continue
		}
		v := doc
		for _, tok := range strings.Split(r[2:], "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			switch c := v.(type) {
			case map[string]any:
				v = c[tok]
			case []any:
				i, err := strconv.Atoi(tok)
				if err != nil || i < 0 || i >= len(c) {
					v = nil
				} else {
					v = c[i]
				}
			default:
				v = nil
			}
		}
		if _, ok := v.([]any); ok {
			return true
		}
	}
	return false
}

// hasItemArray reports whether an object in v holds items as an array,
// enum, const, default and examples values (data) aside.
func hasItemArray(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["items"].([]any); ok {
			return true
		}
		for k, e := range v {
			if k != "enum" && k != "const" && k != "default" && k != "examples" && hasItemArray(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if hasItemArray(e) {
				return true
			}
		}
	}
	return false
}

// refsAlone reports whether every object in v holding a string $ref holds
// nothing else, enum values (data) aside.
func refsAlone(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["$ref"].(string); ok && len(v) > 1 {
			return false
		}
		for k, e := range v {
			if k != "enum" && !refsAlone(e) {
				return false
			}
		}
	case []any:
		for _, e := range v {
			if !refsAlone(e) {
				return false
			}
		}
	}
	return true
}

// benchSchema is a large extraction schema: 200 described nested models
// of 6 fields each (~60 KB), the $refs Pydantic-style with descriptions.
func benchSchema() string {
	var props, defs []string
	for i := range 200 {
		n := strconv.Itoa(i)
		props = append(props, `"f`+n+`":{"$ref":"#/$defs/M`+n+`","description":"field `+n+`"}`)
		var fields []string
		for j := range 6 {
			fields = append(fields, `"g`+strconv.Itoa(j)+`":{"type":["string","null"],"description":"a value of the document"}`)
		}
		defs = append(defs, `"M`+n+`":{"type":"object","properties":{`+strings.Join(fields, ",")+`},"required":["g0","g1","g2","g3","g4","g5"],"additionalProperties":false}`)
	}
	req := make([]string, 200)
	for i := range req {
		req[i] = `"f` + strconv.Itoa(i) + `"`
	}
	return `{"type":"object","properties":{` + strings.Join(props, ",") + `},"required":[` + strings.Join(req, ",") + `],"additionalProperties":false,"$defs":{` + strings.Join(defs, ",") + `}}`
}

// The strict copy is made once per model-stage call (each chunk, each
// consensus run).
func BenchmarkStrictSchema(b *testing.B) {
	s := benchSchema()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		out, decoded, _, err := provider.ObjectSchema(s)
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := provider.StrictSchema(out, decoded); !ok {
			b.Fatal("not strict")
		}
	}
}

// Gemini drops $ref siblings from every schema it sends.
func BenchmarkDropRefSiblings(b *testing.B) {
	s := json.RawMessage(benchSchema())
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		provider.DropRefSiblings(s, func(k string) bool { return strings.HasPrefix(k, "$") })
	}
}
