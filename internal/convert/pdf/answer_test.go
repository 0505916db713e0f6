package pdf

import "testing"

func TestAnswerFormat(t *testing.T) {
	tests := []struct {
		name, reported, text, want string
	}{
		{"an HTML fragment", "html", "<h1>T</h1><p>x</p>", "html"},
		{"tags in upper case", "html", "<P>Text</P>", "html"},
		{"only an inline tag", "html", "Total <strong>12</strong>", "html"},
		{"an HTML table with a dash row inside a cell", "html", "<table><tr><td>---</td></tr></table>", "html"},
		{"a markdown heading first", "html", "# Title\n\n<p>x</p>", "markdown"},
		{"a markdown table after a paragraph", "html", "Intro<br>\n\n| a |\n|---|\n| 1 |", "markdown"},
		{"a markdown list first", "html", "- one\n- two", "markdown"},
		{"plain text", "html", "Line one\n\nLine two", "markdown"},
		{"comparisons are not tags", "html", "if a < b and c > d", "markdown"},
		{"the illegible marker in brackets is not a tag", "html", "Name: <illegible>", "markdown"},
		{"a markdown recognition stays markdown", "markdown", "<p>x</p>", "markdown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := answerFormat(tt.reported, tt.text); got != tt.want {
				t.Fatalf("answerFormat(%q, %q) = %q, want %q", tt.reported, tt.text, got, tt.want)
			}
		})
	}
}
