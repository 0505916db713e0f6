package tesseract

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"

	pageimage "github.com/docjobs/docjobs/internal/convert/image"
	"github.com/docjobs/docjobs/internal/provider"
)

// TestRecognizeReadsATurnedInvoiceAsUpright reads the invoice upright, a
// quarter turn left, a quarter turn right and upside down (turned here
// from AmazonWebServices.png) in two forms: the scan as PNG at its 350 dpi,
// as image.Prepare hands a scan over, and the page grey at 200 dpi as PGM
// with no resolution, as the PDF path renders a scanned page. The turned
// pages, read again from the image turned upright, read exactly as the
// upright one; on the scan each line item's amount (invoice2data's
// expected extraction) is on the line that names it. Read turned, the
// grey page kept 3 of its 14 amounts (turned right), and the scan without
// its resolution 7, 6 and 1 of 12. The upright pages are read once.
func TestRecognizeReadsATurnedInvoiceAsUpright(t *testing.T) {
	t.Parallel() // the engine runs one thread (OMP_THREAD_LIMIT=1): two pages at once
	// A page reads in 5–20 s on a quiet machine but passed the 2-minute
	// default at load 21 (the second, upright reading then never lands):
	// this test is about what is read, not how fast.
	ocr := newOCR(t, Config{Timeout: 10 * time.Minute})
	items := invoiceLineItems(t)
	orig := readTestdata(t, "AmazonWebServices.png")
	src := decodedInvoice(t)
	grey := greyInvoice(t) // at 200 dpi

	forms := []struct {
		name      string
		mime      string
		format    string // as the path that hands the page over asks
		encode    func(t *testing.T, turn string) []byte
		lineItems bool // each line item's amount on its line
	}{
		{"scan, PNG, 350 dpi", "image/png", "markdown", func(t *testing.T, turn string) []byte {
			if turn == "upright" {
				return []byte(orig)
			}
			var buf bytes.Buffer
			enc := png.Encoder{CompressionLevel: png.BestSpeed}
			if err := enc.Encode(&buf, scannedTurned(t, src, turn)); err != nil {
				t.Fatal(err)
			}
			return withChunkOf(t, buf.Bytes(), orig, "pHYs") // the scanner's 350 dpi
		}, true},
		// Read grey at 200 dpi, the engine loses the point of one amount
		// ("$1 87]"), upright as turned.
		{"page, PGM, grey, 200 dpi", "image/x-portable-graymap", "", func(t *testing.T, turn string) []byte {
			var buf bytes.Buffer
			if err := encodePNM(&buf, scannedTurned(t, grey, turn)); err != nil {
				t.Fatal(err)
			}
			return buf.Bytes()
		}, false},
	}
	turns := []string{"upright", "left", "right", "upside down"}
	for _, form := range forms {
		t.Run(form.name, func(t *testing.T) {
			var (
				mu       sync.Mutex
				texts    = map[string]string{}
				timings  = map[string]time.Duration{}
				requests = map[string]string{}
			)
			t.Run("turns", func(t *testing.T) {
				for _, turn := range turns {
					t.Run(turn, func(t *testing.T) {
						t.Parallel()
						doc := provider.Document{Data: form.encode(t, turn), MIME: form.mime, Format: form.format}
						// Upright, both forms are pages other tests read too.
						rec, elapsed := recognizeShared(t, ocr, doc)
						lines := strings.Split(markdownToText(rec.Text), "\n")
						for _, item := range items {
							if form.lineItems && !hasLine(lines, item.Name, "$"+item.PriceUnit) {
								t.Errorf("no line holds %q with its amount $%s", item.Name, item.PriceUnit)
							}
							if !hasLine(lines, item.Name) {
								t.Errorf("no line holds %q", item.Name)
							}
						}
						if reread := strings.Contains(rec.Request, "read again"); reread != (turn != "upright") {
							t.Errorf("Request = %q: read again %v, want %v", rec.Request, reread, turn != "upright")
						}
						if t.Failed() {
							t.Logf("recognized:\n%s", rec.Text)
						}
						mu.Lock()
						texts[turn], timings[turn], requests[turn] = rec.Text, elapsed, rec.Request
						mu.Unlock()
					})
				}
			})
			upright, ok := texts["upright"]
			if !ok {
				return
			}
			for _, turn := range turns {
				got, ok := texts[turn]
				if !ok {
					continue
				}
				if got != upright {
					t.Errorf("turned %s, %d amounts are read, upright %d; it reads:\n%s\nupright:\n%s",
						turn, len(amountPattern.FindAllString(got, -1)), len(amountPattern.FindAllString(upright, -1)), got, upright)
				}
				t.Logf("%-11s %5.2f s  %s", turn, timings[turn].Seconds(), requests[turn])
			}
		})
	}
}

