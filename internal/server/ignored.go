package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
	"github.com/docjobs/docjobs/internal/api"
)

// The REST decoder (protojson with DiscardUnknown) drops unknown fields and
// unrecognized enum strings without a word: that keeps older clients working
// and is what makes an unknown consensus.mode "silently ignored" (spec rule 5).
// This file finds what was dropped so the Docjobs-Warning header can name
// it, and refuses an unknown name of a field a create cannot do without
// (enumNamesRequired, enumNamesRequiredWith), which would otherwise be
// refused as missing.

// maxIgnored bounds the names reported for one request; a hostile body with
// thousands of unknown keys must not become a huge response header.
const maxIgnored = 32

// errNotObject is returned when a request body is JSON but not an object.
var errNotObject = errors.New("request body must be a JSON object")

// ignoredFields walks a JSON request body against the request message md and
// returns, in document order, every name protojson would drop: unknown fields
// by their path as sent (merge.dedupBy, prompts[2] is never one), enum
// strings the enum does not define (consensus.mode=CONSENSUS_MODE_SEVEN_RUNS,
// extractionMode=OCR_ALWAYS) and the numbers of enumsIgnored the enum does
// not define (consensus.mode=7).
// Only the first maxIgnored are returned; more reports how many were left out.
// It fails on malformed JSON, naming the offset, on a value of the wrong
// JSON type for its field, naming the field, and on a name the enum of a
// field of enumNamesRequired does not define, naming the field and the
// names it takes; so too for a field of enumNamesRequiredWith once the
// body gives the field that makes it required.
func ignoredFields(body []byte, md protoreflect.MessageDescriptor) (names []string, more int, err error) {
	w := &walker{body: body, dec: json.NewDecoder(bytes.NewReader(body)), listsGiven: map[protoreflect.FullName]bool{}}
	w.dec.UseNumber()
	tok, err := w.token()
	if err != nil {
		return nil, 0, err
	}
	if tok != json.Delim('{') {
		return nil, 0, errNotObject
	}
	if err := w.message(md, ""); err != nil {
		return nil, 0, err
	}
	if _, err := w.dec.Token(); !errors.Is(err, io.EOF) {
		return nil, 0, fmt.Errorf("invalid JSON at offset %d: unexpected data after the top-level object", w.dec.InputOffset())
	}
	// Only the whole body tells whether the field that makes one of these
	// required was given: "prompts" may come after "neural".
	for _, d := range w.droppedRequiredWith {
		if w.listsGiven[enumNamesRequiredWith[d.fd.FullName()]] {
			return nil, 0, fmt.Errorf("%s: %s", d.path, api.UnknownEnumName(d.fd.Enum(), d.given))
		}
	}
	return w.names, w.more, nil
}

type walker struct {
	body  []byte // what dec reads, to look at a string token as sent
	dec   *json.Decoder
	names []string
	more  int
	// listsGiven holds the list fields given with at least one element.
	listsGiven map[protoreflect.FullName]bool
	// droppedRequiredWith are the unknown names given to fields of
	// enumNamesRequiredWith, dropped and named until the body is read.
	droppedRequiredWith []droppedName
}

// droppedName is an enum name the enum of fd does not define, given at path.
type droppedName struct {
	fd          protoreflect.FieldDescriptor
	path, given string
}

func (w *walker) ignore(name string) {
	if len(w.names) < maxIgnored {
		w.names = append(w.names, name)
		return
	}
	w.more++
}

// token reads the next token, turning decoder errors into messages that say
// where the body went wrong.
func (w *walker) token() (json.Token, error) {
	start := w.dec.InputOffset()
	tok, err := w.dec.Token()
	switch {
	case err == nil:
		if _, ok := tok.(string); ok {
			raw := w.body[start:w.dec.InputOffset()]
			switch {
			case !utf8.Valid(raw):
				return nil, &stringError{offset: start, problem: "invalid UTF-8"}
			case loneSurrogate(raw):
				return nil, &stringError{offset: start, problem: "invalid UTF-16 surrogate"}
			}
		}
		return tok, nil
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return nil, errors.New("invalid JSON: unexpected end of body")
	}
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return nil, fmt.Errorf("invalid JSON at offset %d: %s", syn.Offset, syn.Error())
	}
	return nil, fmt.Errorf("invalid JSON at offset %d: %s", w.dec.InputOffset(), err.Error())
}

