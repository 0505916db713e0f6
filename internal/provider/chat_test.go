package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/provider"
)

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad test schema %s: %v", s, err)
	}
	return m
}

func TestStrictCompatible(t *testing.T) {
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
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := provider.StrictCompatible(decode(t, c.schema)); got != c.want {
				t.Errorf("StrictCompatible = %t, want %t", got, c.want)
			}
		})
	}
	t.Run("nesting deeper than strict mode allows", func(t *testing.T) {
		s := `{"type":"string"}`
		for range 10 {
			s = `{"type":"object","properties":{"a":` + s + `},"required":["a"],"additionalProperties":false}`
		}
		if provider.StrictCompatible(decode(t, s)) {
			t.Error("11 levels accepted")
		}
	})
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
