package provider

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Limits of strict structured outputs (OpenAI's documented subset, which
// Mistral's strict mode and the OpenAI-protocol servers follow or exceed):
// "up to 5000 object properties total, with up to 10 levels of nesting",
// "the total string length of all property names, definition names, enum
// values, and const values cannot exceed 120,000 characters", "up to 1000
// enum values across all enum properties", and "for a single enum
// property with string values, the total string length of all enum values
// cannot exceed 15,000 characters when there are more than 250 enum
// values" (platform.openai.com, Structured Outputs, Supported schemas).
// Characters are counted as UTF-8 bytes, never fewer than any count of
// characters the server may use: a schema near a limit goes in JSON mode
// rather than risk the 400 that fails every row.
const (
	strictMaxDepth       = 10
	strictMaxProperties  = 5000
	strictMaxEnumValues  = 1000
	strictLongEnumValues = 250
	strictLongEnumChars  = 15000
	strictMaxChars       = 120000
	// strictMaxRefHops bounds the $refs followed to find what an anyOf
	// alternative is; a longer chain is not strict.
	strictMaxRefHops = 32
)

// strictKeywords are the schema keywords strict mode accepts. Anything
// else (allOf, not, if/then/else, patternProperties, minLength, const,
// default, $schema, …) makes the server reject the request, so such a
// schema is sent in plain JSON mode instead.
var strictKeywords = map[string]bool{
	"type": true, "description": true, "title": true, "enum": true, "anyOf": true,
	"$ref": true, "$defs": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "pattern": true, "format": true,
	"multipleOf": true, "maximum": true, "exclusiveMaximum": true, "minimum": true, "exclusiveMinimum": true,
	"minItems": true, "maxItems": true,
}

var strictTypes = map[string]bool{
	"string": true, "number": true, "integer": true, "boolean": true, "object": true, "array": true, "null": true,
}

var strictFormats = map[string]bool{
	"date-time": true, "time": true, "date": true, "duration": true, "email": true,
	"hostname": true, "ipv4": true, "ipv6": true, "uuid": true,
}

// StrictSchema returns what to send with strict: true for schema
// (ObjectSchema's output) and decoded (its decoded form), and whether
// strict mode can take it: the root is an object, every object lists all
// its properties as required and forbids additional ones, and only the
// keywords and formats strict mode supports appear, within its size
// limits, and no two object alternatives of an anyOf begin with the same
// key. A schema it cannot take is still sent, but as guidance the server
// does not enforce.
//
// Strict mode takes a $ref only alone ("$ref cannot have keywords
// {'description'}", a 400 for the whole request), and Pydantic writes
// every described nested model as {"$ref":…,"description":…}. Beside a
// $ref, description and title are annotations that constrain nothing, so
// the copy sent drops them and the schema stays strict (the answer is
// still validated against the job's own schema); any other keyword beside
// a $ref makes the schema not strict-compatible.
//
// An older draft's spelling (definitions, tuple items) is read and sent in
// its 2020-12 form (Draft2020), strict or not: servers that read JSON
// Schema read 2020-12, and some refuse the older form outright.
func StrictSchema(schema json.RawMessage, decoded map[string]any) (json.RawMessage, bool) {
	if converted, changed := Draft2020(schema); changed {
		var d map[string]any
		if err := json.Unmarshal(converted, &d); err != nil {
			return schema, false
		}
		schema, decoded = converted, d
	}
	ok, annotatedRefs := strictCompatible(schema, decoded)
	if !ok {
		return schema, false
	}
	if annotatedRefs {
		schema, _ = DropRefSiblings(schema, func(string) bool { return false })
	}
	return schema, true
}

// strictRefAnnotations are the keywords a $ref may have beside it in the
// schema given to StrictSchema: the copy it returns drops them.
var strictRefAnnotations = map[string]bool{"$ref": true, "description": true, "title": true}

// strictCompatible reports whether strict mode takes schema once the
// annotations beside its $refs are dropped, and whether there are any.
func strictCompatible(raw json.RawMessage, schema map[string]any) (ok, annotatedRefs bool) {
	if schema["type"] != "object" {
		return false, false
	}
	if _, ok := schema["anyOf"]; ok {
		return false, false
	}
	c := strictChecker{}
	ok = c.node(schema, 1) && c.properties <= strictMaxProperties && c.enumValues <= strictMaxEnumValues &&
		c.chars <= strictMaxChars
	if ok && c.anyOf {
		ok = anyOfFirstKeysDistinct(raw)
	}
	return ok, c.annotatedRefs
}

type strictChecker struct {
	properties, enumValues int
	// chars counts property names, $defs names and enum values.
	chars         int
	annotatedRefs bool // a $ref has description or title beside it
	anyOf         bool // the schema has an anyOf
}

// valueChars is what an enum value counts towards the strict limits: a
// string's length, another value's JSON text.
func valueChars(v any) int {
	if s, ok := v.(string); ok {
		return len(s)
	}
	b, _ := json.Marshal(v)
	return len(b)
}

func (c *strictChecker) node(v any, depth int) bool {
	m, ok := v.(map[string]any)
	if !ok || depth > strictMaxDepth {
		return false
	}
	for k := range m {
		if !strictKeywords[k] {
			return false
		}
	}
	isObject := false
	switch t := m["type"].(type) {
	case nil:
	case string:
		if !strictTypes[t] {
			return false
		}
		isObject = t == "object"
	case []any:
		for _, e := range t {
			s, ok := e.(string)
			if !ok || !strictTypes[s] {
				return false
			}
			isObject = isObject || s == "object"
		}
	default:
		return false
	}
	if f, ok := m["format"]; ok {
		if s, _ := f.(string); !strictFormats[s] {
			return false
		}
	}
	if e, ok := m["enum"]; ok {
		vals, ok := e.([]any)
		if !ok {
			return false
		}
		c.enumValues += len(vals)
		n := 0
		for _, v := range vals {
			n += valueChars(v)
		}
		c.chars += n
		if len(vals) > strictLongEnumValues && n > strictLongEnumChars {
			return false
		}
	}
	if r, ok := m["$ref"]; ok {
		if s, _ := r.(string); !strings.HasPrefix(s, "#") {
			return false
		}
		for k := range m {
			if !strictRefAnnotations[k] {
				return false
			}
		}
		c.annotatedRefs = c.annotatedRefs || len(m) > 1
	}
	if defs, ok := m["$defs"]; ok {
		dm, ok := defs.(map[string]any)
		if !ok || depth != 1 {
			return false
		}
		for name, d := range dm {
			c.chars += len(name)
			if !c.node(d, depth+1) {
				return false
			}
		}
	}
	if a, ok := m["anyOf"]; ok {
		alts, ok := a.([]any)
		if !ok || len(alts) == 0 {
			return false
		}
		c.anyOf = true
		for _, alt := range alts {
			if !c.node(alt, depth+1) {
				return false
			}
		}
	}
	if it, ok := m["items"]; ok && !c.node(it, depth+1) {
		return false
	}
	_, hasProps := m["properties"]
	if isObject || hasProps {
		return c.object(m, depth)
	}
	return true
}

// object checks the rule strict mode adds for objects: additional
// properties forbidden, every property required.
func (c *strictChecker) object(m map[string]any, depth int) bool {
	if m["additionalProperties"] != false {
		return false
	}
	props, _ := m["properties"].(map[string]any)
	if _, ok := m["properties"]; ok && props == nil {
		return false
	}
	req, _ := m["required"].([]any)
	if _, ok := m["required"]; ok && req == nil && len(props) > 0 {
		return false
	}
	required := make(map[string]bool, len(req))
	for _, r := range req {
		s, ok := r.(string)
		if !ok {
			return false
		}
		required[s] = true
	}
	if len(required) != len(props) {
		return false
	}
	c.properties += len(props)
	for name, p := range props {
		c.chars += len(name)
		if !required[name] || !c.node(p, depth+1) {
			return false
		}
	}
	return true
}

// anyOfFirstKeysDistinct reports whether no two object alternatives of an
// anyOf in schema (raw JSON) begin with the same property, first in
// properties or first in required. OpenAI refuses the request otherwise:
// "Objects provided via 'anyOf' must not share identical first keys.
// Consider adding a discriminator key or rearranging the properties to
// ensure the first key is unique." (a 400; its decoder tells the
// alternatives apart by their first key). A union of models that start
// with the same field (Person | Company, both name first) is common.
// Alternatives are read through their $refs and nested anyOfs, in document
// order, which the decoded form has lost; one that cannot be followed
// makes the schema not strict.
func anyOfFirstKeysDistinct(schema json.RawMessage) bool {
	root := bytes.TrimSpace(schema)
	ok := true
	editSchema(schema, func(members []member) ([]member, bool) {
		for _, m := range members {
			if !ok || m.key != "anyOf" {
				continue
			}
			var objects [][]member
			if !anyOfObjects(root, m.raw, &objects, 0) {
				ok = false
				break
			}
			seenProp, seenReq := map[string]bool{}, map[string]bool{}
			for _, obj := range objects {
				prop, req := firstKeys(obj)
				if prop != "" {
					if seenProp[prop] {
						ok = false
					}
					seenProp[prop] = true
				}
				if req != "" {
					if seenReq[req] {
						ok = false
					}
					seenReq[req] = true
				}
			}
		}
		return members, false
	})
	return ok
}

// anyOfObjects appends to out the members of each object alternative of
// the anyOf array alts, through $refs (resolved in root) and nested
// anyOfs; false when one cannot be followed.
func anyOfObjects(root []byte, alts json.RawMessage, out *[][]member, hops int) bool {
	if len(alts) == 0 || alts[0] != '[' {
		return false
	}
	for _, alt := range scanElements(alts) {
		if !alternativeObjects(root, alt, out, hops) {
			return false
		}
	}
	return true
}

func alternativeObjects(root []byte, alt json.RawMessage, out *[][]member, hops int) bool {
	if hops > strictMaxRefHops {
		return false
	}
	if !isJSONObject(alt) {
		return true // a boolean schema is no object
	}
	members := scanMembers(alt)
	for _, m := range members {
		switch m.key {
		case "$ref":
			var ref string
			if err := json.Unmarshal(m.raw, &ref); err != nil {
				return false
			}
			target, ok := resolvePointer(root, ref)
			if !ok {
				return false
			}
			return alternativeObjects(root, target, out, hops+1)
		case "anyOf":
			return anyOfObjects(root, m.raw, out, hops+1)
		}
	}
	*out = append(*out, members)
	return true
}

// firstKeys returns the first property name of the schema object members
// and the first name it requires ("" when none).
func firstKeys(members []member) (prop, req string) {
	for _, m := range members {
		switch m.key {
		case "properties":
			if isJSONObject(m.raw) {
				if ps := scanMembers(m.raw); len(ps) > 0 {
					prop = ps[0].key
				}
			}
		case "required":
			if len(m.raw) > 0 && m.raw[0] == '[' {
				if rs := scanElements(m.raw); len(rs) > 0 {
					_ = json.Unmarshal(rs[0], &req)
				}
			}
		}
	}
	return prop, req
}
