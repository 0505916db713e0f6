package office

import "testing"

func TestInlineMarkdown(t *testing.T) {
	b := func(s string) span { return span{text: s, bold: true} }
	i := func(s string) span { return span{text: s, italic: true} }
	tx := func(s string) span { return span{text: s} }
	tests := []struct {
		name  string
		spans []span
		want  string
	}{
		{"adjacent runs of one format merge", []span{b("bo"), b("ld")}, "**bold**"},
		{"white space moves outside delimiters", []span{tx("a"), b(" bold "), tx("b")}, "a **bold** b"},
		{"a nested format keeps the outer open", []span{b("x "), {text: "y", bold: true, italic: true}, b(" z")}, "**x *y* z**"},
		{"white-space-only runs take no delimiters", []span{b("a"), b("  "), b("b")}, "**a  b**"},
		{"intraword emphasis", []span{i("ita"), {text: "li", italic: true, strike: true}, i("c")}, "*ita~~li~~c*"},
		{"links wrap their formatted text", []span{tx("see "), {text: "the site", bold: true, link: "https://x.example/"}, tx(".")}, "see [**the site**](https://x.example/)."},
		{"line breaks close formatting", []span{b("one"), {lineBreak: true}, b("two")}, "**one**  \n**two**"},
		{"breaks at the edges are dropped", []span{{lineBreak: true}, tx(" a "), {lineBreak: true}}, "a"},
		{"text is escaped, raw spans are not", []span{tx("*a*"), {text: "[^1]", raw: true}}, `\*a\*[^1]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := inlineMarkdown(tt.spans, "  \n", false); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{`C:\dir\file`, `C:\dir\file`},
		{`a\*b`, `a\\\*b`},
		{`snake_case`, `snake_case`},
		{`_lead and trail_`, `\_lead and trail\_`},
		{`a < b, <b>`, `a < b, \<b>`},
		{`[ref]: x`, `[ref\]: x`},
		{`~~ ~`, `\~\~ ~`},
		{"ünïcödé", "ünïcödé"},
	}
	for _, tt := range tests {
		if got := escapeText(tt.in); got != tt.want {
			t.Errorf("escapeText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	lines := []struct{ in, want string }{
		{"# h", `\# h`},
		{"#hashtag", `\#hashtag`},
		{"> q", `\> q`},
		{"- item", `\- item`},
		{"-5 degrees", "-5 degrees"},
		{"+ item", `\+ item`},
		{"---", `\---`},
		{"12. item", `12\. item`},
		{"3) item", `3\) item`},
		{"2024. A year", `2024\. A year`},
		{"3.14 pi", "3.14 pi"},
		{"===", `\===`},
	}
	for _, tt := range lines {
		if got := escapeLineStart(tt.in); got != tt.want {
			t.Errorf("escapeLineStart(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestPipeTable(t *testing.T) {
	got := pipeTable([][]string{{"h1", "h2", "h3"}, {"short"}}, 3)
	want := "| h1 | h2 | h3 |\n| --- | --- | --- |\n| short |  |  |"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
