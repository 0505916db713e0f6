package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/provider/anthropic"
	"github.com/docjobs/docjobs/internal/provider/providertest"
	"github.com/docjobs/docjobs/internal/provider/slots"
	"github.com/docjobs/docjobs/internal/schema"
)

// A vendor answer as each protocol carries a JSON answer under a schema.
func openAIAnswer(content string) string {
	return `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":` +
		providertest.JSONString(content) + `},"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`
}

// anthropicAnswer is the forced tool's call, its input spaced out as models
// write it: the row must get it as compact JSON.
func anthropicAnswer(content string) string {
	var spaced bytes.Buffer
	if err := json.Indent(&spaced, []byte(content), "", "  "); err != nil {
		panic(err)
	}
	return `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_1","name":"` +
		anthropic.ToolName + `","input":` + spaced.String() + `}],"stop_reason":"tool_use","usage":{"input_tokens":11,"output_tokens":7}}`
}

func geminiAnswer(content string) string {
	return `{"candidates":[{"content":{"role":"model","parts":[{"text":` + providertest.JSONString(content) +
		`}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":11,"candidatesTokenCount":7}}`
}

// longName is a property name whose every violation's instance path is
// longer than a schema error may be, in two-byte characters, so each error
// must be cut, and cut between characters.
var longName = "line items " + strings.Repeat("é", 260)

// Every slot family's answers, as the worker records them, are judged
// against the job's schema: the schema reaches the vendor in its native
// form (wrapped in an object where the vendor needs one), and the row that
// answer gives carries schemaValid and bounded schemaErrors naming the
// instance path of the unwrapped answer; a row of a split file carries no
// verdict.
func TestEverySlotsAnswersAreJudgedAgainstTheSchema(t *testing.T) {
	vendors := []struct {
		slot     int
		model    string
		base     string // appended to the server's URL
		schemaAt []any  // the schema's place in the request body
		wraps    bool   // only an object schema goes (provider.ObjectSchema)
		answer   func(string) string
	}{
		{1, "mistral-small-latest", "", []any{"response_format", "json_schema", "schema"}, true, openAIAnswer},
		{2, "gpt-4.1", "/v1", []any{"response_format", "json_schema", "schema"}, true, openAIAnswer},
		{3, "claude-sonnet-4-5", "", []any{"tools", 0, "input_schema"}, true, anthropicAnswer},
		{4, "gemini-2.5-flash", "", []any{"generationConfig", "responseJsonSchema"}, false, geminiAnswer},
		{5, "grok-4", "/v1", []any{"response_format", "json_schema", "schema"}, true, openAIAnswer},
	}
	objectSchema := `{"type":"object","properties":{"total":{"type":"number"},` + strconv.Quote(longName) +
		`:{"type":"array","items":{"type":"integer"}}},"required":["total",` + strconv.Quote(longName) + `],"additionalProperties":false}`
	const arraySchema = `{"type":"array","items":{"type":"integer"}}`
	const wrappedArraySchema = `{"type":"object","properties":{"value":{"type":"array","items":{"type":"integer"}}},"required":["value"],"additionalProperties":false}`
	strs := make([]string, 12)
	for i := range strs {
		strs[i] = strconv.Quote("x" + strconv.Itoa(i))
	}
	answers := []struct {
		name      string
		schema    string
		content   string // the answer, unwrapped, compact
		valid     bool
		errorPath string // a path the errors must name
	}{
		{"object schema, conforming", objectSchema, `{"total":42.5,` + strconv.Quote(longName) + `:[1,2]}`, true, ""},
		{"object schema, thirteen violations with long paths", objectSchema,
			`{"total":"n/a",` + strconv.Quote(longName) + `:[` + strings.Join(strs, ",") + `]}`, false, "at /line items é"},
		{"array schema, conforming", arraySchema, `[1,2,3]`, true, ""},
		{"array schema, non-conforming", arraySchema, `[1,"two"]`, false, "at /1: "},
	}
	for _, v := range vendors {
		for _, a := range answers {
			t.Run(slots.SlotPrefix+strconv.Itoa(v.slot)+"/"+a.name, func(t *testing.T) {
				t.Parallel()
				sent, wantSchema := a.content, a.schema
				if v.wraps && a.schema == arraySchema {
					sent, wantSchema = `{"value":`+a.content+`}`, wrappedArraySchema
				}
				srv := providertest.NewServer(t, providertest.Reply(200, v.answer(sent)))
				chat, err := slots.New(slots.Config{BaseURLs: map[int]string{v.slot: srv.URL + v.base}, RetryBaseDelay: time.Millisecond}).
					Chat(slots.SlotPrefix+strconv.Itoa(v.slot), v.model, "test-key-0123456789")
				if err != nil {
					t.Fatal(err)
				}
				j := &job.Job{Prompts: []string{"Extract."}, ResponseSchema: a.schema, SourceURLs: []string{"https://example.com/a.md"}}

				row := job.LLMRow{ChunkTotal: 1, Input: "the chunk"}
				if err := answer(context.Background(), j, chat, &row); err != nil {
					t.Fatalf("answer: %v", err)
				}
				providertest.AssertSameJSON(t, "schema sent", providertest.Field(t, srv.Requests()[0].Body, v.schemaAt...), wantSchema)
				if row.Status != job.RowDone || row.Content != a.content {
					t.Errorf("row %s with content %q, want DONE with %q", row.Status, row.Content, a.content)
				}
				if row.SchemaValid == nil || *row.SchemaValid != a.valid {
					t.Fatalf("schemaValid = %v, want %t", row.SchemaValid, a.valid)
				}
				assertSchemaErrors(t, row.SchemaErrors, a.valid, a.errorPath)

				// The same answer to a chunk of a split file is not judged.
				split := job.LLMRow{ChunkIndex: 1, ChunkTotal: 2, Input: "the chunk"}
				if err := answer(context.Background(), j, chat, &split); err != nil {
					t.Fatalf("answer: %v", err)
				}
				if split.Status != job.RowDone || split.SchemaValid != nil || split.SchemaErrors != nil {
					t.Errorf("split row: status %s, schemaValid %v, schemaErrors %q; want DONE without a verdict",
						split.Status, split.SchemaValid, split.SchemaErrors)
				}
			})
		}
	}
}

