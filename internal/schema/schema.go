// Package schema guards the JSON Schemas callers send as responseSchema: it
// enforces the size, depth and node limits and the self-containment rule on
// the raw text before anything expensive runs, then compiles the schema with a
// loader that refuses every URL, so a schema can never make the service reach
// the network or the disk. It does no I/O of its own.
package schema

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Limits of the spec (Limits: responseSchema size, depth, nodes).
const (
	// MaxBytes bounds the schema text.
	MaxBytes = 128 << 10
	// MaxDepth bounds container nesting: a bare object or array is depth 1,
	// an object inside it depth 2, and so on. Scalars add no level.
	MaxDepth = 64
	// MaxNodes bounds the number of JSON values: every object, array and
	// scalar counts once; object keys are not values and do not count.
	MaxNodes = 10000
)

// Sentinel errors, one per rule, so callers and tests can branch on the rule
// that failed. Their text is what the caller reads after "responseSchema: ".
var (
	ErrTooLarge    = fmt.Errorf("larger than %d bytes (128 KiB)", MaxBytes)
	ErrTooDeep     = fmt.Errorf("deeper than %d levels", MaxDepth)
	ErrTooManyNode = fmt.Errorf("more than %d nodes", MaxNodes)
	ErrNotJSON     = errors.New("not valid JSON")
	ErrExternalRef = errors.New(`references must be internal (start with "#")`)
	ErrInvalid     = errors.New("not a valid JSON Schema")
	// ErrNotObject refuses a root that is not an object. The boolean
	// schemas true and false are valid JSON Schemas, but no vendor's
	// structured output takes one, so every model row would fail; true
	// means no constraint, which is leaving responseSchema out.
	ErrNotObject = errors.New("must be a JSON object (omit responseSchema for no constraint)")
)

// resourceURL names the schema inside the compiler. It is never fetched: the
// loader refuses everything, and the .invalid TLD cannot resolve anyway.
const resourceURL = "https://docjobs.invalid/responseSchema.json"

// notURL names the schema's negation, {"not": {"$ref": resourceURL}}, the
// root of a Conformance.
const notURL = "https://docjobs.invalid/not.json"

// maxCompileDetails bounds how many compiler complaints an error repeats.
const maxCompileDetails = 3

// Check reports whether schemaText is an acceptable responseSchema: within
// the limits, a JSON object, self-contained and a valid JSON Schema. The error says which
// rule failed and where.
func Check(schemaText string) error {
	_, err := Compile(schemaText)
	return err
}

// Compile checks schemaText like Check and returns the compiled schema for
// validating answers. Schemas without $schema are read as draft 2020-12.
func Compile(schemaText string) (*jsonschema.Schema, error) {
	return compile(schemaText, false)
}

// Conformance says whether a document conforms to a schema, and nothing
// more: it builds no violation. The validator builds an error for every
// violation of a document (about 300 bytes each, all of them however many
// a caller shows), so 4 MB of merged content with a violation per element
// took 646 MiB to judge (hunt-consensus, hunt-merge). Its one mode that
// builds none, used for keywords that only ask whether a subschema holds
// ("not", "if", …), is not exported; a Conformance validates the schema's
// negation, whose "not" runs the schema in that mode. It still visits
// every element of an array (the mode stops early in objects only), with a
// small empty error for each that fails, not a violation's.
type Conformance struct {
	not *jsonschema.Schema
}

// CompileConformance checks and compiles schemaText as Compile does.
func CompileConformance(schemaText string) (*Conformance, error) {
	not, err := compile(schemaText, true)
	if err != nil {
		return nil, err
	}
	return &Conformance{not: not}, nil
}

// Conforms is s.Validate(doc) == nil for the schema compiled, doc being a
// value as jsonschema.UnmarshalJSON gives it.
func (c *Conformance) Conforms(doc any) bool {
	return c.not.Validate(doc) != nil
}

// compile checks and compiles schemaText, or with negate its negation
// (the root of a Conformance).
func compile(schemaText string, negate bool) (*jsonschema.Schema, error) {
	doc, err := parse(schemaText)
	if err != nil {
		return nil, err
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, ErrNotObject
	}
	if err := checkRefs(doc, ""); err != nil {
		return nil, err
	}

	c := jsonschema.NewCompiler()
	// The default loader reads file:// URLs; nothing a caller sends may do that.
	c.UseLoader(refuseLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(resourceURL, doc); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalid, err)
	}
	sch, err := c.Compile(resourceURL)
	var load *jsonschema.LoadURLError
	if errors.As(err, &load) {
		// checkRefs lets through what only the compiler resolves: a $schema
		// naming a metaschema the library does not embed, or a "#" pointer
		// into data that holds a reference. Either way the schema needs a
		// document it does not contain, which is the self-containment rule,
		// not a malformed schema.
		return nil, fmt.Errorf("%w: %s", ErrExternalRef, outsideDetail(doc, load.URL))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalid, compileDetail(err))
	}
	if !negate {
		return sch, nil
	}
	// A resource of its own rather than {"not": schema} as one document:
	// the schema's "#…" references stay relative to its own root, and the
	// negation holds no anchor, so dynamic references resolve as before.
	if err := c.AddResource(notURL, map[string]any{"not": map[string]any{"$ref": resourceURL}}); err != nil {
		return nil, fmt.Errorf("negate the schema: %w", err)
	}
	not, err := c.Compile(notURL)
	if err != nil {
		return nil, fmt.Errorf("negate the schema: %w", err)
	}
	return not, nil
}

