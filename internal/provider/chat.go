package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/docjobs/docjobs/internal/fence"
)

// ChatRequest is one model-stage question: a system message, a user
// message and, optionally, the JSON Schema the answer must follow.
type ChatRequest struct {
	System string
	User   string
	// Schema is raw JSON Schema text; "" asks for a free-text answer.
	// Each adapter sends it in its vendor's native form (response_format,
	// a forced tool, responseJsonSchema).
	Schema string
	// MaxTokens bounds the answer; 0 leaves the vendor's default (or, for
	// vendors that require a bound, the adapter's).
	MaxTokens int
}

// ChatAnswer is a model's complete answer to a ChatRequest. An answer cut
// off by the token limit is never a successful ChatAnswer: it is an *Error
// of CategoryTruncated. A failed call's ChatAnswer still carries what the
// call left (see FailedAnswer), for the row's debug fields and usage;
// Content is then empty.
type ChatAnswer struct {
	// Content is the answer text; with a schema, the JSON value (for
	// Anthropic the forced tool's input, as compact JSON).
	Content string
	// FinishReason is the vendor's own word for why the answer ended
	// ("stop", "end_turn", "tool_use", "STOP"), for the row's debug data.
	FinishReason string
	// InputTokens and OutputTokens are the vendor's usage report (0 when
	// it sent none); output includes reasoning tokens where billed.
	InputTokens, OutputTokens int64
	// Model is the model the answer is attributed to: the configured one.
	Model string
	// Request and RawData are the exchange for the row's debug fields:
	// never a key, base64 payloads elided.
	Request string
	RawData string
}

// FailedAnswer is what a chat call that failed after sending keeps for
// its row: the request, which is the user's own data, and Model always;
// the vendor's body only when it answered 2xx (an answer cut off by the
// token limit, refused, or without a usable answer), which is billed and
// is what a user needs to pick a budget or see what the model did. An
// error body (4xx, 5xx, a redirect) is left out, as Error leaves it out:
// vendors echo the input and parts of the key in their error text, and
// redaction only catches the whole key. Both are redacted as a successful
// call's are. The adapter adds the usage it could read from a 2xx body.
// ex may be nil (nothing was sent).
func (e *Exchange) FailedAnswer(model, key string) ChatAnswer {
	a := ChatAnswer{Model: model}
	if e == nil || e.Calls() == 0 {
		return a
	}
	a.Request = e.Request(key)
	if e.Status()/100 == 2 {
		a.RawData = e.Response(key)
	}
	return a
}

// Chat answers model-stage requests through one vendor with one model and
// one key.
type Chat interface {
	Complete(ctx context.Context, req ChatRequest) (ChatAnswer, error)
}

// WithChatRetry returns chat with its transient failures retried under p.
func WithChatRetry(chat Chat, p RetryPolicy) Chat {
	return retryingChat{next: chat, policy: p}
}

type retryingChat struct {
	next   Chat
	policy RetryPolicy
}

// Complete returns the last call's answer with its error when every call
// failed: what a failed call left (FailedAnswer) is the row's record of it.
// Its usage is every call's, though: a try that was answered 2xx and
// retried (an empty answer, one without choices, Gemini's OTHER) was
// billed as the last one was, and a row that showed only the last call's
// tokens hid the others (two calls for an answer after an empty one
// counted as one). Calls that were not answered report no usage, so the
// sum is what the vendor billed for the row's question.
func (r retryingChat) Complete(ctx context.Context, req ChatRequest) (ChatAnswer, error) {
	var in, out int64
	a, err := Retry(ctx, r.policy, func(ctx context.Context) (ChatAnswer, error) {
		a, err := r.next.Complete(ctx, req)
		in, out = AddTokens(in, a.InputTokens), AddTokens(out, a.OutputTokens)
		return a, err
	})
	a.InputTokens, a.OutputTokens = in, out
	return a, err
}

type accountKey struct{}

// WithAccount returns ctx naming the account a provider call is made for.
// The slot table serves waiting calls round-robin by account, so one
// account's queue cannot starve another's call.
func WithAccount(ctx context.Context, accountID string) context.Context {
	return context.WithValue(ctx, accountKey{}, accountID)
}

// AccountOf returns the account set with WithAccount; "" when none was.
func AccountOf(ctx context.Context) string {
	id, _ := ctx.Value(accountKey{}).(string)
	return id
}

// Truncated is the error of an answer cut off by the token limit; reason
// is the vendor's finish reason, for logs.
func Truncated(status int, reason string) *Error {
	return &Error{Category: CategoryTruncated, Status: status,
		Err: fmt.Errorf("finish reason %s: the answer hit the token limit", Identifier(reason))}
}

// ErrInvalidSchema is the error of a ChatRequest whose Schema is not a JSON
// object, before any call. It is not a provider *Error: the job's schema
// is wrong, not the vendor, so the row's error names the job's field
// (create refuses such schemas; a job stored before that still has one).
var ErrInvalidSchema = errors.New("responseSchema: must be a JSON object")

