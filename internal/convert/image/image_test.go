package image

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
	"golang.org/x/image/webp"

	"github.com/docjobs/docjobs/internal/provider"
)

func TestPrepareReadsEveryFormat(t *testing.T) {
	page := grid(t, 16, [][]uint8{{0, 100, 200}, {250, 150, 50}})
	tests := []struct {
		name        string
		data        []byte
		wantMIME    string
		passThrough bool // the bytes go out unchanged
		wantW       int
		wantH       int
	}{
		{name: "PNG goes out as it came", data: encodePNGBytes(t, page), wantMIME: MIMEPNG, passThrough: true, wantW: 48, wantH: 32},
		{name: "JPEG goes out as it came", data: encodeJPEGBytes(t, page), wantMIME: MIMEJPEG, passThrough: true, wantW: 48, wantH: 32},
		{name: "single-frame GIF goes out as it came", data: encodeGIFBytes(t, page, 1), wantMIME: MIMEGIF, passThrough: true, wantW: 48, wantH: 32},
		{name: "animated GIF becomes its first frame as PNG", data: encodeGIFBytes(t, page, 3), wantMIME: MIMEPNG, wantW: 48, wantH: 32},
		{name: "BMP becomes PNG", data: encodeBMPBytes(t, page), wantMIME: MIMEPNG, wantW: 48, wantH: 32},
		{name: "single-page TIFF becomes PNG", data: encodeTIFFBytes(t, page), wantMIME: MIMEPNG, wantW: 48, wantH: 32},
		{name: "CCITT group 4 fax TIFF becomes PNG", data: readTestdata(t, "bw-gopher_ccittGroup4.tiff"), wantMIME: MIMEPNG, wantW: 153, wantH: 55},
		{name: "lossless WebP goes out as it came", data: readTestdata(t, "gopher-doc.8bpp.lossless.webp"), wantMIME: MIMEWebP, passThrough: true, wantW: 75, wantH: 100},
		{name: "lossy WebP goes out as it came", data: readTestdata(t, "video-001.lossy.webp"), wantMIME: MIMEWebP, passThrough: true, wantW: 150, wantH: 103},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := Prepare(context.Background(), Config{}, tt.data)
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			if len(docs) != 1 {
				t.Fatalf("got %d documents, want 1", len(docs))
			}
			d := docs[0]
			if d.MIME != tt.wantMIME || d.Page != 0 || d.Format != "markdown" {
				t.Errorf("document = {MIME %q, Page %d, Format %q}, want {%q, 0, markdown}", d.MIME, d.Page, d.Format, tt.wantMIME)
			}
			if got := bytes.Equal(d.Data, tt.data); got != tt.passThrough {
				t.Errorf("bytes unchanged = %v, want %v", got, tt.passThrough)
			}
			img := decodeDoc(t, d)
			if b := img.Bounds(); b.Dx() != tt.wantW || b.Dy() != tt.wantH {
				t.Errorf("page is %dx%d, want %dx%d", b.Dx(), b.Dy(), tt.wantW, tt.wantH)
			}
		})
	}
}

func TestPrepareWritesBilevelPagesAsOneBitPNG(t *testing.T) {
	page := grid(t, 64, [][]uint8{{0, 255}, {255, 0}})
	docs, err := Prepare(context.Background(), Config{}, encodeTIFFBytes(t, page))
	if err != nil {
		t.Fatal(err)
	}
	img := decodeDoc(t, docs[0])
	p, ok := img.(*image.Paletted)
	if !ok || len(p.Palette) != 2 {
		t.Fatalf("decoded page is %T, want a two-colour paletted image", img)
	}
	if got := color.GrayModel.Convert(p.At(70, 10)).(color.Gray).Y; got != 255 {
		t.Errorf("pixel (70,10) = %d, want white", got)
	}
	if got := color.GrayModel.Convert(p.At(10, 10)).(color.Gray).Y; got != 0 {
		t.Errorf("pixel (10,10) = %d, want black", got)
	}
}

