package pdf

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Structure inference on hand-built pages: lines as poppler would report
// them (blocks, boxes, words with font size and weight).

// ln is a line of a block at x, with its top at y: words are 0.5 em per
// rune wide and 0.25 em apart, the box 1.2 em high.
func ln(block int, x, y, size float64, text string) textLine {
	return lnf(block, x, y, size, false, text)
}

func bold(block int, x, y, size float64, text string) textLine {
	return lnf(block, x, y, size, true, text)
}

func lnf(block int, x, y, size float64, isBold bool, text string) textLine {
	l := textLine{x0: x, y0: y, y1: y + 1.2*size, block: block}
	at := x
	for _, w := range strings.Fields(text) {
		wd := 0.5 * size * float64(utf8.RuneCountInString(w))
		l.words = append(l.words, word{x0: at, y0: y, x1: at + wd, y1: y + 1.2*size, text: w, size: size, bold: isBold})
		at += wd + 0.25*size
	}
	l.x1 = at - 0.25*size
	return l
}

func layoutHTML(lines ...textLine) string {
	tp := &textPage{number: 1, width: 612, height: 792, lines: lines}
	var sb strings.Builder
	renderHTML(&sb, layoutPage(tp))
	return sb.String()
}

func TestLayout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		lines []textLine
		want  string
	}{
		{
			name: "lines of a block join into a paragraph and a line-end hyphen before lowercase goes",
			lines: []textLine{
				ln(0, 72, 100, 10, "Recognition turns every stored file into text. It is a com-"),
				ln(0, 72, 112, 10, "plicated stage that decides the quality of everything down-"),
				ln(0, 72, 124, 10, "stream, and the E-"),
				ln(0, 72, 136, 10, "PRTR keeps its hyphen."),
			},
			want: "<p>Recognition turns every stored file into text. It is a complicated stage that decides the quality of everything downstream, and the E-PRTR keeps its hyphen.</p>\n",
		},
		{
			name: "larger text is a heading, its level from the size against the body",
			lines: []textLine{
				ln(0, 72, 60, 18, "Annual report"),
				ln(1, 72, 90, 12, "Results"),
				ln(2, 72, 110, 10, "Revenue grew in every quarter of the year, and so did the costs of the"),
				ln(2, 72, 122, 10, "service, which the second part of this report explains in some detail."),
			},
			want: "<h1>Annual report</h1>\n<h2>Results</h2>\n<p>Revenue grew in every quarter of the year, and so did the costs of the service, which the second part of this report explains in some detail.</p>\n",
		},
		{
			name: "a short bold line over body text is a minor heading",
			lines: []textLine{
				bold(0, 72, 60, 10, "Scope"),
				ln(1, 72, 76, 10, "This document covers the recognition stage of the service and nothing"),
				ln(1, 72, 88, 10, "else; the extraction stage has a document of its own."),
			},
			want: "<h3>Scope</h3>\n<p>This document covers the recognition stage of the service and nothing else; the extraction stage has a document of its own.</p>\n",
		},
		{
			name: "a bold line among like one-line entries is an entry, not a heading",
			lines: []textLine{
				ln(0, 72, 100, 10, "Courier: the quick fox"),
				ln(1, 72, 124, 10, "Times: the quick brown fox jumps"),
				bold(2, 72, 148, 10, "Arial Black: the quick brown fox jumps"),
				ln(3, 72, 172, 10, "Verdana: the quick fox"),
			},
			want: "<p>Courier: the quick fox</p>\n<p>Times: the quick brown fox jumps</p>\n" +
				"<p>Arial Black: the quick brown fox jumps</p>\n<p>Verdana: the quick fox</p>\n",
		},
		{
			name: "a bold line set closer to the line under it than to the line above is a heading",
			lines: []textLine{
				ln(0, 72, 100, 10, "The first part ends with this line."),
				bold(1, 72, 136, 10, "The second part begins"),
				ln(2, 72, 152, 10, "And this is what it says in a line."),
			},
			want: "<p>The first part ends with this line.</p>\n<h3>The second part begins</h3>\n<p>And this is what it says in a line.</p>\n",
		},
		{
			name: "page numbers are not headings",
			lines: []textLine{
				ln(0, 72, 100, 10, "Some body text that is long enough to set the body size of the page."),
				ln(1, 300, 700, 16, "12"),
			},
			want: "<p>Some body text that is long enough to set the body size of the page.</p>\n<p>12</p>\n",
		},
		{
			name: "bullets make an unordered list, wrapped item lines stay in their item",
			lines: []textLine{
				ln(0, 72, 100, 10, "The service reads:"),
				ln(0, 80, 112, 10, "• PDF files, through poppler and the"),
				ln(0, 90, 124, 10, "provider for scanned pages"),
				ln(0, 80, 136, 10, "• images"),
				ln(0, 72, 148, 10, "and nothing else."),
			},
			want: "<p>The service reads:</p>\n<ul>\n<li>PDF files, through poppler and the provider for scanned pages</li>\n<li>images</li>\n</ul>\n<p>and nothing else.</p>\n",
		},
		{
			name: "numbered items make an ordered list that keeps its numbers",
			lines: []textLine{
				ln(0, 72, 100, 10, "1. Fetch the file"),
				ln(0, 72, 112, 10, "2. Recognize it"),
				ln(1, 72, 130, 10, "3. Extract the fields"),
			},
			want: "<ol>\n<li>1. Fetch the file</li>\n<li>2. Recognize it</li>\n<li>3. Extract the fields</li>\n</ol>\n",
		},
		{
			name: "a lone line starting with a dash is text, not a list",
			lines: []textLine{
				ln(0, 72, 100, 10, "- 5 degrees at night"),
			},
			want: "<p>- 5 degrees at night</p>\n",
		},
		{
			name: "columns aligned over several lines are a table",
			lines: []textLine{
				ln(0, 72, 100, 10, "Pollutant"), ln(1, 300, 100, 10, "Air"), ln(2, 400, 100, 10, "Water"),
				ln(0, 72, 112, 10, "Methane"), ln(1, 300, 112, 10, "100 000"), ln(2, 400, 112, 10, "-"),
				ln(0, 72, 124, 10, "Chlorine and inorganic"), ln(1, 300, 130, 10, "10 000"), ln(2, 400, 130, 10, "-"),
				ln(0, 72, 136, 10, "compounds"),
				ln(0, 72, 148, 10, "Lead"), ln(1, 300, 148, 10, "200"), ln(2, 400, 148, 10, "20"),
			},
			want: "<table>\n<tr><td>Pollutant</td><td>Air</td><td>Water</td></tr>\n<tr><td>Methane</td><td>100 000</td><td>-</td></tr>\n" +
				"<tr><td>Chlorine and inorganic compounds</td><td>10 000</td><td>-</td></tr>\n<tr><td>Lead</td><td>200</td><td>20</td></tr>\n</table>\n",
		},
		{
			name: "two text columns are read left column first, not as a table",
			lines: []textLine{
				ln(0, 72, 100, 10, "The left column starts the story and it"),
				ln(0, 72, 112, 10, "goes on for a while in the left column"),
				ln(1, 320, 100, 10, "and the right column ends the story with"),
				ln(1, 320, 112, 10, "the last words of the whole page here."),
				ln(2, 72, 130, 10, "before the left column has its second part"),
				ln(2, 72, 142, 10, "which still comes before the right column."),
				ln(3, 320, 130, 10, "The right column has a second paragraph."),
			},
			want: "<p>The left column starts the story and it goes on for a while in the left column before the left column has its second part which still comes before the right column.</p>\n" +
				"<p>and the right column ends the story with the last words of the whole page here.</p>\n<p>The right column has a second paragraph.</p>\n",
		},
		{
			name: "a sentence runs on from a column's foot to the head of the next column",
			lines: []textLine{
				ln(0, 72, 100, 10, "The left column starts the story and it"),
				ln(0, 72, 112, 10, "goes on to the foot of the page, where"),
				ln(0, 72, 124, 10, "its last word breaks at a hyphen, igno-"),
				ln(1, 320, 100, 10, "rant of the column break, and the story"),
				ln(1, 320, 112, 10, "ends in the right column of the page."),
			},
			want: "<p>The left column starts the story and it goes on to the foot of the page, where its last word breaks at a hyphen, ignorant of the column break, and the story ends in the right column of the page.</p>\n",
		},
		{
			name: "a block higher up beside a column that goes on does not take a hyphenated word's end",
			lines: []textLine{
				// A scan's text layer: a line across the page under the
				// columns keeps them from being cut apart whole, and the
				// right column's block, which poppler reads first in the
				// band below, would make the bands two sections read left
				// then right, jumping up to "need"; the bands follow each
				// other without a blank line and hold prose on both sides
				// of the gutter, so they are one section read column by
				// column.
				ln(0, 72, 100, 10, "The left column starts the story and it"),
				ln(0, 72, 112, 10, "says that historians remain quite igno-"),
				ln(1, 320, 90, 10, "need receives flour, sugar and oil and"),
				ln(1, 320, 102, 10, "sometimes clothing from the Red Cross."),
				ln(2, 320, 127, 10, "other hotels and private homes are open."),
				ln(3, 72, 127, 10, "rant of its origins, which are very old."),
				ln(4, 72, 180, 10, "A line set across both columns at the foot of the page, as poppler joins a scan's lines."),
			},
			want: "<p>The left column starts the story and it says that historians remain quite ignorant of its origins, which are very old.</p>\n" +
				"<p>need receives flour, sugar and oil and sometimes clothing from the Red Cross.</p>\n" +
				"<p>other hotels and private homes are open.</p>\n" +
				"<p>A line set across both columns at the foot of the page, as poppler joins a scan&#39;s lines.</p>\n",
		},
		{
			name: "a paragraph ends at a short line ending a sentence and at an indented line",
			lines: []textLine{
				ln(0, 72, 100, 10, "The first paragraph is long enough to fill the whole width of it."),
				ln(0, 72, 112, 10, "It ends here."),
				ln(0, 72, 124, 10, "The second paragraph also fills the whole width of the column and"),
				ln(0, 72, 136, 10, "goes on to a full second line of text that reaches the right edge"),
				ln(0, 90, 148, 10, "The third one starts indented on a line of its own here."),
			},
			want: "<p>The first paragraph is long enough to fill the whole width of it. It ends here.</p>\n" +
				"<p>The second paragraph also fills the whole width of the column and goes on to a full second line of text that reaches the right edge</p>\n" +
				"<p>The third one starts indented on a line of its own here.</p>\n",
		},
		{
			name: "double-spaced lines in blocks of their own are one paragraph",
			lines: []textLine{
				ln(0, 108, 100, 10, "By order dated May 1, 2007 the court dismissed this case in its"),
				ln(1, 72, 124, 10, "entirety, with prejudice, upon the parties settlement and the Sti-"),
				ln(2, 72, 148, 10, "pulation Of Dismissal."),
			},
			want: "<p>By order dated May 1, 2007 the court dismissed this case in its entirety, with prejudice, upon the parties settlement and the Stipulation Of Dismissal.</p>\n",
		},
		{
			name: "text is HTML-escaped",
			lines: []textLine{
				ln(0, 72, 100, 10, `<script>alert("x")</script> & more`),
			},
			want: "<p>&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; more</p>\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := layoutHTML(tt.lines...); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestWordsJoinByTheirGaps(t *testing.T) {
	t.Parallel()
	// Small caps: "T" and "HRESHOLD" are two words in two fonts, touching.
	ws := []word{
		{x0: 316.02, y0: 298.8, x1: 322.85, y1: 311, text: "T"},
		{x0: 322.86, y0: 300.9, x1: 372.17, y1: 310.5, text: "HRESHOLD"},
		{x0: 375.0, y0: 300.9, x1: 395, y1: 310.5, text: "FOR"},
	}
	if got := joinWords(ws); got != "THRESHOLD FOR" {
		t.Errorf("joinWords = %q, want %q", got, "THRESHOLD FOR")
	}
}

func TestGlyphsLaidSideBySideAsVerticalTextAreRestacked(t *testing.T) {
	t.Parallel()
	// Poppler reports each glyph of a vertical-metrics font as a line of
	// its own, right to left; they are one row of text.
	var lines []textLine
	x := []float64{160, 150, 140, 130, 110, 100} // "NO" "TICE" reversed, a wider step between words
	for i, r := range []string{"E", "C", "I", "T", "O", "N"} {
		lines = append(lines, textLine{x0: x[i], y0: 60, x1: x[i] + 14, y1: 74, block: 0,
			words: []word{{x0: x[i], y0: 60, x1: x[i] + 14, y1: 74, text: r}}})
	}
	if got := layoutHTML(lines...); got != "<p>NO TICE</p>\n" {
		t.Errorf("got %q", got)
	}
}

func TestCleanTextDropsControlsAndDecomposesPresentationForms(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"plain":                       "plain",
		"a&amp;b &lt;c&gt; &#39;":     "a&b <c> '",
		"\ufb01nd \ufb02ow":           "find flow",
		"\ufefb":                      "\u0627\u0644", // as drawn: logicalOrder makes it lam, alef
		"\u202bright\u202c\x01\x7f":   "right",
		"bad\xffbyte":                 "badbyte",
		"soft\u00adhyphen stays mark": "soft\u00adhyphen stays mark",
	}
	for in, want := range tests {
		if got := cleanText([]byte(in)); got != want {
			t.Errorf("cleanText(%q) = %q, want %q", in, got, want)
		}
	}
	if got := logicalOrder(cleanText([]byte("\ufefb"))); got != "\u0644\u0627" {
		t.Errorf("the line of lam-alef reads %q, want lam, alef", got)
	}
}

