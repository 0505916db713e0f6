package image

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/docjobs/docjobs/internal/provider"
)

var anthropicLimits = Limits{Vendor: "Anthropic", MaxSide: 8000, MaxBase64: 5 << 20}

func TestFitLeavesAPageWithinTheLimitsAsItIs(t *testing.T) {
	small := encodePNGBytes(t, grid(t, 10, [][]uint8{{0, 255}, {255, 0}}))
	notAnImage := []byte("\x89PNG\r\n\x1a\n but no header follows")
	tests := []struct {
		name string
		page provider.Document
		lim  Limits
	}{
		{"a small PNG", provider.Document{Data: small, MIME: MIMEPNG, DPI: 300}, anthropicLimits},
		{"a page exactly at the limits", provider.Document{Data: small, MIME: MIMEPNG},
			Limits{Vendor: "V", MaxSide: 20, MaxBase64: base64Len(len(small))}},
		{"any page when there are no limits", provider.Document{Data: small, MIME: MIMEPNG}, Limits{Vendor: "V"}},
		{"a PDF, whose limits are not an image's", provider.Document{Data: bytes.Repeat([]byte("%PDF"), 100), MIME: "application/pdf"},
			Limits{Vendor: "V", MaxBase64: 10}},
		{"bytes no decoder reads, within the bytes", provider.Document{Data: notAnImage, MIME: MIMEPNG}, anthropicLimits},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Fit(t.Context(), Config{}, tt.page, tt.lim)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Data, tt.page.Data) || got.MIME != tt.page.MIME || got.DPI != tt.page.DPI {
				t.Errorf("the page went as %s of %d bytes at %d dpi, want as it came", got.MIME, len(got.Data), got.DPI)
			}
		})
	}
}

func TestFitShrinksAPageLargerThanTheVendorTakesToItsLongSide(t *testing.T) {
	wide := strip(8400, 1200)
	tests := []struct {
		name         string
		data         []byte
		mime         string
		dpi          int
		wantMIME     string
		wantW, wantH int
		wantDPI      int
	}{
		{"a wide scan strip stays PNG", encodePNGBytes(t, wide), MIMEPNG, 600, MIMEPNG, 8000, 1143, 572},
		{"a tall photo stays JPEG", encodeJPEGBytes(t, noise(600, 8400, 2)), MIMEJPEG, 0, MIMEJPEG, 571, 8000, 0},
		{"a GIF becomes PNG", encodeGIFBytes(t, strip(8100, 100), 1), MIMEGIF, 0, MIMEPNG, 8000, 99, 0},
		{"the resolution the PNG header gave goes with it, scaled", withPHYsDPI(t, encodePNGBytes(t, wide), 300), MIMEPNG, 0, MIMEPNG, 8000, 1143, 286},
		{"a JPEG tagged to be turned goes upright", withJPEGExif(t, encodeJPEGBytes(t, strip(8400, 600)), exifBlock(binary.BigEndian, 6)),
			MIMEJPEG, 0, MIMEJPEG, 571, 8000, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Fit(t.Context(), Config{}, provider.Document{Data: tt.data, MIME: tt.mime, Page: 3, Format: "html", DPI: tt.dpi}, anthropicLimits)
			if err != nil {
				t.Fatal(err)
			}
			img := decodeDoc(t, got)
			if b := img.Bounds(); got.MIME != tt.wantMIME || b.Dx() != tt.wantW || b.Dy() != tt.wantH {
				t.Errorf("the page went as %s %d×%d, want %s %d×%d", got.MIME, b.Dx(), b.Dy(), tt.wantMIME, tt.wantW, tt.wantH)
			}
			if got.DPI != tt.wantDPI || got.Page != 3 || got.Format != "html" {
				t.Errorf("DPI, Page, Format = %d, %d, %q; want %d, 3, \"html\"", got.DPI, got.Page, got.Format, tt.wantDPI)
			}
		})
	}
}

