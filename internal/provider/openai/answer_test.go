package openai

import (
	"encoding/json"
	"testing"

	oa "github.com/openai/openai-go"
)

// benchAnswer is the answer docjobs bench's stand-in gives.
const benchAnswer = `{"id":"b","object":"chat.completion","created":1,"model":"bench",` +
	`"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"{\"ok\":true}"}}],` +
	`"usage":{"prompt_tokens":300,"completion_tokens":5,"total_tokens":305}}`

// TestAnswersDecodeAsTheSDK checks that the fields the adapters read come
// out of an answer as the SDK's ChatCompletion reads them, odd answers of
// compatible servers included.
func TestAnswersDecodeAsTheSDK(t *testing.T) {
	cases := []struct{ name, body string }{
		{"an answer", benchAnswer},
		{"a refusal with null content",
			`{"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help"},"finish_reason":"stop"}]}`},
		{"several choices", `{"choices":[{"finish_reason":"length","message":{"content":"a"}},{"finish_reason":"stop","message":{"content":"b"}}]}`},
		{"no usage", `{"choices":[{"finish_reason":"stop","message":{"content":"x"}}]}`},
		{"null usage and choices", `{"choices":null,"usage":null}`},
		{"no choices", `{"choices":[]}`},
		{"escapes and unicode", `{"choices":[{"finish_reason":"stop","message":{"content":"caf\u00e9 \"q\" \ud83d\ude00\n"}}]}`},
		{"unknown fields everywhere", `{"x":{"y":[1,2]},"choices":[{"logprobs":null,"message":{"tool_calls":[{"id":"1"}],"content":"x","annotations":[]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens_details":{"cached_tokens":3},"prompt_tokens":7,"completion_tokens":2}}`},
		{"content of an unexpected type", `{"choices":[{"finish_reason":"stop","message":{"content":[{"type":"text","text":"x"}]}}],"usage":{"prompt_tokens":4,"completion_tokens":1}}`},
		{"tokens of an unexpected type", `{"choices":[{"finish_reason":"stop","message":{"content":"x"}}],"usage":{"prompt_tokens":"4","completion_tokens":1}}`},
		{"tokens as floats, words and null", `{"choices":[],"usage":{"prompt_tokens":4.0,"completion_tokens":"many"}}`},
		{"null tokens", `{"choices":[],"usage":{"prompt_tokens":null,"completion_tokens":2}}`},
		{"a number as content", `{"choices":[{"finish_reason":"stop","message":{"content":42,"refusal":false}}]}`},
		{"a choices object instead of a list", `{"choices":{"finish_reason":"stop"},"usage":{"prompt_tokens":4,"completion_tokens":1}}`},
		{"null", `null`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var sdk *oa.ChatCompletion
			sdkErr := json.Unmarshal([]byte(c.body), &sdk)
			var ours *completion
			err := json.Unmarshal([]byte(c.body), &ours)
			if (err != nil) != (sdkErr != nil) {
				t.Fatalf("err %v, the SDK's %v", err, sdkErr)
			}
			if (ours == nil) != (sdk == nil) {
				t.Fatalf("answer %v, the SDK's %v", ours, sdk)
			}
			if ours == nil {
				return
			}
			if len(ours.Choices) != len(sdk.Choices) {
				t.Fatalf("%d choices, the SDK %d", len(ours.Choices), len(sdk.Choices))
			}
			for i, ch := range ours.Choices {
				want := sdk.Choices[i]
				if ch.FinishReason != want.FinishReason || ch.Message.Content != want.Message.Content || ch.Message.Refusal != want.Message.Refusal {
					t.Errorf("choice %d: %+v, the SDK's finish %q content %q refusal %q", i, ch, want.FinishReason, want.Message.Content, want.Message.Refusal)
				}
			}
			if ours.Usage.PromptTokens != sdk.Usage.PromptTokens || ours.Usage.CompletionTokens != sdk.Usage.CompletionTokens {
				t.Errorf("usage %+v, the SDK's %d/%d", ours.Usage, sdk.Usage.PromptTokens, sdk.Usage.CompletionTokens)
			}
		})
	}
	t.Run("malformed JSON fails", func(t *testing.T) {
		var ours *completion
		if err := json.Unmarshal([]byte(`{"choices":[`), &ours); err == nil {
			t.Fatal("no error")
		}
	})
}

func BenchmarkDecodeAnswer(b *testing.B) {
	body := []byte(benchAnswer)
	b.Run("sdk", func(b *testing.B) {
		for b.Loop() {
			var res *oa.ChatCompletion
			if err := json.Unmarshal(body, &res); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("completion", func(b *testing.B) {
		for b.Loop() {
			var res *completion
			if err := json.Unmarshal(body, &res); err != nil {
				b.Fatal(err)
			}
		}
	})
}