// stringError is a string token protojson refuses though encoding/json
// reads it: one holding a \u escape of half a UTF-16 surrogate pair
// ("\ud800" alone), or bytes that are not UTF-8. encoding/json turns both
// into U+FFFD; protojson refuses the body with a bare "unexpected EOF" or a
// "syntax error" at a line and column, which name no field. The callers
// that know the path name it (keyAt, valueAt).
type stringError struct {
	offset  int64
	problem string // "invalid UTF-8", "invalid UTF-16 surrogate"
}

func (e *stringError) Error() string {
	return fmt.Sprintf("invalid JSON at offset %d: %s in string", e.offset, e.problem)
}

// valueAt names path as the field whose value holds the string err
// reports, unless a deeper caller already did.
func valueAt(path string, err error) error {
	var se *stringError
	if errors.As(err, &se) {
		return fmt.Errorf("%s: %s in string", path, se.problem)
	}
	return err
}

// keyAt names the object at path as holding a member name err reports.
func keyAt(path string, err error) error {
	var se *stringError
	switch {
	case !errors.As(err, &se):
		return err
	case path == "":
		return fmt.Errorf("invalid JSON at offset %d: %s in a member name", se.offset, se.problem)
	}
	return fmt.Errorf("%s: %s in a member name", path, se.problem)
}

// loneSurrogate reports whether the JSON string in raw, which may start
// with the separators before its opening quote, has a \u escape of a UTF-16
// surrogate other than a high one followed at once by an escaped low one:
// what protojson refuses. raw is valid JSON: the decoder read it.
func loneSurrogate(raw []byte) bool {
	if bytes.IndexByte(raw, '\\') < 0 {
		return false
	}
	s := raw[bytes.IndexByte(raw, '"')+1:]
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		i++ // the escaped character; an escaped backslash is skipped whole
		r, ok := escapedRune(s, i)
		if !ok {
			continue
		}
		i += 4
		switch {
		case r < 0xd800 || r > 0xdfff:
		case r >= 0xdc00: // a low surrogate without its high one
			return true
		default:
			low, ok := rune(0), i+2 < len(s) && s[i+1] == '\\'
			if ok {
				low, ok = escapedRune(s, i+2)
			}
			if !ok || low < 0xdc00 || low > 0xdfff {
				return true
			}
			i += 6
		}
	}
	return false
}

// escapedRune reads the code unit of a \u escape whose 'u' is s[i].
func escapedRune(s []byte, i int) (rune, bool) {
	if i+5 > len(s) || s[i] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(s[i+1:i+5]), 16, 16)
	return rune(n), err == nil
}

// message walks the members of an object whose '{' was already read.
func (w *walker) message(md protoreflect.MessageDescriptor, path string) error {
	for w.dec.More() {
		tok, err := w.token()
		if err != nil {
			return keyAt(path, err)
		}
		key, _ := tok.(string) // the decoder guarantees object keys are strings
		p := join(path, key)
		fd := fieldByJSONKey(md, key)
		if fd == nil {
			w.ignore(p)
			if err := w.skip(); err != nil {
				return valueAt(p, err)
			}
			continue
		}
		if err := w.field(fd, p); err != nil {
			return valueAt(p, err)
		}
	}
	_, err := w.token() // '}'
	return err
}

// field walks the value of a known field.
func (w *walker) field(fd protoreflect.FieldDescriptor, path string) error {
	switch {
	case fd.IsMap():
		return w.mapValue(fd, path)
	case fd.IsList():
		return w.list(fd, path)
	default:
		return w.singular(fd, path)
	}
}

