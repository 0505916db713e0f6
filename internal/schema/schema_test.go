package schema

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// nested returns a valid schema whose containers nest depth levels deep:
// {"items":{"items":...{}}}.
func nested(depth int) string {
	return strings.Repeat(`{"items":`, depth-1) + "{}" + strings.Repeat("}", depth-1)
}

// withNodes returns a valid schema with exactly n JSON values: the object, the
// enum array and n-2 numbers.
func withNodes(n int) string {
	nums := make([]string, n-2)
	for i := range nums {
		nums[i] = strconv.Itoa(i)
	}
	return `{"enum":[` + strings.Join(nums, ",") + `]}`
}

// ofSize returns a valid schema of exactly size bytes.
func ofSize(size int) string {
	const head, tail = `{"description":"`, `"}`
	return head + strings.Repeat("x", size-len(head)-len(tail)) + tail
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		schema  string
		wantErr error  // nil: accepted
		wantMsg string // substring of the message
	}{
		// Accepted schemas.
		{name: "an object schema is accepted", schema: `{"type":"object","properties":{"total":{"type":"number"}},"required":["total"]}`},
		{name: "an empty object schema is accepted", schema: `{}`},
		{name: "a draft-07 schema is accepted through the embedded metaschema", schema: `{"$schema":"http://json-schema.org/draft-07/schema#","type":"string"}`},
		{name: "an internal $defs reference is accepted", schema: `{"$defs":{"a":{"type":"string"}},"$ref":"#/$defs/a"}`},
		{name: "an internal anchor reference is accepted", schema: `{"$defs":{"a":{"$anchor":"amount","type":"number"}},"$ref":"#amount"}`},
		{name: "a root self reference is accepted", schema: `{"type":"object","properties":{"child":{"$ref":"#"}}}`},
		{name: "an internal $dynamicRef is accepted", schema: `{"$dynamicAnchor":"node","properties":{"next":{"$dynamicRef":"#node"}}}`},
		{name: "a property named $ref is a name, not a reference", schema: `{"properties":{"$ref":{"type":"string"}}}`},
		{name: "a $ref inside const is data, not a reference", schema: `{"const":{"$ref":"https://example.com/x"}}`},
		{name: "a $ref inside enum is data, not a reference", schema: `{"enum":[{"$ref":"https://example.com/x"}]}`},
		{name: "a $ref inside default and examples is data", schema: `{"default":{"$ref":"x.json"},"examples":[{"$ref":"y.json"}]}`},
		{name: "exactly 128 KiB is accepted", schema: ofSize(MaxBytes)},
		{name: "exactly 64 levels deep is accepted", schema: nested(MaxDepth)},
		{name: "exactly 10000 nodes is accepted", schema: withNodes(MaxNodes)},
		{name: "scalars add no depth level", schema: strings.Repeat(`{"items":`, MaxDepth-1) + `{"const":1}` + strings.Repeat("}", MaxDepth-1)},

		// Size.
		{name: "one byte over 128 KiB is rejected", schema: ofSize(MaxBytes + 1), wantErr: ErrTooLarge, wantMsg: "larger than 131072 bytes"},
		{name: "size is checked before the document is parsed", schema: strings.Repeat("[", MaxBytes+1), wantErr: ErrTooLarge},

		// Depth.
		{name: "65 levels of objects are rejected", schema: nested(MaxDepth + 1), wantErr: ErrTooDeep, wantMsg: "deeper than 64 levels"},
		{name: "65 levels of arrays are rejected", schema: strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), wantErr: ErrTooDeep},
		{name: "depth is checked while scanning, before the end of the document", schema: strings.Repeat("[", 100000), wantErr: ErrTooDeep},

		// Nodes.
		{name: "10001 nodes are rejected", schema: withNodes(MaxNodes + 1), wantErr: ErrTooManyNode, wantMsg: "more than 10000 nodes"},
		{name: "empty containers count as nodes", schema: `{"enum":[` + strings.TrimSuffix(strings.Repeat("[],", MaxNodes-1), ",") + `]}`, wantErr: ErrTooManyNode},
		{name: "object keys are not nodes", schema: `{"properties":{` + manyProps(MaxNodes/2) + `}}`},

		// JSON syntax.
		{name: "text that is not JSON is rejected", schema: `type: object`, wantErr: ErrNotJSON, wantMsg: "not valid JSON"},
		{name: "a truncated document is rejected", schema: `{"type":"object"`, wantErr: ErrNotJSON},
		{name: "a trailing comma is rejected", schema: `{"type":"object",}`, wantErr: ErrNotJSON},
		{name: "two documents are rejected", schema: `{} {}`, wantErr: ErrNotJSON, wantMsg: "after the top-level value"},
		{name: "whitespace only is rejected", schema: "  \n", wantErr: ErrNotJSON, wantMsg: "empty document"},

		// Self-containment.
		{name: "an http $ref is rejected", schema: `{"$ref":"http://example.com/s.json"}`, wantErr: ErrExternalRef, wantMsg: `$ref "http://example.com/s.json" at /$ref`},
		{name: "a relative file $ref is rejected", schema: `{"properties":{"a":{"$ref":"other.json#/x"}}}`, wantErr: ErrExternalRef, wantMsg: "at /properties/a/$ref"},
		{name: "a file URL $ref is rejected", schema: `{"items":{"$ref":"file:///etc/passwd"}}`, wantErr: ErrExternalRef},
		{name: "an external $dynamicRef is rejected", schema: `{"$dynamicRef":"https://example.com/s#meta"}`, wantErr: ErrExternalRef, wantMsg: "$dynamicRef"},
		{name: "an external $ref under a property named const is still a reference", schema: `{"properties":{"const":{"$ref":"https://example.com/x"}}}`, wantErr: ErrExternalRef},
		{name: "an external $ref inside allOf is rejected", schema: `{"allOf":[{"type":"object"},{"$ref":"https://example.com/x"}]}`, wantErr: ErrExternalRef, wantMsg: "at /allOf/1/$ref"},
		{name: "an external $ref in $defs is rejected even when unused", schema: `{"$defs":{"x":{"$ref":"https://example.com/x"}}}`, wantErr: ErrExternalRef},
		// What only the compiler resolves is still a reference out of the
		// document: the loader refuses it, and the caller reads the rule.
		{name: "a $schema outside the embedded drafts is refused, not fetched", schema: `{"$schema":"https://example.com/meta","type":"object"}`, wantErr: ErrExternalRef, wantMsg: `$schema "https://example.com/meta" at /$schema`},
		{name: "a $schema of an embedded resource outside the embedded drafts is refused", schema: `{"$defs":{"a":{"$id":"https://example.com/a","$schema":"https://example.com/meta#"}},"$ref":"#/$defs/a"}`, wantErr: ErrExternalRef, wantMsg: `$schema "https://example.com/meta" at /$defs/a/$schema`},
		{name: "a pointer into data holding an external $ref is refused, not followed", schema: `{"$ref":"#/default","default":{"$ref":"https://example.com/x"}}`, wantErr: ErrExternalRef, wantMsg: `$ref "https://example.com/x" at /default/$ref`},

		// Schema validity.
		{name: "an unknown type name is rejected", schema: `{"type":"strin"}`, wantErr: ErrInvalid, wantMsg: "at /type"},
		{name: "a wrongly typed keyword is rejected", schema: `{"minimum":"ten"}`, wantErr: ErrInvalid, wantMsg: "at /minimum: got string, want number"},

		// The root must be an object: every vendor's structured output
		// takes one (a boolean schema made every model row fail).
		{name: "the boolean schema true is refused", schema: `true`, wantErr: ErrNotObject, wantMsg: "must be a JSON object"},
		{name: "the boolean schema false is refused", schema: ` false `, wantErr: ErrNotObject, wantMsg: "must be a JSON object"},
		{name: "a string is not a schema", schema: `"object"`, wantErr: ErrNotObject},
		{name: "an array is not a schema", schema: `[{"type":"object"}]`, wantErr: ErrNotObject},
		{name: "a boolean subschema is accepted", schema: `{"type":"object","properties":{"a":true,"b":false}}`},
		{name: "a reference to a missing definition is rejected", schema: `{"$ref":"#/$defs/missing"}`, wantErr: ErrInvalid, wantMsg: "#/$defs/missing"},
		{name: "an invalid pattern is rejected", schema: `{"pattern":"(["}`, wantErr: ErrInvalid, wantMsg: "at /pattern"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.schema)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Check() = %v, want accepted", err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Check() = %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("Check() = %q, want it to contain %q", err, tt.wantMsg)
			}
			if strings.Contains(err.Error(), resourceURL) {
				t.Fatalf("Check() = %q leaks the internal resource URL", err)
			}
		})
	}
}