// outsideDetail names the keyword that asked for url and where it is, when
// the document spells url out; else just url.
func outsideDetail(doc any, url string) string {
	if k, at, ok := findURL(doc, url, ""); ok {
		return fmt.Sprintf("%s %q at %s", k, url, at)
	}
	return fmt.Sprintf("%q is outside the document", url)
}

// findURL finds the first reference or $schema keyword, in key order,
// whose value without its fragment is url.
func findURL(v any, url, ptr string) (keyword, at string, ok bool) {
	switch v := v.(type) {
	case []any:
		for i, e := range v {
			if k, at, ok := findURL(e, url, ptr+"/"+strconv.Itoa(i)); ok {
				return k, at, true
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			at := ptr + "/" + escapePointer(k)
			if s, isStr := v[k].(string); isStr && (refKeywords[k] || k == "$schema") {
				if base, _, _ := strings.Cut(s, "#"); base == url {
					return k, at, true
				}
			}
			if k, at, ok := findURL(v[k], url, at); ok {
				return k, at, true
			}
		}
	}
	return "", "", false
}

// parse enforces the size, depth and node limits on the token stream, so a
// hostile document is rejected before it is built in memory, then decodes it
// with numbers kept exact as the compiler expects.
func parse(text string) (any, error) {
	if len(text) > MaxBytes {
		return nil, ErrTooLarge
	}
	if err := scan(text); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNotJSON, err)
	}
	return doc, nil
}

// scan walks the tokens once, counting values and nesting, and stops at the
// first limit crossed.
func scan(text string) error {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()

	// Each open container; for objects, whether the next token is a key.
	type frame struct{ object, wantKey bool }
	var stack []frame
	nodes := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if nodes == 0 {
				return fmt.Errorf("%w: empty document", ErrNotJSON)
			}
			return fmt.Errorf("%w: unexpected end of document", ErrNotJSON)
		}
		if err != nil {
			return fmt.Errorf("%w: %s", ErrNotJSON, err)
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:n-1]
			} else {
				// The decoder guarantees a string key here.
				stack[n-1].wantKey = false
				continue
			}
		} else if d, ok := tok.(json.Delim); ok && (d == ']' || d == '}') {
			stack = stack[:len(stack)-1]
		} else {
			nodes++
			if nodes > MaxNodes {
				return ErrTooManyNode
			}
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].wantKey = true
			}
			if d, ok := tok.(json.Delim); ok {
				stack = append(stack, frame{object: d == '{', wantKey: d == '{'})
				if len(stack) > MaxDepth {
					return ErrTooDeep
				}
			}
		}
		if len(stack) == 0 {
			break // the top-level value is complete
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: data after the top-level value", ErrNotJSON)
	}
	return nil
}

// refKeywords hold references; a schema is self-contained when each of them
// points into the document itself.
var refKeywords = map[string]bool{"$ref": true, "$dynamicRef": true, "$recursiveRef": true}

// dataKeywords hold instance data, not subschemas: a "$ref" inside them is
// just a value.
var dataKeywords = map[string]bool{"const": true, "enum": true, "default": true, "examples": true}

// nameMapKeywords map caller-chosen names to subschemas: their keys are
// names, never keywords.
var nameMapKeywords = map[string]bool{
	"properties": true, "patternProperties": true, "$defs": true, "definitions": true,
	"dependentSchemas": true, "dependencies": true,
}

