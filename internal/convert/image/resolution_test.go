package image

import (
	"bytes"
	"context"
	"encoding/binary"
	"image"
	"slices"
	"testing"

	"github.com/docjobs/docjobs/internal/provider"
)

// A page that goes out as it came keeps its header, but not a resolution
// in it that makes the page no document (longer than 20 inches): a
// camera's 72 pixels per inch on a phone photo, which Tesseract would
// believe and read the photo's text as huge. The header is changed where
// leptonica reads it (a JPEG's JFIF density unit, wherever the JFIF
// segment is, the last one counting; a PNG's first pHYs), and nothing
// else: the file that comes out is the file that came in, byte for byte,
// but for the JFIF units set to 0 (no unit) or the pHYs chunks left out.
// A plausible resolution, or none, leaves the file as it is.
func TestPrepareTakesAPlaceholderResolutionOutOfAPageThatGoesOutAsItCame(t *testing.T) {
	// An upright phone photo, 3024 by 4032 pixels (56 inches long at 72
	// pixels per inch), an A4 page scanned at 300 (2480 by 3508), and
	// strips as long as a photo for the cases of the header's layout;
	// all grey and blank: what is read is the header.
	photo := encodeJPEGBytes(t, image.NewGray(image.Rect(0, 0, 3024, 4032)))
	photoStrip := encodeJPEGBytes(t, image.NewGray(image.Rect(0, 0, 4032, 8)))
	scanJPEG := encodeJPEGBytes(t, image.NewGray(image.Rect(0, 0, 2480, 3508)))
	longPNG := encodePNGBytes(t, image.NewGray(image.Rect(0, 0, 1500, 3000)))
	scanPNG := encodePNGBytes(t, image.NewGray(image.Rect(0, 0, 2480, 3508)))
	screenshot := encodePNGBytes(t, image.NewGray(image.Rect(0, 0, 1000, 800)))

	type testCase struct {
		name    string
		in, out []byte
	}
	exif := func() []byte { // an Exif APP1 saying upright
		payload := append([]byte("Exif\x00\x00"), exifBlock(binary.BigEndian, 1)...)
		return append(binary.BigEndian.AppendUint16([]byte{0xFF, 0xE1}, uint16(len(payload)+2)), payload...)
	}()
	jfif := func(unit byte, x, y uint16) []byte {
		seg := []byte{0xFF, 0xE0, 0, 16, 'J', 'F', 'I', 'F', 0, 1, 2, unit}
		seg = binary.BigEndian.AppendUint16(seg, x)
		return append(binary.BigEndian.AppendUint16(seg, y), 0, 0)
	}
	// jpegCase is jpg with segs after SOI, going out as it came or, for a
	// placeholder, with the unit of each JFIF segment among them set to 0.
	jpegCase := func(name string, placeholder bool, jpg []byte, segs ...[]byte) testCase {
		in := slices.Concat(jpg[:2], slices.Concat(segs...), jpg[2:])
		out := bytes.Clone(in)
		for at, s := 2, segs; placeholder && len(s) > 0; at, s = at+len(s[0]), s[1:] {
			if bytes.HasPrefix(s[0][4:], []byte("JFIF\x00")) {
				out[at+11] = 0
			}
		}
		return testCase{name, in, out}
	}
	phys := func(xPerMetre, yPerMetre uint32, unit byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, xPerMetre)
		return pngChunk("pHYs", append(binary.BigEndian.AppendUint32(b, yPerMetre), unit))
	}
	// pngCase is p with chunks after IHDR, going out as it came or, for a
	// placeholder, as p.
	pngCase := func(name string, placeholder bool, p []byte, chunks ...[]byte) testCase {
		const ihdrEnd = 8 + 8 + 13 + 4
		in := slices.Concat(p[:ihdrEnd], slices.Concat(chunks...), p[ihdrEnd:])
		if placeholder {
			return testCase{name, in, p}
		}
		return testCase{name, in, in}
	}
	const placeholder, plausible = true, false
	tests := []testCase{
		jpegCase("a phone photo at a camera's 72 pixels per inch: no unit", placeholder, photo, jfif(1, 72, 72)),
		jpegCase("a photo's length with no JFIF: as it came", plausible, photoStrip),
		jpegCase("an A4 JPEG scan at 300 pixels per inch: as it came", plausible, scanJPEG, jfif(1, 300, 300)),
		jpegCase("a photo's length at 28 pixels per centimetre (71 per inch): no unit", placeholder, photoStrip, jfif(2, 28, 28)),
		jpegCase("a photo's length whose JFIF comes after its Exif: no unit", placeholder, photoStrip, exif, jfif(1, 72, 72)),
		jpegCase("a photo's length in two JFIF segments, the last at 72: no units", placeholder, photoStrip, jfif(1, 300, 300), jfif(1, 72, 72)),
		jpegCase("a photo's length in two JFIF segments, the last at 300: as it came", plausible, photoStrip, jfif(1, 72, 72), jfif(1, 300, 300)),
		jpegCase("a photo's length whose JFIF gives no unit: as it came", plausible, photoStrip, jfif(0, 72, 72)),
		jpegCase("a photo's length at 300 pixels per inch across, 72 down (what Tesseract reads): no unit", placeholder, photoStrip, jfif(1, 300, 72)),
		pngCase("a PNG 3000 pixels long at 72 pixels per inch: no pHYs", placeholder, longPNG, phys(2835, 2835, 1)),
		pngCase("a PNG 3000 pixels long whose first pHYs gives no unit: as it came", plausible, longPNG, phys(1, 1, 0), phys(2835, 2835, 1)),
		pngCase("an A4 PNG scan at 300 pixels per inch: as it came", plausible, scanPNG, phys(11811, 11811, 1)),
		pngCase("a screenshot at 72 pixels per inch, 14 inches wide: as it came", plausible, screenshot, phys(2835, 2835, 1)),
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := bytes.Clone(tt.in)
			docs, err := Prepare(context.Background(), Config{}, in)
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) != 1 || docs[0].DPI != 0 {
				t.Fatalf("%d pages, DPI %d; want one, as it came (DPI 0)", len(docs), docs[0].DPI)
			}
			got := docs[0].Data
			if !bytes.Equal(got, tt.out) {
				t.Errorf("%d bytes out of %d in; want %d, the file as it came but for a placeholder resolution (they differ from byte %d)",
					len(got), len(tt.in), len(tt.out), firstDifference(got, tt.out))
			}
			if x, y := provider.ImageResolution(got); !bytes.Equal(got, tt.in) && (x != 0 || y != 0) {
				t.Errorf("the header still gives %d by %d pixels per inch", x, y)
			}
			if !bytes.Equal(in, tt.in) {
				t.Error("the caller's bytes were written to")
			}
		})
	}
}

func firstDifference(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