func (w *walker) list(fd protoreflect.FieldDescriptor, path string) error {
	tok, err := w.token()
	if err != nil {
		return err
	}
	if tok == nil { // null: the field stays unset
		return nil
	}
	if tok != json.Delim('[') {
		return typeError(path, "an array", tok)
	}
	for i := 0; w.dec.More(); i++ {
		if err := w.element(fd, path+"["+strconv.Itoa(i)+"]"); err != nil {
			return err
		}
		w.listsGiven[fd.FullName()] = true
	}
	_, err = w.token() // ']'
	return err
}

func (w *walker) mapValue(fd protoreflect.FieldDescriptor, path string) error {
	tok, err := w.token()
	if err != nil {
		return err
	}
	if tok == nil {
		return nil
	}
	if tok != json.Delim('{') {
		return typeError(path, "an object", tok)
	}
	for w.dec.More() {
		tok, err := w.token()
		if err != nil {
			return keyAt(path, err)
		}
		key, _ := tok.(string)
		if err := w.element(fd.MapValue(), mapEntry(path, key)); err != nil {
			return err
		}
	}
	_, err = w.token() // '}'
	return err
}

// element walks one list element or map value. Unlike a field, it cannot be
// null: protojson refuses [null] and {"k": null} except where null is a
// value (google.protobuf.Value, NullValue).
func (w *walker) element(fd protoreflect.FieldDescriptor, path string) error {
	tok, err := w.token()
	if err != nil {
		return valueAt(path, err)
	}
	if tok == nil && !nullable(fd) {
		return typeError(path, expected(fd), nil)
	}
	return w.value(fd, path, tok)
}

// singular walks the value of a singular field. null leaves the field
// unset.
func (w *walker) singular(fd protoreflect.FieldDescriptor, path string) error {
	tok, err := w.token()
	if err != nil {
		return err
	}
	return w.value(fd, path, tok)
}

// enumsIgnored are the enum fields where the service treats a number the
// enum does not define as unset rather than refusing it, and the warning
// header names it like an unknown name: consensus.mode (spec rule 5, see
// consensusMode in internal/api). Every other enum answers 400 "unknown
// value N" for such a number, naming the values it takes.
var enumsIgnored = map[protoreflect.FullName]bool{
	(&docjobsv1.ConsensusOptions{}).ProtoReflect().Descriptor().Fields().ByName("mode").FullName(): true,
}

// enumNamesRequired are the enum fields a create cannot do without, where
// an unknown name is refused naming the names meant and taken. Every other
// unknown name is dropped and named in the warning header, as DESIGN
// decides (unknown enum strings are ignored; spec rule 5 is the case of
// consensus.mode): dropped, a required field would only be refused as
// missing ("ocr.provider: required" for a PROVIDER_1 that was given,
// audit-readme F3), so saying what was given instead changes no outcome.
var enumNamesRequired = map[protoreflect.FullName]bool{
	(&docjobsv1.Ocr{}).ProtoReflect().Descriptor().Fields().ByName("provider").FullName(): true,
}

// enumNamesRequiredWith are the enum fields a create needs when a list
// field is given with an element, by that list: neural.type when prompts
// are given (validateNeural in internal/api). An unknown name is refused
// as in enumNamesRequired when the body gives the list, and dropped and
// named like any other when it does not; dropped, it was refused as
// "neural.type: required when prompts are given" (audit-api3 F5).
var enumNamesRequiredWith = map[protoreflect.FullName]protoreflect.FullName{
	(&docjobsv1.Neural{}).ProtoReflect().Descriptor().Fields().ByName("type").FullName(): (&docjobsv1.CreateJobRequest{}).ProtoReflect().Descriptor().Fields().ByName("prompts").FullName(),
}

