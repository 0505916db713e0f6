package image

import (
	"context"
	"image"
	"image/color"
)

// shrink returns img scaled down to w×h pixels (neither more than img's)
// by area averaging: each new pixel is the mean of the old pixels it
// covers, weighted by how much of each it covers. Shrinking is all a page
// ever needs here, and averaging is what keeps thin strokes of text grey
// instead of dropping them, as sampling does.
//
// The new image is of the old one's kind, so it takes no more bytes a
// pixel: grey stays grey (and a palette of greys becomes grey), YCbCr
// stays YCbCr with its subsampling (each plane shrunk on its own), RGBA
// and NRGBA stay as they are; anything else becomes RGBA. Apart from the
// new image, the work holds three rows of the new width: the old image is
// read a row at a time (x/image/draw's kernels hold a float64 per channel
// of the new width times the old height: 330 MB for a 12-megapixel photo).
func shrink(ctx context.Context, img image.Image, w, h int) (image.Image, error) {
	b := img.Bounds()
	r := image.Rect(0, 0, w, h)
	switch m := img.(type) {
	case *image.Gray:
		out := image.NewGray(r)
		err := shrinkPlane(ctx, pixRows(m.Pix, m.Stride, b.Dx()), b.Dx(), b.Dy(), out.Pix, out.Stride, w, h, 1)
		return out, err
	case *image.YCbCr:
		out := image.NewYCbCr(r, m.SubsampleRatio)
		if err := shrinkPlane(ctx, pixRows(m.Y, m.YStride, b.Dx()), b.Dx(), b.Dy(), out.Y, out.YStride, w, h, 1); err != nil {
			return nil, err
		}
		scw, sch := chromaSize(m.SubsampleRatio, b.Dx(), b.Dy())
		dcw, dch := chromaSize(m.SubsampleRatio, w, h)
		for _, p := range [][2][]byte{{m.Cb, out.Cb}, {m.Cr, out.Cr}} {
			if err := shrinkPlane(ctx, pixRows(p[0], m.CStride, scw), scw, sch, p[1], out.CStride, dcw, dch, 1); err != nil {
				return nil, err
			}
		}
		return out, nil
	case *image.RGBA:
		out := image.NewRGBA(r)
		err := shrinkPlane(ctx, pixRows(m.Pix, m.Stride, 4*b.Dx()), b.Dx(), b.Dy(), out.Pix, out.Stride, w, h, 4)
		return out, err
	case *image.NRGBA:
		out := image.NewNRGBA(r)
		err := shrinkPlane(ctx, pixRows(m.Pix, m.Stride, 4*b.Dx()), b.Dx(), b.Dy(), out.Pix, out.Stride, w, h, 4)
		return out, err
	case *image.Paletted:
		if greys, ok := greyPalette(m.Palette); ok {
			out := image.NewGray(r)
			row := make([]byte, b.Dx())
			rows := func(y int) []byte {
				for x, i := range m.Pix[y*m.Stride : y*m.Stride+b.Dx()] {
					row[x] = greys[i]
				}
				return row
			}
			return out, shrinkPlane(ctx, rows, b.Dx(), b.Dy(), out.Pix, out.Stride, w, h, 1)
		}
	}
	// Any other kind is read through its colour model, a row at a time.
	out := image.NewRGBA(r)
	row := make([]byte, 4*b.Dx())
	rows := func(y int) []byte {
		for x := range b.Dx() {
			c := color.RGBAModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.RGBA)
			row[4*x], row[4*x+1], row[4*x+2], row[4*x+3] = c.R, c.G, c.B, c.A
		}
		return row
	}
	return out, shrinkPlane(ctx, rows, b.Dx(), b.Dy(), out.Pix, out.Stride, w, h, 4)
}

// pixRows reads the rows of a plane stored in pix, n bytes each.
func pixRows(pix []byte, stride, n int) func(y int) []byte {
	return func(y int) []byte { return pix[y*stride : y*stride+n] }
}

