package pdf

import (
	"bytes"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A small PDF writer for test documents: text pages in the standard
// Helvetica fonts and image-only pages (a scan). testdata/scan-page2.pdf is
// written by it; run `go test -run TestScanFixtureIsCurrent -update` to
// rewrite it.

var update = flag.Bool("update", false, "rewrite generated testdata")

// run is one piece of text: x and y (of the baseline) in points from the
// page's top left.
type run struct {
	x, y, size float64
	bold       bool
	text       string
	// turn is how many quarter turns counter-clockwise the text is set at
	// (1: it reads up the page; 2: upside down).
	turn int
}

// testPage is a US Letter page of text runs, or of one full-page JPEG.
type testPage struct {
	runs []run
	jpeg []byte
}

// buildPDF writes pages as a PDF with a correct cross-reference table.
func buildPDF(pages []testPage) []byte {
	var objs []string // object bodies; object n is objs[n-1]
	add := func(body string) int {
		objs = append(objs, body)
		return len(objs)
	}
	catalog := add("") // filled in below
	pagesObj := add("")
	regular := add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	bold := add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>")
	var kids []string
	for _, p := range pages {
		var content, res string
		if p.jpeg != nil {
			cfg, err := jpeg.DecodeConfig(bytes.NewReader(p.jpeg))
			if err != nil {
				panic(err)
			}
			img := add(fmt.Sprintf("<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /DCTDecode /Length %d >>\nstream\n%s\nendstream",
				cfg.Width, cfg.Height, len(p.jpeg), p.jpeg))
			content = "q 612 0 0 792 0 0 cm /Im1 Do Q"
			res = fmt.Sprintf("<< /XObject << /Im1 %d 0 R >> >>", img)
		} else {
			var sb strings.Builder
			for _, r := range p.runs {
				font := "F1"
				if r.bold {
					font = "F2"
				}
				if r.turn%4 == 0 {
					fmt.Fprintf(&sb, "BT /%s %g Tf %g %g Td (%s) Tj ET\n", font, r.size, r.x, 792-r.y, pdfString(r.text))
					continue
				}
				m := [...]string{"", "0 1 -1 0", "-1 0 0 -1", "0 -1 1 0"}[r.turn%4]
				fmt.Fprintf(&sb, "BT /%s %g Tf %s %g %g Tm (%s) Tj ET\n", font, r.size, m, r.x, 792-r.y, pdfString(r.text))
			}
			content = sb.String()
			res = fmt.Sprintf("<< /Font << /F1 %d 0 R /F2 %d 0 R >> >>", regular, bold)
		}
		stream := add(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content))
		page := add(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources %s /Contents %d 0 R >>", pagesObj, res, stream))
		kids = append(kids, fmt.Sprintf("%d 0 R", page))
	}
	objs[catalog-1] = fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", pagesObj)
	objs[pagesObj-1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(kids))

	var buf bytes.Buffer
	buf.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objs))
	for i, body := range objs {
		offsets[i] = buf.Len()
		fmt.Fprintf(&buf, "%d 0 obj\n%s\nendobj\n", i+1, body)
	}
	xref := buf.Len()
	fmt.Fprintf(&buf, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&buf, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&buf, "trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, catalog, xref)
	return buf.Bytes()
}

// pdfString escapes s for a PDF literal string in WinAnsiEncoding.
func pdfString(s string) string {
	var sb strings.Builder
	for _, r := range s {
		switch {
		case r == '(' || r == ')' || r == '\\':
			sb.WriteByte('\\')
			sb.WriteRune(r)
		case r == '•':
			sb.WriteString(`\225`)
		case r < 0x80:
			sb.WriteRune(r)
		default:
			sb.WriteByte('?')
		}
	}
	return sb.String()
}

// scanJPEG is a grey page with dark bars where a scan would have lines of
// text: an image with no text layer.
func scanJPEG() []byte {
	img := image.NewGray(image.Rect(0, 0, 425, 550)) // 50 dpi Letter
	for y := range 550 {
		for x := range 425 {
			v := uint8(235)
			if x > 50 && x < 375 && y > 60 && y < 480 && (y/14)%2 == 0 && (x/23)%6 != 5 {
				v = 30
			}
			img.SetGray(x, y, color.Gray{Y: v})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 60}); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// scanFixture is testdata/scan-page2.pdf: a text page, then a scanned page.
func scanFixture() []byte {
	return buildPDF([]testPage{
		{runs: []run{
			{x: 72, y: 90, size: 20, bold: true, text: "Quarterly report"},
			{x: 72, y: 130, size: 11, text: "This first page has a real text layer. It is read locally from the PDF"},
			{x: 72, y: 145, size: 11, text: "and never sent to the OCR provider, because every character on it is"},
			{x: 72, y: 160, size: 11, text: "already text. The second page is a scanned image without any text."},
		}},
		{jpeg: scanJPEG()},
	})
}

func TestScanFixtureHasATextPageThenAnImagePage(t *testing.T) {
	path := filepath.Join("testdata", "scan-page2.pdf")
	if *update {
		if err := os.WriteFile(path, scanFixture(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	info, err := exec.Command("pdfinfo", path).Output()
	if err != nil {
		t.Fatalf("pdfinfo: %v (run with -update to write the fixture)", err)
	}
	if di := parseInfo(info); di.pages != 2 {
		t.Errorf("pages = %d, want 2", di.pages)
	}
	list, err := exec.Command("pdfimages", "-list", path).Output()
	if err != nil {
		t.Fatal(err)
	}
	cov := parseImageList(list, map[int][2]float64{1: {612, 792}, 2: {612, 792}})
	if cov[1] != 0 || cov[2] < 0.99 {
		t.Errorf("image coverage page 1 = %.2f, page 2 = %.2f; want 0 and 1", cov[1], cov[2])
	}
}