// value walks one value of fd's kind whose first token is tok. A value of
// the wrong JSON type, or a number the field cannot hold, is an error naming
// the path, which protojson's own message (a line and column, the proto
// type) does not.
func (w *walker) value(fd protoreflect.FieldDescriptor, path string, tok json.Token) error {
	if tok == nil { // null
		return nil
	}
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if fd.Message().FullName().Parent() == "google.protobuf" {
			// Well-known types have their own JSON forms (a Timestamp is
			// a string, a Struct takes any keys); protojson checks them and
			// nothing in them is dropped.
			return w.finish(tok)
		}
		if tok != json.Delim('{') {
			return typeError(path, "an object", tok)
		}
		return w.message(fd.Message(), path)
	case protoreflect.EnumKind:
		switch v := tok.(type) {
		case json.Number:
			n, problem := readNumber(fd, tok)
			switch problem {
			case "":
			case outOfRange:
				return fmt.Errorf("%s: %s", path, outOfRange)
			default:
				return typeError(path, expected(fd), tok)
			}
			if enumsIgnored[fd.FullName()] && fd.Enum().Values().ByNumber(n.Enum()) == nil {
				w.ignore(path + "=" + strconv.FormatInt(int64(n.Enum()), 10))
			}
		case string:
			switch {
			case fd.Enum().FullName() == "google.protobuf.NullValue" || fd.Enum().Values().ByName(protoreflect.Name(v)) != nil:
			case enumNamesRequired[fd.FullName()]:
				return fmt.Errorf("%s: %s", path, api.UnknownEnumName(fd.Enum(), v))
			default:
				if _, ok := enumNamesRequiredWith[fd.FullName()]; ok {
					w.droppedRequiredWith = append(w.droppedRequiredWith, droppedName{fd: fd, path: path, given: v})
				}
				w.ignore(path + "=" + v)
			}
		default:
			return typeError(path, expected(fd), tok)
		}
	case protoreflect.StringKind, protoreflect.BytesKind:
		if _, ok := tok.(string); !ok {
			return typeError(path, "a string", tok)
		}
	case protoreflect.BoolKind:
		if _, ok := tok.(bool); !ok {
			return typeError(path, "true or false", tok)
		}
	default: // numbers; protojson also takes them as strings ("123", "NaN")
		if _, problem := readNumber(fd, tok); problem != "" {
			if problem == outOfRange {
				return fmt.Errorf("%s: %s", path, outOfRange)
			}
			return typeError(path, expected(fd), tok)
		}
	}
	return nil
}

// nullable reports whether null is a value of fd rather than its absence.
func nullable(fd protoreflect.FieldDescriptor) bool {
	switch {
	case fd.Kind() == protoreflect.EnumKind:
		return fd.Enum().FullName() == "google.protobuf.NullValue"
	case fd.Message() != nil:
		return fd.Message().FullName() == "google.protobuf.Value"
	}
	return false
}

// expected names the JSON a field of fd's kind takes, for typeError.
func expected(fd protoreflect.FieldDescriptor) string {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return "an object"
	case protoreflect.EnumKind:
		return "an enum value name"
	case protoreflect.StringKind, protoreflect.BytesKind:
		return "a string"
	case protoreflect.BoolKind:
		return "true or false"
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return "a number"
	}
	return "an integer"
}

// The problems readNumber reports; the text of outOfRange is the message,
// the other becomes a typeError.
const (
	outOfRange = "out of range"
	notANumber = "not a number"
)