func TestOrderedMarkers(t *testing.T) {
	t.Parallel()
	for m, want := range map[string]bool{
		"1.": true, "12)": true, "(3)": true, "a)": true, "B.": true, "iv.": true, "(ii)": true,
		"2010.": false, "1.2": false, "(3.": false, "ab.": false, ".": false, "x": false,
	} {
		if got := orderedMarker(m); got != want {
			t.Errorf("orderedMarker(%q) = %v, want %v", m, got, want)
		}
	}
}

func TestLineSplitByPopplerAtATallBulletIsReadAsOneLine(t *testing.T) {
	t.Parallel()
	// A bullet glyph taller than the text makes poppler start a line box
	// higher than the text beside it; the rest of the row, on the text's
	// baseline and one word space away, becomes a line of its own that
	// poppler sorts before the bulleted part.
	tall := func(l textLine) textLine {
		l.words[0].y0, l.words[0].y1 = l.words[0].y0-3, l.words[0].y1+3
		l.y0, l.y1 = l.y0-3, l.y1+3
		return l
	}
	first := tall(ln(0, 55, 100, 10, "• Courrier : Free Service Abonné 75371 Paris Cedex 08"))
	second := tall(ln(0, 55, 112, 10, "• Internet : Sur"))
	rest := ln(0, second.x1+2.5, 112, 10, "votre Espace Abonné, rubrique Mon abonnement /")
	wrapped := ln(0, 67.5, 124, 10, "Brochure tarifaire, sur free.fr.")
	got := layoutHTML(first, rest, second, wrapped)
	want := "<ul>\n<li>Courrier : Free Service Abonné 75371 Paris Cedex 08</li>\n" +
		"<li>Internet : Sur votre Espace Abonné, rubrique Mon abonnement / Brochure tarifaire, sur free.fr.</li>\n</ul>\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestLinesOfTwoColumnsOnOneBaselineStayApart(t *testing.T) {
	t.Parallel()
	// The same baseline with a column gap between is two lines.
	left := ln(0, 72, 100, 10, "Left column text")
	right := ln(0, left.x1+20, 100, 10, "Right column text")
	tp := &textPage{number: 1, width: 612, height: 792, lines: []textLine{left, right}}
	joinSplitLines(tp)
	if len(tp.lines) != 2 {
		t.Errorf("%d lines after joining, want 2", len(tp.lines))
	}
}

