package chunk

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

func counter(t testing.TB) *Counter {
	t.Helper()
	c, err := NewCounter("gpt-4o")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// split runs Split and checks the invariants every result must hold:
// indexes in order, exact counts within budget, and reassembly to the
// input byte for byte.
func split(t testing.TB, text, format string, budget int) []Chunk {
	t.Helper()
	return splitWith(t, "", text, format, budget)
}

// raceOr is full, or short under the race detector. Its callers run in one
// goroutine, where the detector finds nothing and makes each step seven to
// twenty times slower (make test runs every package under -race); short
// keeps every case and assertion of the test, with less input or fewer
// steps, and go test without -race runs the full ones.
func raceOr[T any](full, short T) T {
	if raceEnabled {
		return short
	}
	return full
}

// splitWith is split counting for model ("": gpt-4o, o200k_base).
func splitWith(t testing.TB, model, text, format string, budget int) []Chunk {
	t.Helper()
	c := counter(t)
	if model != "" {
		var err error
		if c, err = NewCounter(model); err != nil {
			t.Fatal(err)
		}
	}
	chunks, err := Split(text, format, budget, c)
	if err != nil {
		t.Fatalf("Split(%s, budget %d, %s): %v", format, budget, c.Encoding(), err)
	}
	checkInvariants(t, c, text, EffectiveBudget(budget), chunks)
	return chunks
}

func checkInvariants(t testing.TB, c *Counter, text string, budget int, chunks []Chunk) {
	t.Helper()
	checkCounts(t, c, text, budget, chunks)
	for i, ch := range chunks {
		if ch.New() == "" {
			t.Fatalf("chunk %d adds no text", i)
		}
		if len(chunks) > 1 && isBlank(ch.New()) && !wedged(c, budget, chunks, i) {
			t.Fatalf("chunk %d adds only whitespace in %s: %q", i, c.Encoding(), ch.New())
		}
	}
}

// wedged reports whether chunk i, only white space, stands between two
// whole tags (or a whole tag and the text's start or end) whose chunks
// cannot take it: each byte must be new in some chunk, and neither tag
// can be cut without cutting markup, so no split does better. Anything
// else (white space beside text, which can give it a character) may not
// make a chunk of its own.
func wedged(c *Counter, budget int, chunks []Chunk, i int) bool {
	ch := chunks[i]
	w := ch.New()
	if i > 0 {
		prev := chunks[i-1]
		body := prev.Body()
		if !endsWithWholeTag(body) || c.Count(prev.Text[:len(prev.Text)-prev.Suffix]+w+ch.Text[len(ch.Text)-ch.Suffix:]) <= budget {
			return false
		}
	}
	if i+1 < len(chunks) {
		next := chunks[i+1]
		if !strings.HasPrefix(next.New(), "<") || c.Count(ch.Text[:ch.Prefix]+w+next.New()+next.Text[len(next.Text)-next.Suffix:]) <= budget {
			return false
		}
	}
	return true
}

// endsWithWholeTag reports whether s ends with a tag that starts in s:
// its last '>' closes the last '<', with no other '>' between them.
func endsWithWholeTag(s string) bool {
	lt := strings.LastIndexByte(s, '<')
	return strings.HasSuffix(s, ">") && lt >= 0 && strings.IndexByte(s[lt:], '>') == len(s)-lt-1
}

// checkCounts checks what counting must give: indexes in order, each
// chunk's Tokens its text's exact count in c's encoding and within
// budget, and reassembly to the input byte for byte.
func checkCounts(t testing.TB, c *Counter, text string, budget int, chunks []Chunk) {
	t.Helper()
	for i, ch := range chunks {
		if ch.Index != i {
			t.Fatalf("chunk %d has Index %d", i, ch.Index)
		}
		if got := c.Count(ch.Text); got != ch.Tokens {
			t.Fatalf("chunk %d: Tokens %d, but its text counts %d in %s", i, ch.Tokens, got, c.Encoding())
		}
		if ch.Tokens > budget {
			t.Fatalf("chunk %d: %d tokens over budget %d in %s", i, ch.Tokens, budget, c.Encoding())
		}
	}
	got, err := Reassemble(chunks)
	if err != nil {
		t.Fatal(err)
	}
	if got != text {
		t.Fatalf("reassembled text differs from input:\n got %q\nwant %q", got, text)
	}
}

func checkXML(t testing.TB, chunks []Chunk) {
	t.Helper()
	for _, ch := range chunks {
		d := xml.NewDecoder(strings.NewReader(ch.Text))
		d.Entity = referencedEntities(ch.Text) // as the splitter reads the document
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("chunk %d is not well-formed XML: %v\n%s", ch.Index, err, ch.Text)
			}
		}
	}
}

// checkHTML tokenizes each chunk and requires every start tag (but void
// elements) to be closed by a matching end tag, in order.
func checkHTML(t testing.TB, chunks []Chunk) {
	t.Helper()
	for _, ch := range chunks {
		z := html.NewTokenizer(strings.NewReader(ch.Text))
		var stack []string
	tokens:
		for {
			switch z.Next() {
			case html.ErrorToken:
				break tokens
			case html.StartTagToken:
				b, _ := z.TagName()
				if !voidElements[string(b)] {
					stack = append(stack, string(b))
				}
			case html.EndTagToken:
				b, _ := z.TagName()
				if len(stack) == 0 || stack[len(stack)-1] != string(b) {
					t.Fatalf("chunk %d: </%s> does not close %v\n%s", ch.Index, b, stack, ch.Text)
				}
				stack = stack[:len(stack)-1]
			}
		}
		if len(stack) > 0 {
			t.Fatalf("chunk %d leaves %v open\n%s", ch.Index, stack, ch.Text)
		}
	}
}

func records(n int, format string, sep string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "record %d: customer=Customer %d, amount=%d.%02d EUR, note=delivered on time%s", i, i*7, i*13, i%100, sep)
	}
	return b.String()
}

