package merge

import (
	"strings"
	"testing"
	"time"
	"unicode"
)

// fuzzChunks cuts data at NUL bytes into up to 12 answers; bits of shape
// pick each chunk's file, failure and overlap flags.
func fuzzChunks(data string, shape uint64, overlap string) []Chunk {
	answers := strings.SplitN(data, "\x00", 12)
	var cs []Chunk
	file, index := 0, 0
	for i, a := range answers {
		bits := shape >> (5 * (i % 12))
		if i > 0 && bits&1 != 0 {
			file, index = file+1, 0
		}
		c := Chunk{File: string(rune('a' + file)), Index: index, Content: a,
			Failed: bits&2 != 0, NoOverlap: bits&4 != 0}
		if bits&8 != 0 {
			c.Overlap = overlap
		}
		index += 1 + int(bits>>4&1) // sometimes a gap
		cs = append(cs, c)
	}
	return cs
}

func fuzzOptions(flags uint8) Options {
	o := Options{Limits: Limits{MaxDepth: 40, MaxNodes: 20000}}
	if flags&1 != 0 {
		o.Policy = Majority
	}
	if flags&2 != 0 {
		o.Scope = ScopeJob
	}
	if flags&4 != 0 {
		o.HasSchema, o.DedupeBy = true, []string{"id"}
	}
	if flags&8 != 0 {
		o.DedupeBy = append(o.DedupeBy, "k")
	}
	return o
}

// FuzzMergeJSON: whatever the answers, a JSON merge never panics, always
// emits valid JSON, and keeps the caps on conflicts.
func FuzzMergeJSON(f *testing.F) {
	f.Add("{\"r\":[{\"id\":1},{\"id\":2}],\"t\":\"a\"}\x00{\"r\":[{\"id\":2},{\"id\":3}],\"t\":\"b\"}", uint64(0), uint8(4), "id 2")
	f.Add("[1,2,3]\x00[3,4]\x00[4,5", uint64(1<<5|2<<10), uint8(3), "")
	f.Add("{\"a\":{\"b\":[{\"id\":{\"x\":1.0}}]}}\x00{\"a\":{\"b\":[{\"id\":{\"x\":1}}],\"c\":null}}\x00\"str\"", uint64(8<<5), uint8(5), "x 1")
	f.Add("```json\n{\"a\":\"\xff\xfe\"}\n```\x00{\"a\":[\"\\ud800\"]}\x00{\"a\":1e999999999999999999999}", uint64(0), uint8(1), "")
	f.Add("[{\"id\":1,\"k\":1,\"v\":[1]},{\"id\":1,\"k\":1,\"v\":{\"z\":2}}]\x00[{\"k\":1,\"id\":1,\"v\":null}]", uint64(0), uint8(12), "")
	f.Add("{\"a\":1,\"a\":{\"b\":2}}\x00{\"a\":[1]}\x00{\"a\":\"x\"}\x00null\x00[]", uint64(0x5555), uint8(2), "")
	// Records whose arrays continue over chunks, copies away from the
	// boundary, placeholders and root shapes (audit F1, F4, F6).
	f.Add("{\"r\":[{\"id\":1,\"l\":[1,2],\"n\":\"\"}]}\x00{\"r\":[{\"id\":1,\"l\":[2,3],\"n\":\"x\"},{\"id\":1,\"l\":\"\"}]}\x00[{\"id\":\"\"}]\x00{\"r\":[{\"id\":1,\"l\":{\"z\":[2]}}]}", uint64(8<<5), uint8(4), "2 x")
	f.Add("[{\"id\":1,\"l\":[\"a\",\"a\"]}]\x00{\"id\":1}\x00[{\"id\":1,\"l\":[\"a\",\"b\",\"a\",\"a\"]}]\x00\"\"", uint64(1<<5|4<<10), uint8(6), "")
	// A key holding NUL beside the nested path it spells (audit-merge2 F3).
	f.Add("{\"a\":{\"b\":[{\"id\":7}]}}\x00{\"a\\u0000b\":[{\"id\":7}],\"a\":{\"b\":[{\"id\":7}]}}", uint64(0), uint8(4), "7")
	f.Fuzz(func(t *testing.T, data string, shape uint64, flags uint8, overlap string) {
		cs := fuzzChunks(data, shape, overlap)
		opts := fuzzOptions(flags)
		opts.Format = FormatJSON
		start := time.Now()
		as, err := Merge(cs, opts)
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("Merge took %v", d)
		}
		listed := 0
		for _, a := range as {
			checkAnswer(t, a)
			listed += len(a.IncompleteChunks)
		}
		failed := 0
		for _, c := range cs {
			if c.Failed {
				failed++
			}
		}
		if listed < failed {
			t.Fatalf("%d failed chunks, %d listed as incomplete", failed, listed)
		}
		// Auto detection never emits invalid JSON either.
		opts.Format = ""
		as, err = Merge(cs, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range as {
			checkAnswer(t, a)
		}
	})
}

