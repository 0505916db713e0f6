package provider

import (
	"bytes"
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// draft2020URI is the $schema of JSON Schema draft 2020-12.
const draft2020URI = "https://json-schema.org/draft/2020-12/schema"

// Dialects a job's schema may be written in (schema.Check compiles each
// under the draft its root $schema names, 2020-12 without one).
const (
	draft04 = 4
	draft06 = 6
	draft07 = 7
	draft19 = 2019
	draft20 = 2020
)

// dialectOf returns the draft the root $schema of root names.
func dialectOf(root []byte) int {
	if !isJSONObject(root) {
		return draft20
	}
	var uri string
	for _, m := range scanMembers(root) {
		if m.key == "$schema" {
			_ = json.Unmarshal(m.raw, &uri)
		}
	}
	return dialectNamed(uri)
}

// dialectNamed returns the draft the $schema uri names.
func dialectNamed(uri string) int {
	switch {
	case strings.Contains(uri, "draft-04"):
		return draft04
	case strings.Contains(uri, "draft-06"):
		return draft06
	case strings.Contains(uri, "draft-07"):
		return draft07
	case strings.Contains(uri, "2019-09"):
		return draft19
	}
	return draft20
}

// Draft2020 returns schema as draft 2020-12 spells it, and whether that
// changed anything: the copy for vendors that read only 2020-12. The job's
// schema may be an older draft the API accepts (zod-to-json-schema writes
// draft-07 by default; TypeBox, Effect and pydantic v1 write tuples as
// item arrays), and those vendors refuse the older spelling for every
// row: Anthropic "input_schema: JSON schema is invalid. It must match
// JSON Schema draft 2020-12" (hyperdxio/hyperdx#2925), Gemini and xAI
// "'items' must be a schema (object or boolean), not an array. For tuple
// validation, use 'prefixItems' instead" (oomkapwn/enquire-mcp#360).
//
//   - items as an array becomes prefixItems, and additionalItems beside it
//     becomes items;
//   - definitions becomes $defs (merged into a $defs beside it, a name
//     both use taking a free "_N" suffix), with every reference into it
//     rewritten;
//   - draft-04's boolean exclusiveMinimum/exclusiveMaximum becomes the
//     number of minimum/maximum;
//   - in drafts 04–07, draft-04's id becomes $id, and an $id that is a
//     plain-name fragment ("#item") becomes the $anchor 2020-12 names it
//     by ($id may carry no fragment there), the name made one $anchor
//     takes where it is not, with references to it rewritten;
//   - in drafts 04–07, the keywords beside a $ref, which those drafts
//     ignore and 2020-12 applies with it, are dropped, annotations, the
//     $defs and any keyword a reference points into kept
//     ({"$ref":"#/definitions/pos","type":"string"} would otherwise ask
//     for an integer that is a string);
//   - in 2019-09, $recursiveRef "#" becomes $ref "#" and $recursiveAnchor
//     goes, when the schema is one resource (no $id below its root): the
//     copy is read alone, so the outermost resource a recursive reference
//     reaches is its root. A schema with recursion across several
//     resources is returned as it is, still 2019-09, rather than
//     relabelled with keywords 2020-12 does not have;
//   - dependencies (drafts 04–07, which santhosh honours in every draft)
//     becomes dependentRequired for its property lists and
//     dependentSchemas for its schemas, joining those beside it;
//   - keywords a later draft added (const in draft-04, if in draft-06,
//     dependentRequired or $anchor in draft-07, prefixItems in 2019-09,
//     …), which the job's draft ignores and 2020-12 applies, are dropped,
//     as is an additionalItems without an item array beside it;
//   - an older $schema becomes 2020-12's, at the root and at an embedded
//     resource naming the root's draft.
//
// A schema embedding a resource whose own $schema names another draft is
// returned as it is: santhosh reads that resource in its own draft.
//
// References are rewritten by walking them through the schema as given,
// so a pointer into a tuple ("#/items/1") or a definition follows it.
// Everything else is kept byte for byte, and the answer is still validated
// against the job's own schema. Text that is not JSON is returned as it is.
func Draft2020(schema json.RawMessage) (json.RawMessage, bool) {
	if !olderSpelling(schema) || !json.Valid(schema) {
		return schema, false
	}
	root := bytes.TrimSpace(schema)
	d := &draftConverter{root: root, dialect: dialectOf(root)}
	if d.dialect == draft19 && !recursionConvertible(root) || mixedDialects(root, d.dialect) {
		return schema, false
	}
	// A 2020-12 schema needs the references' way only to split a
	// dependencies; the walk costs as much as the edit.
	if d.dialect < draft20 || bytes.Contains(root, []byte("dependencies")) || bytes.Contains(root, []byte(`\u`)) {
		d.refs = referencedKeywords(d.index())
	}
	if d.dialect <= draft07 {
		d.anchors = anchorNames(root, d.dialect)
	}
	return editSchema(schema, d.edit)
}

// itemArray finds an "items" key whose value is an array.
var itemArray = regexp.MustCompile(`"items"\s*:\s*\[`)

// olderSpelling reports whether schema may hold something Draft2020
// converts: every conversion needs one of these in the text (a key
// written with \u escapes is read the slow way). Most schemas have none,
// and the walk costs about 2.7 ms for a 120 KB schema on every call.
func olderSpelling(schema []byte) bool {
	for _, s := range [...]string{"definitions", "dependencies", "exclusiveM", "$schema", `\u`} {
		if bytes.Contains(schema, []byte(s)) {
			return true
		}
	}
	return itemArray.Match(schema)
}

type draftConverter struct {
	root    []byte
	dialect int
	// anchors maps a plain-name fragment id to the $anchor it becomes.
	anchors map[string]string
	// doc caches the members of the objects of root references are
	// walked through (index).
	doc *docIndex
	// refs are the keywords local references pass through
	// (referencedKeywords): kept where a drop would leave one dangling.
	refs refKeywordSet
}

func (d *draftConverter) edit(members []member) ([]member, bool) {
	changed := false
	find := func(key string) int {
		for i := len(members) - 1; i >= 0; i-- {
			if members[i].key == key {
				return i
			}
		}
		return -1
	}
	remove := func(i int) {
		members = slices.Delete(members, i, i+1)
		changed = true
	}
	// A repeated keyword is read as JSON readers (and santhosh) read it,
	// its last value: the conversions below edit that one, and an earlier
	// one left behind would be the one read in the copy.
	if out, ok := lastOfEach(members); ok {
		members, changed = out, true
	}
	// References first: they are read in the schema as given.
	for i, m := range members {
		if m.key != "$ref" && m.key != "$dynamicRef" {
			continue
		}
		if out, ok := d.rewriteRef(m.raw); ok {
			members[i].raw, changed = out, true
		}
	}
	if d.dialect < draft20 {
		// Keywords of later drafts, which the job's draft (and santhosh
		// under it) ignores and 2020-12 applies: dropped before the
		// conversions below write the 2020-12 spellings.
		kept := members[:0:0]
		for _, m := range members {
			if !d.ignoredByDialect(m.key, members) {
				kept = append(kept, m)
			}
		}
		if len(kept) != len(members) {
			members, changed = kept, true
		}
	}
	if i := find("items"); i >= 0 && isJSONArray(members[i].raw) {
		members[i].key, changed = "prefixItems", true
		if j := find("additionalItems"); j >= 0 {
			members[j].key = "items"
		}
	}
	if i := find("definitions"); i >= 0 && isJSONObject(members[i].raw) {
		if j := find("$defs"); j >= 0 && isJSONObject(members[j].raw) {
			members[j].raw = mergeDefs(members[j].raw, members[i].raw)
			remove(i)
		} else if j < 0 {
			members[i].key, changed = "$defs", true
		}
	}
	for _, bound := range [...][2]string{{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}} {
		i := find(bound[0])
		if i < 0 {
			continue
		}
		switch string(members[i].raw) {
		case "true":
			if j := find(bound[1]); j >= 0 {
				members[i].raw = members[j].raw
				remove(j)
			} else {
				remove(i)
			}
			changed = true
		case "false":
			remove(i)
		}
	}
	if out, ok := d.splitDependencies(members); ok {
		members, changed = out, true
	}
	if i := find("$schema"); i >= 0 && d.dialect != draft20 {
		// The copy is 2020-12 now, and says so: at the root, and at an
		// embedded resource naming the root's draft, which santhosh would
		// otherwise read in that draft.
		members[i].raw, changed = []byte(mustQuote(draft2020URI)), true
	}
	if d.dialect == draft19 {
		if i := find("$recursiveRef"); i >= 0 {
			// recursionConvertible checked it is "#" and alone.
			members[i].key, changed = "$ref", true
		}
		if i := find("$recursiveAnchor"); i >= 0 {
			remove(i)
		}
	}
	if d.dialect <= draft07 && refSibling(members) {
		// Those drafts ignore every keyword beside a $ref (and santhosh,
		// which checks the answer against the job's schema, does): drop
		// those 2020-12 would apply.
		kept := members[:0:0]
		for _, m := range members {
			if m.key == "$ref" || !droppedBesideRef[m.key] || d.refs.besideRef[m.key] {
				kept = append(kept, m)
			}
		}
		if len(kept) != len(members) {
			members, changed = kept, true
		}
	}
	if d.dialect <= draft07 {
		if d.dialect == draft04 {
			if i := find("id"); i >= 0 && find("$id") < 0 && isJSONString(members[i].raw) {
				members[i].key, changed = "$id", true
			}
		}
		if i := find("$id"); i >= 0 {
			var id string
			_ = json.Unmarshal(members[i].raw, &id)
			if base, frag, ok := strings.Cut(id, "#"); ok && frag != "" && find("$anchor") < 0 {
				anchor := []byte(mustQuote(d.anchors[frag]))
				if base == "" {
					members[i] = member{key: "$anchor", raw: anchor}
				} else {
					members[i].raw = []byte(mustQuote(base))
					members = slices.Insert(members, i+1, member{key: "$anchor", raw: anchor})
				}
				changed = true
			}
		}
	}
	return members, changed
}

// droppedBesideRef are the keywords the 2020-12 copy drops beside a
// drafts 04–07 $ref: those 2020-12 applies with it (assertions,
// applicators, format, which vendors may enforce, and santhosh's
// dependencies), and $id/id, which those drafts ignored there too, so
// references resolve as they did. Kept: the root's $schema, the $defs
// (definitions renamed) other references point into (zod-to-json-schema's
// named root is {"$ref":"#/definitions/x","definitions":{…}}), the
// annotations (title, description, $comment, default, examples, …) and
// keywords 2020-12 does not know, which constrain nothing either.
var droppedBesideRef = map[string]bool{
	"$id": true, "id": true, "$anchor": true, "$dynamicAnchor": true, "$dynamicRef": true,
	"type": true, "enum": true, "const": true, "format": true,
	"multipleOf": true, "maximum": true, "exclusiveMaximum": true, "minimum": true, "exclusiveMinimum": true,
	"maxLength": true, "minLength": true, "pattern": true,
	"maxItems": true, "minItems": true, "uniqueItems": true, "maxContains": true, "minContains": true,
	"maxProperties": true, "minProperties": true, "required": true, "dependentRequired": true, "dependencies": true,
	"allOf": true, "anyOf": true, "oneOf": true, "not": true, "if": true, "then": true, "else": true,
	"dependentSchemas": true, "prefixItems": true, "items": true, "additionalItems": true, "contains": true,
	"properties": true, "patternProperties": true, "additionalProperties": true, "propertyNames": true,
	"unevaluatedItems": true, "unevaluatedProperties": true,
	"contentEncoding": true, "contentMediaType": true, "contentSchema": true,
}

// refKeywordSet names the keywords local references in a schema pass
// through, by their names as given and as converted.
type refKeywordSet struct {
	// anywhere: at any schema object on a reference's way.
	anywhere map[string]bool
	// besideRef: at a schema object that has a $ref ("#/properties/a/
	// properties/x" where a has a $ref and properties).
	besideRef map[string]bool
	// whole: a reference ends at the keyword's value itself
	// ("#/dependencies"), which a split would leave pointing nowhere.
	whole map[string]bool
}

// referencedKeywords walks every local JSON-pointer reference in root
// ($ref, $dynamicRef) through the schema objects as given, the way the
// edit walks them (subschema keywords only: past a keyword holding data,
// nothing is edited). A keyword some reference passes through is kept
// where it would be dropped, or the reference would point nowhere and the
// copy would not compile where the job's schema does; no generator writes
// such references, so it is kept wherever it stands.
func referencedKeywords(doc *docIndex) refKeywordSet {
	root := doc.root
	var set refKeywordSet
	add := func(m *map[string]bool, k string) {
		if *m == nil {
			*m = map[string]bool{}
		}
		(*m)[k] = true
		// The name a keyword takes in the copy, where it is renamed.
		for _, to := range [...][2]string{{"items", "prefixItems"}, {"additionalItems", "items"}, {"dependencies", "dependentSchemas"}} {
			if k == to[0] {
				(*m)[to[1]] = true
			}
		}
	}
	editSchema(root, func(members []member) ([]member, bool) {
		for _, m := range members {
			var ref string
			if m.key != "$ref" && m.key != "$dynamicRef" || json.Unmarshal(m.raw, &ref) != nil || !strings.HasPrefix(ref, "#/") {
				continue
			}
			frag, err := url.PathUnescape(ref[1:])
			if err != nil {
				continue
			}
			tokens := splitPointer(frag)
			cur := json.RawMessage(root)
			for i := 0; i < len(tokens) && isJSONObject(cur); {
				k := tokens[i]
				v, ok := doc.value(cur, k)
				if !ok {
					break
				}
				add(&set.anywhere, k)
				if r, has := doc.value(cur, "$ref"); has && isJSONString(r) && k != "$ref" {
					add(&set.besideRef, k)
				}
				if i+1 == len(tokens) {
					add(&set.whole, k)
					break
				}
				switch {
				case subschemaKeywords[k] && !isJSONArray(v):
					cur, i = v, i+1
				case subschemaListKeywords[k]:
					cur, _ = elementAt(v, tokens, i+1)
					i += 2
				case subschemaMapKeywords[k]:
					cur, _ = doc.value(v, tokens[i+1])
					i += 2
				default:
					// Into data or an unknown keyword, which the edit
					// does not walk.
					cur = nil
				}
			}
		}
		return members, false
	})
	return set
}

// sinceDraft maps the keywords later drafts added, which 2020-12 applies
// (assertions, applicators, identifiers), to the first draft that has
// them. In an older draft they are unknown: santhosh, which checks the
// answer against the job's schema, ignores them, and so must the copy,
// or {"type":"string","const":5} in draft-04 asks the vendor for the
// impossible. Annotations (examples, $comment, deprecated, …) and $defs,
// a place to keep schemas that constrains nothing itself, are kept.
var sinceDraft = map[string]int{
	"$id": draft06, "const": draft06, "contains": draft06, "propertyNames": draft06,
	"if": draft07, "then": draft07, "else": draft07,
	"$anchor": draft19, "$recursiveRef": draft19, "$recursiveAnchor": draft19,
	"dependentRequired": draft19, "dependentSchemas": draft19,
	"unevaluatedItems": draft19, "unevaluatedProperties": draft19,
	"minContains": draft19, "maxContains": draft19, "contentSchema": draft19,
	"prefixItems": draft20, "$dynamicRef": draft20, "$dynamicAnchor": draft20,
}

// ignoredByDialect reports whether the keyword key of the schema object
// members is one the job's draft does not apply and 2020-12 would, so
// the copy drops it: a later draft's keyword, or an additionalItems with
// no item array beside it (which 2020-12 does not have either).
func (d *draftConverter) ignoredByDialect(key string, members []member) bool {
	if d.dialect >= draft20 || d.refs.anywhere[key] {
		return false
	}
	if key == "additionalItems" {
		items, ok := lastValue(members, "items")
		return !ok || !isJSONArray(items)
	}
	since, ok := sinceDraft[key]
	return ok && d.dialect < since
}

// splitDependencies writes the dependencies keyword of members (drafts
// 04–07; santhosh honours it in every draft) as 2020-12 spells it:
// dependentRequired for the names with a property list, dependentSchemas
// for those with a schema. A dependentRequired already beside it (2019-09
// and later apply both) takes the union of both lists. A name the
// dependentSchemas beside it already has stays in a dependencies of its
// own, which santhosh still applies: merging the two would move the
// place references point at. Not split when a reference points at the
// dependencies object itself.
func (d *draftConverter) splitDependencies(members []member) ([]member, bool) {
	at := lastIndex(members, "dependencies")
	if at < 0 || !isJSONObject(members[at].raw) || d.refs.whole["dependencies"] {
		return members, false
	}
	// Each list holds the members it will be written with; nil where the
	// keyword beside it is not an object and nothing can join it.
	required, hasRequired := mergeable(members, "dependentRequired")
	schemas, hasSchemas := mergeable(members, "dependentSchemas")
	var rest []member
	for _, m := range lastMembers(members[at].raw) {
		if isJSONArray(m.raw) {
			j := lastIndex(required, m.key)
			switch {
			case required == nil && hasRequired:
				rest = append(rest, m)
			case j < 0:
				required = append(required, m)
			default:
				union, ok := unionStrings(required[j].raw, m.raw)
				if !ok {
					rest = append(rest, m)
					continue
				}
				required[j].raw = union
			}
			continue
		}
		if schemas == nil && hasSchemas || lastIndex(schemas, m.key) >= 0 {
			rest = append(rest, m)
			continue
		}
		schemas = append(schemas, m)
	}
	out := make([]member, 0, len(members)+2)
	for i, m := range members {
		switch {
		case i == at:
			if len(required) > 0 && !hasRequired {
				out = append(out, member{key: "dependentRequired", raw: writeObject(required)})
			}
			if len(schemas) > 0 && !hasSchemas {
				out = append(out, member{key: "dependentSchemas", raw: writeObject(schemas)})
			}
			if len(rest) > 0 {
				out = append(out, member{key: "dependencies", raw: writeObject(rest)})
			}
		case m.key == "dependentRequired" && required != nil:
			out = append(out, member{key: m.key, raw: writeObject(required)})
		case m.key == "dependentSchemas" && schemas != nil:
			out = append(out, member{key: m.key, raw: writeObject(schemas)})
		default:
			out = append(out, m)
		}
	}
	return out, true
}

// mergeable returns the members of the object keyword key of members
// holds (its last value, as JSON readers keep), and whether members has
// it; nil members when it is there but not an object.
func mergeable(members []member, key string) ([]member, bool) {
	v, ok := lastValue(members, key)
	if !ok {
		return nil, false
	}
	if !isJSONObject(v) {
		return nil, true
	}
	return lastMembers(v), true
}

// lastMembers returns the members of the JSON object obj, a repeated
// name once, with its last value (the one JSON readers keep), at its
// first place.
func lastMembers(obj []byte) []member {
	all := scanMembers(obj)
	out := make([]member, 0, len(all))
	for _, m := range all {
		if j := lastIndex(out, m.key); j >= 0 {
			out[j].raw = m.raw
		} else {
			out = append(out, m)
		}
	}
	return out
}

// lastOfEach returns members without the earlier members of a repeated
// key, and whether there were any.
func lastOfEach(members []member) ([]member, bool) {
	isLast := func(i int) bool { return lastIndex(members[i+1:], members[i].key) < 0 }
	if len(members) > 16 {
		last := make(map[string]int, len(members))
		for i, m := range members {
			last[m.key] = i
		}
		if len(last) == len(members) {
			return members, false
		}
		isLast = func(i int) bool { return last[members[i].key] == i }
	}
	var out []member
	for i, m := range members {
		switch {
		case out != nil && isLast(i):
			out = append(out, m)
		case out == nil && !isLast(i):
			// The first repeated key: most objects have none, and
			// allocate nothing.
			out = append(make([]member, 0, len(members)), members[:i]...)
		}
	}
	if out == nil {
		return members, false
	}
	return out, true
}

func lastIndex(members []member, key string) int {
	for i := len(members) - 1; i >= 0; i-- {
		if members[i].key == key {
			return i
		}
	}
	return -1
}

func lastValue(members []member, key string) (json.RawMessage, bool) {
	if i := lastIndex(members, key); i >= 0 {
		return members[i].raw, true
	}
	return nil, false
}

// unionStrings returns the JSON string arrays a and b as one, each
// string once (2020-12's dependentRequired lists are unique), in the
// order they first appear; false when either is not a string array.
func unionStrings(a, b json.RawMessage) (json.RawMessage, bool) {
	var x, y []string
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return nil, false
	}
	out := make([]string, 0, len(x)+len(y))
	for _, s := range append(x, y...) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	raw, err := json.Marshal(out)
	return raw, err == nil
}

