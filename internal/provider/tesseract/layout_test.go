package tesseract

import (
	"fmt"
	"strings"
	"testing"
)

// Fixture pages for the reading order: blocks of lines laid out on an
// upright page of fixturePage pixels, written as tesseract's TSV. Each
// character is charWidth wide, words are a space apart, lines lineHeight
// tall.
const (
	charWidth  = 20
	lineHeight = 30
)

var fixturePage = rect{0, 0, 2000, 3000}

// fxLine is a line of text whose first word starts at x, top at y; its
// height is h, or lineHeight when h is 0. Each space in the text is a
// character wide: runs of spaces set words apart.
type fxLine struct {
	x, y int
	text string
	h    int
}

// fxBlock is a block of one paragraph.
type fxBlock []fxLine

// turn says how the fixture page lies in the scan: "" upright, "L"
// turned a quarter to the left (text reads upwards), "R" a quarter to the
// right, "180" upside down. Tesseract reads such a page turned but reports
// the boxes on the scan, in its reading order. "RTL" is the page mirrored,
// upright: a right-to-left script, whose words tesseract lists in reading
// order, leftwards, its lines downwards.
func fixtureTSV(t *testing.T, turn string, blocks ...fxBlock) string {
	t.Helper()
	w, h := fixturePage.x1, fixturePage.y1
	onScan := func(r rect) rect {
		switch turn {
		case "":
			return r
		case "L":
			return rect{r.y0, w - r.x1, r.y1, w - r.x0}
		case "R":
			return rect{h - r.y1, r.x0, h - r.y0, r.x1}
		case "180":
			return rect{w - r.x1, h - r.y1, w - r.x0, h - r.y0}
		case "RTL":
			return rect{w - r.x1, r.y0, w - r.x0, r.y1}
		}
		t.Fatalf("unknown turn %q", turn)
		return r
	}
	var b strings.Builder
	b.WriteString("level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n")
	row := func(level, block, line, word int, r rect, conf, text string) {
		r = onScan(r)
		fmt.Fprintf(&b, "%d\t1\t%d\t1\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n",
			level, block, line, word, r.x0, r.y0, r.x1-r.x0, r.y1-r.y0, conf, text)
	}
	for bi, blk := range blocks {
		row(2, bi+1, 0, 0, rect{}, "-1", "")
		for li, l := range blk {
			x, h := l.x, l.h
			if h == 0 {
				h = lineHeight
			}
			wi := 0
			for _, word := range strings.Split(l.text, " ") {
				if word == "" { // a space more
					x += charWidth
					continue
				}
				wi++
				r := rect{x, l.y, x + charWidth*len([]rune(word)), l.y + h}
				row(5, bi+1, li+1, wi, r, "95.5", word)
				x = r.x1 + charWidth
			}
		}
	}
	return b.String()
}

// column is a block of lines starting at x, the first at y, one every
// pitch pixels.
func column(x, y, pitch int, lines ...string) fxBlock {
	var b fxBlock
	for i, l := range lines {
		b = append(b, fxLine{x: x, y: y + i*pitch, text: l})
	}
	return b
}