// FuzzMergeMarkup: text, markdown, HTML and XML merges never panic, lose
// no content they were given, and an XML merge that reports itself
// complete is well-formed.
func FuzzMergeMarkup(f *testing.F) {
	f.Add("# T\n\nA.\n\n| a |\n|---|\n| 1 |\x00| a |\n|---|\n| 1 |\n| 2 |", uint64(0), uint8(0), "")
	f.Add("<table><thead><tr><th>h</th></tr></thead><tr><td>1</td></tr></table>\x00<table><thead><tr><th>h</th></tr></thead><tr><td>1</td></tr></table>", uint64(0), uint8(1), "")
	f.Add("<?xml version=\"1.0\"?><r a=\"1\"><i/>t</r>\x00<r a=\"2\"><i/><j/></r>\x00<s/>", uint64(0), uint8(2), "")
	f.Add("<!DOCTYPE html><html><head><title>x</title></head><body><div class=a><p>1</p></div></body></html>\x00<div class=a><p>1</p><p>2</p></div>", uint64(2<<5), uint8(1), "")
	f.Add("<r/>\x00<r><!-- c --><![CDATA[x]]></r>\x00<r xmlns:p=\"u\"><p:x/></r>", uint64(0), uint8(2), "")
	f.Add("- a\n- b\x00- b\n- c\x00```\nx\n\n```", uint64(4<<5), uint8(3), "")
	f.Add("| Coffee | 2.50 |\n| Coffee | 2.50 |\x00| Coffee | 2.50 |\n| Bagel |", uint64(8<<5), uint8(0), "Coffee $2.50")
	f.Add("<p>Coffee 2.50</p>\x00<p>Coffee 2.50</p><p>x</p>", uint64(8<<5), uint8(1), "<p>Coffee &amp; 2,50</p>")
	f.Add("<r><i a=\"SKU-4\">x</i></r>\x00<r><i a=\"SKU-4\">x</i><j/></r>", uint64(8<<5), uint8(2), "SKU-4 x")
	// Rows without a header between answers that repeat it, and after a
	// failed chunk (audit-merge2 F1).
	f.Add("| a | b |\n|-|-|\n| 1 | 2 |\x00| 1 | 2 |\n| 3 | 4 |\x00| a | b |\n|-|-|\n| 3 | 4 |\x00x\x00| 5 |\x00| a | b |\n|-|-|\n| 5 |\n\nz", uint64(2<<15), uint8(0), "")
	f.Add("| a |\n|-|\n| 1 |\x00| 1 |\x00| b |\n|-|\n| 1 |\x00| b |\n|-|\n| 1 |\n| 2 |", uint64(0), uint8(3), "1")
	// HTML tables: a header dropped against the merged table, another
	// header opening another table, rows behind it compared with the rows
	// above, a header left heading nothing, and after a failed chunk
	// (audit-merge2 F1 in HTML).
	f.Add("<table><tr><th>a</th></tr><tr><td>1</td></tr><tr><td>2</td></tr></table>\x00<table><tr><td>2</td></tr></table>\x00<table><thead><tr><th>a</th></tr></thead><tbody><tr><td>2</td></tr><tr><td>3</td></tr></tbody></table>\x00<table><tr><th>b</th></tr><tr><td>3</td></tr></table><p>3</p>", uint64(8<<15), uint8(1), "3")
	f.Add("<table><thead><tr><th>a</th></tr></thead><tbody><tr><td>1</td></tr></tbody><tfoot><tr><td>1</td></tr></tfoot></table>\x00x\x00<table><tr><td>1</td></tr></table>\x00<table><thead><tr><th>b</th></tr></thead><tbody><tr><td>1</td></tr></tbody></table>\x00<div><table><tr><th>b</th></tr></table></div>", uint64(2<<5), uint8(9), "")
	f.Add("<table><thead><tr><th>h</th></tr><tr><th>u</th></tr></thead><tr><td>1</td></tr></table>\x00<table><tr><th>h</th></tr><tr><td>1</td></tr></table>\x00<table><thead><tr><th>h</th></tr><tr><th>u</th></tr></thead></table>", uint64(0), uint8(1), "")
	// A table of no rows before a repeated list item stays (fuzz), and
	// its header repeated after one that went is no overlap (fuzz).
	f.Add("p1\n\n- i0\x00| K |\n|---|\n\n- i0", uint64(0), uint8(0), "")
	f.Add("| s |\n|-|\n| 1 |\n| 2 |\x00| q |\n|-|\n| 2 |\x00| q |\n|-|\n| 2 |\n| 9 |", uint64(0), uint8(3), "")
	// A <plaintext> element that later answers follow, in a continued
	// container and in a whole document (hunt-plaintext).
	f.Add("<div><p>a</p><plaintext>x</div>\x00<div><p>b</p></div>\x00<p>c</p>", uint64(0), uint8(1), "")
	f.Add("<!DOCTYPE html><p>e</p><plaintext><p>f\x00<p>h</p>", uint64(0), uint8(1), "")
	// One inside MathML ending the answer (hunt-plaintext2).
	f.Add("<p>a</p>\x00<math><mtext><plaintext>x &lt; y", uint64(0), uint8(1), "")
	formats := []string{FormatMarkdown, FormatHTML, FormatXML, FormatText, ""}
	f.Fuzz(func(t *testing.T, data string, shape uint64, flags uint8, overlap string) {
		cs := fuzzChunks(data, shape, overlap)
		opts := fuzzOptions(flags >> 3)
		opts.Format = formats[int(flags)%len(formats)]
		start := time.Now()
		as, err := Merge(cs, opts)
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("Merge took %v", d)
		}
		for _, a := range as {
			checkAnswer(t, a)
			if a.Format == FormatXML && !a.MergeIncomplete {
				checkWellFormedXML(t, a.Content)
			}
		}
		checkTextKept(t, cs, as)
	})
}