// TestFourHundredRecords is the acceptance: a 400-record document
// at budget 1000 gives ordered chunks, all within budget, that together
// contain every record whole.
func TestFourHundredRecords(t *testing.T) {
	var table strings.Builder
	table.WriteString("# Orders\n\n| record | customer | amount |\n|---|---|---|\n")
	for i := 1; i <= 400; i++ {
		fmt.Fprintf(&table, "| record %d: | Customer %d | %d.%02d EUR |\n", i, i*7, i*13, i%100)
	}
	tests := []struct {
		name, format, text string
	}{
		{"plain lines in one paragraph", FormatPlain, records(400, FormatPlain, "\n")},
		{"markdown paragraphs", FormatMarkdown, records(400, FormatMarkdown, "\n\n")},
		{"markdown lines in one paragraph", FormatMarkdown, records(400, FormatMarkdown, "\n")},
		{"markdown pipe table", FormatMarkdown, table.String()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks := split(t, tt.text, tt.format, 1000)
			if len(chunks) < 2 {
				t.Fatalf("%d chunks; the document needs several at budget 1000", len(chunks))
			}
			for i := 1; i < len(chunks); i++ {
				if chunks[i].Start <= chunks[i-1].Start {
					t.Fatalf("chunk %d starts at %d, before chunk %d at %d", i, chunks[i].Start, i-1, chunks[i-1].Start)
				}
			}
			next := 0 // records appear in order, each whole in some chunk
			for i := 1; i <= 400; i++ {
				rec := fmt.Sprintf("record %d:", i)
				found := false
				for _, ch := range chunks[next:] {
					if line := lineContaining(ch.Text, rec); line != "" && strings.Contains(tt.text, line) {
						found = true
						break
					}
					next++
				}
				if !found {
					t.Fatalf("record %d is in no chunk whole (or out of order)", i)
				}
			}
		})
	}
}

// lineContaining returns the whole line of s holding rec, "" if none.
func lineContaining(s, rec string) string {
	for _, line := range strings.SplitAfter(s, "\n") {
		if strings.HasPrefix(line, rec) || strings.HasPrefix(line, "| "+rec) {
			return line
		}
	}
	return ""
}

func TestSplitMarkdown(t *testing.T) {
	para := func(n int) string {
		return strings.TrimSpace(strings.Repeat("The quick brown fox jumps over the lazy dog. ", n)) + "\n\n"
	}
	sections := "# One\n\n" + para(6) + para(6) + "# Two\n\n" + para(6) + para(6) + "# Three\n\n" + para(6)

	t.Run("document within budget is one chunk", func(t *testing.T) {
		chunks := split(t, sections, FormatMarkdown, 0)
		if len(chunks) != 1 || chunks[0].Text != sections {
			t.Fatalf("got %d chunks", len(chunks))
		}
	})
	t.Run("splits at headings before paragraphs", func(t *testing.T) {
		chunks := split(t, sections, FormatMarkdown, 200)
		for _, ch := range chunks[1:] {
			if !strings.HasPrefix(ch.New(), "# ") {
				t.Errorf("chunk %d's new text starts mid-section: %.30q", ch.Index, ch.New())
			}
		}
	})
	t.Run("oversized paragraph splits at sentences", func(t *testing.T) {
		text := para(60)
		chunks := split(t, text, FormatMarkdown, 100)
		for _, ch := range chunks[:len(chunks)-1] {
			if !strings.HasSuffix(ch.Body(), "dog.") {
				t.Errorf("chunk %d ends mid-sentence: ...%q", ch.Index, ch.Body()[max(0, len(ch.Body())-20):])
			}
		}
	})
	t.Run("sentence longer than budget splits at words", func(t *testing.T) {
		text := strings.Repeat("word ", 400)
		chunks := split(t, text, FormatMarkdown, 50)
		for _, ch := range chunks {
			if strings.Contains(ch.Text, "wor ") || strings.HasPrefix(ch.New(), "ord") {
				t.Errorf("chunk %d cut a word: %q", ch.Index, ch.Text)
			}
		}
	})
	t.Run("word longer than budget splits as a last resort", func(t *testing.T) {
		split(t, strings.Repeat("x9Qz", 500), FormatMarkdown, 30)
	})
	t.Run("consecutive chunks overlap by one block", func(t *testing.T) {
		text := records(40, FormatMarkdown, "\n\n")
		chunks := split(t, text, FormatMarkdown, 120)
		for i := 1; i < len(chunks); i++ {
			prev := strings.Split(strings.TrimSpace(chunks[i-1].Body()), "\n\n")
			if chunks[i].Overlap == 0 || !strings.HasPrefix(chunks[i].Body(), prev[len(prev)-1]) {
				t.Errorf("chunk %d does not begin with chunk %d's last record %q", i, i-1, prev[len(prev)-1])
			}
		}
	})
	t.Run("table split across chunks repeats header and separator", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("Intro.\n\n| id | name |\n|:--|--:|\n")
		for i := 0; i < 60; i++ {
			fmt.Fprintf(&b, "| %d | name %d |\n", i, i)
		}
		chunks := split(t, b.String(), FormatMarkdown, 80)
		if len(chunks) < 3 {
			t.Fatalf("%d chunks", len(chunks))
		}
		for _, ch := range chunks[1:] {
			if !strings.HasPrefix(ch.Text, "| id | name |\n|:--|--:|\n| ") {
				t.Errorf("chunk %d lacks the table header: %.40q", ch.Index, ch.Text)
			}
		}
	})
	t.Run("fenced code keeps its blank lines together", func(t *testing.T) {
		code := "```go\nfunc a() {}\n\nfunc b() {}\n```\n"
		text := para(3) + code + "\n" + para(3)
		chunks := split(t, text, FormatMarkdown, 50)
		found := false
		for _, ch := range chunks {
			found = found || strings.Contains(ch.Text, code)
		}
		if !found {
			t.Error("no chunk holds the whole code block")
		}
	})
	t.Run("code block split across chunks re-opens and closes its fence", func(t *testing.T) {
		var b strings.Builder
		b.WriteString(para(2) + "```json\n[\n")
		for i := 0; i < 60; i++ {
			fmt.Fprintf(&b, "  {\"id\": %d, \"name\": \"item %d\"},\n", i, i)
		}
		b.WriteString("]\n```\n\nAfter the code.\n")
		chunks := split(t, b.String(), FormatMarkdown, 80)
		if len(chunks) < 3 {
			t.Fatalf("%d chunks", len(chunks))
		}
		for _, ch := range chunks {
			fences := 0
			for _, line := range strings.SplitAfter(ch.Text, "\n") {
				if strings.HasPrefix(line, "```") {
					fences++
				}
			}
			if fences%2 != 0 {
				t.Errorf("chunk %d leaves a fence open: %q", ch.Index, ch.Text)
			}
			if strings.Contains(ch.Body(), `"id"`) && !strings.Contains(ch.Text, "```json\n") {
				t.Errorf("chunk %d holds code without its fence: %.60q", ch.Index, ch.Text)
			}
		}
	})
	t.Run("overlong line inside a code block closes its fence on a line of its own", func(t *testing.T) {
		text := "```\n" + strings.Repeat("word ", 200) + "\nend\n```\n"
		chunks := split(t, text, FormatMarkdown, 60)
		for _, ch := range chunks[:len(chunks)-1] {
			if !strings.HasSuffix(ch.Text, "\n```\n") {
				t.Errorf("chunk %d does not close the fence on its own line: %q", ch.Index, ch.Text[max(0, len(ch.Text)-20):])
			}
		}
		for _, ch := range chunks[1:] {
			if !strings.HasPrefix(ch.Text, "```\n") {
				t.Errorf("chunk %d does not re-open the fence: %.20q", ch.Index, ch.Text)
			}
		}
	})
}

