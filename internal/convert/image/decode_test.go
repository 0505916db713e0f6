package image

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/draw"
	"runtime"
	"slices"
	"testing"

	"golang.org/x/image/tiff"
)

func TestOpenRefusesPagesThatWouldDecodeOverTheByteLimit(t *testing.T) {
	// Two 8-bit grey pages of 100 and 400 bytes decoded.
	twoPages := buildTIFF(t, binary.LittleEndian, []testTIFFPage{
		{img: grid(t, 10, [][]uint8{{0}})},
		{img: grid(t, 10, [][]uint8{{0, 50}, {100, 150}})},
	}, false)
	rgba64 := image.NewRGBA64(image.Rect(0, 0, 40, 30)) // 9,600 bytes decoded
	tests := []struct {
		name string
		cfg  Config
		data []byte
		want string // "" for accepted
		page int
	}{
		{
			name: "a 16-bit PNG header under the pixel cap, at the default limit",
			data: pngHeaderOf(7000, 7000, 16, 6), // 49 megapixels, 8 bytes each
			want: "the image is 7000×7000 pixels at 8 bytes a pixel, 373.8 MiB decoded, over the 256 MiB decode limit",
		},
		{
			name: "an 8-bit PNG header of the same size, at the default limit",
			data: pngHeaderOf(7000, 7000, 8, 0), // grey: 49 MB
		},
		{
			name: "a 4:4:4 colour JPEG header under the pixel cap counts 3 bytes a pixel",
			data: jpegFrameHeader(t, testJPEG{w: 10000, h: 9000, hv: []byte{0x11, 0x11, 0x11}, adobe: -1}),
			want: "the image is 10000×9000 pixels at 3 bytes a pixel, 257.5 MiB decoded, over the 256 MiB decode limit",
		},
		{
			name: "a 16-bit TIFF page one byte over a configured limit",
			cfg:  Config{MaxDecodedBytes: 9599},
			data: encodeTIFFBytes(t, rgba64),
			want: "the image is 40×30 pixels at 8 bytes a pixel, 9600 bytes decoded, over the 9599 bytes decode limit",
		},
		{
			name: "the same page at the limit",
			cfg:  Config{MaxDecodedBytes: 9600},
			data: encodeTIFFBytes(t, rgba64),
		},
		{
			name: "a later TIFF page is named",
			cfg:  Config{MaxDecodedBytes: 399},
			data: twoPages,
			want: "page 2 of the TIFF is 20×20 pixels at 1 byte a pixel, 400 bytes decoded, over the 399 bytes decode limit",
			page: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			pages, err := Open(tt.cfg, tt.data)
			runtime.ReadMemStats(&after)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				if pages.Len() < 1 {
					t.Fatalf("Open found %d pages", pages.Len())
				}
				return
			}
			var tl *DecodedTooLargeError
			if !errors.As(err, &tl) || tl.Page != tt.page {
				t.Fatalf("err = %v, want a DecodedTooLargeError for page %d", err, tt.page)
			}
			if err.Error() != tt.want {
				t.Errorf("message = %q, want %q", err, tt.want)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
				t.Errorf("refusal allocated %d bytes: the pixels were decoded", alloc)
			}
		})
	}
}

func TestSixteenBitPagesGoOutAsEightBit(t *testing.T) {
	gray := image.NewGray16(image.Rect(0, 0, 4, 2))
	rgba := image.NewRGBA64(image.Rect(0, 0, 4, 2))
	for i := range 8 {
		gray.SetGray16(i%4, i/4, color.Gray16{Y: uint16(i) * 0x2001})
		rgba.SetRGBA64(i%4, i/4, color.RGBA64{R: uint16(i) * 0x1001, G: 0x8000, B: 0xffff, A: 0xffff})
	}
	for _, src := range []image.Image{gray, rgba} {
		docs, err := Prepare(context.Background(), Config{}, encodeTIFFBytes(t, src))
		if err != nil {
			t.Fatalf("Prepare: %v", err)
		}
		got := decodeDoc(t, docs[0])
		for i := range 8 {
			x, y := i%4, i/4
			r, g, b, _ := src.At(x, y).RGBA()
			want := color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 255}
			if c := color.NRGBAModel.Convert(got.At(x, y)).(color.NRGBA); c != want {
				t.Errorf("%T pixel (%d,%d) = %v, want %v", src, x, y, c, want)
			}
		}
		switch got.ColorModel() {
		case color.Gray16Model, color.RGBA64Model, color.NRGBA64Model:
			t.Errorf("%T went out as %T, want 8 bits a channel", src, got)
		}
	}
}

