package provider_test

import (
	"strings"
	"testing"

	"github.com/docjobs/docjobs/internal/provider"
)

func TestSystemPrompt(t *testing.T) {
	for _, c := range []struct {
		format string
		want   []string
	}{
		{"markdown", []string{"exactly as written", "Never invent text", "no commentary", "Markdown", provider.BlankAnswer}},
		{"html", []string{"exactly as written", "Never invent text", "HTML fragment", "<table>", provider.BlankAnswer}},
	} {
		p := provider.SystemPrompt(c.format)
		for _, w := range c.want {
			if !strings.Contains(strings.ToLower(p), strings.ToLower(w)) {
				t.Errorf("%s prompt lacks %q", c.format, w)
			}
		}
	}
}

func TestCleanTranscription(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"plain text is kept", "# Title\n\nBody", "# Title\n\nBody"},
		{"surrounding whitespace goes", "\n\n  Body  \n", "Body"},
		{"a fence with a language goes", "```markdown\n# Title\n\nBody\n```", "# Title\n\nBody"},
		{"a bare fence goes", "```\n<p>x</p>\n```", "<p>x</p>"},
		{"a fence inside the text stays", "Intro\n\n```\ncode\n```", "Intro\n\n```\ncode\n```"},
		{"the blank answer is empty", provider.BlankAnswer, ""},
		{"the blank answer in any case, with a period", "[blank].", ""},
		{"the blank answer in a fence", "```\n[BLANK]\n```", ""},
		{"an empty answer is empty", "  \n", ""},
		{"a word that merely contains blank stays", "Blanket", "Blanket"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := provider.CleanTranscription(c.in); got != c.want {
				t.Errorf("CleanTranscription(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestTranscription(t *testing.T) {
	cases := []struct {
		name, in, want string
		empty          bool
	}{
		{"a transcription is its text", "```\n# Title\n```", "# Title", false},
		{"the blank answer is a blank page", provider.BlankAnswer, "", false},
		{"the blank answer in a fence is a blank page", "```\n[blank]\n```", "", false},
		{"no text at all is an empty answer", "", "", true},
		{"white space is an empty answer", " \n\t", "", true},
		{"an empty fence is an empty answer", "```\n```", "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := provider.Transcription(c.in, 200)
			if got != c.want || (err != nil) != c.empty {
				t.Fatalf("Transcription(%q) = %q, %v; want %q, empty answer %t", c.in, got, err, c.want, c.empty)
			}
			if c.empty && (err.Category != provider.CategoryServer || !err.Retryable() ||
				err.Error() != "provider error (category=server, status=200): empty answer") {
				t.Errorf("error = %q (%s), want a retryable server error saying the answer was empty", err, err.Category)
			}
		})
	}
}