func TestSplitPlain(t *testing.T) {
	t.Run("paragraphs stay whole when they fit", func(t *testing.T) {
		p := strings.Repeat("Alpha beta gamma delta. ", 8) + "\n\n"
		chunks := split(t, strings.Repeat(p, 10), FormatPlain, 120)
		for _, ch := range chunks {
			if !strings.HasSuffix(ch.Body(), "\n\n") {
				t.Errorf("chunk %d ends inside a paragraph", ch.Index)
			}
		}
	})
	t.Run("oversized paragraph splits at lines", func(t *testing.T) {
		chunks := split(t, records(50, FormatPlain, "\n"), FormatPlain, 100)
		for _, ch := range chunks {
			if !strings.HasSuffix(ch.Text, "\n") || !strings.HasPrefix(ch.Text, "record ") {
				t.Errorf("chunk %d is not whole lines: %q", ch.Index, ch.Text)
			}
		}
	})
	t.Run("long line splits at sentences", func(t *testing.T) {
		text := strings.Repeat("One sentence here! Another one? ", 50)
		chunks := split(t, text, FormatPlain, 40)
		for _, ch := range chunks[:len(chunks)-1] {
			b := ch.Body()
			if !strings.HasSuffix(b, "!") && !strings.HasSuffix(b, "?") {
				t.Errorf("chunk %d ends mid-sentence: %q", ch.Index, b)
			}
		}
	})
	t.Run("empty text gives no chunks", func(t *testing.T) {
		if chunks := split(t, "", FormatPlain, 0); len(chunks) != 0 {
			t.Errorf("%d chunks", len(chunks))
		}
	})
}

func TestSplitHTML(t *testing.T) {
	rows := func(n int) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "<tr><td>%d</td><td>Customer &amp; Co %d</td></tr>\n", i, i)
		}
		return b.String()
	}
	t.Run("split inside an element re-opens ancestors with attributes", func(t *testing.T) {
		var b strings.Builder
		b.WriteString(`<div class="doc" lang="en"><section id="s1">`)
		for i := 0; i < 40; i++ {
			fmt.Fprintf(&b, "<p>Paragraph %d has <b>bold</b> text.</p>\n", i)
		}
		b.WriteString("</section></div>")
		chunks := split(t, b.String(), FormatHTML, 90)
		checkHTML(t, chunks)
		for _, ch := range chunks[1:] {
			if !strings.HasPrefix(ch.Text, `<div class="doc" lang="en"><section id="s1">`) || !strings.HasSuffix(ch.Text, "</section></div>") {
				t.Errorf("chunk %d does not re-open and close its ancestors:\n%s", ch.Index, ch.Text)
			}
		}
	})
	t.Run("table split across chunks repeats its thead", func(t *testing.T) {
		text := "<table><thead><tr><th>id</th><th>name</th></tr></thead><tbody>\n" + rows(40) + "</tbody></table>"
		chunks := split(t, text, FormatHTML, 120)
		checkHTML(t, chunks)
		for _, ch := range chunks[1:] {
			if !strings.HasPrefix(ch.Text, "<table><thead><tr><th>id</th><th>name</th></tr></thead><tbody>") {
				t.Errorf("chunk %d lacks the header: %.80q", ch.Index, ch.Text)
			}
		}
	})
	t.Run("table without thead repeats its first row", func(t *testing.T) {
		text := "<table>\n<tbody>\n<tr><th>id</th><th>name</th></tr>\n" + rows(40) + "</tbody>\n</table>\n"
		chunks := split(t, text, FormatHTML, 120)
		checkHTML(t, chunks)
		for _, ch := range chunks[1:] {
			if !strings.HasPrefix(ch.Text, "<table><tbody><tr><th>id</th><th>name</th></tr>") {
				t.Errorf("chunk %d lacks the header row: %.80q", ch.Index, ch.Text)
			}
		}
	})
	t.Run("long text node splits at sentences inside its element", func(t *testing.T) {
		text := "<article><p>" + strings.Repeat("Fish &amp; chips are tasty. ", 60) + "</p></article>"
		chunks := split(t, text, FormatHTML, 60)
		checkHTML(t, chunks)
		for _, ch := range chunks {
			if strings.Contains(ch.Text, "&amp</") || strings.Contains(ch.Text, ">amp;") {
				t.Errorf("chunk %d cut an entity: %q", ch.Index, ch.Text)
			}
		}
	})
	t.Run("void elements and comments are kept", func(t *testing.T) {
		text := "<div><!-- note -->" + strings.Repeat("<p>line<br>next<img src=\"a.png\"></p>\n", 30) + "</div>"
		checkHTML(t, split(t, text, FormatHTML, 60))
	})
	t.Run("converter output with right-to-left wrapper", func(t *testing.T) {
		text := "<div dir=\"rtl\" lang=\"ar\">\n" + strings.Repeat("<p>مرحبا بالعالم. هذا نص.</p>\n", 50) + "</div>"
		checkHTML(t, split(t, text, FormatHTML, 80))
	})
}

