package image

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"io"

	"golang.org/x/image/tiff"

	"github.com/docjobs/docjobs/internal/provider"
)

// TIFF tags read while walking the page chain.
const (
	tagNewSubfileType = 254
	tagSubfileType    = 255
	tagImageWidth     = 256
	tagImageLength    = 257
)

// tiffPage is one page found in the IFD chain.
type tiffPage struct {
	ifd           int64 // offset of its IFD in the file
	width, height int64
	orientation   int
	bytesPerPixel int64 // of the decoded image
	xdpi, ydpi    int   // as the page's IFD gives them; 0 when it does not
}

// openTIFF walks the IFD chain and checks every page's size and decoded
// size before any is decoded. x/image/tiff reads only the IFD the header
// points at, so each page is read through a view of the file whose header
// points at that page's IFD; the IFD's own offsets are absolute and stay
// valid.
func openTIFF(cfg Config, data []byte) ([]tiffPage, error) {
	pages, err := tiffPages(data, cfg.MaxPages)
	if err != nil {
		return nil, err
	}
	multi := len(pages) > 1
	for i, p := range pages {
		if err := checkPixels(p.width, p.height, cfg.MaxPixels, pageNumber(multi, i)); err != nil {
			return nil, err
		}
	}
	for i := range pages {
		p := &pages[i]
		n := pageNumber(multi, i)
		c, err := tiff.DecodeConfig(&tiffView{ctx: context.Background(), data: data, ifd: uint32(p.ifd)})
		if err != nil {
			return nil, fmt.Errorf("%s cannot be read: %w", tiffPageName(n), err)
		}
		// The decoder sizes the page from its own reading of the IFD;
		// should it disagree with tiffPages, the larger size is checked.
		w, h := max(p.width, int64(c.Width)), max(p.height, int64(c.Height))
		if err := checkPixels(w, h, cfg.MaxPixels, n); err != nil {
			return nil, err
		}
		p.bytesPerPixel = bytesPerPixel(c.ColorModel)
		// A page in several strips is decoded a band at a time into its
		// 8-bit form (decodeBands), which is then what it costs.
		bpp := p.bytesPerPixel
		if _, _, _, ok := stripLayout(data, *p); ok && w == p.width && h == p.height {
			bpp = eightBitBytes(bpp)
		}
		if err := checkDecodedBytes(w, h, bpp, cfg.MaxDecodedBytes, n); err != nil {
			return nil, err
		}
	}
	return pages, nil
}

func tiffPageName(n int) string {
	if n > 0 {
		return fmt.Sprintf("page %d of the TIFF", n)
	}
	return "the TIFF image"
}

// tiffPage decodes, turns and re-encodes page i.
func (p *Pages) tiffPage(ctx context.Context, i int) (provider.Document, error) {
	pg := p.tiff[i]
	n := pageNumber(len(p.tiff) > 1, i)
	view := &tiffView{ctx: ctx, data: p.data, ifd: uint32(pg.ifd)}
	if err := checkBlocks(view, pg, n); err != nil {
		if ctx.Err() != nil {
			return provider.Document{}, context.Cause(ctx)
		}
		return provider.Document{}, err
	}
	var img image.Image
	var err error
	if rps, offsets, counts, ok := stripLayout(p.data, pg); ok {
		img, err = decodeBands(ctx, p.data, pg, rps, offsets, counts)
	} else {
		img, err = tiff.Decode(view)
	}
	if err != nil {
		if ctx.Err() != nil {
			return provider.Document{}, context.Cause(ctx)
		}
		return provider.Document{}, fmt.Errorf("%s cannot be decoded: %w", tiffPageName(n), err)
	}
	upright := orient(img, pg.orientation)
	out, mime, err := encode(ctx, upright, false)
	if err != nil {
		return provider.Document{}, err
	}
	b := upright.Bounds()
	return provider.Document{Data: out, MIME: mime, Page: n, Format: "markdown",
		DPI: plausiblePageDPI(uprightDPI(pg.xdpi, pg.ydpi, pg.orientation), b.Dx(), b.Dy())}, nil
}

func pageNumber(multi bool, i int) int {
	if !multi {
		return 0
	}
	return i + 1
}