// amountPattern is a dollar amount as the invoice prints them.
var amountPattern = regexp.MustCompile(`\$[0-9]+\.[0-9]{2}`)

type lineItem struct {
	Name      string `json:"name"`
	PriceUnit string `json:"price_unit"`
}

// invoiceLineItems are AmazonWebServices.json's line items.
func invoiceLineItems(t *testing.T) []lineItem {
	t.Helper()
	var expected []struct {
		Lines []lineItem `json:"lines"`
	}
	if err := json.Unmarshal([]byte(readTestdata(t, "AmazonWebServices.json")), &expected); err != nil {
		t.Fatal(err)
	}
	if len(expected) != 1 || len(expected[0].Lines) == 0 {
		t.Fatalf("AmazonWebServices.json: want one invoice with line items, got %+v", expected)
	}
	return expected[0].Lines
}

// hasLine reports whether one of lines holds all of parts.
func hasLine(lines []string, parts ...string) bool {
	for _, l := range lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}

// withChunkOf returns the PNG dst with the chunk of kind that the PNG src
// has, put right after dst's header chunk (IHDR, 25 bytes after the
// signature).
func withChunkOf(t *testing.T, dst []byte, src, kind string) []byte {
	t.Helper()
	i := strings.Index(src, kind)
	if i < 4 {
		t.Fatalf("no %s chunk", kind)
	}
	n := int(binary.BigEndian.Uint32([]byte(src[i-4:])))
	chunk := src[i-4 : i+8+n]
	return slices.Concat(dst[:33], []byte(chunk), dst[33:])
}

// scannedTurned is img as a scanner would give the page laid on it
// turned: "left" a quarter turn counter-clockwise (the text reads
// upwards), "right" clockwise, "upside down"; "upright" is img itself.
// Written out pixel by pixel, apart from the code under test.
func scannedTurned(t *testing.T, img image.Image, how string) image.Image {
	t.Helper()
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	var size image.Rectangle
	var tr turn
	switch how {
	case "upright":
		return img
	case "left":
		size, tr = image.Rect(0, 0, h, w), turnedLeft
	case "right":
		size, tr = image.Rect(0, 0, h, w), turnedRight
	case "upside down":
		size, tr = image.Rect(0, 0, w, h), upsideDown
	default:
		t.Fatalf("unknown turn %q", how)
	}
	switch src := img.(type) {
	case *image.Gray:
		out := image.NewGray(size)
		turnPix(out.Pix, out.Stride, src.Pix[src.PixOffset(b.Min.X, b.Min.Y):], src.Stride, w, h, 1, tr)
		return out
	case *image.RGBA:
		out := image.NewRGBA(size)
		turnPix(out.Pix, out.Stride, src.Pix[src.PixOffset(b.Min.X, b.Min.Y):], src.Stride, w, h, 4, tr)
		return out
	}
	t.Fatalf("scannedTurned: a %T, want a grey or RGBA picture", img)
	return nil
}

// turnPix writes the pixels of the upright picture src (w×h, bpp bytes a
// pixel, stride sstride) into dst as a scanner shows the page laid on it
// turned tr: a scan pixel (x, y) shows the upright one given below.
//
// The race detector would make this loop over the invoice scan's 11
// million pixels seconds a turn; it is there to check the code under
// test, not this copy between two pictures one goroutine owns, so it is
// told to leave the loop alone.
//
//go:norace
func turnPix(dst []byte, dstride int, src []byte, sstride, w, h, bpp int, tr turn) {
	dw, dh := h, w
	if tr == upsideDown {
		dw, dh = w, h
	}
	for y := 0; y < dh; y++ {
		for x := 0; x < dw; x++ {
			var ux, uy int
			switch tr {
			case turnedLeft:
				ux, uy = w-1-y, x
			case turnedRight:
				ux, uy = y, h-1-x
			default:
				ux, uy = w-1-x, h-1-y
			}
			d, s := y*dstride+x*bpp, uy*sstride+ux*bpp
			for k := 0; k < bpp; k++ {
				dst[d+k] = src[s+k]
			}
		}
	}
}