// readNumber reads tok, a JSON number or a string holding one, as the value
// of fd, a number or enum field: protojson itself reads it, alone in a
// message of fd's type, so the walker accepts exactly what protojson
// accepts. A value it refuses is outOfRange when it is a number that is
// too large (or, for an integer field, a whole number that does not fit),
// else notANumber.
func readNumber(fd protoreflect.FieldDescriptor, tok json.Token) (protoreflect.Value, string) {
	var text string
	switch v := tok.(type) {
	case json.Number:
		text = string(v)
	case string:
		text = v
	default:
		return protoreflect.Value{}, notANumber
	}
	raw, err := json.Marshal(tok)
	if err != nil {
		return protoreflect.Value{}, notANumber
	}
	if fd.IsList() {
		raw = slices.Concat([]byte("["), raw, []byte("]"))
	}
	doc := slices.Concat([]byte(`{`+strconv.Quote(fd.JSONName())+`:`), raw, []byte("}"))
	m := dynamicpb.NewMessage(fd.ContainingMessage())
	if protojson.Unmarshal(doc, m) == nil {
		v := m.Get(fd)
		if fd.IsList() {
			v = v.List().Get(0)
		}
		return v, ""
	}
	f, err := strconv.ParseFloat(text, 64)
	integer := fd.Kind() != protoreflect.FloatKind && fd.Kind() != protoreflect.DoubleKind
	switch {
	case errors.Is(err, strconv.ErrRange):
		return protoreflect.Value{}, outOfRange
	case err == nil && (!integer || math.Abs(f) >= 1 && f == math.Trunc(f)):
		return protoreflect.Value{}, outOfRange
	}
	return protoreflect.Value{}, notANumber
}

func typeError(path, want string, got json.Token) error {
	kind := "null"
	switch v := got.(type) {
	case json.Delim:
		kind = "an object"
		if v == '[' {
			kind = "an array"
		}
	case string:
		kind = "a string"
	case json.Number:
		kind = "a number"
	case bool:
		kind = "a boolean"
	}
	return fmt.Errorf("%s: expected %s, got %s", path, want, kind)
}

// finish consumes the rest of a value whose first token is tok.
func (w *walker) finish(tok json.Token) error {
	if tok != json.Delim('{') && tok != json.Delim('[') {
		return nil
	}
	for depth := 1; depth > 0; {
		tok, err := w.token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

// skip consumes one whole value.
func (w *walker) skip() error {
	tok, err := w.token()
	if err != nil {
		return err
	}
	return w.finish(tok)
}

// fieldByJSONKey resolves a JSON member name as protojson does: the lowerCamel
// JSON name first, then the proto field name.
func fieldByJSONKey(md protoreflect.MessageDescriptor, key string) protoreflect.FieldDescriptor {
	fields := md.Fields()
	if fd := fields.ByJSONName(key); fd != nil {
		return fd
	}
	if fd := fields.ByTextName(key); fd != nil {
		return fd
	}
	return nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// mapEntry names the value of key in the map at path as validation does
// (metadata["a"], internal/api): a key may hold dots, which path.key would
// not tell from nesting.
func mapEntry(path, key string) string {
	return path + "[" + strconv.Quote(key) + "]"
}

// boundByPath names the fields of a decoded body that the URL path binds
// too: grpc-gateway sets them from the path after decoding the body, so
// the body's value is ignored (POST /v1/jobs/A:cancel with {"id":"B"}
// cancels A). A client that meant B is told.
func boundByPath(msg proto.Message, pathParams map[string]string) []string {
	m := msg.ProtoReflect()
	var names []string
	for _, key := range slices.Sorted(maps.Keys(pathParams)) {
		if fd := queryField(m.Descriptor(), key); fd != nil && m.Has(fd) {
			names = append(names, key)
		}
	}
	return names
}

// ignoredByMeaning names the fields of a decoded request that the service
// will ignore although they are well formed: a webhookSecret without a
// webhookUrl signs nothing and is not stored; merge.dedupeBy without a
// responseSchema dedupes nothing (spec: it applies to JSON output with
// responseSchema only), and a dedupeBy name given again adds nothing, so
// the repeat is named by its place (merge.dedupeBy[2]). While merge is off
// every merge field is ignored by the spec's own rule and none is named.
func ignoredByMeaning(msg proto.Message) []string {
	req, ok := msg.(*docjobsv1.CreateJobRequest)
	if !ok {
		return nil
	}
	var names []string // in declaration order
	if m := req.GetMerge(); m.GetEnabled() && len(m.GetDedupeBy()) > 0 {
		if req.GetResponseSchema() == "" {
			names = append(names, "merge.dedupeBy")
		} else {
			seen := make(map[string]bool, len(m.GetDedupeBy()))
			for i, name := range m.GetDedupeBy() {
				if seen[name] {
					names = append(names, "merge.dedupeBy["+strconv.Itoa(i)+"]")
				}
				seen[name] = true
			}
		}
	}
	if req.GetWebhookSecret() != "" && req.GetWebhookUrl() == "" {
		names = append(names, "webhookSecret")
	}
	return names
}

// ignoredInMessage names what the service will ignore in a request decoded
// from protobuf (gRPC), in the words of the REST warning: fields the
// message does not define, by their number (merge.#99; the binary form has
// no names), the numbers of enumsIgnored the enum does not define
// (consensus.mode=7), and ignoredByMeaning. Fields go in declaration order.
func ignoredInMessage(msg proto.Message) []string {
	var names []string
	ignoredIn(msg.ProtoReflect(), "", &names)
	return append(names, ignoredByMeaning(msg)...)
}

func ignoredIn(m protoreflect.Message, path string, names *[]string) {
	seen := map[protowire.Number]bool{}
	for b := m.GetUnknown(); len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			break
		}
		b = b[n:]
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			break
		}
		b = b[n:]
		if !seen[num] {
			seen[num] = true
			*names = append(*names, join(path, "#"+strconv.Itoa(int(num))))
		}
	}
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		name := join(path, fd.JSONName())
		switch {
		case fd.IsMap():
			// Requests have no map of messages; a string map has nothing to ignore.
		case fd.IsList() && fd.Message() != nil:
			l := m.Get(fd).List()
			for j := range l.Len() {
				ignoredIn(l.Get(j).Message(), name+"["+strconv.Itoa(j)+"]", names)
			}
		case fd.Message() != nil:
			ignoredIn(m.Get(fd).Message(), name, names)
		case fd.Enum() != nil && !fd.IsList() && enumsIgnored[fd.FullName()]:
			if n := m.Get(fd).Enum(); fd.Enum().Values().ByNumber(n) == nil {
				*names = append(*names, name+"="+strconv.Itoa(int(n)))
			}
		}
	}
}

