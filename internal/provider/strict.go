package provider

import (
	"encoding/json"
	"strings"
)

// Limits of strict structured outputs (OpenAI's documented subset, which
// Mistral's strict mode and the OpenAI-protocol servers follow or exceed).
const (
	strictMaxDepth      = 10
	strictMaxProperties = 5000
	strictMaxEnumValues = 1000
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
// limits. A schema it cannot take is still sent, but as guidance the
// server does not enforce.
//
// Strict mode takes a $ref only alone ("$ref cannot have keywords
// {'description'}", a 400 for the whole request), and Pydantic writes
// every described nested model as {"$ref":…,"description":…}. Beside a
// $ref, description and title are annotations that constrain nothing, so
// the copy sent drops them and the schema stays strict (the answer is
// still validated against the job's own schema); any other keyword beside
// a $ref makes the schema not strict-compatible.
func StrictSchema(schema json.RawMessage, decoded map[string]any) (json.RawMessage, bool) {
	ok, annotatedRefs := strictCompatible(decoded)
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
func strictCompatible(schema map[string]any) (ok, annotatedRefs bool) {
	if schema["type"] != "object" {
		return false, false
	}
	if _, ok := schema["anyOf"]; ok {
		return false, false
	}
	c := strictChecker{}
	ok = c.node(schema, 1) && c.properties <= strictMaxProperties && c.enumValues <= strictMaxEnumValues
	return ok, c.annotatedRefs
}

type strictChecker struct {
	properties, enumValues int
	annotatedRefs          bool // a $ref has description or title beside it
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
		for _, d := range dm {
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
		if !required[name] || !c.node(p, depth+1) {
			return false
		}
	}
	return true
}