// refSibling reports whether members hold a $ref with a string value (a
// property named "$ref" is under properties, never here) and other
// keywords.
func refSibling(members []member) bool {
	if len(members) < 2 {
		return false
	}
	for _, m := range members {
		if m.key == "$ref" && isJSONString(m.raw) {
			return true
		}
	}
	return false
}

// mixedDialects reports whether a schema below root names by its own
// $schema another draft than root's: santhosh reads such an embedded
// resource in its own draft, and the conversion, which reads every
// keyword in root's, would change what it asks ({"items":[…]} under a
// draft-07 resource in a 2020-12 root is a tuple there). Such a schema is
// returned as it is, as no generator writes it.
func mixedDialects(root []byte, dialect int) bool {
	// Most schemas name a draft once, at the root, or not at all.
	named := bytes.Count(root, []byte(`"$schema"`))
	if _, ok := memberValue(root, "$schema"); ok {
		named--
	}
	if named <= 0 && !bytes.Contains(root, []byte(`\u`)) {
		return false
	}
	mixed := false
	editSchema(root, func(members []member) ([]member, bool) {
		for _, m := range members {
			var uri string
			if m.key == "$schema" && json.Unmarshal(m.raw, &uri) == nil && dialectNamed(uri) != dialect {
				mixed = true
			}
		}
		return members, false
	})
	return mixed
}