// TestUprightImageTurnsEveryFormatBack: a small picture of distinct
// pixels, scanned turned and encoded in each format tesseract is handed
// (PGM as pdftoppm renders a PDF page), comes back upright as PNG, pixel
// for pixel, grey when grey (a palette of greys too: BMP and GIF write the
// grey picture so) and RGB otherwise.
func TestUprightImageTurnsEveryFormatBack(t *testing.T) {
	const w, h = 5, 3
	grey := image.NewGray(image.Rect(0, 0, w, h))
	rgb := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			v := uint8(10 + 40*y + 7*x)
			grey.SetGray(x, y, color.Gray{Y: v})
			rgb.SetRGBA(x, y, color.RGBA{R: v, G: 255 - v, B: uint8(3 * x), A: 255})
		}
	}
	encoders := []struct {
		name   string
		encode func(*bytes.Buffer, image.Image) error
	}{
		{"png", func(b *bytes.Buffer, m image.Image) error { return png.Encode(b, m) }},
		{"tiff", func(b *bytes.Buffer, m image.Image) error { return tiff.Encode(b, m, nil) }},
		{"bmp", func(b *bytes.Buffer, m image.Image) error { return bmp.Encode(b, m) }},
		{"pnm", encodePNM},
		{"gif", func(b *bytes.Buffer, m image.Image) error { return gif.Encode(b, paletted(m), nil) }},
	}
	turns := map[turn]string{upsideDown: "upside down", turnedLeft: "left", turnedRight: "right"}
	for _, pic := range []struct {
		name string
		img  image.Image
	}{{"grey", grey}, {"colour", rgb}} {
		for _, enc := range encoders {
			for tr, name := range turns {
				t.Run(pic.name+"/"+enc.name+"/"+name, func(t *testing.T) {
					var buf bytes.Buffer
					if err := enc.encode(&buf, scannedTurned(t, pic.img, name)); err != nil {
						t.Fatal(err)
					}
					if !looksLikeImage(buf.Bytes()) {
						t.Fatalf("the %s is not taken for an image", enc.name)
					}
					got, err := uprightImage(t.Context(), pageimage.Config{}, buf.Bytes(), tr)
					if err != nil {
						t.Fatal(err)
					}
					up := decodePNG(t, got)
					if fmt.Sprintf("%T", up) != fmt.Sprintf("%T", pic.img) {
						t.Errorf("a %T, want a %T", up, pic.img)
					}
					if g, w := pnmOfImage("P6", up), pnmOfImage("P6", pic.img); !bytes.Equal(g, w) {
						t.Errorf("got\n%q\nwant\n%q", g, w)
					}
				})
			}
		}
	}
	// JPEG is lossy: the picture comes back upright within its error.
	t.Run("grey/jpeg/left", func(t *testing.T) {
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, scannedTurned(t, grey, "left"), &jpeg.Options{Quality: 100}); err != nil {
			t.Fatal(err)
		}
		got, err := uprightImage(t.Context(), pageimage.Config{}, buf.Bytes(), turnedLeft)
		if err != nil {
			t.Fatal(err)
		}
		img := decodePNG(t, got)
		if img.Bounds() != grey.Rect {
			t.Fatalf("bounds %v, want %v", img.Bounds(), grey.Rect)
		}
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				g := color.GrayModel.Convert(img.At(x, y)).(color.Gray).Y
				if d := int(g) - int(grey.GrayAt(x, y).Y); d < -3 || d > 3 {
					t.Errorf("pixel (%d, %d) = %d, want %d", x, y, g, grey.GrayAt(x, y).Y)
				}
			}
		}
	})
}