func TestSplitXML(t *testing.T) {
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<inv:invoices xmlns:inv=\"urn:example:inv\" version=\"2\">\n")
	for i := 0; i < 50; i++ {
		fmt.Fprintf(&b, "  <inv:invoice id=\"%d\"><inv:amount currency=\"EUR\">%d.00</inv:amount><inv:note>A &lt; B</inv:note><inv:empty/></inv:invoice>\n", i, i)
	}
	b.WriteString("</inv:invoices>\n")
	text := b.String()

	t.Run("chunks are well-formed and re-open the namespaced root", func(t *testing.T) {
		chunks := split(t, text, FormatXML, 150)
		checkXML(t, chunks)
		for _, ch := range chunks[1:] {
			if !strings.HasPrefix(ch.Text, `<inv:invoices xmlns:inv="urn:example:inv" version="2">`) {
				t.Errorf("chunk %d does not re-open the root: %.60q", ch.Index, ch.Text)
			}
		}
	})
	t.Run("elements stay whole when they fit", func(t *testing.T) {
		for _, ch := range split(t, text, FormatXML, 150) {
			if strings.Count(ch.Body(), "<inv:invoice ") != strings.Count(ch.Body(), "</inv:invoice>") {
				t.Errorf("chunk %d splits an invoice", ch.Index)
			}
		}
	})
	t.Run("entities of an external DTD do not send the file to the plain-text splitter", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("<?xml version=\"1.0\"?>\n<!DOCTYPE article PUBLIC \"-//NLM//DTD JATS (Z39.96) Journal Publishing DTD v1.2 20190208//EN\" \"JATS-journalpublishing1.dtd\">\n<article><body>\n")
		for i := 0; i < 40; i++ {
			fmt.Fprintf(&b, "<p>Caf&eacute; number %d &mdash; na&iuml;ve &amp; &nbsp;fine.</p>\n", i)
		}
		b.WriteString("</body></article>\n")
		chunks := split(t, b.String(), FormatXML, 150)
		checkXML(t, chunks)
		if len(chunks) < 2 {
			t.Fatalf("%d chunks, want the text split", len(chunks))
		}
		for _, ch := range chunks[1:] {
			if !strings.HasPrefix(ch.Text, "<article><body>") {
				t.Errorf("chunk %d does not re-open its ancestors (split as plain text?): %.60q", ch.Index, ch.Text)
			}
		}
	})
	t.Run("malformed XML is split as plain text", func(t *testing.T) {
		split(t, strings.Repeat("<a><b>text</a>\n", 100), FormatXML, 50)
	})
}