// WrappedKey is the property that holds the answer when a schema whose
// root is not an object is wrapped by ObjectSchema.
const WrappedKey = "value"

// ObjectSchema prepares schema (raw JSON Schema text) for vendors that
// only take an object at the root (OpenAI strict outputs and JSON mode,
// Mistral, Anthropic tool inputs). An object schema is returned as it is.
// A schema that is an object in all but the type keyword (objectLike) gets
// "type":"object" as its first member: asking for an object narrows
// nothing the user meant, and wrapping it would make its own "value"
// property ambiguous with the wrapper's. Anything else is wrapped in
// {"type":"object","properties":{"value":…},"required":["value"],
// "additionalProperties":false} and wrapped is true: UnwrapAnswer then
// takes the value back out of the answer. $defs move to the wrapper's root
// so local references keep resolving; a schema that refers to its own root
// ("#", "#/items/…") is moved into $defs instead (see wrapSchema). The
// text is kept byte for byte where it is not changed: property order
// steers the order in which models write the answer. A schema that is not
// a JSON object gives ErrInvalidSchema.
func ObjectSchema(schema string) (out json.RawMessage, decoded map[string]any, wrapped bool, err error) {
	return objectSchema(schema, false)
}

// ToolInputSchema is ObjectSchema for Anthropic's tool input_schema, which
// also refuses an object root that has anyOf, oneOf or allOf ("input_schema
// does not support oneOf, allOf, or anyOf at the top level"): such a root
// is wrapped too. OpenAI's strict mode refuses a root anyOf as well, but
// there the schema goes in JSON mode instead (StrictSchema), unwrapped.
func ToolInputSchema(schema string) (out json.RawMessage, decoded map[string]any, wrapped bool, err error) {
	return objectSchema(schema, true)
}

// rootCombinators are the keywords Anthropic refuses at the root of a tool
// input schema.
var rootCombinators = []string{"anyOf", "oneOf", "allOf"}

func objectSchema(schema string, wrapCombinators bool) (out json.RawMessage, decoded map[string]any, wrapped bool, err error) {
	members, err := topLevel(schema)
	if err != nil {
		return nil, nil, false, ErrInvalidSchema
	}
	if err := json.Unmarshal([]byte(schema), &decoded); err != nil {
		return nil, nil, false, ErrInvalidSchema
	}
	if decoded["type"] == "object" && !(wrapCombinators && hasAny(decoded, rootCombinators)) {
		return json.RawMessage(schema), decoded, false, nil
	}
	if objectLike(decoded) {
		open := strings.IndexByte(schema, '{') + 1 // topLevel read an object, so there is one
		decoded["type"] = "object"
		return json.RawMessage(schema[:open] + `"type":"object",` + schema[open:]), decoded, false, nil
	}
	out = wrapSchema(schema, members)
	decoded = nil
	if err := json.Unmarshal(out, &decoded); err != nil {
		return nil, nil, false, ErrInvalidSchema
	}
	return out, decoded, true, nil
}

// wrapSchema puts the schema whose top-level members are members under the
// wrapper's "value" property, with $defs, definitions, $schema and the
// root's identifier ($id, draft-04's id) hoisted to the wrapper's root.
// An $id left inside "value" would make it a resource of its own, against
// which "#/$defs/…" resolves to a place that no longer exists once $defs
// has moved. A reference to the schema's own root ("#", a
// recursive list's items) would point at the wrapper once wrapped (strict
// servers then force every nested level into {"value":…}, which the user's
// schema refuses), and one into it ("#/items/…") would point nowhere. Such
// a schema goes into $defs under a free name (rootDef) with those
// references rewritten to it, and "value" refers to it: $defs references
// are the form every vendor documents for recursion.
func wrapSchema(schema string, members []member) json.RawMessage {
	var hoisted []member
	inner := make([]member, 0, len(members))
	var defs *member
	for i, m := range members {
		switch m.key {
		case "$defs":
			defs = &members[i]
			fallthrough
		case "definitions", "$schema", "$id", "id":
			hoisted = append(hoisted, m)
			continue
		}
		inner = append(inner, m)
	}
	innerText := writeMembers(inner)
	name := rootDef(defs)
	prefix := "#/$defs/" + name
	if rebased, ok := rebaseRootRefs(json.RawMessage(schema), prefix); ok {
		// Hoisted $defs may refer to the root too: rebase the whole
		// document, then split it again.
		members, _ = topLevel(string(rebased))
		hoisted, inner = hoisted[:0], inner[:0]
		var defsRaw json.RawMessage
		for _, m := range members {
			switch m.key {
			case "$defs":
				defsRaw = m.raw
			case "definitions", "$schema", "$id", "id":
				hoisted = append(hoisted, m)
			default:
				inner = append(inner, m)
			}
		}
		defsText := `{` + mustQuote(name) + `:` + string(writeMembers(inner)) + `}`
		if defsRaw != nil {
			defsText = addMember(defsRaw, name, writeMembers(inner))
		}
		hoisted = append(hoisted, member{key: "$defs", raw: json.RawMessage(defsText)})
		innerText = []byte(`{"$ref":` + mustQuote(prefix) + `}`)
	}
	var root bytes.Buffer
	root.WriteString(`{"type":"object","properties":{"` + WrappedKey + `":`)
	root.Write(innerText)
	root.WriteString(`},"required":["` + WrappedKey + `"],"additionalProperties":false`)
	for _, m := range hoisted {
		root.WriteByte(',')
		root.WriteString(mustQuote(m.key))
		root.WriteByte(':')
		root.Write(m.raw)
	}
	root.WriteByte('}')
	return root.Bytes()
}