// checkRefs walks doc as a schema and rejects references that leave it.
func checkRefs(v any, ptr string) error {
	switch v := v.(type) {
	case []any:
		for i, e := range v {
			if err := checkRefs(e, ptr+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
	case map[string]any:
		for k, e := range v {
			at := ptr + "/" + escapePointer(k)
			switch {
			case refKeywords[k]:
				if s, ok := e.(string); ok && !strings.HasPrefix(s, "#") {
					return fmt.Errorf("%w: %s %q at %s", ErrExternalRef, k, s, at)
				}
			case dataKeywords[k]:
				continue
			case nameMapKeywords[k]:
				if m, ok := e.(map[string]any); ok {
					for name, sub := range m {
						if err := checkRefs(sub, at+"/"+escapePointer(name)); err != nil {
							return err
						}
					}
					continue
				}
			}
			if err := checkRefs(e, at); err != nil {
				return err
			}
		}
	}
	return nil
}

func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// refuseLoader is the compiler's only way out, and it stays shut.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, errors.New("loading schemas from outside the document is not allowed")
}

// compileDetail turns the compiler's report into one line without the
// internal resource URL: the leaf complaints of a metaschema failure, else
// the compiler's own message.
func compileDetail(err error) string {
	msg := err.Error()
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if errors.As(err, &sve) && errors.As(sve.Err, &ve) {
		leaves, total := sortedLeaves(ve, maxCompileDetails)
		if total > maxCompileDetails {
			leaves = append(leaves, fmt.Sprintf("and %d more", total-maxCompileDetails))
		}
		if len(leaves) > 0 {
			msg = strings.Join(leaves, "; ")
		}
	}
	msg = strings.ReplaceAll(msg, resourceURL, "")
	return strings.Join(strings.Fields(msg), " ")
}

var printer = message.NewPrinter(language.English)

// leaf is one innermost validation error: where, under which keyword, what.
// Its message is written only for the leaves that are shown (see
// sortedLeaves): writing it is most of a violation's cost.
type leaf struct {
	at      []string // instance location, unescaped tokens
	keyword string
	kind    jsonschema.ErrorKind
	msg     string
}

func (l leaf) String() string {
	return "at /" + strings.Join(escapeAll(l.at), "/") + ": " + l.msg
}

// message writes l's message. The names of disallowed properties come in
// map order, so they are sorted first.
func (l *leaf) message() {
	if k, ok := l.kind.(*kind.AdditionalProperties); ok {
		slices.Sort(k.Properties)
	}
	l.msg = l.kind.LocalizedString(printer)
}

// byPlace orders leaves by instance path, then keyword.
func byPlace(a, b leaf) int {
	if c := slices.CompareFunc(a.at, b.at, compareToken); c != 0 {
		return c
	}
	return strings.Compare(a.keyword, b.keyword)
}

// sortedLeaves renders the first max innermost errors of ve in a stable
// order, by instance path, then keyword, then message, and counts them
// all. The validator builds Causes by ranging over Go maps (an object's
// properties), so their order, and with it which violations survive a cut
// to a few, would change from run to run for the same answer. Only the
// leaves that can be among the first max get a message: writing one costs
// about 13 KB of allocation and 15 µs, so an answer of 200 KB with a
// violation per element (100,000) took 1.5 s and 1.3 GB to show ten of
// them (hunt-consensus F1).
func sortedLeaves(ve *jsonschema.ValidationError, max int) (shown []string, total int) {
	var ls []leaf
	collectLeaves(ve, &ls)
	slices.SortStableFunc(ls, byPlace)
	// The message only breaks ties of place: the first max in full order
	// are among the leaves up to the end of the tie at max.
	n := min(max, len(ls))
	for n > 0 && n < len(ls) && byPlace(ls[n-1], ls[n]) == 0 {
		n++
	}
	head := ls[:n]
	for i := range head {
		head[i].message()
	}
	slices.SortStableFunc(head, func(a, b leaf) int {
		if c := byPlace(a, b); c != 0 {
			return c
		}
		return strings.Compare(a.msg, b.msg)
	})
	shown = make([]string, min(max, len(head)))
	for i := range shown {
		shown[i] = head[i].String()
	}
	return shown, len(ls)
}

// collectLeaves gathers the innermost errors: they say what is wrong, their
// parents only say that a combinator failed.
func collectLeaves(ve *jsonschema.ValidationError, out *[]leaf) {
	if len(ve.Causes) == 0 {
		*out = append(*out, leaf{
			at:      ve.InstanceLocation,
			keyword: strings.Join(ve.ErrorKind.KeywordPath(), "/"),
			kind:    ve.ErrorKind,
		})
		return
	}
	for _, c := range ve.Causes {
		collectLeaves(c, out)
	}
}

// compareToken orders two instance path tokens: array indices (all
// digits) numerically, so /items/2 comes before /items/10, and before any
// other token, which compare bytewise. Putting all digit tokens first keeps
// the order total (bytewise "10" < "1a" < "9" would otherwise cycle).
func compareToken(a, b string) int {
	da, db := allDigits(a), allDigits(b)
	switch {
	case da && db:
		// Without leading zeros, a longer number is larger; "02" and "2"
		// (object keys, not indices) still get a fixed order.
		if c := cmp.Compare(len(a), len(b)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	case da:
		return -1
	case db:
		return 1
	}
	return strings.Compare(a, b)
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func escapeAll(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		out[i] = escapePointer(t)
	}
	return out
}
