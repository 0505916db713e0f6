package provider

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Keywords whose value is a subschema, an array of subschemas, or an
// object of named subschemas (JSON Schema 2020-12, with the older drafts'
// definitions, dependencies and array items). Edits walk only these, so a
// property called "$ref" or "title", or a {"$ref": …} inside enum, const,
// default or examples (data, not schema), is never touched.
var (
	subschemaKeywords = map[string]bool{
		"items": true, "additionalItems": true, "additionalProperties": true, "not": true,
		"if": true, "then": true, "else": true, "contains": true, "propertyNames": true,
		"unevaluatedItems": true, "unevaluatedProperties": true, "contentSchema": true,
	}
	subschemaListKeywords = map[string]bool{
		"allOf": true, "anyOf": true, "oneOf": true, "prefixItems": true, "items": true,
	}
	subschemaMapKeywords = map[string]bool{
		"properties": true, "patternProperties": true, "$defs": true, "definitions": true,
		"dependentSchemas": true, "dependencies": true,
	}
)

// editSchema returns the JSON Schema raw with edit applied to every schema
// object in it (the root and each subschema), innermost first, and whether
// anything changed. edit gets the object's members in document order and
// returns them, changed or not. Unchanged text is returned byte for byte;
// changed objects (and the objects holding them) are written compact, in
// their members' order, so property order, which steers the order models
// write in, survives. Text that is not JSON is returned unchanged.
func editSchema(raw json.RawMessage, edit func([]member) ([]member, bool)) (json.RawMessage, bool) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return raw, false // a boolean schema has no keywords
	}
	members, err := topLevel(string(trimmed))
	if err != nil {
		return raw, false
	}
	changed := false
	for i, m := range members {
		var out json.RawMessage
		var ok bool
		switch {
		case subschemaKeywords[m.key] && isJSONObject(m.raw):
			out, ok = editSchema(m.raw, edit)
		case subschemaListKeywords[m.key]:
			out, ok = editEach(m.raw, func(v json.RawMessage) (json.RawMessage, bool) { return editSchema(v, edit) })
		case subschemaMapKeywords[m.key]:
			out, ok = editMembers(m.raw, func(v json.RawMessage) (json.RawMessage, bool) { return editSchema(v, edit) })
		}
		if ok {
			members[i].raw, changed = out, true
		}
	}
	members, edited := edit(members)
	if !changed && !edited {
		return raw, false
	}
	return writeObject(members), true
}

// editEach applies f to each element of a JSON array; raw unchanged when
// it is not one or f changes nothing.
func editEach(raw json.RawMessage, f func(json.RawMessage) (json.RawMessage, bool)) (json.RawMessage, bool) {
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return raw, false
	}
	changed := false
	for i, e := range elems {
		if out, ok := f(e); ok {
			elems[i], changed = out, true
		}
	}
	if !changed {
		return raw, false
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, e := range elems {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e)
	}
	b.WriteByte(']')
	return b.Bytes(), true
}

// editMembers applies f to each member value of a JSON object, keeping
// the members' order; raw unchanged when it is not one or f changes
// nothing.
func editMembers(raw json.RawMessage, f func(json.RawMessage) (json.RawMessage, bool)) (json.RawMessage, bool) {
	if !isJSONObject(raw) {
		return raw, false
	}
	members, err := topLevel(string(bytes.TrimSpace(raw)))
	if err != nil {
		return raw, false
	}
	changed := false
	for i, m := range members {
		if out, ok := f(m.raw); ok {
			members[i].raw, changed = out, true
		}
	}
	if !changed {
		return raw, false
	}
	return writeObject(members), true
}

func isJSONObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}

// writeObject writes members as a JSON object, compacting each value.
func writeObject(members []member) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		if err := json.Compact(&b, m.raw); err != nil {
			b.Write(m.raw)
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// refKeywords hold a reference to another place in the schema.
var refKeywords = map[string]bool{"$ref": true, "$recursiveRef": true, "$dynamicRef": true}

// DropRefSiblings returns schema with the keywords beside each $ref that
// keep does not accept removed, and whether there were any. Vendors that
// take $ref only alone (OpenAI and Mistral strict mode, Gemini) refuse
// the whole request otherwise, and Pydantic writes a described nested
// model as {"$ref":…,"description":…}.
func DropRefSiblings(schema json.RawMessage, keep func(keyword string) bool) (json.RawMessage, bool) {
	return editSchema(schema, func(members []member) ([]member, bool) {
		hasRef := false
		for _, m := range members {
			if m.key == "$ref" {
				hasRef = true
			}
		}
		if !hasRef {
			return members, false
		}
		kept := members[:0:0]
		for _, m := range members {
			if m.key == "$ref" || keep(m.key) {
				kept = append(kept, m)
			}
		}
		return kept, len(kept) != len(members)
	})
}

// rebaseRootRefs returns schema with every reference into its root ("#",
// "#/items/…") moved under prefix (a JSON pointer fragment such as
// "#/$defs/root"), and whether there were any. References into $defs and
// definitions are kept: ObjectSchema keeps those at the wrapper's root.
// Anchors ("#name") and other documents' URIs are not root-relative.
func rebaseRootRefs(schema json.RawMessage, prefix string) (json.RawMessage, bool) {
	return editSchema(schema, func(members []member) ([]member, bool) {
		changed := false
		for i, m := range members {
			if !refKeywords[m.key] {
				continue
			}
			var ref string
			if err := json.Unmarshal(m.raw, &ref); err != nil || !rootRelative(ref) {
				continue
			}
			q, _ := json.Marshal(prefix + strings.TrimPrefix(ref, "#"))
			members[i].raw, changed = q, true
		}
		return members, changed
	})
}

// rootRelative reports whether ref points into the document's root
// schema other than its $defs or definitions.
func rootRelative(ref string) bool {
	if ref == "#" {
		return true
	}
	if !strings.HasPrefix(ref, "#/") {
		return false
	}
	first, _, _ := strings.Cut(ref[2:], "/")
	return first != "$defs" && first != "definitions"
}