// The stored picture is a 3×2 grid of grey blocks A–F; each orientation
// must show it the way the EXIF specification describes.
func TestPrepareTurnsJPEGUprightForEveryEXIFOrientation(t *testing.T) {
	const A, B, C, D, E, F = 0, 50, 100, 150, 200, 250
	stored := [][]uint8{{A, B, C}, {D, E, F}}
	tests := []struct {
		orientation int
		want        [][]uint8
	}{
		{1, [][]uint8{{A, B, C}, {D, E, F}}},
		{2, [][]uint8{{C, B, A}, {F, E, D}}},
		{3, [][]uint8{{F, E, D}, {C, B, A}}},
		{4, [][]uint8{{D, E, F}, {A, B, C}}},
		{5, [][]uint8{{A, D}, {B, E}, {C, F}}},
		{6, [][]uint8{{D, A}, {E, B}, {F, C}}},
		{7, [][]uint8{{F, C}, {E, B}, {D, A}}},
		{8, [][]uint8{{C, F}, {B, E}, {A, D}}},
	}
	for _, tt := range tests {
		for _, order := range []binary.ByteOrder{binary.BigEndian, binary.LittleEndian} {
			t.Run(strings.Join([]string{"orientation", string(rune('0' + tt.orientation)), order.String()}, " "), func(t *testing.T) {
				data := withJPEGExif(t, encodeJPEGBytes(t, grid(t, 16, stored)), exifBlock(order, tt.orientation))
				docs, err := Prepare(context.Background(), Config{}, data)
				if err != nil {
					t.Fatalf("Prepare: %v", err)
				}
				d := docs[0]
				if tt.orientation == 1 {
					if !bytes.Equal(d.Data, data) {
						t.Error("an upright JPEG was re-encoded")
					}
				} else if d.MIME != MIMEJPEG {
					t.Errorf("a turned JPEG went out as %s, want image/jpeg", d.MIME)
				}
				assertGrid(t, decodeDoc(t, d), 16, tt.want)
			})
		}
	}
}

func TestPrepareHonoursOrientationInPNGAndWebP(t *testing.T) {
	stored := [][]uint8{{0, 100, 200}, {250, 150, 50}}
	turnedCW := [][]uint8{{250, 0}, {150, 100}, {50, 200}} // orientation 6
	t.Run("PNG eXIf chunk", func(t *testing.T) {
		data := withPNGExif(t, encodePNGBytes(t, grid(t, 16, stored)), exifBlock(binary.BigEndian, 6))
		docs, err := Prepare(context.Background(), Config{}, data)
		if err != nil {
			t.Fatal(err)
		}
		if docs[0].MIME != MIMEPNG {
			t.Errorf("MIME = %s, want image/png", docs[0].MIME)
		}
		assertGrid(t, decodeDoc(t, docs[0]), 16, turnedCW)
	})
	t.Run("WebP EXIF chunk", func(t *testing.T) {
		src := readTestdata(t, "gopher-doc.8bpp.lossless.webp")
		data := withWebPExif(t, src, exifBlock(binary.LittleEndian, 6))
		docs, err := Prepare(context.Background(), Config{}, data)
		if err != nil {
			t.Fatal(err)
		}
		if docs[0].MIME != MIMEPNG {
			t.Errorf("MIME = %s, want image/png (no WebP encoder; PNG is lossless)", docs[0].MIME)
		}
		orig, err := webp.Decode(bytes.NewReader(src))
		if err != nil {
			t.Fatal(err)
		}
		got := decodeDoc(t, docs[0])
		// The stored bottom-left pixel is the upright top-left one.
		ob, gb := orig.Bounds(), got.Bounds()
		if gb.Dx() != ob.Dy() || gb.Dy() != ob.Dx() {
			t.Fatalf("turned page is %v, want %dx%d", gb, ob.Dy(), ob.Dx())
		}
		for _, p := range []image.Point{{0, 0}, {5, 9}, {gb.Dx() - 1, gb.Dy() - 1}} {
			want := color.NRGBAModel.Convert(orig.At(p.Y, ob.Dy()-1-p.X))
			if have := color.NRGBAModel.Convert(got.At(p.X, p.Y)); have != want {
				t.Errorf("pixel %v = %v, want %v", p, have, want)
			}
		}
	})
}