// recursionConvertible reports whether the 2019-09 schema root's
// $recursiveRef and $recursiveAnchor, if any, can be written without
// them: every $recursiveRef is "#" with no $ref beside it, and no $id
// below the root starts another resource. Then the copy, read alone, has
// one resource, and a $recursiveRef reaches its root whichever
// $recursiveAnchor is set: $ref "#".
func recursionConvertible(root []byte) bool {
	ids, ok := 0, true
	editSchema(root, func(members []member) ([]member, bool) {
		hasRef, hasRecursive := false, false
		for _, m := range members {
			switch m.key {
			case "$id":
				ids++
			case "$ref":
				hasRef = true
			case "$recursiveRef":
				hasRecursive = true
				var ref string
				if json.Unmarshal(m.raw, &ref) != nil || ref != "#" {
					ok = false
				}
			}
		}
		if hasRef && hasRecursive {
			ok = false
		}
		return members, false
	})
	for _, m := range scanMembers(root) {
		if m.key == "$id" {
			ids--
		}
	}
	return ok && ids == 0
}

// rewriteRef returns the reference raw (a JSON string) as it reads in the
// 2020-12 copy, and whether that differs.
func (d *draftConverter) rewriteRef(raw json.RawMessage) (json.RawMessage, bool) {
	var ref string
	if err := json.Unmarshal(raw, &ref); err != nil || !strings.HasPrefix(ref, "#") {
		return raw, false
	}
	frag, err := url.PathUnescape(ref[1:])
	if err != nil {
		return raw, false
	}
	if frag != "" && frag[0] != '/' {
		if to, ok := d.anchors[frag]; ok && to != frag {
			return []byte(mustQuote("#" + to)), true
		}
		return raw, false
	}
	if frag == "" {
		return raw, false
	}
	tokens := splitPointer(frag)
	if !slices.ContainsFunc(tokens, renamedKeyword) {
		// Nothing on the way is renamed: most references ("#/$defs/x")
		// are read without walking the document.
		return raw, false
	}
	out, changed := d.rewritePointer(tokens)
	if !changed {
		return raw, false
	}
	return []byte(mustQuote("#" + joinPointer(out))), true
}

