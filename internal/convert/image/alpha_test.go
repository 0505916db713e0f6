package image

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"math/rand/v2"
	"testing"

	"github.com/docjobs/docjobs/internal/provider"
)

// transparentTextPage is black print on a transparent page: rows of bars
// of ink, opaque, on pixels of alpha 0 that store background (bg, or a
// random colour for nil: invisible, but what no encoder compresses).
func transparentTextPage(w, h int, bg *color.NRGBA) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	if bg == nil {
		var seed [32]byte
		_, _ = rand.NewChaCha8(seed).Read(m.Pix)
	}
	for i := 0; i < len(m.Pix); i += 4 {
		if bg != nil {
			m.Pix[i], m.Pix[i+1], m.Pix[i+2] = bg.R, bg.G, bg.B
		}
		m.Pix[i+3] = 0
	}
	r := rand.New(rand.NewPCG(1, 2))
	for y := 20; y+12 < h; y += 24 {
		for x := 20; x+60 < w; {
			n := 10 + r.IntN(40)
			for yy := y; yy < y+12; yy++ {
				for xx := x; xx < x+n; xx++ {
					if r.IntN(3) > 0 { // grain, as a scan has
						m.SetNRGBA(xx, yy, color.NRGBA{A: 255})
					}
				}
			}
			x += n + 8
		}
	}
	return m
}

// bmpWithAlpha writes m as a top-down 32-bit BMP with a BITMAPV4HEADER
// and an alpha mask, whose alpha x/image/bmp reads (its encoder writes a
// header whose alpha it ignores).
func bmpWithAlpha(m *image.NRGBA) []byte {
	w, h := m.Rect.Dx(), m.Rect.Dy()
	const headers = 14 + 108
	b := make([]byte, headers, headers+4*w*h)
	copy(b, "BM")
	le := binary.LittleEndian
	le.PutUint32(b[2:], uint32(headers+4*w*h))
	le.PutUint32(b[10:], headers)
	le.PutUint32(b[14:], 108)
	le.PutUint32(b[18:], uint32(w))
	le.PutUint32(b[22:], uint32(-h)) // top-down
	le.PutUint16(b[26:], 1)
	le.PutUint16(b[28:], 32)
	le.PutUint32(b[30:], 3) // BI_BITFIELDS
	le.PutUint32(b[34:], uint32(4*w*h))
	le.PutUint32(b[54:], 0x00FF0000)
	le.PutUint32(b[58:], 0x0000FF00)
	le.PutUint32(b[62:], 0x000000FF)
	le.PutUint32(b[66:], 0xFF000000)
	for y := range h {
		row := m.Pix[y*m.Stride : y*m.Stride+4*w]
		for i := 0; i < len(row); i += 4 {
			b = append(b, row[i+2], row[i+1], row[i], row[i+3])
		}
	}
	return b
}

// assertPrintOnWhite fails unless data decodes to a white page (its corner)
// with dark print on a part of it.
func assertPrintOnWhite(t *testing.T, data []byte) {
	t.Helper()
	m, format, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	luma := func(x, y int) uint32 {
		if ycc, ok := m.(*image.YCbCr); ok {
			return uint32(ycc.Y[ycc.YOffset(x, y)])
		}
		r, g, b, _ := m.At(x, y).RGBA() // what a viewer shows over black
		return (r + g + b) / 3 >> 8
	}
	bnd := m.Bounds()
	dark, n := 0, 0
	for y := bnd.Min.Y; y < bnd.Max.Y; y += 5 {
		for x := bnd.Min.X; x < bnd.Max.X; x += 5 {
			n++
			if luma(x, y) < 100 {
				dark++
			}
		}
	}
	share := float64(dark) / float64(n)
	if c := luma(bnd.Min.X+2, bnd.Min.Y+2); c < 230 || share < 0.05 || share > 0.7 {
		t.Errorf("%s page: background luma %d, dark share %.2f; want a white page (≥ 230) with print on 5–70%% of it", format, c, share)
	}
}

