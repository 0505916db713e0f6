package image

import (
	"context"
	"encoding/binary"
	"fmt"
	"image"

	"golang.org/x/image/tiff"
)

// bandBytes is the decoded size a band of a TIFF page's strips is kept
// under (a band is at least one strip).
const bandBytes = 4 << 20

// stripLayout returns the strips of a page stored in several strips of at
// most bandBytes decoded (rows per strip, and each strip's offset and byte
// count), which can then be decoded a band of strips at a time; ok is
// false for tiled pages, pages in one strip or in larger strips (a band
// holding one at 16 bits would cost more than the 8-bit page saves), and
// pages whose strip arrays are short. pg.bytesPerPixel must be set.
func stripLayout(b []byte, pg tiffPage) (rps int64, offsets, counts []int64, ok bool) {
	order, _ := tiffByteOrder(b)
	if _, tiled := ifdShort(b, order, pg.ifd, tagTileWidth); tiled {
		return 0, nil, nil, false
	}
	r, found := ifdShort(b, order, pg.ifd, tagRowsPerStrip)
	if !found || r <= 0 || int64(r) >= pg.height {
		return 0, nil, nil, false
	}
	rps = int64(r)
	if pg.width*rps*pg.bytesPerPixel > bandBytes {
		return 0, nil, nil, false
	}
	strips := (pg.height + rps - 1) / rps
	offsets = ifdArray(b, order, pg.ifd, tagStripOffsets)
	counts = ifdArray(b, order, pg.ifd, tagStripByteCounts)
	if int64(len(offsets)) < strips || int64(len(counts)) < strips {
		return 0, nil, nil, false
	}
	return rps, offsets[:strips], counts[:strips], true
}

// eightBitBytes is bytesPerPixel of a page once eightBit has turned it
// 8-bit.
func eightBitBytes(bpp int64) int64 {
	switch bpp {
	case 2:
		return 1
	case 8:
		return 4
	}
	return bpp
}

// decodeBands decodes a page stored in several strips a band of strips at
// a time, each band through a view of the file with an IFD of its own
// appended (the page's entries, with the band's height and strips), and
// copies each band into one 8-bit page. A 16-bit page then never exists
// whole at 16 bits: the page costs its 8-bit size and one band.
func decodeBands(ctx context.Context, data []byte, pg tiffPage, rps int64, offsets, counts []int64) (image.Image, error) {
	order, _ := tiffByteOrder(data)
	base := int64(len(data)) + int64(len(data)%2) // IFDs start on a word boundary
	stripsPerBand := max(1, bandBytes/(pg.width*pg.bytesPerPixel*rps))
	var page image.Image
	for s0 := int64(0); s0 < int64(len(offsets)); s0 += stripsPerBand {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s1 := min(int64(len(offsets)), s0+stripsPerBand)
		y0, y1 := s0*rps, min(pg.height, s1*rps)
		ifd, ok := bandIFD(data, order, pg.ifd, base, y1-y0, offsets[s0:s1], counts[s0:s1])
		if !ok {
			return nil, fmt.Errorf("the strips of the page cannot be read")
		}
		band, err := tiff.Decode(&tiffView{ctx: ctx, data: data, ifd: uint32(base), extra: ifd, base: base})
		if err != nil {
			return nil, err
		}
		if page, err = placeBand(page, band, int(pg.width), int(pg.height), int(y0)); err != nil {
			return nil, err
		}
	}
	return page, nil
}

// bandIFD writes an IFD, to be read at offset base, with the entries of
// the IFD at ifd except the height and the strips, which become rows and
// the given strips. Entries keep their order and their values' absolute
// offsets into the file.
func bandIFD(b []byte, order binary.ByteOrder, ifd, base, rows int64, offsets, counts []int64) ([]byte, bool) {
	n := int64(order.Uint16(b[ifd : ifd+2]))
	ifdLen := 2 + 12*n + 4
	if base+ifdLen+8*int64(len(offsets)) > 1<<32-1 {
		return nil, false
	}
	ao, ok := order.(binary.AppendByteOrder)
	if !ok {
		return nil, false
	}
	out := make([]byte, 0, ifdLen+8*int64(len(offsets)))
	out = ao.AppendUint16(out, uint16(n))
	var arrays []byte
	long := func(tag uint16, vals []int64) {
		out = ao.AppendUint16(out, tag)
		out = ao.AppendUint16(out, typeLong)
		out = ao.AppendUint32(out, uint32(len(vals)))
		if len(vals) == 1 {
			out = ao.AppendUint32(out, uint32(vals[0]))
			return
		}
		out = ao.AppendUint32(out, uint32(base+ifdLen+int64(len(arrays))))
		for _, v := range vals {
			arrays = ao.AppendUint32(arrays, uint32(v))
		}
	}
	for k := range n {
		e := b[ifd+2+12*k : ifd+2+12*k+12]
		switch order.Uint16(e[0:2]) {
		case tagImageLength:
			long(tagImageLength, []int64{rows})
		case tagStripOffsets:
			long(tagStripOffsets, offsets)
		case tagStripByteCounts:
			long(tagStripByteCounts, counts)
		default:
			out = append(out, e...)
		}
	}
	out = append(out, 0, 0, 0, 0) // no next IFD
	return append(out, arrays...), true
}

// placeBand copies band into page at row y0, allocating the 8-bit page
// on the first band.
func placeBand(page, band image.Image, w, h, y0 int) (image.Image, error) {
	r := image.Rect(0, 0, w, h)
	switch m := band.(type) {
	case *image.Gray:
		dst, _ := page.(*image.Gray)
		if dst == nil {
			dst = image.NewGray(r)
		}
		copy(dst.Pix[y0*dst.Stride:], m.Pix)
		return dst, nil
	case *image.Gray16:
		dst, _ := page.(*image.Gray)
		if dst == nil {
			dst = image.NewGray(r)
		}
		highBytes(dst.Pix[y0*dst.Stride:], dst.Stride, m.Pix, m.Stride, m.Rect.Dy(), m.Rect.Dx())
		return dst, nil
	case *image.Paletted:
		dst, _ := page.(*image.Paletted)
		if dst == nil {
			dst = image.NewPaletted(r, m.Palette)
		}
		copy(dst.Pix[y0*dst.Stride:], m.Pix)
		return dst, nil
	case *image.RGBA:
		dst, _ := page.(*image.RGBA)
		if dst == nil {
			dst = image.NewRGBA(r)
		}
		copy(dst.Pix[y0*dst.Stride:], m.Pix)
		return dst, nil
	case *image.RGBA64:
		dst, _ := page.(*image.RGBA)
		if dst == nil {
			dst = image.NewRGBA(r)
		}
		highBytes(dst.Pix[y0*dst.Stride:], dst.Stride, m.Pix, m.Stride, m.Rect.Dy(), 4*m.Rect.Dx())
		return dst, nil
	case *image.NRGBA:
		dst, _ := page.(*image.NRGBA)
		if dst == nil {
			dst = image.NewNRGBA(r)
		}
		copy(dst.Pix[y0*dst.Stride:], m.Pix)
		return dst, nil
	case *image.NRGBA64:
		dst, _ := page.(*image.NRGBA)
		if dst == nil {
			dst = image.NewNRGBA(r)
		}
		highBytes(dst.Pix[y0*dst.Stride:], dst.Stride, m.Pix, m.Stride, m.Rect.Dy(), 4*m.Rect.Dx())
		return dst, nil
	}
	return nil, fmt.Errorf("a band decoded as %T, which is not read in bands", band)
}