// queryFields checks URL query parameters against the request message the
// way grpc-gateway binds them (dotted field paths, proto or JSON names). It
// returns the unknown parameter names and those the path binds (?id= on
// /v1/jobs/{id}), which grpc-gateway ignores, and an
// error naming the parameter whose value cannot be parsed, which grpc-gateway
// would otherwise report with a raw strconv message. An empty value of a
// known parameter means the parameter is absent (clients build URLs from
// optional filters: ?statusEq= is no filter): queryFields deletes it from q
// and reports that q changed.
//
// A singular field given more than one value (?pageSize=1&pageSize=2, or
// in both spellings, ?pageSize=1&page_size=2) is an error naming the
// parameter as sent: grpc-gateway refuses the first with a message naming
// the proto field (page_size) and binds the second in map order, so either
// value could win.
func queryFields(q url.Values, md protoreflect.MessageDescriptor, pathParams map[string]string) (names []string, changed bool, err error) {
	singular := map[protoreflect.FullName]string{} // field -> the key that gave it
	for _, key := range slices.Sorted(maps.Keys(q)) {
		values := q[key]
		if _, bound := pathParams[key]; bound {
			// grpc-gateway binds the path's value; this one is ignored.
			names = append(names, key)
			continue
		}
		fd := queryField(md, key)
		if fd == nil {
			names = append(names, key)
			continue
		}
		kept := slices.DeleteFunc(slices.Clone(values), func(v string) bool { return v == "" })
		if len(kept) != len(values) {
			changed = true
			if len(kept) == 0 {
				delete(q, key)
			} else {
				q[key] = kept
			}
		}
		if len(kept) > 0 && !fd.IsList() {
			if len(kept) > 1 {
				return nil, false, fmt.Errorf("%s: expected one value, got %d", key, len(kept))
			}
			if other, ok := singular[fd.FullName()]; ok {
				return nil, false, fmt.Errorf("%s: expected one value, also given as %s", key, other)
			}
			singular[fd.FullName()] = key
		}
		for _, v := range kept {
			if err := checkQueryValue(fd, v); err != nil {
				return nil, false, fmt.Errorf("%s: %w", key, err)
			}
		}
	}
	return names, changed, nil
}