// tiffPages lists the pages of a TIFF: every IFD in the main chain except
// reduced-resolution copies (thumbnails). More than maxPages pages, a
// chain that loops or runs off the file are errors.
func tiffPages(b []byte, maxPages int) ([]tiffPage, error) {
	order, ok := tiffByteOrder(b)
	if !ok || len(b) < 8 {
		return nil, errors.New("the TIFF header cannot be read")
	}
	// Thumbnails count against a separate, generous bound so a chain of
	// them cannot make the walk long either.
	maxIFDs := 2*maxPages + 16
	seen := make(map[int64]bool)
	var pages []tiffPage
	for off := int64(order.Uint32(b[4:8])); off != 0; {
		if seen[off] {
			return nil, errors.New("the TIFF's page chain loops back on itself")
		}
		seen[off] = true
		if len(seen) > maxIFDs {
			return nil, fmt.Errorf("the TIFF has more than %d pages, over the limit", maxPages)
		}
		if off < 8 || off+2 > int64(len(b)) {
			return nil, fmt.Errorf("the TIFF is truncated: page %d lies outside the file", len(pages)+1)
		}
		n := int64(order.Uint16(b[off : off+2]))
		end := off + 2 + 12*n
		if end > int64(len(b)) {
			return nil, fmt.Errorf("the TIFF is truncated: page %d lies outside the file", len(pages)+1)
		}
		if n == 0 {
			return nil, fmt.Errorf("page %d of the TIFF is empty", len(pages)+1)
		}
		if !reducedResolution(b, order, off) {
			if len(pages) == maxPages {
				return nil, fmt.Errorf("the TIFF has more than %d pages, over the limit", maxPages)
			}
			w, okW := ifdShort(b, order, off, tagImageWidth)
			h, okH := ifdShort(b, order, off, tagImageLength)
			if !okW || !okH {
				return nil, fmt.Errorf("page %d of the TIFF has no image size", len(pages)+1)
			}
			o, _ := ifdShort(b, order, off, tagOrientation)
			xdpi, ydpi := tiffResolution(b, order, off)
			pages = append(pages, tiffPage{ifd: off, width: int64(w), height: int64(h), orientation: validOrientation(o), xdpi: xdpi, ydpi: ydpi})
		}
		// The next-IFD offset follows the entries; a file that ends right
		// after its last IFD's entries ends the chain there.
		if end+4 > int64(len(b)) {
			break
		}
		off = int64(order.Uint32(b[end : end+4]))
	}
	if len(pages) == 0 {
		return nil, errors.New("the TIFF has no pages")
	}
	return pages, nil
}

// reducedResolution reports whether the IFD at off is a thumbnail or
// another reduced-resolution copy of a page rather than a page.
func reducedResolution(b []byte, order binary.ByteOrder, off int64) bool {
	if v, ok := ifdShort(b, order, off, tagNewSubfileType); ok && v&1 != 0 {
		return true
	}
	if v, ok := ifdShort(b, order, off, tagSubfileType); ok && v == 2 {
		return true
	}
	return false
}

// tiffView reads a TIFF file as if its header pointed at the IFD at ifd.
// It is an io.ReaderAt, which x/image/tiff uses directly instead of
// buffering a copy of the file.
//
// Its reads fail once ctx is done: the decoder reads a strip a few
// kilobytes at a time, so a cancel stops it within the page.
type tiffView struct {
	ctx  context.Context
	data []byte
	ifd  uint32
	pos  int64
	// extra, when set, is read at offset base past the end of the file
	// (zeros between): an IFD written for one band of a page's strips.
	extra []byte
	base  int64
}

func (v *tiffView) ReadAt(p []byte, off int64) (int, error) {
	if err := v.ctx.Err(); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	size := int64(len(v.data))
	if v.extra != nil {
		size = v.base + int64(len(v.extra))
	}
	if off >= size {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && off+int64(n) < size {
		switch at := off + int64(n); {
		case at < int64(len(v.data)):
			n += copy(p[n:], v.data[at:])
		case at < v.base:
			p[n] = 0
			n++
		default:
			n += copy(p[n:], v.extra[at-v.base:])
		}
	}
	// Overlay the first-IFD offset, bytes 4–7 of the header.
	var hdr [4]byte
	if v.data[0] == 'I' {
		binary.LittleEndian.PutUint32(hdr[:], v.ifd)
	} else {
		binary.BigEndian.PutUint32(hdr[:], v.ifd)
	}
	for i := range hdr {
		if at := int64(4+i) - off; at >= 0 && at < int64(n) {
			p[at] = hdr[i]
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (v *tiffView) Read(p []byte) (int, error) {
	n, err := v.ReadAt(p, v.pos)
	v.pos += int64(n)
	return n, err
}
