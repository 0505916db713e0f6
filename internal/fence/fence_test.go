package fence

import "testing"

func TestStrip(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"a fence naming its language is read inside", "```json\n{\"a\":1}\n```", "{\"a\":1}\n"},
		{"white space around a bare fence is ignored", "  ```\n[1]\n```  \n", "[1]\n"},
		{"an empty block is empty", "```\n```", ""},
		{"two blocks are kept as they are", "```a\n1\n```\n\n```b\n2\n```", "```a\n1\n```\n\n```b\n2\n```"},
		{"backticks inside a JSON string are no fence", "{\"a\":\"```\"}", "{\"a\":\"```\"}"},
		{"text without a fence is kept", "text", "text"},
		{"a fence on one line is kept", "```{\"a\":1}```", "```{\"a\":1}```"},
		{"a backtick in the opening line is no fence", "```a`\n1\n```", "```a`\n1\n```"},
		{"text before the fence keeps it", "Here:\n```json\n{}\n```", "Here:\n```json\n{}\n```"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Strip(tt.in); got != tt.want {
				t.Errorf("Strip(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
