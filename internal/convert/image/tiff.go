package image

import (
	"encoding/binary"
	"errors"
	"fmt"
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
}

// prepareTIFF walks the IFD chain, checks every page's size before
// decoding any, then decodes, turns and re-encodes the pages one at a
// time. x/image/tiff decodes only the IFD the header points at, so each
// page is decoded through a view of the file whose header points at that
// page's IFD; the IFD's own offsets are absolute and stay valid.
func prepareTIFF(cfg Config, data []byte) ([]provider.Document, error) {
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
	docs := make([]provider.Document, 0, len(pages))
	for i, p := range pages {
		img, err := tiff.Decode(&tiffView{data: data, ifd: uint32(p.ifd)})
		if err != nil {
			if n := pageNumber(multi, i); n > 0 {
				return nil, fmt.Errorf("page %d of the TIFF cannot be decoded: %w", n, err)
			}
			return nil, fmt.Errorf("the TIFF image cannot be decoded: %w", err)
		}
		out, mime, err := encode(orient(img, p.orientation), false)
		if err != nil {
			return nil, err
		}
		docs = append(docs, provider.Document{Data: out, MIME: mime, Page: pageNumber(multi, i), Format: "markdown"})
	}
	return docs, nil
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
			pages = append(pages, tiffPage{ifd: off, width: int64(w), height: int64(h), orientation: validOrientation(o)})
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
type tiffView struct {
	data []byte
	ifd  uint32
	pos  int64
}

func (v *tiffView) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= int64(len(v.data)) {
		return 0, io.EOF
	}
	n := copy(p, v.data[off:])
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