func TestUprightImageLaysTransparencyOnWhite(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	img.SetNRGBA(0, 0, color.NRGBA{A: 0})         // transparent black
	img.SetNRGBA(1, 0, color.NRGBA{R: 0, A: 255}) // black
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	got, err := uprightImage(t.Context(), pageimage.Config{}, buf.Bytes(), upsideDown)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := pnmOfImage("P6", decodePNG(t, got)), "P6\n2 1\n255\n\x00\x00\x00\xff\xff\xff"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestUprightImageRefusesWhatItCannotTurn(t *testing.T) {
	var big bytes.Buffer
	fmt.Fprintf(&big, "P5\n%d %d\n255\n", 10000, 10000)
	tests := map[string][]byte{
		"JPEG 2000":        []byte("\x00\x00\x00\x0cjP  \r\n\x87\n rest"),
		"ASCII PGM":        []byte("P2\n1 1\n255\n0\n"),
		"16-bit PGM":       []byte("P5\n1 1\n65535\n\x00\x00"),
		"a truncated PGM":  []byte("P5\n4 4\n255\n\x00"),
		"a damaged PNG":    []byte("\x89PNG\r\n\x1a\nnot really"),
		"over 64 Mpixels":  big.Bytes(),
		"a header of junk": []byte("P5\nx 1\n255\n\x00"),
	}
	for name, data := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := uprightImage(t.Context(), pageimage.Config{}, data, turnedLeft); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestDecodePNMReadsCommentsInTheHeader(t *testing.T) {
	img, err := decodePNM(strings.NewReader("P5\n# pdftoppm\n2 # width\n1\n255\n\x10\x20"))
	if err != nil {
		t.Fatal(err)
	}
	g, ok := img.(*image.Gray)
	if !ok || g.Rect != image.Rect(0, 0, 2, 1) || g.Pix[0] != 0x10 || g.Pix[1] != 0x20 {
		t.Errorf("got %#v", img)
	}
}

// pageTurn tells each way a page can lie from the word boxes tesseract
// reports (the fixtures of layout_test.go).
func TestPageTurnTellsHowAPageLies(t *testing.T) {
	for scan, want := range map[string]turn{
		"": upright, "L": turnedLeft, "R": turnedRight, "180": upsideDown, "RTL": mirrored,
	} {
		t.Run(want.String(), func(t *testing.T) {
			tsv := fixtureTSV(t, scan, proseLeft, proseRight, labels, amounts)
			if got := pageTurn(parseTSV(tsv)); got != want {
				t.Errorf("pageTurn = %v, want %v", got, want)
			}
			if got := singlePageTurn(tsv); got != want {
				t.Errorf("singlePageTurn = %v, want %v", got, want)
			}
		})
	}
	secondPage := regexp.MustCompile(`(?m)^(\d)\t1\t`).ReplaceAllString(
		strings.SplitN(fixtureTSV(t, "L", proseRight), "\n", 2)[1], "${1}\t2\t")
	twoPages := fixtureTSV(t, "L", proseLeft) + secondPage
	if got := singlePageTurn(twoPages); got != upright {
		t.Errorf("two pages: singlePageTurn = %v, want upright (no one image to turn)", got)
	}
}

// paletted is m as a paletted image of its own colours (a few, in these
// tests), which GIF keeps exactly.
func paletted(m image.Image) *image.Paletted {
	r := m.Bounds()
	var pal color.Palette
	index := map[color.Color]uint8{}
	p := image.NewPaletted(r, nil)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := color.RGBAModel.Convert(m.At(x, y))
			i, ok := index[c]
			if !ok {
				i = uint8(len(pal))
				index[c] = i
				pal = append(pal, c)
			}
			p.SetColorIndex(x, y, i)
		}
	}
	p.Palette = pal
	return p
}

// encodePNM writes m as raw PGM when grey, PPM otherwise.
func encodePNM(b *bytes.Buffer, m image.Image) error {
	magic := "P6"
	if _, ok := m.(*image.Gray); ok {
		magic = "P5"
	}
	b.Write(pnmOfImage(magic, m))
	return nil
}

func decodePNG(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func pnmOfImage(magic string, m image.Image) []byte {
	r := m.Bounds()
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n%d %d\n255\n", magic, r.Dx(), r.Dy())
	// A grey page is its Pix row by row (the invoice at 200 dpi has 3.7
	// million pixels, seconds through At under the race detector).
	if g, ok := m.(*image.Gray); ok && magic == "P5" {
		for y := r.Min.Y; y < r.Max.Y; y++ {
			i := g.PixOffset(r.Min.X, y)
			b.Write(g.Pix[i : i+r.Dx()])
		}
		return b.Bytes()
	}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := color.RGBAModel.Convert(m.At(x, y)).(color.RGBA)
			if magic == "P5" {
				b.WriteByte(color.GrayModel.Convert(c).(color.Gray).Y)
			} else {
				b.Write([]byte{c.R, c.G, c.B})
			}
		}
	}
	return b.Bytes()
}