// rootDef is the $defs name the wrapped root takes when it must move
// there: "root", or "root_N" when the schema's own $defs has that name.
func rootDef(defs *member) string {
	var names map[string]json.RawMessage
	if defs != nil {
		_ = json.Unmarshal(defs.raw, &names)
	}
	name := "root"
	for i := 2; ; i++ {
		if _, taken := names[name]; !taken {
			return name
		}
		name = "root_" + strconv.Itoa(i)
	}
}

// addMember returns the JSON object obj with name: value as its last
// member; obj's own members are kept byte for byte.
func addMember(obj json.RawMessage, name string, value []byte) string {
	t := strings.TrimSpace(string(obj))
	body := strings.TrimSpace(t[1 : len(t)-1])
	if body == "" {
		return "{" + mustQuote(name) + ":" + string(value) + "}"
	}
	return "{" + body + "," + mustQuote(name) + ":" + string(value) + "}"
}

// writeMembers writes members as a JSON object, their values byte for
// byte.
func writeMembers(members []member) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(mustQuote(m.key))
		b.WriteByte(':')
		b.Write(m.raw)
	}
	b.WriteByte('}')
	return b.Bytes()
}

func mustQuote(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

func hasAny(m map[string]any, keys []string) bool {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// objectKeywords only constrain objects; a root that uses one and says
// nothing else about its type describes an object.
var objectKeywords = []string{
	"properties", "required", "additionalProperties", "patternProperties", "propertyNames",
	"minProperties", "maxProperties", "dependentRequired", "dependentSchemas", "unevaluatedProperties",
}

// otherShapes are root keywords through which a schema may describe
// something other than an object: its type is then not the caller's to
// guess, and the schema is wrapped.
var otherShapes = []string{
	"type", "$ref", "$dynamicRef", "$recursiveRef", "anyOf", "oneOf", "allOf", "not", "if", "then", "else", "enum", "const",
}

// objectLike reports whether schema is an object schema in all but the
// type keyword: {"properties":{…},"required":[…]}, which JSON Schema
// reads as "if it is an object, then …" and everyone writing it means as
// an object.
func objectLike(schema map[string]any) bool {
	for _, k := range otherShapes {
		if _, ok := schema[k]; ok {
			return false
		}
	}
	for _, k := range objectKeywords {
		if _, ok := schema[k]; ok {
			return true
		}
	}
	return false
}

type member struct {
	key string
	raw json.RawMessage
}

// topLevel returns the members of a JSON object in document order.
func topLevel(text string) ([]member, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, ErrInvalidSchema
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		out = append(out, member{key, raw})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, ErrInvalidSchema
	}
	return out, nil
}

// UnwrapAnswer returns the "value" member of a JSON object answer given to
// a schema ObjectSchema wrapped, as compact JSON, when that is the object's
// only member. Anything else is returned unchanged: a server that does not
// enforce the wrapper (JSON mode, Mistral without strict, Anthropic tool
// inputs, self-hosted models) may answer the caller's own schema, and a
// "value" member among others is part of that answer; an answer that is
// neither is left for schema validation to reject. The answer is read
// through one code fence (fence.Strip, the rule the verdict, merge and
// vote read answers by): a server that does not constrain the answer may
// fence it, and the wrapper inside a fence is still the wrapper.
func UnwrapAnswer(content string) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(fence.Strip(content)), &m); err != nil || len(m) != 1 {
		return content
	}
	v, ok := m[WrappedKey]
	if !ok {
		return content
	}
	return CompactJSON(v)
}

// CompactJSON returns b without insignificant whitespace; b unchanged
// when it is not JSON.
func CompactJSON(b []byte) string {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return string(b)
	}
	return out.String()
}

// SchemaInstruction is appended to the system message when the schema
// cannot be enforced by the vendor (plain JSON mode): the model is shown
// the schema. The system message already asks for JSON alone (the model
// stage says so for every vendor), so this adds the schema, not a second
// request worded differently.
func SchemaInstruction(schema string) string {
	return "\n\nThe JSON Schema the answer must conform to:\n" + schema
}
