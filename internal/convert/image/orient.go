package image

import (
	"image"
	"image/draw"
)

// orient returns img as it looks upright under EXIF orientation o
// (1–8; anything else is treated as 1 and returns img itself).
//
// For each orientation, the stored pixel (sx, sy) that lands at (dx, dy) of
// the upright picture, with w×h the stored size:
//
//	1 as stored           sx = dx       sy = dy
//	2 mirrored            sx = w-1-dx   sy = dy
//	3 rotated 180°        sx = w-1-dx   sy = h-1-dy
//	4 flipped             sx = dx       sy = h-1-dy
//	5 transposed          sx = dy       sy = dx
//	6 needs 90° clockwise sx = dy       sy = h-1-dx
//	7 transversed         sx = w-1-dy   sy = h-1-dx
//	8 needs 90° counter   sx = w-1-dy   sy = dx
//
// Orientations 5–8 swap width and height.
func orient(img image.Image, o int) image.Image {
	if o < 2 || o > 8 {
		return img
	}
	switch m := img.(type) {
	case *image.Gray:
		pix, stride, r := transform(m.Pix, m.Stride, m.Rect, 1, o)
		return &image.Gray{Pix: pix, Stride: stride, Rect: r}
	case *image.Paletted:
		pix, stride, r := transform(m.Pix, m.Stride, m.Rect, 1, o)
		return &image.Paletted{Pix: pix, Stride: stride, Rect: r, Palette: m.Palette}
	case *image.Gray16:
		pix, stride, r := transform(m.Pix, m.Stride, m.Rect, 2, o)
		return &image.Gray16{Pix: pix, Stride: stride, Rect: r}
	case *image.RGBA:
		pix, stride, r := transform(m.Pix, m.Stride, m.Rect, 4, o)
		return &image.RGBA{Pix: pix, Stride: stride, Rect: r}
	case *image.NRGBA:
		pix, stride, r := transform(m.Pix, m.Stride, m.Rect, 4, o)
		return &image.NRGBA{Pix: pix, Stride: stride, Rect: r}
	case *image.RGBA64:
		pix, stride, r := transform(m.Pix, m.Stride, m.Rect, 8, o)
		return &image.RGBA64{Pix: pix, Stride: stride, Rect: r}
	case *image.NRGBA64:
		pix, stride, r := transform(m.Pix, m.Stride, m.Rect, 8, o)
		return &image.NRGBA64{Pix: pix, Stride: stride, Rect: r}
	}
	// YCbCr (JPEG, lossy WebP), CMYK and the rest: convert once to RGBA,
	// which draw does with fast paths for the common types.
	b := img.Bounds()
	rgba := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(rgba, rgba.Rect, img, b.Min, draw.Src)
	return orient(rgba, o)
}

// transform moves the pixels of a packed image (bpp bytes per pixel) into
// a new buffer laid out for orientation o; the result starts at (0, 0).
func transform(src []byte, srcStride int, r image.Rectangle, bpp, o int) ([]byte, int, image.Rectangle) {
	w, h := r.Dx(), r.Dy()
	dw, dh := w, h
	if o >= 5 {
		dw, dh = h, w
	}
	dstStride := dw * bpp
	dst := make([]byte, dstStride*dh)
	// Offset of stored pixel (sx, sy) in src.
	at := func(sx, sy int) int { return sy*srcStride + sx*bpp }
	for dy := 0; dy < dh; dy++ {
		row := dst[dy*dstStride : (dy+1)*dstStride]
		for dx := 0; dx < dw; dx++ {
			var sx, sy int
			switch o {
			case 2:
				sx, sy = w-1-dx, dy
			case 3:
				sx, sy = w-1-dx, h-1-dy
			case 4:
				sx, sy = dx, h-1-dy
			case 5:
				sx, sy = dy, dx
			case 6:
				sx, sy = dy, h-1-dx
			case 7:
				sx, sy = w-1-dy, h-1-dx
			case 8:
				sx, sy = w-1-dy, dx
			}
			s := at(sx, sy)
			copy(row[dx*bpp:dx*bpp+bpp], src[s:s+bpp])
		}
	}
	return dst, dstStride, image.Rect(0, 0, dw, dh)
}
