package pdf

import (
	"strings"
	"testing"
)

// Column gutters inside one poppler block, and reading order around a
// caption set in a gutter.

// joined is a line made of two lines on one row, as poppler joins a scan's
// lines across a gutter.
func joined(a, b textLine) textLine {
	return concatLines(a, b)
}

func TestColumnsInOneBlockAreReadColumnByColumn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		lines []textLine
		want  string
	}{
		{
			// 8087's lower half: poppler's one block holds the lines of
			// the left column, a photo caption and the right column, top
			// to bottom, so read as a block the page runs across them.
			name: "a block of a column, a caption and a column, interleaved line by line",
			lines: []textLine{
				ln(0, 72, 100, 10, "The left column tells the story"),
				ln(0, 400, 100, 10, "While the right column goes on"),
				ln(0, 72, 112, 10, "of the old city and its walls"),
				ln(0, 300, 112, 10, "THE ROOFS"),
				ln(0, 400, 112, 10, "with the tale of the new port"),
				ln(0, 72, 124, 10, "that were built long ago by the"),
				ln(0, 300, 124, 10, "OF THE"),
				ln(0, 400, 124, 10, "and its ships that sail out to"),
				ln(0, 72, 136, 10, "people who lived here in peace."),
				ln(0, 300, 136, 10, "CITY"),
				ln(0, 400, 136, 10, "the islands every single day."),
			},
			want: "<p>The left column tells the story of the old city and its walls that were built long ago by the people who lived here in peace.</p>\n" +
				"<p>THE ROOFS OF THE CITY</p>\n" +
				"<p>While the right column goes on with the tale of the new port and its ships that sail out to the islands every single day.</p>\n",
		},
		{
			name: "lines poppler joined across the gutter are split at it",
			lines: []textLine{
				joined(ln(0, 72, 100, 10, "The left column tells the story"), ln(0, 260, 100, 10, "while the right column goes on")),
				joined(ln(0, 72, 112, 10, "of the old city and its walls"), ln(0, 260, 112, 10, "with the tale of the new port")),
				joined(ln(0, 72, 124, 10, "that were built long ago by the"), ln(0, 260, 124, 10, "and its ships that sail out to")),
				joined(ln(0, 72, 136, 10, "people who lived here in peace."), ln(0, 260, 136, 10, "the islands every single day.")),
				ln(0, 72, 148, 10, "And so the left column ends."),
				ln(0, 260, 148, 10, "And so does the right one."),
			},
			want: "<p>The left column tells the story of the old city and its walls that were built long ago by the people who lived here in peace. And so the left column ends.</p>\n" +
				"<p>while the right column goes on with the tale of the new port and its ships that sail out to the islands every single day. And so does the right one.</p>\n",
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

func TestBlocksWithoutColumnGuttersKeepTheirLines(t *testing.T) {
	t.Parallel()
	// A river: the stretched spaces of a justified paragraph, every one
	// 13 points wide (1.3 em, as wide as a gutter), line up down its
	// lines between the third and the fourth word (the first three words
	// of every line have 12 letters).
	river := func(y float64, text string) textLine {
		l := ln(0, 72, y, 10, text)
		for i := range l.words {
			l.words[i].x0 += 10.5 * float64(i)
			l.words[i].x1 += 10.5 * float64(i)
		}
		l.x1 = l.words[len(l.words)-1].x1
		return l
	}
	tests := []struct {
		name  string
		lines []textLine
	}{
		{"labels beside their values, one line each", []textLine{
			ln(0, 72, 100, 10, "Invoice number:"), ln(0, 300, 100, 10, "2024-0042"),
			ln(0, 72, 112, 10, "Invoice date:"), ln(0, 300, 112, 10, "12.03.2024"),
			ln(0, 72, 124, 10, "Customer number:"), ln(0, 300, 124, 10, "K-1182"),
			ln(0, 72, 136, 10, "Due date:"), ln(0, 300, 136, 10, "26.03.2024"),
		}},
		{"terms beside their definitions", []textLine{
			ln(0, 72, 100, 10, "gutter"), ln(0, 200, 100, 10, "the white space that parts two columns of a page"),
			ln(0, 72, 112, 10, "river"), ln(0, 200, 112, 10, "spaces of justified lines that line up by chance"),
			ln(0, 72, 124, 10, "leading"), ln(0, 200, 124, 10, "the space between the lines of a paragraph set"),
			ln(0, 72, 136, 10, "kerning"), ln(0, 200, 136, 10, "the space between two letters of a single word"),
		}},
		{"a river down a justified paragraph", []textLine{
			river(100, "Each line here has eight words and wide spaces"),
			river(112, "that were made wider than usual by hand so"),
			river(124, "when they line up down the text to make a"),
			river(136, "that runs down four lines of it and looks like"),
			river(148, "this gap, like a gutter, parts the text into"),
			river(160, "two; this text stays only one single column."),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tp := &textPage{number: 1, width: 612, height: 792, lines: tt.lines}
			ls := prepareLines(tp)
			before := texts(ls)
			if got := texts(splitColumns(ls, bodySize(ls))); got != before {
				t.Errorf("lines were cut or reordered:\n%s\nwant\n%s", got, before)
			}
		})
	}
}

// texts is the lines' text with their blocks, one per row.
func texts(ls []line) string {
	var sb strings.Builder
	for _, l := range ls {
		sb.WriteString(strings.Repeat(" ", l.block) + l.text + "\n")
	}
	return sb.String()
}

func TestACaptionInTheGutterIsReadAfterTheColumnsBesideIt(t *testing.T) {
	t.Parallel()
	// 8087's page: two columns, each in blocks a line or two high (so the
	// page cuts into bands at every line), with a caption in the gutter
	// that stops the cut between the columns; poppler reads the blocks
	// back and forth between the columns.
	lines := []textLine{
		ln(11, 72, 76, 10, "This page has two columns and"),
		ln(12, 320, 76, 10, "A caption sits in their gutter"),
		ln(13, 72, 88, 10, "each of them has short blocks."),
		ln(14, 320, 88, 10, "under a photo."),
		ln(0, 72, 100, 10, "The left column tells the story"),
		ln(1, 320, 100, 10, "The right column goes on with"),
		ln(2, 72, 112, 10, "of the old city and its walls"),
		ln(3, 320, 112, 10, "the tale of the new port and"),
		ln(4, 72, 124, 10, "that were built long ago by the"),
		ln(5, 270, 124, 10, "THE ROOFS"),
		ln(5, 272, 136, 10, "OF THE"),
		ln(6, 320, 124, 10, "its ships that sail out to the"),
		ln(7, 72, 136, 10, "people who lived here in peace."),
		ln(8, 320, 136, 10, "islands every single day, and"),
		ln(9, 72, 148, 10, "The left column ends here."),
		ln(10, 300, 148, 10, "here the right one ends too."),
	}
	// Lines of both columns reach into the caption's width, above and
	// below it: the caption sits across the gutter.
	lines[4].x1 = 290
	want := "<p>This page has two columns and each of them has short blocks.</p>\n" +
		"<p>The left column tells the story of the old city and its walls that were built long ago by the people who lived here in peace.</p>\n" +
		"<p>The left column ends here.</p>\n" +
		"<p>A caption sits in their gutter under a photo.</p>\n" +
		"<p>The right column goes on with the tale of the new port and its ships that sail out to the islands every single day, and here the right one ends too.</p>\n" +
		"<p>THE ROOFS OF THE</p>\n"
	if got := layoutHTML(lines...); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
