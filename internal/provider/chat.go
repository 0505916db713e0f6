package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
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
func (r retryingChat) Complete(ctx context.Context, req ChatRequest) (ChatAnswer, error) {
	return Retry(ctx, r.policy, func(ctx context.Context) (ChatAnswer, error) {
		return r.next.Complete(ctx, req)
	})
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
// so local references keep resolving. The text is kept byte for byte
// where it is not changed: property order steers the order in which
// models write the answer. A schema that is not a JSON object gives
// ErrInvalidSchema.
func ObjectSchema(schema string) (out json.RawMessage, decoded map[string]any, wrapped bool, err error) {
	members, err := topLevel(schema)
	if err != nil {
		return nil, nil, false, ErrInvalidSchema
	}
	if err := json.Unmarshal([]byte(schema), &decoded); err != nil {
		return nil, nil, false, ErrInvalidSchema
	}
	if decoded["type"] == "object" {
		return json.RawMessage(schema), decoded, false, nil
	}
	if objectLike(decoded) {
		open := strings.IndexByte(schema, '{') + 1 // topLevel read an object, so there is one
		decoded["type"] = "object"
		return json.RawMessage(schema[:open] + `"type":"object",` + schema[open:]), decoded, false, nil
	}
	var inner, root bytes.Buffer
	inner.WriteByte('{')
	root.WriteString(`{"type":"object","properties":{"` + WrappedKey + `":`)
	var hoisted []member
	for _, m := range members {
		switch m.key {
		case "$defs", "definitions", "$schema":
			hoisted = append(hoisted, m)
			continue
		}
		if inner.Len() > 1 {
			inner.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		inner.Write(k)
		inner.WriteByte(':')
		inner.Write(m.raw)
	}
	inner.WriteByte('}')
	root.Write(inner.Bytes())
	root.WriteString(`},"required":["` + WrappedKey + `"],"additionalProperties":false`)
	for _, m := range hoisted {
		k, _ := json.Marshal(m.key)
		root.WriteByte(',')
		root.Write(k)
		root.WriteByte(':')
		root.Write(m.raw)
	}
	root.WriteByte('}')
	out = json.RawMessage(root.Bytes())
	decoded = nil
	if err := json.Unmarshal(out, &decoded); err != nil {
		return nil, nil, false, ErrInvalidSchema
	}
	return out, decoded, true, nil
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
// neither is left for schema validation to reject.
func UnwrapAnswer(content string) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(content), &m); err != nil || len(m) != 1 {
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
