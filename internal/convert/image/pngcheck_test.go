package image

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/png"
	"runtime"
	"strings"
	"testing"
)

// The PNG check must accept what the decoder accepts and refuse what it
// refuses; png.Decode is the oracle for every case.
func TestCheckPNGAgreesWithTheDecoder(t *testing.T) {
	gray := grid(t, 3, [][]uint8{{0, 90}, {180, 255}})
	g16 := image.NewGray16(image.Rect(0, 0, 7, 5))
	rgba := image.NewNRGBA(image.Rect(0, 0, 9, 4))
	rgba64 := image.NewNRGBA64(image.Rect(0, 0, 5, 3))
	for i := range rgba.Pix {
		rgba.Pix[i] = uint8(i * 13)
	}
	for i := range rgba64.Pix {
		rgba64.Pix[i] = uint8(i * 7)
	}
	pal := image.NewPaletted(image.Rect(0, 0, 11, 3), color.Palette{color.Black, color.White, color.Gray{Y: 80}})
	for i := range pal.Pix {
		pal.Pix[i] = uint8(i % 3)
	}
	interlaced := interlacedGrayPNG(t, 13, 11, 0)
	goodIDAT := encodePNGBytes(t, gray)
	badCRC := bytes.Clone(goodIDAT)
	badCRC[bytes.Index(badCRC, []byte("IDAT"))+6] ^= 0xff

	tests := []struct {
		name string
		data []byte
		want string // "" when accepted
	}{
		{"8-bit grey", encodePNGBytes(t, gray), ""},
		{"16-bit grey", encodePNGBytes(t, g16), ""},
		{"8-bit colour with alpha", encodePNGBytes(t, rgba), ""},
		{"16-bit colour with alpha", encodePNGBytes(t, rgba64), ""},
		{"2-bit palette", encodePNGBytes(t, pal), ""},
		{"interlaced", interlaced, ""},
		{"interlaced, a byte short", interlacedGrayPNG(t, 13, 11, -1), "image data ends early"},
		{"interlaced, a byte over", interlacedGrayPNG(t, 13, 11, 1), "more image data"},
		{"a flipped byte in the image data", badCRC, "fails its checksum"},
		{"a row with filter type 9", grayPNGFromRaw(t, 2, 2, []byte{0, 1, 2, 9, 3, 4}), "filter type 9"},
		{"no end chunk", goodIDAT[:len(goodIDAT)-12], "truncated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, decodeErr := png.Decode(bytes.NewReader(tt.data))
			err := checkPNG(context.Background(), tt.data)
			if (err == nil) != (decodeErr == nil) {
				t.Fatalf("checkPNG = %v, png.Decode = %v; want both to accept or both to refuse", err, decodeErr)
			}
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("checkPNG = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestAnUprightPNGIsCheckedWithoutDecodingItsPixels(t *testing.T) {
	img := image.NewGray(image.Rect(0, 0, 2000, 2000)) // 4 MB of pixels
	data := encodePNGBytes(t, img)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	docs, err := Prepare(context.Background(), Config{}, data)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(docs[0].Data, data) {
		t.Error("the PNG did not go out as it came")
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("checking the PNG allocated %d bytes, want under a megabyte (the page is 4 MB)", alloc)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := checkPNG(ctx, data); !errors.Is(err, context.Canceled) {
		t.Errorf("checkPNG with a cancelled context = %v, want context.Canceled", err)
	}
}

// interlacedGrayPNG writes an Adam7-interlaced 8-bit grey PNG by hand (the
// standard encoder writes none), with delta bytes more or fewer image data
// than its size calls for.
func interlacedGrayPNG(t testing.TB, w, h, delta int) []byte {
	t.Helper()
	var raw []byte
	passes := [][4]int{{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}}
	for _, p := range passes {
		pw, ph := (w-p[0]+p[2]-1)/p[2], (h-p[1]+p[3]-1)/p[3]
		if pw <= 0 || ph <= 0 {
			continue
		}
		for y := range ph {
			raw = append(raw, 0)
			for x := range pw {
				raw = append(raw, uint8(x*16+y))
			}
		}
	}
	switch {
	case delta < 0:
		raw = raw[:len(raw)+delta]
	case delta > 0:
		raw = append(raw, make([]byte, delta)...)
	}
	return pngFromRaw(t, w, h, 1, raw)
}

func grayPNGFromRaw(t testing.TB, w, h int, raw []byte) []byte {
	t.Helper()
	return pngFromRaw(t, w, h, 0, raw)
}

func pngFromRaw(t testing.TB, w, h int, interlace byte, raw []byte) []byte {
	t.Helper()
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	if _, err := zw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[12] = 8, interlace // 8-bit grey
	out := append([]byte("\x89PNG\r\n\x1a\n"), pngChunk("IHDR", ihdr)...)
	out = append(out, pngChunk("IDAT", z.Bytes())...)
	return append(out, pngChunk("IEND", nil)...)
}