var (
	labels  = column(100, 500, 50, "AWS Data Transfer", "Amazon Glacier", "VAT **", "Amazon Simple Storage Service")
	amounts = column(1700, 502, 50, "$0.01", "$2.22", "$0.00", "$0.01")
	// labelsTable is how labels and amounts read.
	labelsTable = "| AWS Data Transfer | $0.01 |\n| --- | --- |\n| Amazon Glacier | $2.22 |\n" +
		"| VAT \\*\\* | $0.00 |\n| Amazon Simple Storage Service | $0.01 |"

	// Two columns of prose set on one grid: every line is level with one
	// of the other column, as on a magazine page.
	proseLeft = column(100, 500, 40,
		"cause of her sadness. Gently, sim-", "ply, he talked with her of life and",
		"love. He comforted her. She was six", "years old.")
	proseRight = column(1050, 500, 40,
		"Guarendi's book shows that tradi-", "tional values, rooted in the bedrock",
		"of mutual trust, truth and uncondi-", "tional love, are still the keys")
	// A paragraph set ragged on the line spacing of a sidebar of short
	// lines beside it (a newsletter's contents): each line is level with
	// one of the sidebar's, and the next line's first word would not have
	// fit on it.
	sidebar = column(100, 500, 50, "In this issue", "Chair's letter 1", "Plot inspections 2", "Seed swap 3",
		"Compost corner 4")
	paragraph = column(600, 500, 50,
		"Dear members, what a season it has been. The late",
		"frost in May took most of the early potatoes on",
		"the lower plots, and the dry July kept the water",
		"butts empty for weeks.")
	paragraphText = "Dear members, what a season it has been. The late\nfrost in May took most of the early potatoes on\n" +
		"the lower plots, and the dry July kept the water\nbutts empty for weeks."

	proseColumns = "cause of her sadness. Gently, sim-\nply, he talked with her of life and\n" +
		"love. He comforted her. She was six\nyears old.\n\n" +
		"Guarendi's book shows that tradi-\ntional values, rooted in the bedrock\n" +
		"of mutual trust, truth and uncondi-\ntional love, are still the keys"
)