// assertSchemaErrors checks a verdict's errors against the limits of the
// contract: none for a valid answer; else at most schema.MaxErrors of at
// most schema.MaxErrorBytes of whole characters, each naming its instance
// path (a last "and N more violations" counts the rest), path among them.
func assertSchemaErrors(t *testing.T, errs []string, valid bool, path string) {
	t.Helper()
	if valid {
		if errs != nil {
			t.Errorf("schemaErrors = %q for a valid answer", errs)
		}
		return
	}
	if len(errs) == 0 || len(errs) > schema.MaxErrors {
		t.Fatalf("%d schemaErrors, want 1 to %d: %q", len(errs), schema.MaxErrors, errs)
	}
	named := false
	for i, e := range errs {
		if len(e) > schema.MaxErrorBytes || !utf8.ValidString(e) {
			t.Errorf("error %d: %d bytes, valid UTF-8 %t", i, len(e), utf8.ValidString(e))
		}
		summary := i == len(errs)-1 && strings.HasSuffix(e, "more violations")
		if !strings.HasPrefix(e, "at /") && !summary {
			t.Errorf("error %d names no instance path: %q", i, e)
		}
		named = named || strings.HasPrefix(e, path)
	}
	if !named {
		t.Errorf("no error names %q: %q", path, errs)
	}
}

// A schema the vendor cannot enforce strictly is shown to the model in the
// system message, which then asks for JSON alone once, not twice in two
// wordings (the model stage's request and the adapter's).
func TestASchemaShownInWordsIsAskedForOnce(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply(200, openAIAnswer(`{"a":"xy"}`)))
	chat, err := slots.New(slots.Config{BaseURLs: map[int]string{2: srv.URL + "/v1"}, RetryBaseDelay: time.Millisecond}).
		Chat(slots.SlotPrefix+"2", "gpt-4.1", "test-key-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	const schema = `{"type":"object","properties":{"a":{"type":"string","minLength":2}}}`
	j := &job.Job{Prompts: []string{"Extract."}, ResponseSchema: schema, SourceURLs: []string{"https://example.com/a.md"}}
	row := job.LLMRow{ChunkTotal: 1, Input: "the chunk"}
	if err := answer(context.Background(), j, chat, &row); err != nil {
		t.Fatalf("answer: %v", err)
	}
	body := srv.Requests()[0].Body
	if got := providertest.Field(t, body, "response_format", "type"); got != "json_object" {
		t.Fatalf("response_format.type = %v, want json_object (the schema is not strict-compatible)", got)
	}
	sys, _ := providertest.Field(t, body, "messages", 0, "content").(string)
	if n := strings.Count(sys, "nothing else"); n != 1 || !strings.Contains(sys, `"minLength":2`) {
		t.Errorf("system message asks for JSON alone %d times (want once, with the schema): %q", n, sys)
	}
}
