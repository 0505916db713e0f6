package server

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
)

func TestIgnoredFields(t *testing.T) {
	create := (&docjobsv1.CreateJobRequest{}).ProtoReflect().Descriptor()
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"a request with only known fields ignores nothing",
			`{"sourceUrls":["https://a.test/x.txt"],"neural":{"type":"NEURAL_CLIENT_TYPE_PROVIDER_1","model":"m"},
			  "ocr":{"provider":"NEURAL_CLIENT_TYPE_PROVIDER_1","model":"m","providerKey":"k"},
			  "merge":{"enabled":true,"dedupeBy":["id"],"format":"MERGE_FORMAT_JSON"},
			  "consensus":{"mode":"CONSENSUS_MODE_THREE_RUNS"},"metadata":{"a":"b"},"title":"t"}`,
			nil},
		{"proto field names are known too", `{"source_urls":[],"response_schema":"{}","merge":{"dedupe_by":[]}}`, nil},
		{"an unknown top-level field is named", `{"sourceURLs":["x"]}`, []string{"sourceURLs"}},
		{"an unknown nested field is named by its path", `{"merge":{"enabled":true,"dedupBy":["id"]}}`, []string{"merge.dedupBy"}},
		{"an unknown enum string is named with its value",
			`{"consensus":{"mode":"CONSENSUS_MODE_SEVEN_RUNS"}}`, []string{"consensus.mode=CONSENSUS_MODE_SEVEN_RUNS"}},
		{"an enum alias is a known value", `{"ocr":{"provider":"NEURAL_CLIENT_TYPE_MISTRAL"}}`, nil},
		{"an enum number is not reported: the service refuses an unknown one", `{"extractionMode":7}`, nil},
		{"a consensus mode number the enum defines is not reported", `{"consensus":{"mode":2}}`, nil},
		{"an unknown consensus mode number is ignored and named like an unknown name",
			`{"consensus":{"mode":7}}`, []string{"consensus.mode=7"}},
		{"an unknown consensus mode number is named in its plain form", `{"consensus":{"mode":7.0}}`, []string{"consensus.mode=7"}},
		{"null values are not reported", `{"merge":null,"consensus":{"mode":null},"prompts":null}`, nil},
		{"the value of an unknown field is not walked", `{"extra":{"deeper":{"mode":"X"}},"title":"t"}`, []string{"extra"}},
		{"several ignored names come in document order",
			`{"zeta":1,"consensus":{"mode":"CONSENSUS_MODE_MANY","x":[1,{"y":2}]},"alpha":true}`,
			[]string{"zeta", "consensus.mode=CONSENSUS_MODE_MANY", "consensus.x", "alpha"}},
		{"map values are strings, their keys are free", `{"metadata":{"anything":"goes","dedupBy":"x"}}`, nil},
		{"numbers may come as strings", `{"neural":{"chunkBudgetTokens":"4000"}}`, nil},
		{"a whole number may have a fraction or an exponent", `{"neural":{"chunkBudgetTokens":4e3},"merge":{"scope":1.0}}`, nil},
		{"the extreme integers are in range", `{"neural":{"chunkBudgetTokens":-2147483648},"extractionMode":2147483647}`, nil},
		{"an empty object ignores nothing", `{}`, nil},
		{"a surrogate pair is a character", `{"title":"\ud83d\ude00 \uD83D\uDE00","metadata":{"\ud83d\ude00":"x"}}`, nil},
		{"an escaped backslash before u is no escape", `{"title":"\\ud800"}`, nil},
		{"escapes that are not surrogates", `{"title":"\u0041\n\"\ud7ff\ue000"}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, more, err := ignoredFields([]byte(tt.body), create)
			if err != nil {
				t.Fatalf("ignoredFields: %v", err)
			}
			if more != 0 {
				t.Errorf("more = %d, want 0", more)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("ignored = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestIgnoredFieldsListsFieldsByIndex(t *testing.T) {
	// ListJobsRequest has no repeated enum; LlmResult's messages do not
	// either, so a repeated message is the list case: ocr rows in a result.
	result := (&docjobsv1.JobResult{}).ProtoReflect().Descriptor()
	got, _, err := ignoredFields([]byte(`{"ocr":[{"status":"JOB_OCR_STATUS_DONE"},{"status":"JOB_OCR_STATUS_MAYBE","typo":1}]}`), result)
	if err != nil {
		t.Fatalf("ignoredFields: %v", err)
	}
	want := []string{"ocr[1].status=JOB_OCR_STATUS_MAYBE", "ocr[1].typo"}
	if !slices.Equal(got, want) {
		t.Errorf("ignored = %q, want %q", got, want)
	}
}

// An enum name the enum does not define is dropped and named in the
// warning header (DESIGN: unknown enum strings are ignored; spec rule 5 is
// consensus.mode's case), except in ocr.provider, which a create cannot do
// without: dropped, it was refused as "ocr.provider: required" though a
// value was given (audit-readme F3), so it is refused naming the name
// meant and the names taken; and in neural.type when prompts are given,
// wherever they stand in the body (audit-api3 F5: "required when prompts
// are given").
func TestAnUnknownEnumNameIsIgnoredUnlessTheFieldIsRequired(t *testing.T) {
	create := (&docjobsv1.CreateJobRequest{}).ProtoReflect().Descriptor()
	for _, tt := range []struct{ name, body, ignored, err string }{
		{"a mode without its prefix is ignored", `{"extractionMode":"OCR_ALWAYS"}`, "extractionMode=OCR_ALWAYS", ""},
		{"a vendor alias in lower case is ignored", `{"neural":{"type":"openai"}}`, "neural.type=openai", ""},
		{"a neural type with an empty prompt list is ignored", `{"neural":{"type":"openai"},"prompts":[]}`, "neural.type=openai", ""},
		{"a neural type with null prompts is ignored", `{"neural":{"type":"openai"},"prompts":null}`, "neural.type=openai", ""},
		{"a neural type with prompts after it is refused", `{"neural":{"type":"PROVIDER_2"},"prompts":["p"]}`, "",
			`neural.type: unknown value "PROVIDER_2" (did you mean NEURAL_CLIENT_TYPE_PROVIDER_2?); use NEURAL_CLIENT_TYPE_PROVIDER_1 to NEURAL_CLIENT_TYPE_PROVIDER_8 (or an alias: NEURAL_CLIENT_TYPE_MISTRAL, NEURAL_CLIENT_TYPE_OPENAI, NEURAL_CLIENT_TYPE_ANTHROPIC, NEURAL_CLIENT_TYPE_GEMINI, NEURAL_CLIENT_TYPE_XAI, NEURAL_CLIENT_TYPE_OPENROUTER, NEURAL_CLIENT_TYPE_QWEN, NEURAL_CLIENT_TYPE_SELF_HOSTED)`},
		{"a neural type with prompts before it is refused", `{"prompts":["p"],"neural":{"type":"openai"}}`, "",
			`neural.type: unknown value "openai" (did you mean NEURAL_CLIENT_TYPE_OPENAI?); use NEURAL_CLIENT_TYPE_PROVIDER_1 to`},
		{"a neural type no value spells is refused with prompts", `{"prompts":["p"],"neural":{"type":"gpt"}}`, "",
			`neural.type: unknown value "gpt"; use NEURAL_CLIENT_TYPE_PROVIDER_1 to`},
		{"a merge field is ignored", `{"merge":{"scope":"MERGE_SCOPE_EVERYTHING"}}`, "merge.scope=MERGE_SCOPE_EVERYTHING", ""},
		{"a consensus mode is ignored", `{"consensus":{"mode":"CONSENSUS_MODE_SEVEN_RUNS"}}`, "consensus.mode=CONSENSUS_MODE_SEVEN_RUNS", ""},
		{"a provider without its prefix is refused", `{"ocr":{"provider":"PROVIDER_1"}}`, "",
			`ocr.provider: unknown value "PROVIDER_1" (did you mean NEURAL_CLIENT_TYPE_PROVIDER_1?); use NEURAL_CLIENT_TYPE_PROVIDER_1 to NEURAL_CLIENT_TYPE_PROVIDER_8 (or an alias: NEURAL_CLIENT_TYPE_MISTRAL, NEURAL_CLIENT_TYPE_OPENAI, NEURAL_CLIENT_TYPE_ANTHROPIC, NEURAL_CLIENT_TYPE_GEMINI, NEURAL_CLIENT_TYPE_XAI, NEURAL_CLIENT_TYPE_OPENROUTER, NEURAL_CLIENT_TYPE_QWEN, NEURAL_CLIENT_TYPE_SELF_HOSTED)`},
		{"a provider slot that does not exist is refused", `{"ocr":{"provider":"NEURAL_CLIENT_TYPE_PROVIDER_9"}}`, "",
			`ocr.provider: unknown value "NEURAL_CLIENT_TYPE_PROVIDER_9"; use NEURAL_CLIENT_TYPE_PROVIDER_1 to`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := ignoredFields([]byte(tt.body), create)
			if tt.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.err) {
					t.Fatalf("err = %v, want it to start %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ignoredFields: %v", err)
			}
			if want := []string{tt.ignored}; !slices.Equal(got, want) {
				t.Errorf("ignored = %q, want %q", got, want)
			}
		})
	}
}

func TestIgnoredFieldsBoundsTheList(t *testing.T) {
	create := (&docjobsv1.CreateJobRequest{}).ProtoReflect().Descriptor()
	var b strings.Builder
	b.WriteString("{")
	for i := range maxIgnored + 10 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"unknown` + strings.Repeat("x", i) + `":1`)
	}
	b.WriteString("}")
	got, more, err := ignoredFields([]byte(b.String()), create)
	if err != nil {
		t.Fatalf("ignoredFields: %v", err)
	}
	if len(got) != maxIgnored || more != 10 {
		t.Errorf("got %d names and %d more, want %d and 10", len(got), more, maxIgnored)
	}
}