func TestHeaderLineSpanningTwoColumnsIsSplitIntoItsCells(t *testing.T) {
	t.Parallel()
	// Header labels set close together: poppler joins "VAT" and
	// "Quantity" into one line over two columns of values. Each label is
	// a header cell of the column under it, not a heading.
	at := func(l textLine, x float64) textLine { // l moved to start at x
		d := x - l.x0
		l.x0, l.x1 = l.x0+d, l.x1+d
		for i := range l.words {
			l.words[i].x0, l.words[i].x1 = l.words[i].x0+d, l.words[i].x1+d
		}
		return l
	}
	header := []textLine{bold(0, 40, 100, 8, "Item"), bold(1, 100, 100, 8, "Description"),
		bold(2, 300, 100, 8, "Price"), bold(3, 330, 100, 8, "VAT Quantity"), bold(4, 420, 100, 8, "Amount")}
	row := func(y float64, item, desc, price, vat, qty, amount string) []textLine {
		return []textLine{ln(5, 40, y, 8, item), ln(6, 100, y, 8, desc), ln(7, 300, y, 8, price),
			ln(8, 330, y, 8, vat), at(ln(9, 0, y, 8, qty), 360), ln(10, 420, y, 8, amount)}
	}
	lines := append(header, row(110, "E103184", "Maintenance kit", "49,99", "21 %", "1 PCS", "49,99")...)
	lines = append(lines, row(120, "E103560", "Flyer", "0,00", "21 %", "1 PCS", "0,00")...)
	got := layoutHTML(lines...)
	want := "<table>\n<tr><th>Item</th><th>Description</th><th>Price</th><th>VAT</th><th>Quantity</th><th>Amount</th></tr>\n" +
		"<tr><td>E103184</td><td>Maintenance kit</td><td>49,99</td><td>21 %</td><td>1 PCS</td><td>49,99</td></tr>\n" +
		"<tr><td>E103560</td><td>Flyer</td><td>0,00</td><td>21 %</td><td>1 PCS</td><td>0,00</td></tr>\n</table>\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestWidelySpacedTableWithARegularPitchIsOneTable(t *testing.T) {
	t.Parallel()
	// Invoice rows two line heights apart (more than the 1.5 a table's
	// rows usually keep), at a regular pitch: the header, the items and
	// the totals are one table, each total beside its amount.
	var lines []textLine
	row := func(y float64, cells ...string) {
		for c, x := range []float64{54, 300, 400, 500} {
			if cells[c] != "" {
				lines = append(lines, ln(len(lines), x, y, 8, cells[c]))
			}
		}
	}
	row(260, "Description", "Qty", "Unit price", "Amount")
	row(290, "Legal notice", "1", "45,93 €", "45,93 €")
	row(315, "PDF copy", "1", "0,75 €", "0,75 €")
	row(340, "", "", "Total HT :", "46,68 €")
	row(365, "", "", "Total TTC :", "56,02 €")
	got := layoutHTML(lines...)
	want := "<table>\n<tr><td>Description</td><td>Qty</td><td>Unit price</td><td>Amount</td></tr>\n" +
		"<tr><td>Legal notice</td><td>1</td><td>45,93 €</td><td>45,93 €</td></tr>\n" +
		"<tr><td>PDF copy</td><td>1</td><td>0,75 €</td><td>0,75 €</td></tr>\n" +
		"<tr><td></td><td></td><td>Total HT :</td><td>46,68 €</td></tr>\n" +
		"<tr><td></td><td></td><td>Total TTC :</td><td>56,02 €</td></tr>\n</table>\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestOneWideGapBetweenAlignedRowsStaysABreak(t *testing.T) {
	t.Parallel()
	// Two tight two-row tables, two and a half lines apart: the gap
	// repeats no pitch of either, so they stay two tables.
	var lines []textLine
	for i, y := range []float64{100, 110, 144, 154} {
		lines = append(lines, ln(2*i, 72, y, 8, "Label"), ln(2*i+1, 300, y, 8, "Value"))
	}
	got := layoutHTML(lines...)
	if n := strings.Count(got, "<table>"); n != 2 {
		t.Errorf("%d tables, want 2:\n%s", n, got)
	}
}