// A page with transparency that is re-encoded as JPEG, which keeps no
// alpha, is flattened onto white first: image/jpeg encodes premultiplied
// colour, so the transparent page came out black, and its black print
// with it (audit-providers3 F4).
func TestATransparentPageEncodedAsJPEGKeepsItsPrintOnWhite(t *testing.T) {
	t.Run("Fit, past the vendor's bytes", func(t *testing.T) {
		// Print above and a photo below (opaque grain, which JPEG takes
		// in far fewer bytes than PNG), so that the page goes as JPEG.
		m := transparentTextPage(600, 800, &color.NRGBA{255, 255, 255, 0})
		r := rand.New(rand.NewPCG(3, 4))
		for i := 600 * m.Stride; i < len(m.Pix); i++ {
			m.Pix[i] = uint8(170 + r.IntN(60))
			if i%4 == 3 {
				m.Pix[i] = 255
			}
		}
		var buf bytes.Buffer
		if err := encodePNG(&buf, m); err != nil {
			t.Fatal(err)
		}
		lim := Limits{Vendor: "test", MaxBase64: base64Len(buf.Len()) / 2}
		out, err := Fit(t.Context(), Config{}, provider.Document{Data: buf.Bytes(), MIME: MIMEPNG}, lim)
		if err != nil {
			t.Fatal(err)
		}
		if out.MIME != MIMEJPEG {
			t.Fatalf("fitted as %s, want JPEG", out.MIME)
		}
		assertPrintOnWhite(t, out.Data)
	})

	// A BMP is always re-encoded; one whose PNG passes maxPNGBytes goes
	// out as JPEG, from Prepare and from Reencode alike.
	page := bmpWithAlpha(transparentTextPage(1400, 1100, nil))
	t.Run("Prepare", func(t *testing.T) {
		docs, err := Prepare(t.Context(), Config{}, page)
		if err != nil {
			t.Fatal(err)
		}
		if docs[0].MIME != MIMEJPEG {
			t.Fatalf("prepared as %s, want JPEG (its PNG passes %d bytes)", docs[0].MIME, maxPNGBytes)
		}
		assertPrintOnWhite(t, docs[0].Data)
	})
	t.Run("Reencode", func(t *testing.T) {
		out, err := Reencode(t.Context(), Config{}, provider.Document{Data: page, MIME: "image/bmp"})
		if err != nil {
			t.Fatal(err)
		}
		if out.MIME != MIMEJPEG {
			t.Fatalf("re-encoded as %s, want JPEG", out.MIME)
		}
		assertPrintOnWhite(t, out.Data)
	})
}

func TestOnWhite(t *testing.T) {
	r := image.Rect(0, 0, 2, 1)
	nrgba := image.NewNRGBA(r)
	nrgba.SetNRGBA(0, 0, color.NRGBA{10, 200, 30, 0}) // transparent, storing a colour
	nrgba.SetNRGBA(1, 0, color.NRGBA{0, 0, 0, 128})   // half-transparent black
	rgba := image.NewRGBA(r)                          // premultiplied
	rgba.SetRGBA(1, 0, color.RGBA{0, 0, 0, 128})      // half-transparent black
	pal := image.NewPaletted(r, color.Palette{color.NRGBA{0, 0, 0, 255}, color.NRGBA{0, 0, 255, 0}})
	pal.SetColorIndex(1, 0, 1)
	ycc := image.NewNYCbCrA(r, image.YCbCrSubsampleRatio444)
	ycc.Y[1], ycc.Cb[1], ycc.Cr[1], ycc.A[1] = 0, 128, 128, 255 // opaque black beside a transparent pixel
	grey := image.NewGray(r)

	tests := []struct {
		name string
		img  image.Image
		want [2]color.RGBA
		same bool // rewritten in place, or returned as it is
	}{
		{"straight alpha", nrgba, [2]color.RGBA{{255, 255, 255, 255}, {127, 127, 127, 255}}, true},
		{"premultiplied alpha", rgba, [2]color.RGBA{{255, 255, 255, 255}, {127, 127, 127, 255}}, true},
		{"a palette with a transparent entry", pal, [2]color.RGBA{{0, 0, 0, 255}, {255, 255, 255, 255}}, false},
		{"YCbCr with alpha", ycc, [2]color.RGBA{{255, 255, 255, 255}, {0, 0, 0, 255}}, false},
		{"grey, opaque", grey, [2]color.RGBA{{0, 0, 0, 255}, {0, 0, 0, 255}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := onWhite(tt.img)
			if (got == tt.img) != tt.same {
				t.Errorf("returned the same image: %v, want %v", got == tt.img, tt.same)
			}
			for x, want := range tt.want {
				if c := color.RGBAModel.Convert(got.At(x, 0)).(color.RGBA); c != want {
					t.Errorf("pixel %d = %v, want %v", x, c, want)
				}
			}
		})
	}
}
