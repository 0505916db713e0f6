package openai

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/docjobs/docjobs/internal/provider"
)

// completion is the part of a chat completions answer the adapters read,
// decoded with encoding/json rather than into the SDK's ChatCompletion. The
// SDK's decoder looks each field up by name through reflection on every
// answer and recurses a level per nested type: 50 µs of CPU per answer
// (and the stack growth of a fresh goroutine) against a few with
// encoding/json, paid a hundred times over in the burst of a job's answers
// (docs/benchmarks.md). TestAnswersDecodeAsTheSDK keeps the two readings
// the same.
type completion struct {
	Choices []choice `json:"choices"`
	Usage   usage    `json:"usage"`
}

type choice struct {
	FinishReason string        `json:"finish_reason"`
	Message      answerMessage `json:"message"`
}

type answerMessage struct {
	Content string
	Refusal string
}

func (m *answerMessage) UnmarshalJSON(b []byte) error {
	var v struct {
		Content text `json:"content"`
		Refusal text `json:"refusal"`
	}
	err := json.Unmarshal(b, &v)
	m.Content, m.Refusal = string(v.Content), string(v.Refusal)
	return err
}

type usage struct {
	PromptTokens     int64
	CompletionTokens int64
}

func (u *usage) UnmarshalJSON(b []byte) error {
	var v struct {
		PromptTokens     provider.TokenCount `json:"prompt_tokens"`
		CompletionTokens provider.TokenCount `json:"completion_tokens"`
	}
	err := json.Unmarshal(b, &v)
	u.PromptTokens, u.CompletionTokens = int64(v.PromptTokens), int64(v.CompletionTokens)
	return err
}

// UnmarshalJSON reads what it can, as the SDK does: a field of an
// unexpected type (a compatible server's quirk) is read as text and
// tokens are read as the SDK reads them (within provider.Tokens' bounds),
// or left empty, rather than failing the whole answer. Malformed JSON still fails.
func (c *completion) UnmarshalJSON(b []byte) error {
	type plain completion
	err := json.Unmarshal(b, (*plain)(c))
	if te := (*json.UnmarshalTypeError)(nil); errors.As(err, &te) {
		return nil
	}
	return err
}

// text is a JSON string; any other value but null is kept as its JSON
// text, as the SDK keeps it.
type text string

func (t *text) UnmarshalJSON(b []byte) error {
	switch {
	case bytes.Equal(b, []byte("null")):
		*t = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = text(s)
	default:
		*t = text(b)
	}
	return nil
}
