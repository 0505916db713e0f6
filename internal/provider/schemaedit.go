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
// changed objects (and the objects holding them) are written without
// space between their members, in their members' order, so property
// order, which steers the order models write in, survives. Text that is not JSON is returned unchanged.
func editSchema(raw json.RawMessage, edit func([]member) ([]member, bool)) (json.RawMessage, bool) {
	if !json.Valid(raw) {
		return raw, false
	}
	if out, changed := editObject(bytes.TrimSpace(raw), edit); changed {
		return out, true
	}
	return raw, false
}

// editObject is editSchema on valid JSON without surrounding space. The
// members are found by scanning the bytes (scanMembers): a schema is
// walked once per level, and encoding/json's decoder took 10–30 ms for a
// 120 KB schema of nested models, on every model-stage call.
func editObject(raw []byte, edit func([]member) ([]member, bool)) (json.RawMessage, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return raw, false // a boolean schema has no keywords
	}
	members := scanMembers(raw)
	changed := false
	for i, m := range members {
		var out json.RawMessage
		var ok bool
		switch {
		case subschemaKeywords[m.key] && isJSONObject(m.raw):
			out, ok = editObject(m.raw, edit)
		case subschemaListKeywords[m.key]:
			out, ok = editEach(m.raw, func(v json.RawMessage) (json.RawMessage, bool) { return editObject(v, edit) })
		case subschemaMapKeywords[m.key]:
			out, ok = editMembers(m.raw, func(v json.RawMessage) (json.RawMessage, bool) { return editObject(v, edit) })
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

// editEach applies f to each element of a JSON array (valid JSON without
// surrounding space); raw unchanged when it is not one or f changes
// nothing.
func editEach(raw json.RawMessage, f func(json.RawMessage) (json.RawMessage, bool)) (json.RawMessage, bool) {
	if len(raw) == 0 || raw[0] != '[' {
		return raw, false
	}
	elems := scanElements(raw)
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

// editMembers applies f to each member value of a JSON object (valid JSON
// without surrounding space), keeping the members' order; raw unchanged
// when it is not one or f changes nothing.
func editMembers(raw json.RawMessage, f func(json.RawMessage) (json.RawMessage, bool)) (json.RawMessage, bool) {
	if !isJSONObject(raw) {
		return raw, false
	}
	members := scanMembers(raw)
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
	return len(raw) > 0 && raw[0] == '{'
}

// writeObject writes members as a JSON object, their values byte for
// byte.
func writeObject(members []member) json.RawMessage {
	n := 2
	for _, m := range members {
		n += len(m.key) + len(m.raw) + 4
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, m := range members {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendQuoted(b, m.key)
		b = append(b, ':')
		b = append(b, m.raw...)
	}
	return append(b, '}')
}

// appendQuoted appends s as a JSON string.
func appendQuoted(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// scanMembers returns the members of the JSON object obj (valid JSON,
// starting with '{'), values without surrounding space.
func scanMembers(obj []byte) []member {
	var out []member
	i := skipSpace(obj, 1)
	for i < len(obj) && obj[i] != '}' {
		end := skipString(obj, i)
		var key string
		if bytes.IndexByte(obj[i:end], '\\') < 0 {
			key = string(obj[i+1 : end-1])
		} else {
			_ = json.Unmarshal(obj[i:end], &key)
		}
		i = skipSpace(obj, end)
		i = skipSpace(obj, i+1) // ':'
		vend := skipValue(obj, i)
		out = append(out, member{key, obj[i:vend]})
		i = skipSpace(obj, vend)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return out
}

// scanElements returns the elements of the JSON array arr (valid JSON,
// starting with '['), without surrounding space.
func scanElements(arr []byte) []json.RawMessage {
	var out []json.RawMessage
	i := skipSpace(arr, 1)
	for i < len(arr) && arr[i] != ']' {
		end := skipValue(arr, i)
		out = append(out, arr[i:end])
		i = skipSpace(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i = skipSpace(arr, i+1)
		}
	}
	return out
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the JSON string starting at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index after the JSON value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	default: // a number, true, false, null
		for i < len(b) && !strings.ContainsRune(",}] \t\n\r", rune(b[i])) {
			i++
		}
		return i
	}
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