func TestATIFFStripThatInflatesPastItsPixelsIsRefused(t *testing.T) {
	const w, h = 2000, 2000 // one strip the decoder would let reach 32 MB
	if _, err := Prepare(context.Background(), Config{}, oneStripDeflateTIFF(t, w, h, w*h)); err != nil {
		t.Fatalf("a strip of exactly its pixels was refused: %v", err)
	}
	_, err := Prepare(context.Background(), Config{}, oneStripDeflateTIFF(t, w, h, 8*w*h))
	want := "the TIFF image has a strip that inflates to more than the 2000×2000 pixels it holds decode to"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

func TestPackBitsLenCountsUnpackedBytes(t *testing.T) {
	tests := []struct {
		name  string
		in    []byte
		limit int64
		want  int64
	}{
		{"literal run", []byte{2, 'a', 'b', 'c'}, 100, 3},
		{"repeat run", []byte{0xFE, 'x'}, 100, 3},
		{"no-op header", []byte{0x80, 0, 'a'}, 100, 1},
		{"repeats stop at the limit", bytes.Repeat([]byte{0x81, 0}, 1000), 500, 512},
		{"truncated literal counts what came", []byte{5, 'a'}, 100, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := packBitsLen(bytes.NewReader(tt.in), tt.limit); got != tt.want {
				t.Errorf("packBitsLen = %d, want %d", got, tt.want)
			}
		})
	}
}

// countdownCtx is a context that reports itself cancelled after its
// first n checks: a cancel that lands in the middle of a decode.
type countdownCtx struct {
	context.Context
	n int
}

func (c *countdownCtx) Err() error {
	if c.n <= 0 {
		return context.Canceled
	}
	c.n--
	return nil
}