// A stand-in binary reads a page turned left the first time it is run,
// and records how it is run the second time: with the image turned
// upright on stdin, as grey PNG, and the scan's resolution as --dpi. The
// second reading is the one returned; when the second run fails, the
// first reading is kept, its boxes turned upright, and the request says
// so.
func TestRecognizeReadsAPageFoundTurnedAgainUpright(t *testing.T) {
	grey := image.NewGray(image.Rect(0, 0, 3, 2))
	copy(grey.Pix, []byte{1, 2, 3, 4, 5, 6})
	var buf bytes.Buffer
	if err := png.Encode(&buf, scannedTurned(t, grey, "left")); err != nil {
		t.Fatal(err)
	}
	// 11811 pixels a metre, 300 a inch.
	phys := "\x00\x00\x00\x09pHYs\x00\x00\x2e\x23\x00\x00\x2e\x23\x01" + "\x78\xa5\x3f\x76"
	scan := withChunkOf(t, buf.Bytes(), phys, "pHYs")

	for _, tt := range []struct {
		name        string
		secondFails bool
		wantText    string
		wantRequest string
	}{
		{"the second reading is returned", false, "read upright now",
			"; read turned left, so read again from the image turned upright: tesseract stdin stdout --dpi 300 -l eng --psm 1 -c thresholding_method=1 tsv < image/png (%d bytes)"},
		{"a failed second run keeps the first reading", true, labelsTable,
			"; read turned left, so read again from the image turned upright: not done (tesseract failed: exit status 3: broken), the first reading is kept"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "turned.tsv"), []byte(fixtureTSV(t, "L", labels, amounts)), 0o644); err != nil {
				t.Fatal(err)
			}
			fail := ""
			if tt.secondFails {
				fail = "echo broken >&2; exit 3"
			}
			script := filepath.Join(dir, "tesseract")
			err := os.WriteFile(script, []byte(`#!/bin/sh
if [ "$1" = "--list-langs" ]; then
  printf 'List of available languages in "/x/" (2):\neng\nosd\n'
  exit 0
fi
if [ ! -e "`+dir+`/first" ]; then
  cat > "`+dir+`/first"
  cat "`+dir+`/turned.tsv"
  exit 0
fi
echo "$@" > "`+dir+`/args"
cat > "`+dir+`/stdin"
`+fail+`
printf 'level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n'
printf '5\t1\t1\t1\t1\t1\t0\t0\t10\t10\t91.5\tread\n'
printf '5\t1\t1\t1\t1\t2\t20\t0\t10\t10\t91.5\tupright\n'
printf '5\t1\t1\t1\t1\t3\t40\t0\t10\t10\t91.5\tnow\n'
`), 0o755)
			if err != nil {
				t.Fatal(err)
			}
			ocr, err := New(Config{Binary: script})
			if err != nil {
				t.Fatal(err)
			}
			rec, err := ocr.Recognize(context.Background(), provider.Document{Data: scan, MIME: "image/png"})
			if err != nil {
				t.Fatal(err)
			}
			if rec.Text != tt.wantText {
				t.Errorf("Text = %q, want %q", rec.Text, tt.wantText)
			}
			wantRequest := tt.wantRequest
			if strings.Contains(wantRequest, "%d") {
				wantRequest = fmt.Sprintf(wantRequest, len(readFile(t, filepath.Join(dir, "stdin"))))
			}
			if want := fmt.Sprintf("OMP_THREAD_LIMIT=1 tesseract stdin stdout -l eng --psm 1 -c thresholding_method=1 tsv < image/png (%d bytes)", len(scan)) + wantRequest; rec.Request != want {
				t.Errorf("Request = %q\nwant      %q", rec.Request, want)
			}
			if got := readFile(t, filepath.Join(dir, "args")); got != "stdin stdout --dpi 300 -l eng --psm 1 -c thresholding_method=1 tsv\n" {
				t.Errorf("second run's args = %q", got)
			}
			stdin := readFile(t, filepath.Join(dir, "stdin"))
			if up, ok := decodePNG(t, []byte(stdin)).(*image.Gray); !ok || up.Rect != grey.Rect || !bytes.Equal(up.Pix, grey.Pix) {
				t.Errorf("second run's stdin = %q, want the upright image as grey PNG", stdin)
			}
		})
	}
}

// The headers themselves are read by provider.ImageResolution (tested
// there); what is tesseract's is which axis is the upright page's down.
func TestResolutionIsTheUprightPagesDown(t *testing.T) {
	jfif := func(x, y uint16) []byte {
		b := []byte{0xFF, 0xD8, 0xFF, 0xE0, 0, 16, 'J', 'F', 'I', 'F', 0, 1, 1, 1, 0, 0, 0, 0}
		binary.BigEndian.PutUint16(b[14:], x)
		binary.BigEndian.PutUint16(b[16:], y)
		return b
	}
	tests := []struct {
		name string
		data []byte
		turn turn
		want int
	}{
		{"the scan's 350 dpi (PNG pHYs)", []byte(readTestdata(t, "AmazonWebServices.png")), upsideDown, 350},
		{"upside down: down the scan", jfif(200, 300), upsideDown, 300},
		{"turned left: across the scan", jfif(200, 300), turnedLeft, 200},
		{"turned right: across the scan", jfif(200, 300), turnedRight, 200},
		{"an image without one", []byte("P5\n1 1\n255\n\x00"), upsideDown, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := resolution(tt.data, tt.turn); got != tt.want {
				t.Errorf("resolution = %d, want %d", got, tt.want)
			}
		})
	}
}