// chromaSize is the size of the chroma planes of a w×h YCbCr image, as
// image.NewYCbCr lays them out.
func chromaSize(r image.YCbCrSubsampleRatio, w, h int) (int, int) {
	switch r {
	case image.YCbCrSubsampleRatio422:
		return (w + 1) / 2, h
	case image.YCbCrSubsampleRatio420:
		return (w + 1) / 2, (h + 1) / 2
	case image.YCbCrSubsampleRatio440:
		return w, (h + 1) / 2
	case image.YCbCrSubsampleRatio411:
		return (w + 3) / 4, h
	case image.YCbCrSubsampleRatio410:
		return (w + 3) / 4, (h + 1) / 2
	}
	return w, h
}

// greyPalette maps a palette of opaque greys to their levels.
func greyPalette(p color.Palette) ([256]byte, bool) {
	var greys [256]byte
	for i, c := range p {
		r, g, b, a := c.RGBA()
		if r != g || g != b || a != 0xffff {
			return greys, false
		}
		greys[i] = byte(r >> 8)
	}
	return greys, true
}

// span is the old pixels one new pixel covers: from first, with weights.
type span struct {
	first   int
	weights []float32
}

// spans lays n old pixels over m new ones (m ≤ n). In units of 1/(n·m)
// of the whole, old pixel i covers [i·m, (i+1)·m) and new pixel j covers
// [j·n, (j+1)·n): integer bounds, so the weights of each new pixel sum
// to one without drift however large the image.
func spans(n, m int) []span {
	out := make([]span, m)
	all := make([]float32, 0, n+m)
	for j := range m {
		lo, hi := j*n, (j+1)*n
		first, last := lo/m, (hi-1)/m
		start := len(all)
		for i := first; i <= last; i++ {
			overlap := min(hi, (i+1)*m) - max(lo, i*m)
			all = append(all, float32(overlap)/float32(n))
		}
		out[j] = span{first: first, weights: all[start:len(all):len(all)]}
	}
	return out
}

// shrinkPlane shrinks a plane of sw×sh pixels of ch interleaved bytes,
// whose rows rows returns, into dst (dw×dh, stride dstStride). Each old
// row is averaged across once, then added into the one or two new rows
// it lies under; a new row is written as soon as its last old row is in.
func shrinkPlane(ctx context.Context, rows func(y int) []byte, sw, sh int, dst []byte, dstStride, dw, dh, ch int) error {
	across := spans(sw, dw)
	n := dw * ch
	line, acc, next := make([]float32, n), make([]float32, n), make([]float32, n)
	y := 0 // the new row being summed in acc; next holds the one after
	for sy := range sh {
		if sy%256 == 0 {
			if err := ctx.Err(); err != nil {
				return context.Cause(ctx)
			}
		}
		src := rows(sy)
		for x, s := range across {
			for c := range ch {
				var v float32
				for k, wt := range s.weights {
					v += wt * float32(src[(s.first+k)*ch+c])
				}
				line[x*ch+c] = v
			}
		}
		// Old row sy covers [sy·dh, (sy+1)·dh); new row y covers
		// [y·sh, (y+1)·sh), in units of 1/(sh·dh).
		lo, hi := sy*dh, (sy+1)*dh
		end := (y + 1) * sh
		inY := min(hi, end) - lo
		wt := float32(inY) / float32(sh)
		for i, v := range line {
			acc[i] += wt * v
		}
		if hi >= end { // row y is complete
			if rest := hi - end; rest > 0 {
				wt := float32(rest) / float32(sh)
				for i, v := range line {
					next[i] = wt * v
				}
			}
			store(dst[y*dstStride:y*dstStride+n], acc)
			acc, next = next, acc
			clear(next)
			y++
		}
	}
	return nil
}

// store rounds sums of weighted bytes back to bytes.
func store(dst []byte, sums []float32) {
	for i, v := range sums {
		switch {
		case v >= 255:
			dst[i] = 255
		case v <= 0:
			dst[i] = 0
		default:
			dst[i] = byte(v + 0.5)
		}
	}
}