func TestWarningHeaderStaysShort(t *testing.T) {
	names := make([]string, 1000)
	for i := range names {
		names[i] = strings.Repeat("é", 100)
	}
	h := warningHeader(names, 5)
	if len(h) > maxWarningLen+1024 || !strings.HasSuffix(h, " more)") {
		t.Errorf("header of %d bytes: ...%s", len(h), h[max(0, len(h)-40):])
	}
}

func TestIgnoredFieldsRejectsMalformedBodies(t *testing.T) {
	create := (&docjobsv1.CreateJobRequest{}).ProtoReflect().Descriptor()
	tests := []struct {
		name, body, wantErr string
	}{
		{"a truncated object", `{"title":"t"`, "unexpected end of body"},
		{"a syntax error names its offset", `{"title":}`, "invalid JSON at offset 9"},
		{"a list is not an object", `["a"]`, "must be a JSON object"},
		{"a string is not an object", `"a"`, "must be a JSON object"},
		{"trailing data after the object", `{"title":"t"} {}`, "unexpected data after the top-level object"},
		{"an unclosed nested value", `{"merge":{"enabled":true}`, "unexpected end of body"},
		{"a string for a list names the field", `{"sourceUrls":"x"}`, "sourceUrls: expected an array, got a string"},
		{"a number in a string list names the element", `{"prompts":["a",5]}`, "prompts[1]: expected a string, got a number"},
		{"a string for a message names the field", `{"merge":"yes"}`, "merge: expected an object, got a string"},
		{"a string for a bool names the nested field", `{"merge":{"enabled":"yes"}}`, "merge.enabled: expected true or false, got a string"},
		{"an object for an integer", `{"neural":{"chunkBudgetTokens":{}}}`, "neural.chunkBudgetTokens: expected an integer, got an object"},
		{"a word for an integer", `{"neural":{"chunkBudgetTokens":"abc"}}`, "neural.chunkBudgetTokens: expected an integer, got a string"},
		{"a padded number string for an integer", `{"neural":{"chunkBudgetTokens":" 4000"}}`, "neural.chunkBudgetTokens: expected an integer, got a string"},
		{"a fraction for an integer", `{"neural":{"chunkBudgetTokens":1.5}}`, "neural.chunkBudgetTokens: expected an integer, got a number"},
		{"a fraction in a string for an integer", `{"neural":{"chunkBudgetTokens":"1.5"}}`, "neural.chunkBudgetTokens: expected an integer, got a string"},
		{"an integer above int32", `{"neural":{"chunkBudgetTokens":99999999999}}`, "neural.chunkBudgetTokens: out of range"},
		{"an integer below int32", `{"neural":{"chunkBudgetTokens":-2147483649}}`, "neural.chunkBudgetTokens: out of range"},
		{"an integer above int32 in a string", `{"neural":{"chunkBudgetTokens":"2147483648"}}`, "neural.chunkBudgetTokens: out of range"},
		{"a huge exponent", `{"neural":{"chunkBudgetTokens":1e999999999999}}`, "neural.chunkBudgetTokens: out of range"},
		{"a tiny exponent", `{"neural":{"chunkBudgetTokens":1e-999999999999}}`, "neural.chunkBudgetTokens: expected an integer, got a number"},
		{"an enum number out of range", `{"consensus":{"mode":4294967296}}`, "consensus.mode: out of range"},
		{"a fraction for an enum", `{"consensus":{"mode":1.5}}`, "consensus.mode: expected an enum value name, got a number"},
		{"null in a string list names the element", `{"prompts":["a",null]}`, "prompts[1]: expected a string, got null"},
		{"null in a message list", `{"sourceUrls":[null]}`, "sourceUrls[0]: expected a string, got null"},
		{"null as a map value", `{"metadata":{"a":null}}`, `metadata["a"]: expected a string, got null`},
		{"a boolean for an enum", `{"extractionMode":true}`, "extractionMode: expected an enum value name, got a boolean"},
		{"a list for a map", `{"metadata":["a"]}`, "metadata: expected an object, got an array"},
		{"a number as a map value", `{"metadata":{"a":1}}`, `metadata["a"]: expected a string, got a number`},
		// Named as validation names a value (metadata["a"]: at most 2048
		// bytes), so a key with a dot is no nested path (audit-api3 F8).
		{"a map value under a key with a dot", `{"metadata":{"a.b":1}}`, `metadata["a.b"]: expected a string, got a number`},
		{"a lone high surrogate names the field", `{"title":"\ud800"}`, "title: invalid UTF-16 surrogate in string"},
		{"a lone low surrogate", `{"title":"a\uDC00b"}`, "title: invalid UTF-16 surrogate in string"},
		{"a high surrogate followed by a letter escape", `{"title":"\ud800\u0041"}`, "title: invalid UTF-16 surrogate in string"},
		{"two high surrogates", `{"title":"\ud800\ud800"}`, "title: invalid UTF-16 surrogate in string"},
		{"a high surrogate at the end after an escaped backslash", `{"title":"\\\ud800"}`, "title: invalid UTF-16 surrogate in string"},
		{"a lone surrogate in a list names the element", `{"prompts":["a","\ud800"]}`, "prompts[1]: invalid UTF-16 surrogate in string"},
		{"a lone surrogate in a map value", `{"metadata":{"k":"\ud800"}}`, `metadata["k"]: invalid UTF-16 surrogate in string`},
		{"a lone surrogate in a map key", `{"metadata":{"\ud800":"v"}}`, "metadata: invalid UTF-16 surrogate in a member name"},
		{"a lone surrogate in a member name", `{"ti\ud800tle":"x"}`, "invalid JSON at offset 1: invalid UTF-16 surrogate in a member name"},
		{"a lone surrogate in an unknown field", `{"zzz":{"a":["\ud800"]}}`, "zzz: invalid UTF-16 surrogate in string"},
		{"a lone surrogate in a nested field", `{"merge":{"format":"\udfff"}}`, "merge.format: invalid UTF-16 surrogate in string"},
		// Bytes that are not UTF-8, which protojson refused as a "syntax
		// error" at a line and column, naming no field (audit-contract F3).
		{"bytes that are not UTF-8 name the field", "{\"title\":\"a\xffb\"}", "title: invalid UTF-8 in string"},
		{"a truncated sequence in a list names the element", "{\"prompts\":[\"a\",\"\xe2\x82\"]}", "prompts[1]: invalid UTF-8 in string"},
		{"bytes that are not UTF-8 in a map value", "{\"metadata\":{\"k\":\"\xc0\xaf\"}}", `metadata["k"]: invalid UTF-8 in string`},
		{"bytes that are not UTF-8 in a map key", "{\"metadata\":{\"\xff\":\"v\"}}", "metadata: invalid UTF-8 in a member name"},
		{"bytes that are not UTF-8 in a member name", "{\"ti\xfftle\":\"x\"}", "invalid JSON at offset 1: invalid UTF-8 in a member name"},
		{"bytes that are not UTF-8 in a nested field", "{\"ocr\":{\"providerKey\":\"sk-\xed\xa0\x80\"}}", "ocr.providerKey: invalid UTF-8 in string"},
		{"bytes that are not UTF-8 in an unknown field", "{\"zzz\":[\"\xff\"]}", "zzz: invalid UTF-8 in string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ignoredFields([]byte(tt.body), create)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestQueryFields(t *testing.T) {
	list := (&docjobsv1.ListJobsRequest{}).ProtoReflect().Descriptor()
	tests := []struct {
		name    string
		query   string
		want    []string
		wantErr string
	}{
		{"known parameters in either spelling", "pageSize=10&page_token=abc&statusEq=JOB_STATUS_NEW", nil, ""},
		{"an enum number is accepted", "statusEq=3", nil, ""},
		{"unknown parameters are named, sorted", "pageSiz=10&foo=1", []string{"foo", "pageSiz"}, ""},
		{"a non-integer page size is an error naming the parameter", "pageSize=ten", nil, `pageSize: expected an integer`},
		{"a page size above int32 is out of range", "pageSize=99999999999", nil, `pageSize: out of range`},
		{"empty values are no parameter at all", "statusEq=&pageSize=&pageToken=", nil, ""},
		{"an unknown enum name is an error naming the values", "statusEq=JOB_STATUS_DONE", nil,
			`statusEq: unknown value "JOB_STATUS_DONE"; use JOB_STATUS_NEW, JOB_STATUS_RUNNING, JOB_STATUS_COMPLETE, JOB_STATUS_FAILED or JOB_STATUS_CANCELLED`},
		{"a status in the CLI's spelling says the name meant", "statusEq=failed", nil,
			`statusEq: unknown value "failed" (did you mean JOB_STATUS_FAILED?); use JOB_STATUS_NEW, JOB_STATUS_RUNNING, JOB_STATUS_COMPLETE, JOB_STATUS_FAILED or JOB_STATUS_CANCELLED`},
		{"an unknown enum number is an error in the service's words", "statusEq=99", nil,
			`statusEq: unknown value 99; use JOB_STATUS_NEW, JOB_STATUS_RUNNING, JOB_STATUS_COMPLETE, JOB_STATUS_FAILED or JOB_STATUS_CANCELLED`},
		{"a repeated singular parameter is an error naming it as sent", "pageSize=1&pageSize=2", nil, `pageSize: expected one value, got 2`},
		{"a repeated parameter in proto spelling is named as sent", "page_size=1&page_size=2", nil, `page_size: expected one value, got 2`},
		{"one field in both spellings is an error naming both", "pageSize=1&page_size=2", nil, `page_size: expected one value, also given as pageSize`},
		{"an empty repeat is no second value", "pageSize=1&pageSize=", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := queryFields(q, list, nil)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("queryFields: %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("ignored = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestQueryFieldsDropEmptyValues(t *testing.T) {
	list := (&docjobsv1.ListJobsRequest{}).ProtoReflect().Descriptor()
	tests := []struct {
		name, query string
		want        string // the query the gateway binds
		changed     bool
	}{
		{"an empty filter is no filter", "statusEq=", "", true},
		{"every empty known parameter goes", "statusEq=&pageSize=&pageToken=t", "pageToken=t", true},
		{"an empty value among others goes alone", "statusEq=&statusEq=JOB_STATUS_NEW", "statusEq=JOB_STATUS_NEW", true},
		{"an unknown parameter is left to be named", "foo=", "foo=", false},
		{"a query without empty values is untouched", "statusEq=JOB_STATUS_NEW", "statusEq=JOB_STATUS_NEW", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			_, changed, err := queryFields(q, list, nil)
			if err != nil {
				t.Fatalf("queryFields: %v", err)
			}
			if changed != tt.changed || q.Encode() != tt.want {
				t.Errorf("query %q changed %v, want %q changed %v", q.Encode(), changed, tt.want, tt.changed)
			}
		})
	}
}

func TestWarningHeader(t *testing.T) {
	tests := []struct {
		name  string
		names []string
		more  int
		want  string
	}{
		{"plain names are listed as they are", []string{"merge.dedupBy", "consensus.mode=CONSENSUS_MODE_SEVEN_RUNS"}, 0,
			"ignored: merge.dedupBy, consensus.mode=CONSENSUS_MODE_SEVEN_RUNS"},
		{"names with separators, spaces or non-ASCII are quoted", []string{"a,b", "c d", "é"}, 0,
			`ignored: "a,b", "c d", "\u00e9"`},
		{"control characters cannot split the header", []string{"x\r\nSet-Cookie: a=b"}, 0,
			`ignored: "x\r\nSet-Cookie: a=b"`},
		{"left-out names are counted", []string{"a"}, 3, "ignored: a (and 3 more)"},
		{"long names are cut", []string{strings.Repeat("n", 200)}, 0, `ignored: "` + strings.Repeat("n", 128) + `\u2026"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := warningHeader(tt.names, tt.more); got != tt.want {
				t.Errorf("header = %q, want %q", got, tt.want)
			}
		})
	}
}

// The walker refuses exactly the integers protojson refuses, so that a
// value it passes never reaches protojson's own wording.
func TestIntegerChecksAgreeWithProtojson(t *testing.T) {
	create := (&docjobsv1.CreateJobRequest{}).ProtoReflect().Descriptor()
	values := []string{
		"0", "-0", "1", "-1", "1.0", "1.5", "1e3", "1E+3", "1e-0", "10e-1", "15e-1", "0.5e1", "1.50e1",
		"123.4500e2", "100e-2", "1e-5", "0e99999999999", "0.0e-99999999999", "1e99999999999", "1e-99999999999",
		"2147483647", "2147483648", "-2147483648", "-2147483649", "1e10", "21474836.47e2", "99999999999999999999999",
	}
	var bodies []string
	for _, v := range values {
		bodies = append(bodies, v, `"`+v+`"`)
	}
	bodies = append(bodies, `" 1"`, `"1 "`, `""`, `"abc"`, `"0x10"`, `"01"`, `"-"`, `"1."`, `".5"`, `"+1"`, `"1e"`, `"NaN"`, `"Infinity"`)
	for _, v := range bodies {
		body := `{"neural":{"chunkBudgetTokens":` + v + `}}`
		_, _, walkErr := ignoredFields([]byte(body), create)
		protoErr := protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal([]byte(body), &docjobsv1.CreateJobRequest{})
		if (walkErr == nil) != (protoErr == nil) {
			t.Errorf("%s: walker says %v, protojson %v", v, walkErr, protoErr)
		}
	}
}