// renamedKeyword reports whether a pointer token may be a keyword the
// conversion renames.
func renamedKeyword(token string) bool {
	return token == "definitions" || token == "items" || token == "additionalItems" || token == "dependencies"
}

// rewritePointer follows tokens (a JSON pointer from the root) through
// the schema as given and returns them as they read once converted.
func (d *draftConverter) rewritePointer(tokens []string) ([]string, bool) {
	out := slices.Clone(tokens)
	changed := false
	cur := d.root
	for i := 0; i < len(tokens); {
		if !isJSONObject(cur) {
			break
		}
		members := d.index().members(cur)
		get := func(key string) (json.RawMessage, bool) {
			for j := len(members) - 1; j >= 0; j-- {
				if members[j].key == key {
					return members[j].raw, true
				}
			}
			return nil, false
		}
		k := tokens[i]
		v, ok := get(k)
		if !ok {
			break
		}
		switch {
		case k == "definitions" && isJSONObject(v):
			out[i], changed = "$defs", true
			if i+1 == len(tokens) {
				return out, changed
			}
			if defs, ok := get("$defs"); ok && isJSONObject(defs) {
				if to, ok := defsRenames(defs, v)[tokens[i+1]]; ok {
					out[i+1] = to
				}
			}
			cur, _ = d.index().value(v, tokens[i+1])
			i += 2
		case k == "items" && isJSONArray(v):
			out[i], changed = "prefixItems", true
			cur, _ = elementAt(v, tokens, i+1)
			i += 2
		case k == "dependencies" && isJSONObject(v) && i+1 < len(tokens):
			dep, ok := d.index().value(v, tokens[i+1])
			if !ok || isJSONArray(dep) {
				// A property list is data; nothing further is renamed.
				return out, changed
			}
			if d.dependencyMoves(members, tokens[i+1]) {
				out[i], changed = "dependentSchemas", true
			}
			cur = dep
			i += 2
		case k == "additionalItems":
			if items, ok := get("items"); ok && isJSONArray(items) {
				out[i], changed = "items", true
			}
			cur = v
			i++
		case subschemaKeywords[k]:
			cur = v
			i++
		case subschemaListKeywords[k]:
			cur, _ = elementAt(v, tokens, i+1)
			i += 2
		case subschemaMapKeywords[k] && i+1 < len(tokens):
			cur, _ = d.index().value(v, tokens[i+1])
			i += 2
		default:
			// Into data (enum, const, …) or an unknown keyword: nothing
			// further is renamed.
			return out, changed
		}
	}
	return out, changed
}