func TestPrepareSplitsMultiPageTIFF(t *testing.T) {
	pages := []testTIFFPage{
		{img: grid(t, 8, [][]uint8{{10, 20}}), orientation: 1},
		{img: grid(t, 8, [][]uint8{{0, 50, 100}, {150, 200, 250}}), orientation: 6},
		{img: grid(t, 4, [][]uint8{{1, 2, 3, 4}}), thumbnail: true},
		{img: grid(t, 8, [][]uint8{{30}, {40}}), orientation: 1},
	}
	docs, err := Prepare(context.Background(), Config{}, buildTIFF(t, binary.LittleEndian, pages, false))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if len(docs) != 3 {
		t.Fatalf("got %d pages, want 3 (the thumbnail is not a page)", len(docs))
	}
	for i, d := range docs {
		if d.Page != i+1 || d.MIME != MIMEPNG || d.Format != "markdown" {
			t.Errorf("page %d = {Page %d, MIME %s, Format %s}, want {%d, image/png, markdown}", i, d.Page, d.MIME, d.Format, i+1)
		}
	}
	assertGrid(t, decodeDoc(t, docs[0]), 8, [][]uint8{{10, 20}})
	assertGrid(t, decodeDoc(t, docs[1]), 8, [][]uint8{{150, 0}, {200, 50}, {250, 100}})
	assertGrid(t, decodeDoc(t, docs[2]), 8, [][]uint8{{30}, {40}})

	t.Run("big-endian files read the same", func(t *testing.T) {
		docs, err := Prepare(context.Background(), Config{}, buildTIFF(t, binary.BigEndian, pages, false))
		if err != nil {
			t.Fatal(err)
		}
		if len(docs) != 3 {
			t.Fatalf("got %d pages, want 3", len(docs))
		}
		assertGrid(t, decodeDoc(t, docs[1]), 8, [][]uint8{{150, 0}, {200, 50}, {250, 100}})
	})
}

