package provider_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/png"
	"testing"

	"github.com/docjobs/docjobs/internal/provider"
)

// ImageResolution reads what leptonica reads of a header, rounded as it
// rounds, and nothing from a header that is cut short or of a format it
// does not read.
func TestImageResolutionReadsTheHeader(t *testing.T) {
	var plain bytes.Buffer
	if err := png.Encode(&plain, image.NewGray(image.Rect(0, 0, 1, 1))); err != nil {
		t.Fatal(err)
	}
	// withPHYs puts a pHYs chunk (pixels a unit, the unit) after IHDR.
	withPHYs := func(x, y uint32, unit byte) []byte {
		c := binary.BigEndian.AppendUint32(nil, 9)
		c = append(c, "pHYs"...)
		c = binary.BigEndian.AppendUint32(c, x)
		c = binary.BigEndian.AppendUint32(c, y)
		c = append(c, unit)
		c = binary.BigEndian.AppendUint32(c, crc32.ChecksumIEEE(c[4:]))
		const ihdrEnd = 8 + 8 + 13 + 4
		b := append([]byte{}, plain.Bytes()[:ihdrEnd]...)
		b = append(b, c...)
		return append(b, plain.Bytes()[ihdrEnd:]...)
	}
	jfif := func(unit byte, x, y uint16) []byte {
		b := []byte{0xFF, 0xD8, 0xFF, 0xE0, 0, 16, 'J', 'F', 'I', 'F', 0, 1, 1, unit, 0, 0, 0, 0}
		binary.BigEndian.PutUint16(b[14:], x)
		binary.BigEndian.PutUint16(b[16:], y)
		return b
	}
	bmp := func(x, y uint32) []byte {
		b := make([]byte, 54)
		copy(b, "BM")
		binary.LittleEndian.PutUint32(b[14:], 40)
		binary.LittleEndian.PutUint32(b[38:], x)
		binary.LittleEndian.PutUint32(b[42:], y)
		return b
	}
	tests := []struct {
		name   string
		data   []byte
		wx, wy int
	}{
		{"PNG pHYs in pixels a metre", withPHYs(11811, 7874, 1), 300, 200},
		{"PNG pHYs of no unit (an aspect ratio)", withPHYs(1, 1, 0), 0, 0},
		{"PNG without pHYs", plain.Bytes(), 0, 0},
		{"PNG cut short in a chunk", withPHYs(11811, 11811, 1)[:40], 0, 0},
		{"JPEG JFIF in inches", jfif(1, 200, 300), 200, 300},
		{"JPEG JFIF in centimetres", jfif(2, 118, 118), 300, 300},
		{"JPEG JFIF of no unit", jfif(0, 1, 1), 0, 0},
		{"JPEG cut short", jfif(1, 200, 300)[:12], 0, 0},
		{"BMP in pixels a metre", bmp(11811, 11811), 300, 300},
		{"BMP of none", bmp(0, 0), 0, 0},
		{"PGM has no field for it", []byte("P5\n1 1\n255\n\x00"), 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if x, y := provider.ImageResolution(tt.data); x != tt.wx || y != tt.wy {
				t.Errorf("ImageResolution = %d, %d; want %d, %d", x, y, tt.wx, tt.wy)
			}
		})
	}
}