func TestSplitErrors(t *testing.T) {
	c := counter(t)
	tests := []struct {
		name, text, format string
		budget             int
		want               error
	}{
		{"unknown format", "x", "pdf", 0, ErrFormat},
		{"a character larger than the budget", "🦒", FormatPlain, 1, ErrBudgetTooSmall},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Split(tt.text, tt.format, tt.budget, c); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestReassembleRejectsGapsAndReordering(t *testing.T) {
	chunks := split(t, records(30, FormatPlain, "\n"), FormatPlain, 60)
	if len(chunks) < 3 {
		t.Fatalf("%d chunks", len(chunks))
	}
	tests := []struct {
		name   string
		chunks []Chunk
	}{
		{"a chunk missing", append(append([]Chunk{}, chunks[:1]...), chunks[2:]...)},
		{"chunks swapped", append([]Chunk{chunks[1], chunks[0]}, chunks[2:]...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Reassemble(tt.chunks); !errors.Is(err, ErrReassemble) {
				t.Errorf("err = %v, want ErrReassemble", err)
			}
		})
	}
}

// TestSplitProperties checks, over seeded random documents of every format
// and a range of budgets, that no chunk exceeds the budget, no text is
// dropped, and markup chunks are well-formed.
func TestSplitProperties(t *testing.T) {
	c := counter(t)
	rng := rand.New(rand.NewPCG(4, 2026))
	formats := []string{FormatMarkdown, FormatPlain, FormatHTML, FormatXML}
	iterations := 60
	if testing.Short() {
		iterations = 15
	}
	for i := 0; i < iterations; i++ {
		format := formats[i%len(formats)]
		text := generate(rng, format)
		budget := []int{150, 200, 300, 1000, 4000}[rng.IntN(5)]
		if format == FormatMarkdown || format == FormatPlain {
			budget = []int{20, 40, 100, 300, 1000}[rng.IntN(5)]
		}
		chunks, err := Split(text, format, budget, c)
		if err != nil {
			t.Fatalf("%s at budget %d: %v\n%s", format, budget, err, text)
		}
		checkInvariants(t, c, text, budget, chunks)
		switch format {
		case FormatXML:
			checkXML(t, chunks)
		case FormatHTML:
			checkHTML(t, chunks)
		}
	}
}

var vocabulary = strings.Fields("the invoice total amount due customer record shipped order Straße 東京 naïve €12.50 2026-01-31 supercalifragilisticexpialidocious a b x ok")

func sentence(rng *rand.Rand) string {
	n := 1 + rng.IntN(14)
	words := make([]string, n)
	for i := range words {
		words[i] = vocabulary[rng.IntN(len(vocabulary))]
	}
	return strings.Join(words, " ") + []string{".", "!", "?", ".", ";"}[rng.IntN(5)]
}

func generate(rng *rand.Rand, format string) string {
	var b strings.Builder
	switch format {
	case FormatMarkdown, FormatPlain:
		for range rng.IntN(40) {
			switch k := rng.IntN(8); {
			case k == 0 && format == FormatMarkdown:
				fmt.Fprintf(&b, "%s %s\n", strings.Repeat("#", 1+rng.IntN(3)), sentence(rng))
			case k == 1 && format == FormatMarkdown:
				b.WriteString("| a | b |\n|---|---|\n")
				for range rng.IntN(30) {
					fmt.Fprintf(&b, "| %s | %s |\n", sentence(rng), sentence(rng))
				}
			case k == 2:
				for range rng.IntN(20) {
					fmt.Fprintf(&b, "- %s\n", sentence(rng))
				}
			case k == 3:
				b.WriteString(strings.Repeat("z", rng.IntN(400)))
			case k == 4 && format == FormatMarkdown:
				b.WriteString([]string{"```go\n", "~~~\n", "  ````\n"}[rng.IntN(3)])
				for range rng.IntN(30) {
					b.WriteString(sentence(rng) + []string{"\n", "\n\n"}[rng.IntN(2)])
				}
				if rng.IntN(4) > 0 { // sometimes never closed
					b.WriteString([]string{"```\n", "~~~\n", "````\n"}[rng.IntN(3)])
				}
			default:
				for range rng.IntN(12) {
					b.WriteString(sentence(rng) + []string{" ", "\n", "  ", "\t"}[rng.IntN(4)])
				}
			}
			b.WriteString([]string{"\n\n", "\n", "\n\n\n", "\n \n"}[rng.IntN(4)])
		}
	case FormatHTML, FormatXML:
		element(rng, &b, format, 0)
	}
	return b.String()
}

func element(rng *rand.Rand, b *strings.Builder, format string, depth int) {
	names := []string{"div", "section", "p", "ul", "li", "span", "table"}
	if format == FormatXML {
		names = []string{"item", "field", "note", "x:y"}
	}
	name := names[rng.IntN(len(names))]
	if depth == 0 && format == FormatXML {
		name = "r:doc"
	}
	attrs := ""
	if rng.IntN(2) == 0 || name == "r:doc" {
		attrs = fmt.Sprintf(` id="n%d" class="c&amp;%d"`, rng.IntN(100), depth)
		if name == "r:doc" {
			attrs += ` xmlns:r="urn:r" xmlns:x="urn:x"`
		}
	}
	fmt.Fprintf(b, "<%s%s>", name, attrs)
	if name == "table" {
		b.WriteString("<thead><tr><th>k</th><th>v</th></tr></thead><tbody>\n")
		for range rng.IntN(30) {
			fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td></tr>\n", sentence(rng), sentence(rng))
		}
		b.WriteString("</tbody></table>")
		return
	}
	for range rng.IntN(8) {
		switch k := rng.IntN(6); {
		case k < 2 && depth < 4:
			element(rng, b, format, depth+1)
		case k == 2:
			if format == FormatXML {
				b.WriteString("<empty a=\"1\"/><!-- c -->")
			} else {
				b.WriteString("<br><!-- c -->")
			}
		default:
			for range rng.IntN(10) {
				b.WriteString(strings.ReplaceAll(sentence(rng), ";", " &amp; ") + " ")
			}
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(b, "</%s>\n", name)
}

func FuzzSplit(f *testing.F) {
	f.Add("# Title\n\nSome text. More text.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n", uint8(0), uint16(30))
	f.Add("line one\nline two\n\npara two", uint8(1), uint16(20))
	f.Add(`<div class="a"><table><tr><th>h</th></tr><tr><td>x &amp; y</td></tr></table><p>t</p></div>`, uint8(2), uint16(40))
	f.Add(`<?xml version="1.0"?><a xmlns:b="urn:b"><b:c d="e">text &lt; more</b:c><f/></a>`, uint8(3), uint16(40))
	f.Add("<p>unclosed <li>item<li>item", uint8(2), uint16(16))
	f.Add("<div><p>a b</p><plaintext><p>"+strings.Repeat("word ", 30)+"</p></div>", uint8(2), uint16(16))
	f.Add("Intro.\n```json\n{\"a\": 1,\n\n \"b\": [1, 2]}\n```\ntail\n~~~\nopen", uint8(0), uint16(4))
	// Structure larger than the budget: a CDATA section, a comment, a
	// giant attribute, deep nesting, a root start tag filling the budget
	// after the XML declaration.
	f.Add("<?xml version=\"1.0\"?>\n<r><d><![CDATA["+strings.Repeat("cdata text ", 40)+"]]></d></r>\n", uint8(3), uint16(20))
	f.Add("<r><!-- "+strings.Repeat("comment - text ", 40)+" --><a>x</a></r>", uint8(3), uint16(20))
	f.Add("<div><!--"+strings.Repeat("note ", 40)+"--><p>after</p></div>", uint8(2), uint16(20))
	f.Add(`<p>See <a href="https://example.com/?q=`+strings.Repeat("x&amp;y", 100)+`">link</a>.</p>`, uint8(2), uint16(30))
	f.Add(strings.Repeat(`<div class="c"><blockquote>t `, 30)+"deep"+strings.Repeat("</blockquote></div>", 30), uint8(2), uint16(60))
	f.Add(`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<rsm:I xmlns:rsm="urn:a:b:c:d" xmlns:ram="urn:e:f:g:h" xmlns:udt="urn:i:j:k">`+"\n  <rsm:L>1</rsm:L>\n  <rsm:L>2</rsm:L>\n</rsm:I>\n", uint8(3), uint16(24))
	// Headings before oversized sections, a table whose first row is
	// larger than the budget.
	f.Add("## A\n\n| k | v |\n|---|---|\n| 1 | "+strings.Repeat("w ", 60)+"|\n| 2 | x |\n\n## B\n\ntext", uint8(0), uint16(30))
	f.Add("<h2>Title</h2>\n<p>"+strings.Repeat("Some words here. ", 20)+"</p>\n<h3>Next</h3><p>more</p>", uint8(2), uint16(40))
	c := counter(f)
	// Tokens is a sum where joins are clean, for o200k_base and
	// cl100k_base alike, and never for p50k_base: checkInvariants holds
	// every chunk's Tokens to its text's count in each encoding, and no
	// chunk but a text's only one may add only whitespace in any, unless
	// wedged between whole tags (testdata f1882a80119fc2d6, p50k_base, a
	// lone blank line before a code fence; 8e4cb6f603d14bfa, o200k_base,
	// a trailing space; d78cb7db54245227, p50k_base, a space between text
	// and an element; ac7ae213fdb916cb, p50k_base, a space that fits
	// counted exactly; cf2c01490efe1617, p50k_base, a generated page
	// whose chunk became white space when an over-budget count gave
	// units back).
	others := []*Counter{}
	for _, model := range []string{"gpt-4", "text-davinci-003"} {
		oc, err := NewCounter(model)
		if err != nil {
			f.Fatal(err)
		}
		others = append(others, oc)
	}
	formats := []string{FormatMarkdown, FormatPlain, FormatHTML, FormatXML}
	f.Fuzz(func(t *testing.T, text string, format uint8, budget uint16) {
		fm := formats[int(format)%len(formats)]
		b := 16 + int(budget)%2000
		for _, oc := range others {
			chunks, err := Split(text, fm, b, oc)
			if errors.Is(err, ErrBudgetTooSmall) {
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", oc.Encoding(), err)
			}
			checkInvariants(t, oc, text, b, chunks)
		}
		start := time.Now()
		chunks, err := Split(text, fm, b, c)
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("Split took %v", d)
		}
		if errors.Is(err, ErrBudgetTooSmall) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, c, text, b, chunks)
		if fm == FormatXML {
			if root, ok := parseXML(text, maxMarkupNodes); ok && wellFormedPromised(c, text, root, "", "", b) {
				checkXML(t, chunks)
			}
		}
		// The limit changes nothing up to the count, and one under it
		// is refused with a true lower bound.
		n := len(chunks)
		if n == 0 {
			return
		}
		if same, err := SplitAtMost(text, fm, b, n, c); err != nil || !slices.Equal(same, chunks) {
			t.Fatalf("limit %d of %d chunks: err %v, or other chunks", n, n, err)
		}
		if n > 1 {
			_, err := SplitAtMost(text, fm, b, n-1, c)
			tooMany := (*TooManyChunksError)(nil)
			if !errors.As(err, &tooMany) || tooMany.AtLeast != n {
				t.Fatalf("limit %d of %d chunks: err %v, want at least %d", n-1, n, err, n)
			}
		}
	})
}

// wellFormedPromised reports whether Split promises well-formed chunks
// for the document under n at budget: every element re-opened with its
// ancestors leaves half the budget (Split needs a quarter), and every tag,
// but comments and CDATA sections, which are cut into adjacent ones, fits
// with its ancestors.
func wellFormedPromised(c *Counter, text string, n *node, open, close string, budget int) bool {
	for _, ch := range n.children {
		switch ch.kind {
		case kindLeaf:
			t := text[ch.start:ch.end]
			if !strings.HasPrefix(t, "<!--") && !strings.HasPrefix(t, "<![CDATA[") && c.Count(open)+c.Count(t)+c.Count(close) > budget {
				return false
			}
		case kindElement:
			o, cl := open+text[ch.start:ch.openEnd], "</"+ch.name+">"+close
			if c.Count(o)+c.Count(cl) > budget/2 || !wellFormedPromised(c, text, ch, o, cl, budget) {
				return false
			}
		}
	}
	return true
}

// markdownDocument builds a deterministic markdown document of about size
// bytes: sections of prose, lists and tables.
func markdownDocument(size int) string {
	rng := rand.New(rand.NewPCG(1, 1))
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "## Section %d\n\n", i)
		for range 4 {
			for range 6 {
				b.WriteString(sentence(rng) + " ")
			}
			b.WriteString("\n\n")
		}
		for range 5 {
			fmt.Fprintf(&b, "- %s\n", sentence(rng))
		}
		b.WriteString("\n| item | qty | price |\n|---|---:|---:|\n")
		for j := range 8 {
			fmt.Fprintf(&b, "| %s | %d | %d.99 |\n", vocabulary[rng.IntN(len(vocabulary))], j, j*3)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func BenchmarkSplitMarkdown1MB(b *testing.B) {
	c := counter(b)
	text := markdownDocument(1 << 20)
	tokens := c.Count(text)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := Split(text, FormatMarkdown, DefaultBudget, c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "input-tokens/s")
}

func BenchmarkCount1MB(b *testing.B) {
	c := counter(b)
	text := markdownDocument(1 << 20)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		c.Count(text)
	}
}

func TestSplitAtMost(t *testing.T) {
	c := counter(t)
	rng := rand.New(rand.NewPCG(7, 2026))
	texts := map[string]string{
		FormatMarkdown: markdownDocument(40 << 10),
		FormatPlain:    records(300, FormatPlain, "\n\n"),
		FormatHTML:     generate(rng, FormatHTML),
		FormatXML:      generate(rng, FormatXML),
	}
	for format, text := range texts {
		budget := 200
		all, err := Split(text, format, budget, c)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		n := len(all)
		if n < 3 {
			t.Fatalf("%s: %d chunks, want a text of several", format, n)
		}
		tests := []struct {
			name  string
			limit int
			over  bool
		}{
			{"no limit gives every chunk", 0, false},
			{"a limit above the count gives every chunk", n + 1, false},
			{"a limit of exactly the count gives every chunk", n, false},
			{"one chunk over the limit is refused", n - 1, true},
			{"far over the limit is refused", 1, true},
		}
		for _, tt := range tests {
			t.Run(format+"/"+tt.name, func(t *testing.T) {
				got, err := SplitAtMost(text, format, budget, tt.limit, c)
				if !tt.over {
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, all) {
						t.Fatal("the chunks under the limit differ from Split's")
					}
					return
				}
				tooMany := (*TooManyChunksError)(nil)
				if !errors.Is(err, ErrTooManyChunks) || !errors.As(err, &tooMany) || got != nil {
					t.Fatalf("err = %v, %d chunks; want ErrTooManyChunks and none", err, len(got))
				}
				if tooMany.Limit != tt.limit || tooMany.Budget != budget || tooMany.AtLeast <= tt.limit || tooMany.AtLeast > n {
					t.Fatalf("%+v: want limit %d, budget %d, and at least a count in (%d, %d]", *tooMany, tt.limit, budget, tt.limit, n)
				}
			})
		}
	}
}

// A table whose first row does not fit with its header is cut twice: at
// the row's words first, then with the header's lines as units of their
// own. The first cut's pieces, counted apart, can sum more tokens than
// the second's, and the limit must judge the second (fuzz: 39 tokens
// against 37, at 2 chunks of 19).
func TestSplitAtMostJudgesATableRowByItsLastCut(t *testing.T) {
	c := counter(t)
	const text = " AX00A00AA00AA|\n| - | -  \n0A00|AA A AA00AA00AA00AA00AA00AA00AA00AA00A00"
	const budget = 19
	all, err := Split(text, FormatMarkdown, budget, c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := SplitAtMost(text, FormatMarkdown, budget, len(all), c)
	if err != nil || !slices.Equal(got, all) {
		t.Fatalf("limit %d, Split's count: err %v, %d chunks; want Split's", len(all), err, len(got))
	}
}

func TestSplitAtMostNamesTheEffectiveBudget(t *testing.T) {
	_, err := SplitAtMost(markdownDocument(200<<10), FormatMarkdown, 0, 2, counter(t))
	tooMany := (*TooManyChunksError)(nil)
	if !errors.As(err, &tooMany) || tooMany.Budget != DefaultBudget {
		t.Fatalf("err = %v, want the default budget %d named", err, DefaultBudget)
	}
	for _, want := range []string{"at least", fmt.Sprint(DefaultBudget), "limit of 2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}

// A text far over the limit is not counted to its end: the count it
// reports is the limit's worth of tokens, not the whole text's.
func TestSplitAtMostStopsCountingOnceTheLimitIsCertain(t *testing.T) {
	c := counter(t)
	for _, format := range []string{FormatMarkdown, FormatPlain, FormatHTML, FormatXML} {
		t.Run(format, func(t *testing.T) {
			// Hundreds of times the limit's 1500 tokens, a tenth as many
			// under -race: tens of times still.
			var text string
			switch format {
			case FormatMarkdown, FormatPlain:
				text = markdownDocument(raceOr(2<<20, 256<<10))
			case FormatHTML:
				text = "<html><body>" + strings.Repeat("<p>"+strings.Repeat("word ", 60)+"</p>\n", raceOr(20000, 2000)) + "</body></html>"
			case FormatXML:
				text = "<doc>" + strings.Repeat("<rec>"+strings.Repeat("word ", 60)+"</rec>\n", raceOr(20000, 2000)) + "</doc>"
			}
			_, err := SplitAtMost(text, format, 500, 3, c)
			tooMany := (*TooManyChunksError)(nil)
			if !errors.As(err, &tooMany) {
				t.Fatalf("err = %v, want TooManyChunksError", err)
			}
			if tooMany.AtLeast > 5 {
				// The whole text is counted for the message only: seconds
				// under -race for megabytes of text.
				t.Fatalf("at least %d chunks of the text's %d or more: it was counted past the limit", tooMany.AtLeast, c.Count(text)/500)
			}
		})
	}
}

// A text of more one-token pieces than the limit's tokens gives up without
// a list of them: each piece (a line, a word, a code line, a table row) is
// at least a token, so counting the cuts proves it over. Listing them cost
// 8 bytes a cut (24 a line for markdown), and a unit of about 100 bytes a
// piece until their tokens passed the limit: gigabytes for 100 MiB.
func TestSplitAtMostGivesUpOnOneTokenPiecesWithoutListingThem(t *testing.T) {
	c := counter(t)
	const pieces = 200_000 // 400 KB of text, against room for 1000 tokens
	words := strings.Repeat("x ", pieces)
	lines := strings.Repeat("x\n", pieces)
	tests := []struct{ name, format, text string }{
		{"plain lines", FormatPlain, lines},
		{"plain words", FormatPlain, words},
		{"markdown lines", FormatMarkdown, lines},
		{"markdown list items", FormatMarkdown, strings.Repeat("- x\n", pieces)},
		{"markdown code lines", FormatMarkdown, "```\n" + lines},
		{"markdown table rows", FormatMarkdown, "|a|\n|-|\n" + strings.Repeat("|x|\n", pieces)},
		{"words in one HTML paragraph", FormatHTML, "<p>" + words + "</p>"},
		{"words in one XML element", FormatXML, "<r>" + words + "</r>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			allocated := bytesAllocated(func() { _, err = SplitAtMost(tt.text, tt.format, 100, 10, c) })
			if !errors.Is(err, ErrTooManyChunks) {
				t.Fatalf("err = %v, want ErrTooManyChunks", err)
			}
			// Listed, the cuts alone were 8 bytes a piece, four times the
			// text, and the units 8.5–37 MB. What is left is under a
			// kilobyte (once in a few runs with -race, 75 KB), besides
			// parsing markup (1 MB, 2 MB with -race).
			allowed := int64(256 << 10)
			switch tt.format {
			case FormatHTML:
				allowed += bytesAllocated(func() { parseHTML(tt.text, maxMarkupNodes) })
			case FormatXML:
				allowed += bytesAllocated(func() { parseXML(tt.text, maxMarkupNodes) })
			}
			if allocated > allowed {
				t.Errorf("%d bytes allocated for %d bytes of text, want at most %d: the pieces were listed", allocated, len(tt.text), allowed)
			}
		})
	}
}

// bytesAllocated returns the heap bytes f allocates (the package's tests
// run one at a time, so only f allocates meanwhile).
func bytesAllocated(f func()) int64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc)
}

// A split holds a unit for every piece it counts up to the chunk limit's
// tokens, so text just under the limit is the most a split holds: units
// are kept lean and grown without copies (see unit, unitList). What a
// split allocates, less its chunks' own text, is a unit's 32 bytes and
// packing's 4 of a prefix sum a piece (36–47); with units of 104 bytes in
// a slice grown by append it was 543–550.
func TestSplitAtMostJustUnderTheLimitAllocatesLittleAPiece(t *testing.T) {
	c := counter(t)
	const pieces = 200_000 // 400 KB of text, under 1000 chunks of 4000
	words := strings.Repeat("x ", pieces)
	lines := strings.Repeat("x\n", pieces)
	tests := []struct {
		name, format, text string
		most               int64 // bytes a piece
	}{
		{"plain words", FormatPlain, words, unitBytesAPiece},
		{"plain lines", FormatPlain, lines, unitBytesAPiece},
		{"plain paragraphs", FormatPlain, strings.Repeat("x\n\n", pieces), unitBytesAPiece},
		{"markdown lines", FormatMarkdown, lines, unitBytesAPiece},
		{"markdown code lines", FormatMarkdown, "```\n" + lines, unitBytesAPiece},
		{"markdown table rows", FormatMarkdown, "|a|\n|-|\n" + strings.Repeat("|x|\n", pieces), unitBytesAPiece},
		{"words in one HTML paragraph", FormatHTML, "<p>" + words + "</p>", unitBytesAPiece},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var chunks []Chunk
			var err error
			allocated := bytesAllocated(func() { chunks, err = SplitAtMost(tt.text, tt.format, DefaultBudget, 1000, c) })
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range chunks {
				allocated -= int64(len(ch.Text))
			}
			if got := allocated / pieces; got > tt.most {
				t.Errorf("%d chunks: %d bytes allocated a piece besides the chunks' text, want at most %d", len(chunks), got, tt.most)
			}
		})
	}
}