// A page re-encoded loses its file's header, and with it the resolution
// the file gave; the page carries it on in Document.DPI, as pixels per
// inch down the page upright. A page that goes out as it came keeps its
// header, which says it.
func TestPrepareCarriesTheResolutionOfAPageItReencodes(t *testing.T) {
	page := grid(t, 8, [][]uint8{{0, 100, 200}, {250, 150, 50}})
	tiffPage := func(xres, yres [2]uint32, unit, orientation int) testTIFFPage {
		return testTIFFPage{img: page, xres: xres, yres: yres, resUnit: unit, orientation: orientation}
	}
	tiffOf := func(pages ...testTIFFPage) []byte { return buildTIFF(t, binary.LittleEndian, pages, false) }
	// jfif sets the density of the JFIF segment withJPEGExif writes.
	jfif := func(data []byte, unit byte, x, y uint16) []byte {
		data[13] = unit
		binary.BigEndian.PutUint16(data[14:], x)
		binary.BigEndian.PutUint16(data[16:], y)
		return data
	}
	turnedJPEG := func(orientation int) []byte {
		return withJPEGExif(t, encodeJPEGBytes(t, page), exifBlock(binary.BigEndian, orientation))
	}
	// photo is a phone photo's size, 1600 by 1200 pixels: 22 inches long at
	// a camera's 72 pixels per inch, a plausible page at 200.
	photo := grid(t, 400, [][]uint8{{0, 100, 200, 250}, {250, 150, 50, 0}, {0, 100, 200, 250}})
	turnedPhoto := func(orientation int) []byte {
		return withJPEGExif(t, encodeJPEGBytes(t, photo), exifBlock(binary.BigEndian, orientation))
	}
	phys := func(xPerMetre, yPerMetre uint32) []byte {
		b := binary.BigEndian.AppendUint32(nil, xPerMetre)
		return append(binary.BigEndian.AppendUint32(b, yPerMetre), 1)
	}
	const ihdrEnd = 8 + 8 + 13 + 4
	withPHYs := func(p, chunk []byte) []byte {
		out := append([]byte{}, p[:ihdrEnd]...)
		out = append(out, pngChunk("pHYs", chunk)...)
		return append(out, p[ihdrEnd:]...)
	}
	bmpAt := func(xPerMetre, yPerMetre uint32) []byte {
		b := encodeBMPBytes(t, page)
		binary.LittleEndian.PutUint32(b[38:], xPerMetre)
		binary.LittleEndian.PutUint32(b[42:], yPerMetre)
		return b
	}
	tests := []struct {
		name string
		data []byte
		want []int // Document.DPI of each page
	}{
		{"TIFF in inches, the default unit", tiffOf(tiffPage([2]uint32{300, 1}, [2]uint32{300, 1}, 0, 1)), []int{300}},
		{"TIFF in centimetres", tiffOf(tiffPage([2]uint32{11811, 100}, [2]uint32{11811, 100}, resUnitCentimetre, 1)), []int{300}},
		{"TIFF giving one of the two", tiffOf(tiffPage([2]uint32{200, 1}, [2]uint32{}, 2, 1)), []int{200}},
		{"TIFF turned a quarter: across the stored page", tiffOf(tiffPage([2]uint32{204, 1}, [2]uint32{98, 1}, 2, 6)), []int{204}},
		{"TIFF giving none", tiffOf(tiffPage([2]uint32{}, [2]uint32{}, 0, 1)), []int{0}},
		{"TIFF with a zero denominator", tiffOf(tiffPage([2]uint32{300, 0}, [2]uint32{300, 0}, 2, 1)), []int{0}},
		{"TIFF pages, each its own", tiffOf(tiffPage([2]uint32{300, 1}, [2]uint32{300, 1}, 2, 1), tiffPage([2]uint32{200, 1}, [2]uint32{200, 1}, 2, 1)), []int{300, 200}},
		{"JPEG turned by EXIF, JFIF in inches", jfif(turnedJPEG(3), 1, 200, 300), []int{300}},
		{"JPEG turned a quarter by EXIF", jfif(turnedJPEG(6), 1, 200, 300), []int{200}},
		{"JPEG turned by EXIF, JFIF in centimetres", jfif(turnedJPEG(3), 2, 118, 118), []int{300}},
		{"JPEG turned by EXIF, JFIF of no unit", jfif(turnedJPEG(3), 0, 1, 1), []int{0}},
		{"a photo's 72 pixels per inch, a page of 22 inches, is a placeholder", jfif(turnedPhoto(6), 1, 72, 72), []int{0}},
		{"a photo's size at 200 pixels per inch is a page", jfif(turnedPhoto(6), 1, 200, 200), []int{200}},
		{"PNG turned by eXIf, pHYs", withPHYs(withPNGExif(t, encodePNGBytes(t, page), exifBlock(binary.BigEndian, 3)), phys(11811, 11811)), []int{300}},
		{"BMP in pixels a metre", bmpAt(7874, 7874), []int{200}},
		{"PNG as it came: its header says it", withPHYs(encodePNGBytes(t, page), phys(11811, 11811)), []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := Prepare(context.Background(), Config{}, tt.data)
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, d := range docs {
				got = append(got, d.DPI)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("DPI = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPrepareRefusesHostileTIFFs(t *testing.T) {
	small := func() []testTIFFPage {
		return []testTIFFPage{{img: grid(t, 2, [][]uint8{{0}})}, {img: grid(t, 2, [][]uint8{{0}})}, {img: grid(t, 2, [][]uint8{{0}})}}
	}
	t.Run("more pages than MaxPages", func(t *testing.T) {
		_, err := Prepare(context.Background(), Config{MaxPages: 2}, buildTIFF(t, binary.LittleEndian, small(), false))
		if err == nil || !strings.Contains(err.Error(), "more than 2 pages") {
			t.Fatalf("err = %v, want the page limit named", err)
		}
	})
	t.Run("page chain that loops", func(t *testing.T) {
		_, err := Prepare(context.Background(), Config{}, buildTIFF(t, binary.LittleEndian, small(), true))
		if err == nil || !strings.Contains(err.Error(), "loops") {
			t.Fatalf("err = %v, want the loop named", err)
		}
	})
	t.Run("a late page over the pixel limit fails before any decoding", func(t *testing.T) {
		pages := small()
		pages[2].fakeWidth, pages[2].fakeHeight = 50000, 50000
		_, err := Prepare(context.Background(), Config{}, buildTIFF(t, binary.BigEndian, pages, false))
		var tl *TooLargeError
		if !errors.As(err, &tl) || tl.Page != 3 {
			t.Fatalf("err = %v, want a TooLargeError for page 3", err)
		}
		if want := "page 3 of the TIFF is 50000×50000 pixels, over the 100-megapixel limit"; err.Error() != want {
			t.Errorf("message = %q, want %q", err, want)
		}
	})
}

// A header that promises 2.5 gigapixels must be refused from the header
// alone, without allocating the pixels (what it allocates shows that; how
// long it takes is the benchmarks' business).
func TestPrepareRefusesDecompressionBombs(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"PNG", pngHeader(50000, 50000)},
		{"JPEG", jpegHeader(50000, 50000)},
		{"GIF", gifHeader(50000, 50000)},
		{"BMP", bmpHeader(50000, 50000)},
		{"WebP", webpHeader(40000, 40000)},
		{"TIFF", buildTIFF(t, binary.LittleEndian, []testTIFFPage{{img: grid(t, 1, [][]uint8{{0}}), fakeWidth: 50000, fakeHeight: 50000}}, false)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := Prepare(context.Background(), Config{}, tt.data)
			runtime.ReadMemStats(&after)

			var tl *TooLargeError
			if !errors.As(err, &tl) {
				t.Fatalf("err = %v, want a TooLargeError", err)
			}
			if tt.name == "PNG" {
				if want := "the image is 50000×50000 pixels, over the 100-megapixel limit"; err.Error() != want {
					t.Errorf("message = %q, want %q", err, want)
				}
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
				t.Errorf("refusal allocated %d bytes, want well under a megabyte", alloc)
			}
		})
	}
}

func TestPrepareHonoursAConfiguredPixelLimit(t *testing.T) {
	data := encodePNGBytes(t, grid(t, 100, [][]uint8{{0, 255}})) // 200×100
	if _, err := Prepare(context.Background(), Config{MaxPixels: 20_000}, data); err != nil {
		t.Errorf("a page exactly at the limit was refused: %v", err)
	}
	_, err := Prepare(context.Background(), Config{MaxPixels: 19_999}, data)
	if want := "the image is 200×100 pixels, over the 0.019999-megapixel limit"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
}

func TestPrepareRejectsWhatIsNotAnIntactImage(t *testing.T) {
	png := encodePNGBytes(t, grid(t, 64, [][]uint8{{0, 100}, {200, 50}}))
	jpg := encodeJPEGBytes(t, grid(t, 64, [][]uint8{{0, 100}, {200, 50}}))
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty file", nil, "unsupported image format"},
		{"text", []byte("hello, world"), "unsupported image format"},
		{"BigTIFF", []byte("II+\x00\x08\x00\x00\x00\x10\x00\x00\x00\x00\x00\x00\x00"), "BigTIFF"},
		{"truncated PNG", png[:len(png)/2], "the PNG image cannot be decoded"},
		{"truncated JPEG", jpg[:len(jpg)-10], "the JPEG image cannot be decoded"},
		{"PNG with a broken header", append([]byte("\x89PNG\r\n\x1a\n"), 0, 0, 0, 13), "the PNG header cannot be read"},
		{"TIFF whose page lies outside the file", []byte("II*\x00\xff\xff\x00\x00"), "truncated"},
		{"TIFF without pages", []byte("II*\x00\x00\x00\x00\x00"), "no pages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := Prepare(context.Background(), Config{}, tt.data)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Prepare = %d docs, err %v; want an error containing %q", len(docs), err, tt.want)
			}
		})
	}
}

