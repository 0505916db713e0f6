package gemini

import (
	"bytes"
	"encoding/json"
	"strings"

	"google.golang.org/genai"

	"github.com/docjobs/docjobs/internal/provider"
)

// responseSchema is the job's schema as Gemini is sent it: the text as
// given, but in draft 2020-12's spelling (provider.Draft2020) and for the
// keywords beside a $ref. Gemini refuses a $ref with
// other keywords ("schema at properties.x can only contain properties
// starting with '$' when $ref is present", 400 INVALID_ARGUMENT; the SDK
// documents the same rule on ResponseJsonSchema), which is what Pydantic
// writes for a described nested model. The answer is validated against
// the job's own schema, so dropping them costs guidance, never a verdict.
// Newer reports quote a rule that also lets description and default stand
// beside a $ref; the stricter, documented rule is kept, since a refused
// schema fails every row. A schema that is not a JSON object gives
// provider.ErrInvalidSchema.
func responseSchema(schema string) (json.RawMessage, error) {
	var probe map[string]any
	if err := json.Unmarshal([]byte(schema), &probe); err != nil || probe == nil {
		return nil, provider.ErrInvalidSchema
	}
	// An older draft's spelling goes as 2020-12's (Gemini: "'items' must
	// be a schema (object or boolean), not an array. For tuple
	// validation, use 'prefixItems' instead."), and with it definitions
	// as $defs, which stays beside a $ref: zod-to-json-schema's root
	// {"$ref":"#/definitions/x","definitions":{…}} lost its definitions
	// here and the reference pointed nowhere.
	sent, _ := provider.Draft2020(json.RawMessage(bytes.TrimSpace([]byte(schema))))
	out, _ := provider.DropRefSiblings(sent, func(k string) bool {
		return strings.HasPrefix(k, "$")
	})
	return out, nil
}

// schemaBody puts schema into the request body as its bytes. Set as
// GenerateContentConfig.ResponseJsonSchema, the SDK rebuilds the body
// through map[string]any (genai models.go, generateContent:
// InternalDeepMarshal), which writes every object's keys in alphabetical
// order, where Gemini 2.5 and later write the answer's keys in the
// schema's order, and turns numbers into float64, which rounds integers
// past 2^53 in enum, minimum or maximum. ExtraBody is merged into that map
// as it is given (api_client.go, buildRequest) and a json.RawMessage in it
// is encoded as its own bytes (compacted).
func schemaBody(schema json.RawMessage) *genai.HTTPOptions {
	return &genai.HTTPOptions{ExtraBody: map[string]any{
		"generationConfig": map[string]any{"responseJsonSchema": schema},
	}}
}