// index returns root's member cache, made on first use.
func (d *draftConverter) index() *docIndex {
	if d.doc == nil {
		d.doc = &docIndex{root: d.root}
	}
	return d.doc
}

// docIndex caches the members of the objects of one document by where
// they start. Every reference is walked from the root: scanning the
// root's members again for each took 150 ms for a 120 KB draft-07 schema
// of 200 referenced definitions.
type docIndex struct {
	root []byte
	objs map[int][]member
}

// members returns the members of the JSON object obj, cached when obj
// lies in the document.
func (x *docIndex) members(obj []byte) []member {
	off := cap(x.root) - cap(obj)
	if len(obj) == 0 || off < 0 || off >= len(x.root) || &x.root[off] != &obj[0] {
		return scanMembers(obj)
	}
	if m, ok := x.objs[off]; ok {
		return m
	}
	if x.objs == nil {
		x.objs = map[int][]member{}
	}
	m := scanMembers(obj)
	x.objs[off] = m
	return m
}

// value is memberValue through the cache.
func (x *docIndex) value(obj json.RawMessage, key string) (json.RawMessage, bool) {
	if !isJSONObject(obj) {
		return nil, false
	}
	if i := lastIndex(x.members(obj), key); i >= 0 {
		return x.members(obj)[i].raw, true
	}
	return nil, false
}