// unitBytesAPiece is what TestSplitAtMostJustUnderTheLimitAllocatesLittleAPiece
// allows a piece.
const unitBytesAPiece = 64

func TestSplitAtMostRefusesANegativeLimit(t *testing.T) {
	if _, err := SplitAtMost("text", FormatPlain, 0, -1, counter(t)); err == nil || errors.Is(err, ErrTooManyChunks) {
		t.Fatalf("err = %v, want a negative limit refused", err)
	}
}

func BenchmarkSplitAtMost8MBOverTheLimit(b *testing.B) {
	c := counter(b)
	text := markdownDocument(8 << 20)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SplitAtMost(text, FormatMarkdown, DefaultBudget, 100, c); !errors.Is(err, ErrTooManyChunks) {
			b.Fatal(err)
		}
	}
}

// BenchmarkSplitAtMostJustUnderTheLimit splits the most pieces the default
// chunk limit admits, 3,990,000 one-token words (8 MB) in 998 chunks, and
// reports the heap's peak during a split (sampled every 2 ms, the heap
// before it subtracted) and the bytes allocated a piece.
func BenchmarkSplitAtMostJustUnderTheLimit(b *testing.B) {
	c := counter(b)
	const pieces = 3_990_000
	text := strings.Repeat("x ", pieces)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	var peak, allocated uint64
	for b.Loop() {
		p, a := heapPeak(func() {
			if _, err := SplitAtMost(text, FormatPlain, DefaultBudget, 1000, c); err != nil {
				b.Fatal(err)
			}
		})
		peak, allocated = max(peak, p), allocated+a
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
	b.ReportMetric(float64(allocated)/float64(b.N)/pieces, "B/piece")
}

// heapPeak runs f and returns the most heap it found in use meanwhile,
// less what was in use before, sampled every 2 ms, and the bytes f
// allocated.
func heapPeak(f func()) (peak, allocated uint64) {
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	done, sampled := make(chan struct{}), make(chan uint64)
	go func() {
		var m runtime.MemStats
		most := uint64(0)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				sampled <- most
				return
			case <-tick.C:
				runtime.ReadMemStats(&m)
				most = max(most, m.HeapAlloc)
			}
		}
	}()
	f()
	close(done)
	most := <-sampled
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	most = max(most, after.HeapAlloc)
	return most - min(most, before.HeapAlloc), after.TotalAlloc - before.TotalAlloc
}

