// Command sidebars draws the layout test pages of this directory: text set
// beside a sidebar of short lines on the same line spacing, a table whose
// description column has long lines, and a footer of two fields on one
// row. They stand for pages no corpus file has (a newsletter's contents, a
// CV's margin list), drawn with the system's DejaVu fonts at 200 dpi, as
// pdftoppm renders a PDF page for the engine, and stored as 16-grey PNGs
// to stay small. Run from the repository root:
//
//	go run ./internal/provider/tesseract/testdata/sidebars [-fonts DIR] [-out DIR]
package main

import (
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"log"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/image/font"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

const dpi = 200

// text is a block of text: lines given, or paragraphs wrapped to width.
// y is the first line's baseline; every line is lead points below the
// last, an empty paragraph is an empty line. right aligns the lines to
// x+width.
type text struct {
	font        string
	size, lead  float64 // points
	x, y, width int     // pixels
	lines       []string
	paragraphs  []string
	right       bool
}

type page struct {
	name   string
	w, h   int
	blocks []text
}

var pages = []page{
	{
		name: "newsletter", w: 1500, h: 700,
		blocks: []text{
			{font: "DejaVuSerif-Bold", size: 18, x: 90, y: 110, lines: []string{"Riverside Allotment Society"}},
			{font: "DejaVuSerif", size: 11, x: 90, y: 170, lines: []string{"Autumn newsletter, October 2026"}},
			{font: "DejaVuSans-Bold", size: 10, lead: 14, x: 90, y: 280, lines: []string{"In this issue"}},
			{font: "DejaVuSans", size: 10, lead: 14, x: 90, y: 280 + 39, lines: []string{
				"Chair's letter 1", "Plot inspections 2", "Seed swap 3", "Compost corner 4",
				"Work party dates 5", "Committee news 6", "Classified 7"}},
			{font: "DejaVuSerif", size: 10, lead: 14, x: 500, y: 280, width: 910, paragraphs: []string{
				"Dear members, what a season it has been. The late frost in May took most of the early " +
					"potatoes on the lower plots, and the dry July kept the water butts empty for weeks, " +
					"yet the show in August had more entries than any year since we started keeping records.",
				"",
				"Thank you to everyone who helped clear the old orchard. The committee has agreed to plant " +
					"six new apple trees there in November, and we would welcome volunteers with a spade and " +
					"a free Saturday morning.",
			}},
		},
	},
	{
		name: "cv", w: 1500, h: 720,
		blocks: []text{
			{font: "DejaVuSans-Bold", size: 16, x: 90, y: 110, lines: []string{"Maria Lindqvist"}},
			{font: "DejaVuSans", size: 11, x: 90, y: 165, lines: []string{"Backend engineer, Gothenburg"}},
			{font: "DejaVuSans-Bold", size: 10, lead: 14, x: 90, y: 270, lines: []string{"Skills"}},
			{font: "DejaVuSans", size: 10, lead: 14, x: 90, y: 270 + 39, lines: []string{
				"Go", "PostgreSQL", "Linux", "Kubernetes"}},
			{font: "DejaVuSans-Bold", size: 10, lead: 14, x: 90, y: 270 + 6*39, lines: []string{"Languages"}},
			{font: "DejaVuSans", size: 10, lead: 14, x: 90, y: 270 + 7*39, lines: []string{
				"Swedish", "English", "German"}},
			{font: "DejaVuSans-Bold", size: 10, lead: 14, x: 470, y: 270, lines: []string{"Experience"}},
			{font: "DejaVuSerif", size: 10, lead: 14, x: 470, y: 270 + 39, width: 940, paragraphs: []string{
				"Since 2021 I have led the payments team at a logistics company, where we moved the " +
					"invoicing service from a nightly batch job to a queue of small workers and cut the " +
					"time from delivery to invoice from two days to a few minutes. Before that I spent four " +
					"years at a bank building the systems that check card payments for fraud, and I still " +
					"enjoy work where a wrong answer costs money and a slow one costs customers.",
			}},
		},
	},
	{
		name: "opening-hours", w: 1500, h: 480,
		blocks: []text{
			{font: "DejaVuSerif-Bold", size: 16, x: 90, y: 110, lines: []string{"The library reopens"}},
			{font: "DejaVuSerif", size: 10, lead: 14, x: 90, y: 210, width: 900, paragraphs: []string{
				"After eight months of building work the town library opens its doors again on Monday. " +
					"The reading room has new windows and twice as many seats, the children's corner has " +
					"moved to the ground floor, and the local history collection is back on open shelves " +
					"for the first time since the flood.",
			}},
			{font: "DejaVuSans-Bold", size: 10, lead: 14, x: 1080, y: 210, lines: []string{"Opening hours"}},
			{font: "DejaVuSans", size: 10, lead: 14, x: 1080, y: 210 + 39, lines: []string{
				"Mon-Fri 9-18", "Saturday 10-14", "Sunday closed"}},
		},
	},
	{
		name: "invoice-footer", w: 1500, h: 860,
		blocks: []text{
			{font: "DejaVuSans-Bold", size: 14, x: 90, y: 110, lines: []string{"Invoice 2026-0117"}},
			{font: "DejaVuSans-Bold", size: 10, lead: 14, x: 90, y: 220, lines: []string{"Description"}},
			{font: "DejaVuSans-Bold", size: 10, lead: 14, x: 1200, y: 220, width: 210, right: true, lines: []string{"Amount"}},
			{font: "DejaVuSans", size: 10, lead: 14, x: 90, y: 220 + 39, lines: []string{
				"Web hosting package Business XL, November 2026",
				"Domain example.org, yearly renewal",
				"Daily backups with thirty days of history",
				"Support hours used in October"}},
			{font: "DejaVuSans", size: 10, lead: 14, x: 1200, y: 220 + 39, width: 210, right: true, lines: []string{
				"49.00", "12.00", "9.50", "120.00"}},
			{font: "DejaVuSans-Bold", size: 10, x: 900, y: 220 + 9*39, lines: []string{"Total due"}},
			{font: "DejaVuSans-Bold", size: 10, x: 1200, y: 220 + 9*39, width: 210, right: true, lines: []string{"190.50"}},
			{font: "DejaVuSans", size: 9, x: 90, y: 820, lines: []string{"Example Hosting GmbH, Hauptstr. 5, 10115 Berlin"}},
			{font: "DejaVuSans", size: 9, x: 1100, y: 820, lines: []string{"VAT ID DE123456789"}},
		},
	},
}

func main() {
	fonts := flag.String("fonts", "/usr/share/fonts/truetype/dejavu", "directory of the DejaVu TTF files")
	out := flag.String("out", "internal/provider/tesseract/testdata", "directory the PNG files are written to")
	flag.Parse()
	for _, p := range pages {
		img, err := draw(p, *fonts)
		if err != nil {
			log.Fatalf("page %s: %v", p.name, err)
		}
		path := filepath.Join(*out, p.name+".png")
		f, err := os.Create(path)
		if err != nil {
			log.Fatal(err)
		}
		enc := png.Encoder{CompressionLevel: png.BestCompression}
		if err := enc.Encode(f, img); err != nil {
			log.Fatalf("%s: %v", path, err)
		}
		if err := f.Close(); err != nil {
			log.Fatal(err)
		}
	}
}

// draw sets the page's text black on white in 16 greys.
func draw(p page, fontDir string) (image.Image, error) {
	greys := make(color.Palette, 16)
	for i := range greys {
		greys[i] = color.Gray{Y: uint8(255 - i*17)}
	}
	img := image.NewPaletted(image.Rect(0, 0, p.w, p.h), greys)
	faces := map[string]font.Face{}
	for _, t := range p.blocks {
		key := fmt.Sprintf("%s/%g", t.font, t.size)
		face, ok := faces[key]
		if !ok {
			data, err := os.ReadFile(filepath.Join(fontDir, t.font+".ttf"))
			if err != nil {
				return nil, err
			}
			f, err := opentype.Parse(data)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", t.font, err)
			}
			face, err = opentype.NewFace(f, &opentype.FaceOptions{Size: t.size, DPI: dpi, Hinting: font.HintingFull})
			if err != nil {
				return nil, err
			}
			faces[key] = face
		}
		lines := t.lines
		for _, para := range t.paragraphs {
			lines = append(lines, wrap(face, para, t.width)...)
		}
		lead := t.lead
		if lead == 0 {
			lead = t.size * 1.2
		}
		for i, l := range lines {
			x := t.x
			if t.right {
				x += t.width - font.MeasureString(face, l).Round()
			}
			d := font.Drawer{Dst: img, Src: image.Black, Face: face,
				Dot: fixed.P(x, t.y+int(float64(i)*lead*dpi/72+0.5))}
			d.DrawString(l)
		}
	}
	return img, nil
}

// wrap breaks s into lines no wider than width, greedily, as a word
// processor sets ragged-right text.
func wrap(face font.Face, s string, width int) []string {
	if s == "" {
		return []string{""}
	}
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		try := w
		if line != "" {
			try = line + " " + w
		}
		if line != "" && font.MeasureString(face, try).Round() > width {
			lines = append(lines, line)
			try = w
		}
		line = try
	}
	return append(lines, line)
}