// dependencyMoves reports whether splitDependencies moves the schema
// dependency name of the schema object members into dependentSchemas:
// unless the dependentSchemas beside it (kept in the copy) has that name
// or is not an object.
func (d *draftConverter) dependencyMoves(members []member, name string) bool {
	if d.refs.whole["dependencies"] {
		return false
	}
	schemas, ok := lastValue(members, "dependentSchemas")
	if !ok || d.ignoredByDialect("dependentSchemas", members) {
		return true
	}
	_, taken := memberValue(schemas, name)
	return isJSONObject(schemas) && !taken
}

func elementAt(arr json.RawMessage, tokens []string, i int) (json.RawMessage, bool) {
	if i >= len(tokens) || !isJSONArray(arr) {
		return nil, false
	}
	n, err := strconv.Atoi(tokens[i])
	elems := scanElements(arr)
	if err != nil || n < 0 || n >= len(elems) {
		return nil, false
	}
	return elems[n], true
}

func memberValue(obj json.RawMessage, key string) (json.RawMessage, bool) {
	if !isJSONObject(obj) {
		return nil, false
	}
	members := scanMembers(obj)
	for j := len(members) - 1; j >= 0; j-- {
		if members[j].key == key {
			return members[j].raw, true
		}
	}
	return nil, false
}