func TestFitReencodesAPageOverTheVendorsBytes(t *testing.T) {
	photo := encodeJPEGBytes(t, noise(800, 600, 1))  // quality 100: 950 kB
	large := encodeJPEGBytes(t, noise(1200, 900, 1)) // 2.2 MB
	text := strip(1800, 1200)
	// A page of text whose PNG the encoder here packs far smaller than the
	// file that came (a scanner's PNG stored without compression).
	storedText := encodePNGUncompressed(t, text)
	tests := []struct {
		name         string
		data         []byte
		mime         string
		lim          int64
		wantMIME     string
		wantW, wantH int // 0: smaller than the page, in proportion
	}{
		{"a photo goes as JPEG at its size when a lower quality fits", photo, MIMEJPEG, base64Len(len(photo)) * 3 / 4, MIMEJPEG, 800, 600},
		{"a photo is shrunk when no quality fits", large, MIMEJPEG, base64Len(len(large)) / 4, MIMEJPEG, 0, 0},
		{"a page of text stays PNG when its PNG fits", storedText, MIMEPNG, base64Len(len(storedText)) / 4, MIMEPNG, 1800, 1200},
		{"a page whose PNG does not fit goes as JPEG", encodePNGBytes(t, noise(800, 600, 3)), MIMEPNG, 500_000, MIMEJPEG, 800, 600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := Limits{Vendor: "V", MaxSide: 8000, MaxBase64: tt.lim}
			src, _, err := image.DecodeConfig(bytes.NewReader(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Fit(t.Context(), Config{}, provider.Document{Data: tt.data, MIME: tt.mime}, lim)
			if err != nil {
				t.Fatal(err)
			}
			if n := base64Len(len(got.Data)); n > tt.lim {
				t.Errorf("the page takes %d bytes of base64, over the %d the vendor takes", n, tt.lim)
			}
			b := decodeDoc(t, got).Bounds()
			if got.MIME != tt.wantMIME {
				t.Errorf("the page went as %s, want %s", got.MIME, tt.wantMIME)
			}
			if tt.wantW > 0 && (b.Dx() != tt.wantW || b.Dy() != tt.wantH) {
				t.Errorf("the page went at %d×%d, want %d×%d", b.Dx(), b.Dy(), tt.wantW, tt.wantH)
			}
			if tt.wantW == 0 {
				if b.Dx() >= src.Width || b.Dy() >= src.Height {
					t.Errorf("the page went at %d×%d, want smaller than %d×%d", b.Dx(), b.Dy(), src.Width, src.Height)
				}
				if d := b.Dx()*src.Height - b.Dy()*src.Width; d < -src.Width || d > src.Width {
					t.Errorf("the page went at %d×%d, not in the proportion of %d×%d", b.Dx(), b.Dy(), src.Width, src.Height)
				}
			}
		})
	}
}

// A bilevel page is packed for PNG in its own buffer; when its PNG is too
// large it is written again as JPEG, or shrunk, from that buffer, which
// must hold the page again.
func TestEncodePNGLeavesABilevelPageAsItFoundIt(t *testing.T) {
	page := grid(t, 3, [][]uint8{{0, 255, 0}, {255, 255, 0}})
	before := bytes.Clone(page.Pix)
	if err := encodePNG(io.Discard, page); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(page.Pix, before) {
		t.Errorf("the page's pixels are %v after encoding, want %v", page.Pix, before)
	}
}

func TestFitRefusesAPageItCannotBringWithinTheLimits(t *testing.T) {
	tests := []struct {
		name    string
		page    provider.Document
		lim     Limits
		wantHas []string
	}{
		{"a photo still too large at the smallest size and quality",
			provider.Document{Data: encodeJPEGAt(t, noise(1200, 900, 5), 90), MIME: MIMEJPEG},
			Limits{Vendor: "Anthropic", MaxSide: 8000, MaxBase64: 4000},
			[]string{"at 1000×750 pixels and JPEG quality 70", "over Anthropic's limit of 8000 pixels a side and 0.004 MB of base64 per image"}},
		{"a type nothing here re-encodes",
			provider.Document{Data: append([]byte("II*\x00"), make([]byte, 6<<20)...), MIME: "image/tiff"},
			anthropicLimits,
			[]string{"the image/tiff page takes 8 MiB as base64 and cannot be re-encoded", "Anthropic's limit of 8000 pixels a side and 5 MiB of base64"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Fit(t.Context(), Config{}, tt.page, tt.lim)
			var oe *OverLimitError
			if !errors.As(err, &oe) {
				t.Fatalf("err = %v, want an OverLimitError", err)
			}
			for _, s := range tt.wantHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}

// A page Prepare re-encodes goes as JPEG when its PNG would be more than
// Anthropic takes: 5 MiB of base64 is 3.75 MiB of PNG, not 5.
func TestPrepareWritesAPageWhosePNGAnthropicWouldRefuseAsJPEG(t *testing.T) {
	page := image.NewGray(image.Rect(0, 0, 2100, 2000)) // 4.2 MB as PNG: noise does not compress
	r := rand.New(rand.NewPCG(9, 9))
	for i := range page.Pix {
		page.Pix[i] = uint8(r.Uint32())
	}
	docs, err := Prepare(t.Context(), Config{}, encodeBMPBytes(t, page))
	if err != nil {
		t.Fatal(err)
	}
	if got := docs[0]; got.MIME != MIMEJPEG || base64Len(len(got.Data)) > 5<<20 {
		t.Errorf("the page went as %s of %d bytes of base64, want JPEG within 5 MiB", got.MIME, base64Len(len(got.Data)))
	}
}

func TestFitStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := Fit(ctx, Config{}, provider.Document{Data: encodePNGBytes(t, strip(8400, 100)), MIME: MIMEPNG}, anthropicLimits)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestShrinkAveragesTheAreaEachNewPixelCovers(t *testing.T) {
	grey := func(w, h int, pix ...uint8) *image.Gray {
		return &image.Gray{Pix: pix, Stride: w, Rect: image.Rect(0, 0, w, h)}
	}
	greys := color.Palette{color.Gray{Y: 0}, color.Gray{Y: 255}}
	colours := color.Palette{color.RGBA{255, 0, 0, 255}, color.RGBA{0, 0, 255, 255}}
	tests := []struct {
		name string
		src  image.Image
		w, h int
		want image.Image
	}{
		{"halves average pairs", grey(4, 2, 0, 100, 200, 255, 0, 100, 200, 255), 2, 1, grey(2, 1, 50, 228)},
		{"three to two weighs the middle pixel half to each", grey(3, 1, 0, 255, 30), 2, 1, grey(2, 1, 85, 105)},
		{"the same size is the same image", grey(2, 2, 1, 2, 3, 4), 2, 2, grey(2, 2, 1, 2, 3, 4)},
		{"RGBA channels are averaged each on its own",
			&image.RGBA{Pix: []uint8{255, 0, 0, 255, 0, 0, 255, 255}, Stride: 8, Rect: image.Rect(0, 0, 2, 1)}, 1, 1,
			&image.RGBA{Pix: []uint8{128, 0, 128, 255}, Stride: 4, Rect: image.Rect(0, 0, 1, 1)}},
		{"a palette of greys becomes grey",
			&image.Paletted{Pix: []uint8{0, 1, 1, 1}, Stride: 2, Rect: image.Rect(0, 0, 2, 2), Palette: greys}, 1, 1,
			grey(1, 1, 191)},
		{"a palette of colours becomes RGBA",
			&image.Paletted{Pix: []uint8{0, 1}, Stride: 2, Rect: image.Rect(0, 0, 2, 1), Palette: colours}, 1, 1,
			&image.RGBA{Pix: []uint8{128, 0, 128, 255}, Stride: 4, Rect: image.Rect(0, 0, 1, 1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := shrink(t.Context(), tt.src, tt.w, tt.h)
			if err != nil {
				t.Fatal(err)
			}
			if !sameImage(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestShrinkKeepsYCbCrAndItsSubsampling(t *testing.T) {
	for _, ratio := range []image.YCbCrSubsampleRatio{image.YCbCrSubsampleRatio444, image.YCbCrSubsampleRatio420, image.YCbCrSubsampleRatio422} {
		src := image.NewYCbCr(image.Rect(0, 0, 301, 199), ratio)
		for i := range src.Y {
			src.Y[i] = 90
		}
		for i := range src.Cb {
			src.Cb[i], src.Cr[i] = 30, 200
		}
		got, err := shrink(t.Context(), src, 150, 99)
		if err != nil {
			t.Fatal(err)
		}
		m, ok := got.(*image.YCbCr)
		if !ok || m.SubsampleRatio != ratio || m.Rect != image.Rect(0, 0, 150, 99) {
			t.Fatalf("%v: got %T, want a 150×99 YCbCr of the same subsampling", ratio, got)
		}
		for _, p := range []image.Point{{0, 0}, {149, 98}, {75, 50}} {
			if c := m.YCbCrAt(p.X, p.Y); c != (color.YCbCr{Y: 90, Cb: 30, Cr: 200}) {
				t.Errorf("%v: pixel %v = %v, want the source's one colour", ratio, p, c)
			}
		}
	}
}

func FuzzShrink(f *testing.F) {
	f.Add(uint16(7), uint16(5), uint16(3), uint16(2), uint8(9))
	f.Add(uint16(1), uint16(1), uint16(1), uint16(1), uint8(0))
	f.Fuzz(func(t *testing.T, sw, sh, dw, dh uint16, seed uint8) {
		sw, sh = sw%300+1, sh%300+1
		dw, dh = dw%sw+1, dh%sh+1
		src := image.NewGray(image.Rect(0, 0, int(sw), int(sh)))
		lo, hi := uint8(255), uint8(0)
		for i := range src.Pix {
			src.Pix[i] = uint8(i*int(seed+1)) ^ seed
			lo, hi = min(lo, src.Pix[i]), max(hi, src.Pix[i])
		}
		got, err := shrink(context.Background(), src, int(dw), int(dh))
		if err != nil {
			t.Fatal(err)
		}
		g := got.(*image.Gray)
		if g.Rect.Dx() != int(dw) || g.Rect.Dy() != int(dh) {
			t.Fatalf("size %v, want %d×%d", g.Rect, dw, dh)
		}
		// An average lies between the least and the greatest it averages.
		for _, v := range g.Pix {
			if v < lo || v > hi {
				t.Fatalf("pixel %d outside the source's range [%d, %d]", v, lo, hi)
			}
		}
	})
}

// BenchmarkFit measures what fitting costs a page: reading its header
// when it is within the limits; for a phone photo over Anthropic's bytes,
// decoding it and encoding it again until it fits; for a scan strip wider
// than Anthropic takes, decoding, shrinking and encoding it.
func BenchmarkFit(b *testing.B) {
	detailed := encodeJPEGAt(b, phonePhoto(4000, 3000, 24), 92)
	plain := encodeJPEGAt(b, phonePhoto(4000, 3000, 4), 92)
	wide := encodePNGBytes(b, strip(8400, 1200))
	for _, bm := range []struct {
		name string
		page provider.Document
	}{
		{"12-megapixel photo within the limits", provider.Document{Data: plain, MIME: MIMEJPEG}},
		{"12-megapixel photo over 5 MiB of base64", provider.Document{Data: detailed, MIME: MIMEJPEG}},
		{"8400x1200 scan strip", provider.Document{Data: wide, MIME: MIMEPNG}},
	} {
		b.Run(bm.name, func(b *testing.B) {
			out, err := Fit(b.Context(), Config{}, bm.page, anthropicLimits)
			if err != nil {
				b.Fatal(err)
			}
			c, _, _ := image.DecodeConfig(bytes.NewReader(out.Data))
			b.Logf("%d bytes of base64 went as %s %d×%d, %d bytes of base64",
				base64Len(len(bm.page.Data)), out.MIME, c.Width, c.Height, base64Len(len(out.Data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Fit(b.Context(), Config{}, bm.page, anthropicLimits); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkShrink measures the shrinking alone: 12 megapixels of YCbCr
// to three quarters a side.
func BenchmarkShrink(b *testing.B) {
	img, err := jpeg.Decode(bytes.NewReader(encodeJPEGAt(b, phonePhoto(4000, 3000, 24), 92)))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := shrink(b.Context(), img, 3000, 2250); err != nil {
			b.Fatal(err)
		}
	}
}

// --- helpers ---

// strip is a scan strip: rows of marks like print on white.
func strip(w, h int) *image.Gray {
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	for y := 10; y+12 < h; y += 40 {
		for x := 10; x < w-10; x++ {
			if (x/7)%3 == 0 {
				for dy := range 12 {
					img.Pix[(y+dy)*img.Stride+x] = 0
				}
			}
		}
	}
	return img
}

// noise is w×h pixels of random colour: the worst a JPEG or PNG encoder
// gets.
func noise(w, h int, seed uint64) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	r := rand.New(rand.NewPCG(seed, seed))
	for i := 0; i < len(img.Pix); i += 8 {
		binary.LittleEndian.PutUint64(img.Pix[i:], r.Uint64()|0xff000000ff000000)
	}
	return img
}

// phonePhoto is a photo of a page as a phone takes it: paper lit unevenly,
// lines of print, and sensor noise (and texture) of up to grain levels.
func phonePhoto(w, h, grain int) *image.YCbCr {
	img := image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
	r := rand.New(rand.NewPCG(7, 7))
	for y := range h {
		for x := range w {
			v := 200 - 40*x/w - 30*y/h + r.IntN(2*grain+1) - grain
			if y%60 >= 40 && y%60 < 52 && (x/9)%4 != 0 && x > w/10 && x < w*9/10 {
				v = 40 + r.IntN(20)
			}
			img.Y[y*img.YStride+x] = uint8(v)
		}
	}
	for i := range img.Cb {
		img.Cb[i], img.Cr[i] = 124+uint8(i%3), 132-uint8(i%2)
	}
	return img
}

func encodePNGUncompressed(t testing.TB, img image.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func encodeJPEGAt(t testing.TB, img image.Image, q int) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: q}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// withPHYsDPI gives a PNG a pHYs chunk of dpi (in pixels per metre, as
// PNG has it) after its header.
func withPHYsDPI(t testing.TB, p []byte, dpi int) []byte {
	t.Helper()
	perMetre := uint32(float64(dpi)*39.37 + 0.5)
	chunk := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, perMetre), perMetre)
	const ihdrEnd = 8 + 8 + 13 + 4
	out := append([]byte{}, p[:ihdrEnd]...)
	out = append(out, pngChunk("pHYs", append(chunk, 1))...)
	return append(out, p[ihdrEnd:]...)
}

// sameImage compares two images' kinds, sizes and pixels.
func sameImage(a, b image.Image) bool {
	switch a := a.(type) {
	case *image.Gray:
		b, ok := b.(*image.Gray)
		return ok && a.Rect == b.Rect && bytes.Equal(a.Pix, b.Pix)
	case *image.RGBA:
		b, ok := b.(*image.RGBA)
		return ok && a.Rect == b.Rect && bytes.Equal(a.Pix, b.Pix)
	}
	return false
}