func FuzzPrepare(f *testing.F) {
	page := func() *image.Gray {
		g := image.NewGray(image.Rect(0, 0, 12, 8))
		for i := range g.Pix {
			g.Pix[i] = uint8(i * 7)
		}
		return g
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, page())
	f.Add(buf.Bytes())
	f.Add(withPNGExif(f, buf.Bytes(), exifBlock(binary.BigEndian, 7)))
	buf.Reset()
	_ = jpeg.Encode(&buf, page(), nil)
	f.Add(withJPEGExif(f, buf.Bytes(), exifBlock(binary.LittleEndian, 6)))
	buf.Reset()
	_ = gif.Encode(&buf, page(), nil)
	f.Add(buf.Bytes())
	buf.Reset()
	_ = bmp.Encode(&buf, page())
	f.Add(buf.Bytes())
	buf.Reset()
	_ = tiff.Encode(&buf, page(), &tiff.Options{Compression: tiff.Deflate})
	f.Add(buf.Bytes())
	f.Add(buildTIFF(f, binary.BigEndian, []testTIFFPage{{img: page(), orientation: 8}, {img: page(), thumbnail: true}, {img: page()}}, false))
	for _, name := range []string{"gopher-doc.8bpp.lossless.webp", "video-001.lossy.webp", "bw-gopher_ccittGroup4.tiff"} {
		f.Add(readTestdata(f, name))
	}
	f.Add(pngHeader(50000, 50000))

	f.Fuzz(func(t *testing.T, data []byte) {
		// A small pixel limit keeps each input cheap; the guard itself is
		// what is being exercised on hostile headers.
		docs, err := Prepare(context.Background(), Config{MaxPixels: 1 << 16, MaxPages: 8}, data)
		if err != nil {
			if len(docs) != 0 {
				t.Fatalf("documents returned with error %v", err)
			}
			return
		}
		if len(docs) == 0 || len(docs) > 8 {
			t.Fatalf("got %d documents", len(docs))
		}
		for _, d := range docs {
			if d.Format != "markdown" || len(d.Data) == 0 {
				t.Fatalf("document %+v is incomplete", d.MIME)
			}
			switch d.MIME {
			case MIMEPNG, MIMEJPEG, MIMEWebP, MIMEGIF:
			default:
				t.Fatalf("document MIME %q is not one vendors take", d.MIME)
			}
		}
	})
}