// defsRenames maps each name of definitions to the name it takes in the
// $defs defs it is merged into: its own, or name_N when defs has it.
func defsRenames(defs, definitions json.RawMessage) map[string]string {
	own, taken := map[string]bool{}, map[string]bool{}
	for _, m := range scanMembers(defs) {
		own[m.key], taken[m.key] = true, true
	}
	names := scanMembers(definitions)
	for _, m := range names {
		taken[m.key] = true
	}
	out := make(map[string]string, len(names))
	for _, m := range names {
		if _, done := out[m.key]; done {
			continue
		}
		if !own[m.key] {
			out[m.key] = m.key
			continue
		}
		for n := 2; ; n++ {
			if name := m.key + "_" + strconv.Itoa(n); !taken[name] {
				out[m.key], taken[name] = name, true
				break
			}
		}
	}
	return out
}

// mergeDefs returns the $defs object defs with the members of definitions
// added under the names defsRenames gives them.
func mergeDefs(defs, definitions json.RawMessage) json.RawMessage {
	renames := defsRenames(defs, definitions)
	members := scanMembers(defs)
	// The last of a repeated name is the one JSON readers keep.
	added := scanMembers(definitions)
	for i, m := range added {
		last := true
		for _, later := range added[i+1:] {
			if later.key == m.key {
				last = false
			}
		}
		if last {
			members = append(members, member{key: renames[m.key], raw: m.raw})
		}
	}
	return writeObject(members)
}