func BenchmarkSplit8MB(b *testing.B) {
	c := counter(b)
	text := markdownDocument(8 << 20)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Split(text, FormatMarkdown, DefaultBudget, c); err != nil {
			b.Fatal(err)
		}
	}
}

// benchDocument is internal/cli's bench document (copied: a test may not
// import the cli package): paragraphs of 29 short sentences, each longer in
// bytes than benchBudget, so that a chunk is one new paragraph plus the
// previous one as overlap.
func benchDocument(chunks int) string {
	var b strings.Builder
	for i := range chunks {
		fmt.Fprintf(&b, "Paragraph %d. ", i)
		for j := range 28 {
			fmt.Fprintf(&b, "Item %d costs %d units. ", j, i*j)
		}
		b.WriteString("\n\n")
	}
	return b.String()
}

// benchBudget is internal/cli's.
const benchBudget = 400

// BenchmarkSplitBenchDocument splits one file of `docjobs bench` as a job
// does: markdown, budget 400, o200k_base.
func BenchmarkSplitBenchDocument(b *testing.B) {
	c := counter(b)
	text := benchDocument(10)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Split(text, FormatMarkdown, benchBudget, c); err != nil {
			b.Fatal(err)
		}
	}
}

// Counting is most of Split's work: each byte of the input is counted
// about once, not once when its unit is sized and again in each of the
// two chunks that hold it. The bounds are what the text's structure
// allows (see the decision "Chunk counts summed over clean boundaries").
func TestSplitCountsEachByteAboutOnce(t *testing.T) {
	tests := []struct {
		name, text, format string
		budget             int
		most               float64 // bytes counted per input byte
	}{
		{"markdown paragraphs that fit a chunk", markdownDocument(64 << 10), FormatMarkdown, DefaultBudget, 1.01},
		{"markdown paragraphs around the budget", markdownDocument(64 << 10), FormatMarkdown, 400, 1.01},
		{"markdown paragraphs cut at sentences", markdownDocument(64 << 10), FormatMarkdown, 100, 1.01},
		{"docjobs bench's document", benchDocument(10), FormatMarkdown, benchBudget, 1.01},
		{"indented paragraphs", indentedDocument(200), FormatMarkdown, 200, 1.01},
		{"plain paragraphs", records(300, FormatPlain, "\n\n"), FormatPlain, 400, 1.01},
		{"plain lines", records(300, FormatPlain, "\n"), FormatPlain, 400, 1.01},
		{"CRLF lines", records(300, FormatPlain, "\r\n"), FormatPlain, 400, 1.01},
	}
	for _, model := range []string{"gpt-4o", "gpt-4"} {
		c, err := NewCounter(model)
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range tests {
			t.Run(c.Encoding()+"/"+tt.name, func(t *testing.T) {
				s := newSplitter(tt.text, tt.budget, 0, c)
				chunks, err := s.split(tt.format)
				if err != nil {
					t.Fatal(err)
				}
				checkInvariants(t, c, tt.text, tt.budget, chunks)
				if got := float64(s.counted) / float64(len(tt.text)); got > tt.most {
					t.Errorf("%d chunks: counted %.2f bytes per input byte, want at most %.2f", len(chunks), got, tt.most)
				}
			})
		}
	}
}

// indentedDocument is n numbered, indented clauses as licenses have them.
func indentedDocument(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "   %d. Clause %d applies. The licensee's rights, as granted, end when it does.\n", i, i)
		fmt.Fprintf(&b, "      (a) Each item %d is listed; its parts follow.\n\n", i)
	}
	return b.String()
}