// checkTextKept: markdown and text merges drop only a run that repeats the
// answer before it, a table header that repeats the open table's, and the
// header an answer opens with when every row under it repeats, so every
// other line of every answer merged is in the merged content, up to the
// spacing and outer pipes the comparison ignores.
func checkTextKept(t *testing.T, cs []Chunk, as []Answer) {
	t.Helper()
	var all strings.Builder
	for _, a := range as {
		if a.Format != FormatMarkdown && a.Format != FormatText {
			return
		}
		all.WriteString(squeeze(a.Content))
	}
	got := all.String()
	for _, c := range cs {
		if c.Failed {
			continue
		}
		lines := strings.Split(c.Content, "\n")
		for len(lines) > 0 && squeeze(lines[0]) == "" {
			lines = lines[1:]
		}
		if len(lines) >= 3 && strings.Contains(lines[0], "|") && tableSep.MatchString(strings.TrimSuffix(lines[1], "\r")) &&
			strings.Contains(lines[1], "-") && strings.Contains(lines[2], "|") {
			lines = lines[2:] // a header heading rows, which may all repeat
		}
		for _, ln := range lines {
			if s := squeeze(ln); s != "" && !strings.Contains(got, s) {
				t.Fatalf("line %q of chunk %s/%d is not in the merged content %q", ln, c.File, c.Index, got)
			}
		}
	}
}

// squeeze drops white space and pipes, which text merges compare without.
func squeeze(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || r == '|' {
			return -1
		}
		return r
	}, s)
}