// anchorPattern is the form 2020-12 gives an $anchor.
var anchorPattern = regexp.MustCompile(`^[A-Za-z_][-A-Za-z0-9._]*$`)

// anchorNames maps every plain-name fragment an id of root defines (drafts
// 04–07) to the $anchor it becomes: itself when 2020-12 takes it as one,
// else its characters outside the form replaced by "_" and, on a clash, a
// "_N" suffix.
func anchorNames(root []byte, dialect int) map[string]string {
	var frags []string
	editSchema(root, func(members []member) ([]member, bool) {
		for _, m := range members {
			// Draft-04 names a schema by id, and ignores a $id (the
			// copy drops it).
			if m.key != "$id" && m.key != "id" || (m.key == "id") != (dialect == draft04) {
				continue
			}
			var id string
			if json.Unmarshal(m.raw, &id) != nil {
				continue
			}
			if _, frag, ok := strings.Cut(id, "#"); ok && frag != "" {
				frags = append(frags, frag)
			}
		}
		return members, false
	})
	if len(frags) == 0 {
		return nil
	}
	slices.Sort(frags)
	frags = slices.Compact(frags)
	out := make(map[string]string, len(frags))
	taken := map[string]bool{}
	for _, f := range frags {
		if anchorPattern.MatchString(f) {
			out[f], taken[f] = f, true
		}
	}
	for _, f := range frags {
		if _, ok := out[f]; ok {
			continue
		}
		b := []byte(f)
		for i, c := range b {
			if !(c == '_' || c == '-' || c == '.' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
				b[i] = '_'
			}
		}
		if c := b[0]; !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			b = append([]byte{'_'}, b...)
		}
		name := string(b)
		for n := 2; taken[name]; n++ {
			name = string(b) + "_" + strconv.Itoa(n)
		}
		out[f], taken[name] = name, true
	}
	return out
}

// resolvePointer returns the value the local reference ref ("#", "#/…")
// points at in root, and whether there is one. Anchors ("#name") are not
// followed.
func resolvePointer(root []byte, ref string) (json.RawMessage, bool) {
	if !strings.HasPrefix(ref, "#") {
		return nil, false
	}
	frag, err := url.PathUnescape(ref[1:])
	if err != nil {
		return nil, false
	}
	if frag == "" {
		return root, true
	}
	if frag[0] != '/' {
		return nil, false
	}
	cur := json.RawMessage(root)
	tokens := splitPointer(frag)
	for i, tok := range tokens {
		var ok bool
		switch {
		case isJSONObject(cur):
			cur, ok = memberValue(cur, tok)
		case isJSONArray(cur):
			cur, ok = elementAt(cur, tokens, i)
		}
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

// splitPointer returns the unescaped tokens of a JSON pointer ("/a/b~1c").
func splitPointer(p string) []string {
	tokens := strings.Split(p[1:], "/")
	for i, t := range tokens {
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return tokens
}

// joinPointer writes tokens as a JSON pointer in a URI fragment.
func joinPointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")))
	}
	return b.String()
}

func isJSONArray(raw json.RawMessage) bool {
	return len(raw) > 0 && raw[0] == '['
}

func isJSONString(raw json.RawMessage) bool {
	return len(raw) > 0 && raw[0] == '"'
}