// --- helpers ---

// grid returns a grey image of blocks×blocks squares with the given values.
func grid(t testing.TB, block int, rows [][]uint8) *image.Gray {
	t.Helper()
	g := image.NewGray(image.Rect(0, 0, block*len(rows[0]), block*len(rows)))
	for y := range g.Rect.Dy() {
		for x := range g.Rect.Dx() {
			g.SetGray(x, y, color.Gray{Y: rows[y/block][x/block]})
		}
	}
	return g
}

// assertGrid checks the centre of each block against want, allowing for
// JPEG's loss.
func assertGrid(t *testing.T, img image.Image, block int, want [][]uint8) {
	t.Helper()
	b := img.Bounds()
	if b.Dx() != block*len(want[0]) || b.Dy() != block*len(want) {
		t.Fatalf("page is %dx%d, want %dx%d", b.Dx(), b.Dy(), block*len(want[0]), block*len(want))
	}
	for r, row := range want {
		for c, v := range row {
			got := color.GrayModel.Convert(img.At(b.Min.X+c*block+block/2, b.Min.Y+r*block+block/2)).(color.Gray).Y
			if d := int(got) - int(v); d < -12 || d > 12 {
				t.Errorf("block (row %d, col %d) = %d, want %d", r, c, got, v)
			}
		}
	}
}

