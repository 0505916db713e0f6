package image

import (
	"image"
	"image/color"
	"image/draw"
)

// onWhite returns img with its transparency flattened onto white, for an
// encoder that keeps no alpha. image/jpeg encodes the premultiplied colour
// (RGBA()), so every transparent pixel became black whatever colour it
// stored, and a page of black text on a transparent background (what
// Ghostscript's and ImageMagick's pngalpha renderings are) went to the
// vendor all black. A page drawn on a transparent background is meant to
// be seen on paper: white. An opaque image comes back as it is.
//
// The page is rewritten in its own buffer, as eightBit does (nothing else
// holds a page being encoded); a palette page gets a new palette, and only
// a page of another kind with alpha (a WebP's NYCbCrA) is copied, to RGBA.
func onWhite(img image.Image) image.Image {
	if o, ok := img.(interface{ Opaque() bool }); ok && o.Opaque() {
		return img
	}
	switch m := img.(type) {
	case *image.NRGBA:
		b := m.Rect
		for y := range b.Dy() {
			row := m.Pix[y*m.Stride : y*m.Stride+4*b.Dx()]
			for i := 0; i < len(row); i += 4 {
				a := uint32(row[i+3])
				if a == 255 {
					continue
				}
				for c := range 3 {
					row[i+c] = uint8((uint32(row[i+c])*a + 255*(255-a) + 127) / 255)
				}
				row[i+3] = 255
			}
		}
		return m
	case *image.RGBA:
		// Premultiplied: over white, each channel gains what alpha lacks.
		b := m.Rect
		for y := range b.Dy() {
			row := m.Pix[y*m.Stride : y*m.Stride+4*b.Dx()]
			for i := 0; i < len(row); i += 4 {
				a := row[i+3]
				if a == 255 {
					continue
				}
				for c := range 3 {
					row[i+c] = uint8(min(uint32(row[i+c])+uint32(255-a), 255))
				}
				row[i+3] = 255
			}
		}
		return m
	case *image.Paletted:
		pal := make(color.Palette, len(m.Palette))
		for i, c := range m.Palette {
			pal[i] = overWhite(c)
		}
		return &image.Paletted{Pix: m.Pix, Stride: m.Stride, Rect: m.Rect, Palette: pal}
	}
	b := img.Bounds()
	out := image.NewRGBA(b)
	draw.Draw(out, b, image.White, image.Point{}, draw.Src)
	draw.Draw(out, b, img, b.Min, draw.Over)
	return out
}

// overWhite is c drawn over white, opaque.
func overWhite(c color.Color) color.RGBA {
	r, g, b, a := c.RGBA() // premultiplied, 16 bits
	lack := 0xFFFF - a
	return color.RGBA{R: uint8((r + lack) >> 8), G: uint8((g + lack) >> 8), B: uint8((b + lack) >> 8), A: 255}
}