func TestLabelAndValueOnOneRowAreOneLine(t *testing.T) {
	t.Parallel()
	// A total set apart from its label on one row, outside any table:
	// one paragraph, not a label away from an amount.
	lines := []textLine{
		ln(0, 72, 100, 10, "Thank you for your order. The amounts below include all taxes"),
		ln(0, 72, 112, 10, "and the delivery to the address given in the order."),
		ln(1, 400, 140, 10, "Total EUR"),
		ln(2, 520, 140, 10, "34,73"),
		ln(3, 72, 170, 10, "Payment terms: 14 days net."),
	}
	got := layoutHTML(lines...)
	if !strings.Contains(got, "<p>Total EUR 34,73</p>\n") {
		t.Errorf("label and value apart:\n%s", got)
	}
}

func TestHeadingsOfTwoColumnsOnOneRowAreNotPaired(t *testing.T) {
	t.Parallel()
	// One-line headings of two text columns share a row, and the right
	// one holds a number: they are no label and value, and the page is
	// still read column by column.
	lines := []textLine{
		ln(0, 72, 100, 10, "Introduction"),
		ln(1, 72, 114, 10, "The left column starts the story and it"),
		ln(1, 72, 126, 10, "goes on for a while in the left column."),
		ln(2, 320, 100, 10, "Results of 2010"),
		ln(3, 320, 114, 10, "The right column ends the story with the"),
		ln(3, 320, 126, 10, "last words of the whole page right here."),
	}
	got := layoutHTML(lines...)
	want := "<p>Introduction</p>\n<p>The left column starts the story and it goes on for a while in the left column.</p>\n" +
		"<p>Results of 2010</p>\n<p>The right column ends the story with the last words of the whole page right here.</p>\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestBoldHeaderSetApartFromItsItemsIsTheirTableHeader(t *testing.T) {
	t.Parallel()
	// An invoice's bold column header, a contract line, then the items two
	// and a half lines lower: one table, the items under the header's
	// columns with an empty "Discount %" cell, not a header table and an
	// items table whose amounts shift left under the wrong labels.
	var lines []textLine
	add := func(l textLine) { l.block = len(lines); lines = append(lines, l) }
	for _, h := range []struct {
		x    float64
		text string
	}{{40, "Pos."}, {70, "Qty"}, {100, "Description"}, {300, "Discount %"}, {360, "Price"}, {400, "Amount"}} {
		add(bold(0, h.x, 100, 8, h.text))
	}
	add(ln(0, 100, 118, 8, "Contract No. C-1"))
	for k, it := range []struct{ pos, desc, price string }{{"1", "Mailbox Standard", "3,89"}, {"2", "Mailbox Quality", "5,39"}} {
		y := 146 + 12*float64(k)
		add(ln(0, 52, y, 8, it.pos))
		add(ln(0, 78, y, 8, "1"))
		add(ln(0, 100, y, 8, it.desc))
		add(ln(0, 364, y, 8, it.price))
		add(ln(0, 408, y, 8, it.price))
	}
	got := layoutHTML(lines...)
	want := "<table>\n<tr><th>Pos.</th><th>Qty</th><th>Description</th><th>Discount %</th><th>Price</th><th>Amount</th></tr>\n" +
		"<tr><td></td><td></td><td>Contract No. C-1</td><td></td><td></td><td></td></tr>\n" +
		"<tr><td>1</td><td>1</td><td>Mailbox Standard</td><td></td><td>3,89</td><td>3,89</td></tr>\n" +
		"<tr><td>2</td><td>1</td><td>Mailbox Quality</td><td></td><td>5,39</td><td>5,39</td></tr>\n</table>\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestLastItemKeepsItsWrappedLinesInTheTable(t *testing.T) {
	t.Parallel()
	// Every item's description goes on for two lines under it; the last
	// item's do too, and stay in the table as the others' do. The
	// paragraph further down is not part of it.
	var lines []textLine
	add := func(l textLine) { l.block = len(lines); lines = append(lines, l) }
	for k, it := range []struct{ pos, desc, amount, service string }{
		{"1", "Mailbox Standard", "3,89", "Service: alpha"}, {"2", "Mailbox Quality", "5,39", "Service: beta"}} {
		y := 100 + 48*float64(k)
		add(ln(0, 40, y, 8, it.pos))
		add(ln(0, 100, y, 8, it.desc))
		add(ln(0, 300, y, 8, it.amount))
		add(ln(0, 100, y+16, 8, "Base fee"))
		add(ln(0, 100, y+32, 8, it.service))
	}
	add(ln(0, 40, 240, 8, "Payable within 14 days."))
	got := layoutHTML(lines...)
	want := "<table>\n<tr><td>1</td><td>Mailbox Standard</td><td>3,89</td></tr>\n" +
		"<tr><td></td><td>Base fee</td><td></td></tr>\n<tr><td></td><td>Service: alpha</td><td></td></tr>\n" +
		"<tr><td>2</td><td>Mailbox Quality</td><td>5,39</td></tr>\n" +
		"<tr><td></td><td>Base fee</td><td></td></tr>\n<tr><td></td><td>Service: beta</td><td></td></tr>\n</table>\n" +
		"<p>Payable within 14 days.</p>\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestHeaderLineIsSplitWhereALabelStartsBesideItsValues(t *testing.T) {
	t.Parallel()
	// "VAT" over "21%" and the right-aligned "Price incl. VAT" over the
	// prices are one line to poppler, and "Price" lies over neither
	// column. The cut goes before the one word that can start a label
	// ("incl." cannot): a header row of the table, not headings.
	lines := []textLine{bold(0, 40, 100, 8, "Item"), bold(1, 300, 100, 8, "VAT Price incl. VAT")}
	for k, it := range []struct{ item, price string }{{"Laptop", "€ 399,00"}, {"Mouse", "€ 19,00"}} {
		y := 112 + 12*float64(k)
		p := ln(4+3*k, 0, y, 8, it.price)
		d := 372 - p.x1 // right-aligned at 372
		p.x0, p.x1 = p.x0+d, p.x1+d
		for i := range p.words {
			p.words[i].x0, p.words[i].x1 = p.words[i].x0+d, p.words[i].x1+d
		}
		lines = append(lines, ln(2+3*k, 40, y, 8, it.item), ln(3+3*k, 300, y, 8, "21%"), p)
	}
	got := layoutHTML(lines...)
	want := "<table>\n<tr><th>Item</th><th>VAT</th><th>Price incl. VAT</th></tr>\n" +
		"<tr><td>Laptop</td><td>21%</td><td>€ 399,00</td></tr>\n<tr><td>Mouse</td><td>21%</td><td>€ 19,00</td></tr>\n</table>\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestBoldLeadingRowsOfATableAreItsHeader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		header func(block int, x, y, size float64, text string) textLine
		body   func(block int, x, y, size float64, text string) textLine
		want   string
	}{
		{"a bold row over plain rows is the header", bold, ln,
			"<table>\n<tr><th>Name</th><th>Amount</th></tr>\n<tr><td>Rent</td><td>400</td></tr>\n<tr><td>Power</td><td>60</td></tr>\n</table>\n"},
		{"a table all in bold has no header", bold, bold,
			"<table>\n<tr><td>Name</td><td>Amount</td></tr>\n<tr><td>Rent</td><td>400</td></tr>\n<tr><td>Power</td><td>60</td></tr>\n</table>\n"},
		{"a table all plain has no header", ln, ln,
			"<table>\n<tr><td>Name</td><td>Amount</td></tr>\n<tr><td>Rent</td><td>400</td></tr>\n<tr><td>Power</td><td>60</td></tr>\n</table>\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lines := []textLine{tt.header(0, 72, 100, 10, "Name"), tt.header(1, 300, 100, 10, "Amount"),
				tt.body(2, 72, 114, 10, "Rent"), tt.body(3, 300, 114, 10, "400"),
				tt.body(4, 72, 128, 10, "Power"), tt.body(5, 300, 128, 10, "60")}
			if got := layoutHTML(lines...); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