func decodeDoc(t *testing.T, d provider.Document) image.Image {
	t.Helper()
	var (
		img image.Image
		err error
	)
	r := bytes.NewReader(d.Data)
	switch d.MIME {
	case MIMEPNG:
		img, err = png.Decode(r)
	case MIMEJPEG:
		img, err = jpeg.Decode(r)
	case MIMEGIF:
		img, err = gif.Decode(r)
	case MIMEWebP:
		img, err = webp.Decode(r)
	default:
		t.Fatalf("unexpected MIME %q", d.MIME)
	}
	if err != nil {
		t.Fatalf("decoding the prepared %s: %v", d.MIME, err)
	}
	return img
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func encodePNGBytes(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func encodeJPEGBytes(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 100}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func encodeBMPBytes(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := bmp.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func encodeTIFFBytes(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := tiff.Encode(&buf, img, &tiff.Options{Compression: tiff.Deflate}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func encodeGIFBytes(t testing.TB, img *image.Gray, frames int) []byte {
	t.Helper()
	pal := make(color.Palette, 256)
	for i := range pal {
		pal[i] = color.Gray{Y: uint8(i)}
	}
	anim := &gif.GIF{}
	for range frames {
		p := image.NewPaletted(img.Rect, pal)
		copy(p.Pix, img.Pix)
		anim.Image = append(anim.Image, p)
		anim.Delay = append(anim.Delay, 10)
	}
	var buf bytes.Buffer
	if err := gif.EncodeAll(&buf, anim); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// exifBlock is a TIFF-structured Exif payload holding one Orientation tag.
func exifBlock(order binary.ByteOrder, orientation int) []byte {
	b := make([]byte, 8+2+12+4)
	if order == binary.LittleEndian {
		copy(b, "II*\x00")
	} else {
		copy(b, "MM\x00*")
	}
	order.PutUint32(b[4:], 8)
	order.PutUint16(b[8:], 1)
	order.PutUint16(b[10:], tagOrientation)
	order.PutUint16(b[12:], typeShort)
	order.PutUint32(b[14:], 1)
	order.PutUint16(b[18:], uint16(orientation))
	return b
}

// withJPEGExif inserts an APP1 Exif segment after SOI (and after a JFIF
// APP0, as cameras do).
func withJPEGExif(t testing.TB, jpg, exif []byte) []byte {
	t.Helper()
	payload := append([]byte("Exif\x00\x00"), exif...)
	seg := []byte{0xFF, 0xE1, 0, 0}
	binary.BigEndian.PutUint16(seg[2:], uint16(len(payload)+2))
	seg = append(seg, payload...)
	app0 := []byte{0xFF, 0xE0, 0, 16, 'J', 'F', 'I', 'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0}
	out := append([]byte{}, jpg[:2]...)
	out = append(out, app0...)
	out = append(out, seg...)
	return append(out, jpg[2:]...)
}

func pngChunk(typ string, data []byte) []byte {
	c := make([]byte, 8, 12+len(data))
	binary.BigEndian.PutUint32(c, uint32(len(data)))
	copy(c[4:], typ)
	c = append(c, data...)
	return binary.BigEndian.AppendUint32(c, crc32.ChecksumIEEE(c[4:]))
}

// withPNGExif inserts an eXIf chunk right after IHDR.
func withPNGExif(t testing.TB, p, exif []byte) []byte {
	t.Helper()
	const ihdrEnd = 8 + 8 + 13 + 4
	out := append([]byte{}, p[:ihdrEnd]...)
	out = append(out, pngChunk("eXIf", exif)...)
	return append(out, p[ihdrEnd:]...)
}

// withWebPExif wraps a simple lossless WebP in the extended (VP8X) form
// with an EXIF chunk after the image, as the container spec orders them.
func withWebPExif(t testing.TB, src, exif []byte) []byte {
	t.Helper()
	c, err := webp.DecodeConfig(bytes.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	if string(src[12:16]) != "VP8L" {
		t.Fatalf("want a simple lossless WebP, got chunk %q", src[12:16])
	}
	vp8x := make([]byte, 10)
	vp8x[0] = 1 << 3 // EXIF present
	putUint24(vp8x[4:], uint32(c.Width-1))
	putUint24(vp8x[7:], uint32(c.Height-1))
	body := []byte("WEBP")
	body = append(body, riffChunk("VP8X", vp8x)...)
	body = append(body, src[12:]...)
	body = append(body, riffChunk("EXIF", exif)...)
	out := []byte("RIFF")
	out = binary.LittleEndian.AppendUint32(out, uint32(len(body)))
	return append(out, body...)
}

func riffChunk(fourCC string, data []byte) []byte {
	c := []byte(fourCC)
	c = binary.LittleEndian.AppendUint32(c, uint32(len(data)))
	c = append(c, data...)
	if len(data)%2 == 1 {
		c = append(c, 0)
	}
	return c
}

func putUint24(b []byte, v uint32) { b[0], b[1], b[2] = byte(v), byte(v>>8), byte(v>>16) }

// pngHeader is a PNG signature and a valid IHDR, and nothing else.
func pngHeader(w, h uint32) []byte {
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 2 // 8-bit RGB
	return append([]byte("\x89PNG\r\n\x1a\n"), pngChunk("IHDR", ihdr)...)
}

// jpegHeader is SOI, a baseline SOF0 for a 3-component picture and the
// start of a scan header, where header parsing ends.
func jpegHeader(w, h uint16) []byte {
	b := []byte{0xFF, 0xD8, 0xFF, 0xC0, 0, 17, 8}
	b = binary.BigEndian.AppendUint16(b, h)
	b = binary.BigEndian.AppendUint16(b, w)
	b = append(b, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1)
	return append(b, 0xFF, 0xDA, 0, 12)
}

func gifHeader(w, h uint16) []byte {
	b := []byte("GIF89a")
	b = binary.LittleEndian.AppendUint16(b, w)
	b = binary.LittleEndian.AppendUint16(b, h)
	return append(b, 0, 0, 0, 0x3B)
}

func bmpHeader(w, h int32) []byte {
	b := make([]byte, 54)
	copy(b, "BM")
	binary.LittleEndian.PutUint32(b[2:], 54)
	binary.LittleEndian.PutUint32(b[10:], 54)
	binary.LittleEndian.PutUint32(b[14:], 40)
	binary.LittleEndian.PutUint32(b[18:], uint32(w))
	binary.LittleEndian.PutUint32(b[22:], uint32(h))
	binary.LittleEndian.PutUint16(b[26:], 1)
	binary.LittleEndian.PutUint16(b[28:], 24)
	return b
}

func webpHeader(w, h uint32) []byte {
	vp8x := make([]byte, 10)
	putUint24(vp8x[4:], w-1)
	putUint24(vp8x[7:], h-1)
	body := append([]byte("WEBP"), riffChunk("VP8X", vp8x)...)
	out := []byte("RIFF")
	out = binary.LittleEndian.AppendUint32(out, uint32(len(body)))
	return append(out, body...)
}

// byteOrder is what buildTIFF needs of binary.LittleEndian/BigEndian.
type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

// testTIFFPage is one IFD of a hand-built TIFF: 8-bit grey, uncompressed,
// one strip.
type testTIFFPage struct {
	img         *image.Gray
	orientation int  // 0 leaves the tag out
	thumbnail   bool // NewSubfileType = reduced resolution
	// fakeWidth/fakeHeight, when set, replace the size in the IFD (the
	// strip stays small): a decompression-bomb header.
	fakeWidth, fakeHeight uint32
	// xres and yres are XResolution and YResolution (numerator,
	// denominator; zero leaves the tag out), resUnit ResolutionUnit (0
	// leaves it out: inches).
	xres, yres [2]uint32
	resUnit    int
}

// buildTIFF writes a multi-page TIFF by hand, since x/image/tiff writes
// single pages only. With loop set, the last IFD points back at the first.
func buildTIFF(t testing.TB, order byteOrder, pages []testTIFFPage, loop bool) []byte {
	t.Helper()
	out := make([]byte, 8)
	if order == binary.LittleEndian {
		copy(out, "II*\x00")
	} else {
		copy(out, "MM\x00*")
	}
	type entry struct {
		tag, typ uint16
		val      uint32
	}
	var ifdOffsets, nextFields []int
	for _, p := range pages {
		w, h := uint32(p.img.Rect.Dx()), uint32(p.img.Rect.Dy())
		strip := len(out)
		for y := range int(h) {
			out = append(out, p.img.Pix[y*p.img.Stride:y*p.img.Stride+int(w)]...)
		}
		if len(out)%2 == 1 {
			out = append(out, 0)
		}
		if p.fakeWidth != 0 {
			w, h = p.fakeWidth, p.fakeHeight
		}
		// Rationals are stored apart from their entries, before the IFD.
		rational := func(v [2]uint32) uint32 {
			at := uint32(len(out))
			out = order.AppendUint32(out, v[0])
			out = order.AppendUint32(out, v[1])
			return at
		}
		var xresAt, yresAt uint32
		if p.xres != [2]uint32{} {
			xresAt = rational(p.xres)
		}
		if p.yres != [2]uint32{} {
			yresAt = rational(p.yres)
		}
		var es []entry
		if p.thumbnail {
			es = append(es, entry{254, typeLong, 1})
		}
		es = append(es,
			entry{256, typeLong, w},
			entry{257, typeLong, h},
			entry{258, typeShort, 8},
			entry{259, typeShort, 1},
			entry{262, typeShort, 1},
			entry{273, typeLong, uint32(strip)},
		)
		if p.orientation != 0 {
			es = append(es, entry{274, typeShort, uint32(p.orientation)})
		}
		es = append(es,
			entry{277, typeShort, 1},
			entry{278, typeLong, h},
			entry{279, typeLong, w * h},
		)
		if xresAt != 0 {
			es = append(es, entry{tagXResolution, typeRational, xresAt})
		}
		if yresAt != 0 {
			es = append(es, entry{tagYResolution, typeRational, yresAt})
		}
		if p.resUnit != 0 {
			es = append(es, entry{tagResolutionUnit, typeShort, uint32(p.resUnit)})
		}
		ifdOffsets = append(ifdOffsets, len(out))
		out = order.AppendUint16(out, uint16(len(es)))
		for _, e := range es {
			out = order.AppendUint16(out, e.tag)
			out = order.AppendUint16(out, e.typ)
			out = order.AppendUint32(out, 1)
			if e.typ == typeShort {
				out = order.AppendUint16(out, uint16(e.val))
				out = append(out, 0, 0)
			} else {
				out = order.AppendUint32(out, e.val)
			}
		}
		nextFields = append(nextFields, len(out))
		out = append(out, 0, 0, 0, 0)
	}
	order.PutUint32(out[4:], uint32(ifdOffsets[0]))
	for i := 0; i+1 < len(pages); i++ {
		order.PutUint32(out[nextFields[i]:], uint32(ifdOffsets[i+1]))
	}
	if loop {
		order.PutUint32(out[nextFields[len(pages)-1]:], uint32(ifdOffsets[0]))
	}
	return out
}