func TestACancelStopsATIFFPageMidDecode(t *testing.T) {
	// Uncompressed strips of one row: the decoder reads the file once a
	// row, so the cancel lands long before the page's 200 reads end.
	rows := make([][]uint8, 200)
	for i := range rows {
		rows[i] = []uint8{uint8(i)}
	}
	pages, err := Open(Config{}, buildTIFFStrips(t, grid(t, 1, rows), 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pages.Page(context.Background(), 0); err != nil {
		t.Fatalf("the page does not decode when nothing cancels it: %v", err)
	}
	ctx := &countdownCtx{Context: context.Background(), n: 20}
	doc, err := pages.Page(ctx, 0)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Page = %d bytes, err %v; want context.Canceled", len(doc.Data), err)
	}
	if _, err := pages.Page(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("a page asked for after the cancel: err %v, want context.Canceled", err)
	}
}

// buildTIFFStrips writes img as an uncompressed 8-bit grey TIFF in strips
// of rowsPerStrip rows.
func buildTIFFStrips(t testing.TB, img *image.Gray, rowsPerStrip int) []byte {
	t.Helper()
	w, h := img.Rect.Dx(), img.Rect.Dy()
	strips := (h + rowsPerStrip - 1) / rowsPerStrip
	out := []byte("II*\x00\x00\x00\x00\x00")
	var offsets, counts []uint32
	for s := range strips {
		offsets = append(offsets, uint32(len(out)))
		for y := s * rowsPerStrip; y < min(h, (s+1)*rowsPerStrip); y++ {
			out = append(out, img.Pix[y*img.Stride:y*img.Stride+w]...)
		}
		counts = append(counts, uint32(len(out))-offsets[s])
	}
	array := func(vs []uint32) uint32 {
		at := uint32(len(out))
		for _, v := range vs {
			out = binary.LittleEndian.AppendUint32(out, v)
		}
		return at
	}
	offAt, countAt := array(offsets), array(counts)
	return appendIFD(out, []ifdEntry{
		{256, typeLong, 1, uint32(w)}, {257, typeLong, 1, uint32(h)}, {258, typeShort, 1, 8},
		{259, typeShort, 1, 1}, {262, typeShort, 1, 1}, {273, typeLong, uint32(strips), offAt},
		{277, typeShort, 1, 1}, {278, typeLong, 1, uint32(rowsPerStrip)}, {279, typeLong, uint32(strips), countAt},
	})
}

// oneStripDeflateTIFF is a w×h 8-bit grey TIFF whose one deflated strip
// inflates to raw zero bytes, whatever w×h needs.
func oneStripDeflateTIFF(t testing.TB, w, h, raw int) []byte {
	t.Helper()
	var strip bytes.Buffer
	zw, err := zlib.NewWriterLevel(&strip, zlib.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(make([]byte, raw)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	out := append([]byte("II*\x00\x00\x00\x00\x00"), strip.Bytes()...)
	return appendIFD(out, []ifdEntry{
		{256, typeLong, 1, uint32(w)}, {257, typeLong, 1, uint32(h)}, {258, typeShort, 1, 8},
		{259, typeShort, 1, compressionDeflate}, {262, typeShort, 1, 1}, {273, typeLong, 1, 8},
		{277, typeShort, 1, 1}, {278, typeLong, 1, uint32(h)}, {279, typeLong, 1, uint32(strip.Len())},
	})
}

type ifdEntry struct {
	tag, typ     uint16
	count, value uint32 // value: the value itself when it fits, else its offset
}

// appendIFD appends one IFD (entries in tag order) to a little-endian
// TIFF and points the header at it.
func appendIFD(out []byte, es []ifdEntry) []byte {
	if len(out)%2 == 1 {
		out = append(out, 0)
	}
	binary.LittleEndian.PutUint32(out[4:], uint32(len(out)))
	out = binary.LittleEndian.AppendUint16(out, uint16(len(es)))
	for _, e := range es {
		out = binary.LittleEndian.AppendUint16(out, e.tag)
		out = binary.LittleEndian.AppendUint16(out, e.typ)
		out = binary.LittleEndian.AppendUint32(out, e.count)
		if e.typ == typeShort && e.count == 1 {
			out = binary.LittleEndian.AppendUint16(out, uint16(e.value))
			out = append(out, 0, 0)
		} else {
			out = binary.LittleEndian.AppendUint32(out, e.value)
		}
	}
	return append(out, 0, 0, 0, 0)
}

// pngHeaderOf is a PNG signature and an IHDR of the given bit depth and
// colour type, and nothing else.
func pngHeaderOf(w, h uint32, depth, colorType byte) []byte {
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = depth, colorType
	return append([]byte("\x89PNG\r\n\x1a\n"), pngChunk("IHDR", ihdr)...)
}

func TestATIFFPageInStripsIsDecodedInBandsToTheSamePixels(t *testing.T) {
	fill := func(img draw.Image) draw.Image {
		b := img.Bounds()
		for y := range b.Dy() {
			for x := range b.Dx() {
				v := uint16(x*0x0101 + y*0x3001)
				img.Set(x, y, color.RGBA64{R: v, G: 0xffff - v, B: uint16(x * y), A: 0xffff})
			}
		}
		return img
	}
	palette := color.Palette{color.Gray{Y: 0}, color.Gray{Y: 90}, color.Gray{Y: 255}}
	tests := []struct {
		name string
		img  image.Image
		rps  int
	}{
		{"8-bit grey", fill(image.NewGray(image.Rect(0, 0, 30, 20))), 3},
		{"16-bit grey over several bands", fill(image.NewGray16(image.Rect(0, 0, 1024, 3000))), 16},
		{"palette", fill(image.NewPaletted(image.Rect(0, 0, 30, 20), palette)), 7},
		{"8-bit colour", fill(image.NewRGBA(image.Rect(0, 0, 30, 20))), 4},
		{"16-bit colour", fill(image.NewRGBA64(image.Rect(0, 0, 30, 20))), 5},
		{"16-bit colour, straight alpha", fill(image.NewNRGBA64(image.Rect(0, 0, 30, 20))), 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oneStrip := encodeTIFFUncompressed(t, tt.img)
			whole, err := Prepare(context.Background(), Config{}, oneStrip)
			if err != nil {
				t.Fatalf("one strip: %v", err)
			}
			banded, err := Prepare(context.Background(), Config{}, restrip(t, oneStrip, tt.rps))
			if err != nil {
				t.Fatalf("%d rows a strip: %v", tt.rps, err)
			}
			want, got := decodeDoc(t, whole[0]), decodeDoc(t, banded[0])
			if got.Bounds() != want.Bounds() {
				t.Fatalf("banded page is %v, want %v", got.Bounds(), want.Bounds())
			}
			for y := range want.Bounds().Dy() {
				for x := range want.Bounds().Dx() {
					if g, w := color.NRGBAModel.Convert(got.At(x, y)), color.NRGBAModel.Convert(want.At(x, y)); g != w {
						t.Fatalf("pixel (%d,%d) = %v in bands, %v whole", x, y, g, w)
					}
				}
			}
		})
	}
}

// A 16-bit page in strips is decoded into its 8-bit form a band at a time,
// so it counts 8-bit bytes against the limit; the same page in one strip
// is decoded whole at 16 bits and counts those.
func TestAPageInStripsCountsItsEightBitSize(t *testing.T) {
	oneStrip := encodeTIFFUncompressed(t, image.NewRGBA64(image.Rect(0, 0, 40, 30)))
	cfg := Config{MaxDecodedBytes: 40 * 30 * 4}
	if _, err := Open(cfg, restrip(t, oneStrip, 8)); err != nil {
		t.Errorf("page in strips: %v", err)
	}
	var tl *DecodedTooLargeError
	if _, err := Open(cfg, oneStrip); !errors.As(err, &tl) {
		t.Errorf("page in one strip: err %v, want a DecodedTooLargeError", err)
	}

	// Strips of 4.8 MB are decoded whole: a band of one of them would
	// hold half the page at 16 bits.
	tall := encodeTIFFUncompressed(t, image.NewRGBA64(image.Rect(0, 0, 40, 30000)))
	cfg = Config{MaxDecodedBytes: 40 * 30000 * 4}
	if _, err := Open(cfg, restrip(t, tall, 8)); err != nil {
		t.Errorf("page in small strips: %v", err)
	}
	if _, err := Open(cfg, restrip(t, tall, 15000)); !errors.As(err, &tl) {
		t.Errorf("page in two large strips: err %v, want a DecodedTooLargeError", err)
	}
}

func encodeTIFFUncompressed(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := tiff.Encode(&buf, img, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// restrip rewrites the IFD of a one-strip uncompressed little-endian TIFF
// (what x/image/tiff writes) so that its rows are read in strips of rps.
func restrip(t testing.TB, data []byte, rps int) []byte {
	t.Helper()
	le := binary.LittleEndian
	ifd := int(le.Uint32(data[4:]))
	n := int(le.Uint16(data[ifd:]))
	var es []ifdEntry
	var off, size, height uint32
	for k := range n {
		e := data[ifd+2+12*k:]
		tag, typ, count := le.Uint16(e), le.Uint16(e[2:]), le.Uint32(e[4:])
		v := le.Uint32(e[8:])
		if typ == typeShort && count == 1 {
			v = uint32(le.Uint16(e[8:]))
		}
		switch tag {
		case tagImageLength:
			height = v
		case tagStripOffsets:
			off = v
			continue
		case tagStripByteCounts:
			size = v
			continue
		case tagRowsPerStrip:
			continue
		}
		es = append(es, ifdEntry{tag, typ, count, v})
	}
	rowBytes := size / height
	out := append([]byte(nil), data...)
	var offsets, counts []byte
	strips := 0
	for y := uint32(0); y < height; y += uint32(rps) {
		rows := min(uint32(rps), height-y)
		offsets = le.AppendUint32(offsets, off+y*rowBytes)
		counts = le.AppendUint32(counts, rows*rowBytes)
		strips++
	}
	if len(out)%2 == 1 {
		out = append(out, 0)
	}
	offAt := uint32(len(out))
	out = append(out, offsets...)
	countAt := uint32(len(out))
	out = append(out, counts...)
	es = append(es,
		ifdEntry{tagStripOffsets, typeLong, uint32(strips), offAt},
		ifdEntry{tagRowsPerStrip, typeLong, 1, uint32(rps)},
		ifdEntry{tagStripByteCounts, typeLong, uint32(strips), countAt},
	)
	if strips == 1 {
		t.Fatal("restrip: one strip")
	}
	slices.SortFunc(es, func(a, b ifdEntry) int { return int(a.tag) - int(b.tag) })
	return appendIFD(out, es)
}