func queryField(md protoreflect.MessageDescriptor, key string) protoreflect.FieldDescriptor {
	parts := strings.Split(key, ".")
	var fd protoreflect.FieldDescriptor
	for i, part := range parts {
		if md == nil {
			return nil
		}
		fd = md.Fields().ByName(protoreflect.Name(part))
		if fd == nil {
			fd = md.Fields().ByJSONName(part)
		}
		if fd == nil {
			return nil
		}
		md = nil
		if i < len(parts)-1 && fd.Message() != nil && !fd.IsMap() && !fd.IsList() {
			md = fd.Message()
		}
	}
	return fd
}

// checkQueryValue parses v the way the field's kind needs, with a message a
// client can act on in the words of the body's type errors.
func checkQueryValue(fd protoreflect.FieldDescriptor, v string) error {
	var err error
	switch fd.Kind() {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		_, err = strconv.ParseInt(v, 10, 32)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		_, err = strconv.ParseInt(v, 10, 64)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		_, err = strconv.ParseUint(v, 10, 32)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		_, err = strconv.ParseUint(v, 10, 64)
	case protoreflect.BoolKind:
		_, err = strconv.ParseBool(v)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		_, err = strconv.ParseFloat(v, 64)
	case protoreflect.EnumKind:
		if fd.Enum().Values().ByName(protoreflect.Name(v)) != nil {
			return nil
		}
		n, perr := strconv.ParseInt(v, 10, 32)
		if perr != nil {
			return errors.New(api.UnknownEnumName(fd.Enum(), v))
		}
		if fd.Enum().Values().ByNumber(protoreflect.EnumNumber(n)) != nil {
			return nil
		}
		// The service's words for the number over gRPC (api.checkEnum).
		return fmt.Errorf("unknown value %d; %s", n, api.EnumChoices(fd.Enum()))
	default:
		return nil
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, strconv.ErrRange):
		return errors.New(outOfRange)
	}
	return fmt.Errorf("expected %s", expected(fd))
}

// queryKeys returns the names of r's query parameters, sorted, each once.
func queryKeys(r *http.Request) []string {
	if r.URL.RawQuery == "" {
		return nil
	}
	return slices.Sorted(maps.Keys(r.URL.Query()))
}

// warnQuery names in the Docjobs-Warning header the query parameters of a
// route that takes none (the download, the progress stream): the gateway's
// routes name what they ignore (queryFields), so a mistyped or misplaced
// parameter here is named too instead of vanishing.
func warnQuery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if names := queryKeys(r); len(names) > 0 {
			w.Header().Set(WarningHeader, warningHeader(names, 0))
		}
		next.ServeHTTP(w, r)
	})
}

// maxWarningLen bounds the Docjobs-Warning header; names past it are counted.
const maxWarningLen = 2048

// warningHeader formats ignored names for the Docjobs-Warning header. Names
// come from the client, so anything beyond plain printable ASCII (and the
// separators of this format) is quoted, and the header stays short however
// many there are.
func warningHeader(names []string, more int) string {
	var b strings.Builder
	b.WriteString("ignored: ")
	for i, n := range names {
		if i >= maxIgnored || b.Len() >= maxWarningLen {
			more += len(names) - i
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(headerSafe(n))
	}
	if more > 0 {
		fmt.Fprintf(&b, " (and %d more)", more)
	}
	return b.String()
}

func headerSafe(s string) string {
	const maxName = 128
	if len(s) > maxName {
		s = s[:maxName] + "…"
	}
	for _, r := range s {
		if r < 0x21 || r > 0x7e || r == ',' || r == '"' || r == '\\' {
			return strconv.QuoteToASCII(s)
		}
	}
	return s
}