func manyProps(n int) string {
	props := make([]string, n)
	for i := range props {
		props[i] = `"p` + strconv.Itoa(i) + `":true`
	}
	return strings.Join(props, ",")
}

// A $schema naming a real file must not be read: the loader refuses even
// what exists on disk.
func TestCheckNeverReadsTheDisk(t *testing.T) {
	meta := filepath.Join(t.TempDir(), "meta.json")
	if err := os.WriteFile(meta, []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	err := Check(`{"$schema":"file://` + meta + `","type":"object"}`)
	if !errors.Is(err, ErrExternalRef) || !strings.Contains(err.Error(), "at /$schema") {
		t.Fatalf("Check() = %v, want the file refused as an external reference", err)
	}
}

func TestCompileValidates(t *testing.T) {
	sch, err := Compile(`{"type":"object","properties":{"total":{"type":"number"}},"required":["total"]}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(map[string]any{"total": json.Number("12.5")}); err != nil {
		t.Fatalf("valid instance rejected: %v", err)
	}
	if err := sch.Validate(map[string]any{"total": "twelve"}); err == nil {
		t.Fatal("invalid instance accepted")
	}
}

func TestCompileReturnsTheCheckError(t *testing.T) {
	if _, err := Compile(nested(MaxDepth + 1)); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("Compile() = %v, want ErrTooDeep", err)
	}
}

// FuzzCheck: Check never panics and never accepts a document over a limit,
// measured here independently of the scanner, nor text that is not one
// JSON value (trailing data included).
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		`{}`, `true`, `{"type":"object"}`, `{"$ref":"#/$defs/a","$defs":{"a":{}}}`,
		`{"$ref":"http://x"}`, `[[[[]]]]`, `{"a":`, `{"enum":[1,2,3]}`, nested(MaxDepth),
		nested(MaxDepth + 1), `{"properties":{"$ref":{"$ref":"#"}}}`, `"\ud800"`, `1e999`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if Check(s) != nil {
			return
		}
		if len(s) > MaxBytes {
			t.Fatalf("accepted %d bytes", len(s))
		}
		if !json.Valid([]byte(s)) {
			t.Fatalf("accepted text that is not one JSON value: %q", s)
		}
		var doc any
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			t.Fatalf("accepted text that is not JSON: %v", err)
		}
		depth, nodes := measure(doc)
		if depth > MaxDepth || nodes > MaxNodes {
			t.Fatalf("accepted depth %d, nodes %d", depth, nodes)
		}
	})
}

// measure returns the container depth and the value count of doc.
func measure(doc any) (depth, nodes int) {
	switch v := doc.(type) {
	case map[string]any:
		maxChild, n := 0, 1
		for _, e := range v {
			d, c := measure(e)
			maxChild, n = max(maxChild, d), n+c
		}
		return maxChild + 1, n
	case []any:
		maxChild, n := 0, 1
		for _, e := range v {
			d, c := measure(e)
			maxChild, n = max(maxChild, d), n+c
		}
		return maxChild + 1, n
	default:
		return 0, 1
	}
}

// Compile reads a schema without $schema as 2020-12, so a draft-07 caller
// must name its draft; the suite test relies on that (it adds the $schema
// the suite's draft7 files leave out). Both spellings of the draft-07 URL
// select it.
func TestCompileReadsTheNamedDraft(t *testing.T) {
	const tuple = `"items":[{"type":"integer"}]`
	const refWithSibling = `"definitions":{"s":{"type":"string"}},"$ref":"#/definitions/s","maxLength":1`
	tests := []struct {
		name      string
		schema    string
		answer    string
		wantValid bool
	}{
		{"draft-07 array-form items judge by position", `{"$schema":"http://json-schema.org/draft-07/schema#",` + tuple + `}`, `[1,"x"]`, true},
		{"draft-07 array-form items reject a wrong first item", `{"$schema":"http://json-schema.org/draft-07/schema#",` + tuple + `}`, `["x"]`, false},
		{"the draft-07 URL without its empty fragment selects draft-07", `{"$schema":"http://json-schema.org/draft-07/schema",` + tuple + `}`, `[1,"x"]`, true},
		{"a draft-07 $ref hides its siblings", `{"$schema":"http://json-schema.org/draft-07/schema#",` + refWithSibling + `}`, `"ab"`, true},
		{"without $schema a $ref sits beside its siblings, as in 2020-12", `{` + refWithSibling + `}`, `"ab"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile(tt.schema)
			if err != nil {
				t.Fatal(err)
			}
			if valid, errs := Verdict(s, tt.answer); valid != tt.wantValid {
				t.Fatalf("Verdict(%s) = %v %q, want %v", tt.answer, valid, errs, tt.wantValid)
			}
		})
	}
	// Without $schema the same array-form items is not 2020-12 at all.
	if err := Check(`{` + tuple + `}`); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "at /items") {
		t.Fatalf("Check(array-form items without $schema) = %v, want refused at /items", err)
	}
}