func TestTSVToMarkdownReadsTableColumnsRowByRow(t *testing.T) {
	tests := []struct {
		name   string
		blocks []fxBlock
		want   string
	}{
		{
			"a label column and an amount column are read as table rows",
			[]fxBlock{labels, amounts},
			labelsTable,
		},
		{
			"the table comes where its first block does, later blocks keep their place",
			[]fxBlock{column(100, 300, 50, "Detail"), labels, column(100, 900, 50, "Thank you"), amounts},
			"Detail\n\n" + labelsTable + "\n\nThank you",
		},
		{
			"a one-row table is a label and its value on one line",
			[]fxBlock{column(100, 500, 50, "Total for this invoice"), column(1700, 500, 50, "$4.11")},
			"Total for this invoice $4.11",
		},
		{
			"two fields of a footer on one row are a line each",
			[]fxBlock{column(100, 2500, 50, "Example Hosting GmbH, Hauptstr. 5, 10115 Berlin"), column(1400, 2500, 50, "VAT ID DE123456789")},
			"Example Hosting GmbH, Hauptstr. 5, 10115 Berlin\nVAT ID DE123456789",
		},
		{
			"a label holding a digit beside a number is two fields",
			[]fxBlock{column(100, 2500, 50, "Tel. 030 1234567"), column(1400, 2500, 50, "Fax 030 1234568")},
			"Tel. 030 1234567\nFax 030 1234568",
		},
		{
			"a price and a line total alone on their row are a line each",
			[]fxBlock{column(1300, 500, 50, "3,89"), column(1700, 500, 50, "3,89")},
			"3,89\n3,89",
		},
		{
			"a one-row line the engine cut into blocks stays one line, apart from a page number",
			[]fxBlock{column(100, 100, 50, "CWEB USER MANUAL (VER"), column(560, 100, 50, "SION 3.64)"), column(1700, 100, 50, "7")},
			"CWEB USER MANUAL (VER SION 3.64)\n7",
		},
		{
			"a total row in blocks of its own continues the table above",
			[]fxBlock{labels, amounts, column(100, 700, 50, "Total"), column(1700, 700, 50, "$2.24")},
			labelsTable + "\n| Total | $2.24 |",
		},
		{
			"a footer of as many columns far below is a table of its own",
			[]fxBlock{labels, amounts, column(100, 2500, 50, "Bank", "Court"), column(1700, 2500, 50, "DE12 3456", "HRB 1234")},
			labelsTable + "\n\n| Bank | DE12 3456 |\n| --- | --- |\n| Court | HRB 1234 |",
		},
		{
			"a column cut into several blocks is one column of the table",
			[]fxBlock{column(100, 500, 50, "AWS Data Transfer", "Amazon Glacier"),
				column(100, 600, 50, "VAT **", "Amazon Simple Storage Service"), amounts},
			labelsTable,
		},
		{
			"three columns are read across",
			[]fxBlock{column(100, 500, 50, "Charges", "Credits"), column(900, 500, 50, "2", "1"),
				column(1700, 500, 50, "$4.11", "$0.00")},
			"| Charges | 2 | $4.11 |\n| --- | --- | --- |\n| Credits | 1 | $0.00 |",
		},
		{
			"a ragged column leaves a cell empty",
			[]fxBlock{column(100, 500, 50, "Compute", "Cloud", "Glacier"), column(1700, 500, 100, "$1.87", "$2.22")},
			"| Compute | $1.87 |\n| --- | --- |\n| Cloud |  |\n| Glacier | $2.22 |",
		},
		{
			"a pipe in a cell is escaped",
			[]fxBlock{column(100, 500, 50, "a|b", "c"), column(1700, 500, 50, "1", "2")},
			"| a\\|b | 1 |\n| --- | --- |\n| c | 2 |",
		},
		{
			"a paragraph beside a sidebar of short lines on its line spacing is text, not a table",
			[]fxBlock{sidebar, paragraph},
			"In this issue\nChair's letter 1\nPlot inspections 2\nSeed swap 3\nCompost corner 4\n\n" + paragraphText,
		},
		{
			"a sidebar on the right of a paragraph is text too",
			[]fxBlock{paragraph, column(1500, 500, 50, "Opening hours", "Mon-Fri 9-18", "Saturday 10-14")},
			paragraphText + "\n\nOpening hours\nMon-Fri 9-18\nSaturday 10-14",
		},
		{
			"long descriptions that fill their column but start anew are a table's column",
			[]fxBlock{
				column(100, 500, 50, "Web hosting package Business XL, November", "Web hosting package Business XL, December",
					"Domain example.org, yearly renewal fee"),
				column(1700, 500, 50, "49.00", "49.00", "12.00"),
			},
			"| Web hosting package Business XL, November | 49.00 |\n| --- | --- |\n" +
				"| Web hosting package Business XL, December | 49.00 |\n| Domain example.org, yearly renewal fee | 12.00 |",
		},
		{
			"rows of a label and an amount far apart in one block are no paragraph, however they fill it",
			[]fxBlock{
				column(100, 500, 50, "1", "2", "3"),
				column(300, 500, 50, fmt.Sprintf("%-48s%7s", "le-tout-lyon.fr du 06/12/2022 annonce", "45,93"),
					fmt.Sprintf("%-48s%7s", "justificatif PDF du 06/12/2022 copie", "0,75"),
					fmt.Sprintf("%-48s%7s", "justificatif papier du 06/12/2022 envoi", "3,50")),
			},
			"| 1 | le-tout-lyon.fr du 06/12/2022 annonce 45,93 |\n| --- | --- |\n" +
				"| 2 | justificatif PDF du 06/12/2022 copie 0,75 |\n| 3 | justificatif papier du 06/12/2022 envoi 3,50 |",
		},
		{
			"a paragraph within a line's height of short lines is one text cut in two, read across",
			[]fxBlock{
				column(100, 500, 50, "If r is the spec", "will be formatted", "example, TeX"),
				column(440, 500, 50, "ial identifier TeX, identifier will be formatted as",
					"a control sequence; for example, the identifier is",
					"printed as the TeX logo in the woven output file."),
			},
			"| If r is the spec | ial identifier TeX, identifier will be formatted as |\n| --- | --- |\n" +
				"| will be formatted | a control sequence; for example, the identifier is |\n" +
				"| example, TeX | printed as the TeX logo in the woven output file. |",
		},
		{
			"prose columns with level lines are read column by column",
			[]fxBlock{proseLeft, proseRight},
			proseColumns,
		},
		{
			"short columns whose lines are not level are read column by column",
			[]fxBlock{column(100, 500, 50, "one", "two", "three"), column(1700, 525, 50, "1", "2", "3")},
			"one\ntwo\nthree\n\n1\n2\n3",
		},
		{
			"a page number beside a prose column stays apart",
			[]fxBlock{proseLeft, column(1700, 500, 50, "64")},
			strings.SplitN(proseColumns, "\n\n", 2)[0] + "\n\n64",
		},
		{
			"most lines must be level: two of five are not enough",
			[]fxBlock{column(100, 500, 50, "a", "b", "c", "d", "e"), column(1700, 500, 50, "1", "2")},
			"a\nb\nc\nd\ne\n\n1\n2",
		},
		{
			// AmazonWebServices.png's logo, read as three tall lines of
			// noise, beside the title and the line below it.
			"a tall line is not level with a small one it overlaps by less than half its height",
			[]fxBlock{
				{{x: 175, y: 180, h: 100, text: "asus"}, {x: 175, y: 281, h: 103, text: "toe amazon"}, {x: 225, y: 365, h: 81, text: "webservices"}},
				{{x: 1250, y: 331, h: 59, text: "Amazon Web Services Invoice"}},
				{{x: 1250, y: 419, text: "Email or talk to us about your AWS account"}},
			},
			"asus\ntoe amazon\nwebservices\n\nAmazon Web Services Invoice\n\nEmail or talk to us about your AWS account",
		},
		{
			"blocks one above the other are not columns",
			[]fxBlock{column(100, 500, 50, "Charges"), column(100, 600, 50, "$4.11")},
			"Charges\n\n$4.11",
		},
		{
			"one block is read as it is",
			[]fxBlock{column(100, 500, 50, "The quick", "brown fox")},
			"The quick\nbrown fox",
		},
		{
			"an empty page is empty",
			nil,
			"",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tsvToMarkdown(fixtureTSV(t, "", tt.blocks...)); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// A page of right-to-left script lists its words leftwards, as a page
// upside down does, but its lines downwards: it is read top to bottom, a
// table from its rightmost column, not turned over.
func TestTSVToMarkdownReadsRightToLeftPagesTopToBottom(t *testing.T) {
	tests := []struct {
		name   string
		blocks []fxBlock
		want   string
	}{
		{"label and amount columns", []fxBlock{labels, amounts}, labelsTable},
		{"prose columns", []fxBlock{proseLeft, proseRight}, proseColumns},
		{"a paragraph and a line below it", []fxBlock{proseLeft, column(100, 800, 50, "64")},
			strings.SplitN(proseColumns, "\n\n", 2)[0] + "\n\n64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tsvToMarkdown(fixtureTSV(t, "RTL", tt.blocks...)); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// A page scanned sideways or upside down is read by tesseract turned, but
// its boxes are the scan's: rows and columns are found all the same.
// Recognize reads such a page again from the image turned upright
// (TestRecognizeReadsATurnedInvoiceAsUpright), so these boxes reach the
// layout only when it cannot (a JPEG 2000, a page over 64 megapixels, a
// second run that failed); the fixtures are drawn, not recorded.
func TestTSVToMarkdownReadsTurnedPagesInTheirOwnFrame(t *testing.T) {
	tests := []struct {
		name   string
		blocks []fxBlock
		want   string
	}{
		{"label and amount columns", []fxBlock{labels, amounts}, labelsTable},
		{"prose columns", []fxBlock{proseLeft, proseRight}, proseColumns},
	}
	for _, tt := range tests {
		for _, turn := range []string{"L", "R", "180"} {
			t.Run(tt.name+"/"+turn, func(t *testing.T) {
				if got := tsvToMarkdown(fixtureTSV(t, turn, tt.blocks...)); got != tt.want {
					t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
				}
			})
		}
	}
}
