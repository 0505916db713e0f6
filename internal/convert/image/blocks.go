package image

import (
	"bufio"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"

	"golang.org/x/image/tiff/lzw"
)

// TIFF tags and compressions checkBlocks reads.
const (
	tagCompression     = 259
	tagStripOffsets    = 273
	tagRowsPerStrip    = 278
	tagStripByteCounts = 279
	tagTileWidth       = 322
	tagTileLength      = 323
	tagTileOffsets     = 324
	tagTileByteCounts  = 325

	compressionLZW        = 5
	compressionDeflate    = 8
	compressionDeflateOld = 32946
	compressionPackBits   = 32773
)

// blockCheckThreshold is the decoder buffer below which a strip is not
// checked: what the decoder may hold for it is small whatever it holds.
const blockCheckThreshold = 16 << 20

// checkBlocks bounds what x/image/tiff holds beside the decoded page.
// The decoder inflates each compressed strip (or tile) whole into one
// buffer before unpacking it, and lets that buffer reach 8 bytes a pixel
// of the strip whatever the page's pixel type: a one-strip 1-bit page of
// 100 megapixels whose stream inflates to 800 MB would make it hold
// 800 MB for a 100 MB page. So each large strip is inflated once here,
// into nothing, and the page is refused if a strip yields more than its
// pixels decode to. That costs a second inflate of large strips only;
// pages cut into the usual small strips are not read twice.
func checkBlocks(v *tiffView, pg tiffPage, page int) error {
	b := v.data
	order, _ := tiffByteOrder(b)
	comp, _ := ifdShort(b, order, pg.ifd, tagCompression)
	if comp != compressionLZW && comp != compressionDeflate && comp != compressionDeflateOld && comp != compressionPackBits {
		return nil // uncompressed strips are read at their stored size; CCITT stops at the page's rows
	}
	bw, bh := pg.width, pg.height
	offsetsTag, countsTag := int64(tagStripOffsets), int64(tagStripByteCounts)
	if tw, ok := ifdShort(b, order, pg.ifd, tagTileWidth); ok && tw > 0 {
		th, _ := ifdShort(b, order, pg.ifd, tagTileLength)
		bw, bh = int64(tw), int64(th)
		offsetsTag, countsTag = tagTileOffsets, tagTileByteCounts
	} else if rps, ok := ifdShort(b, order, pg.ifd, tagRowsPerStrip); ok && rps > 0 && int64(rps) < bh {
		bh = int64(rps)
	}
	allowed := 8 * bw * bh // what the decoder lets one buffer reach
	need := pg.bytesPerPixel * bw * bh
	if allowed <= blockCheckThreshold || allowed <= need {
		return nil
	}
	offsets := ifdArray(b, order, pg.ifd, uint16(offsetsTag))
	counts := ifdArray(b, order, pg.ifd, uint16(countsTag))
	for i := range min(len(offsets), len(counts)) {
		n := inflatedLen(io.NewSectionReader(v, offsets[i], counts[i]), comp, need+1)
		if err := v.ctx.Err(); err != nil {
			return err
		}
		if n > need {
			return fmt.Errorf("%s has a strip that inflates to more than the %d×%d pixels it holds decode to",
				tiffPageName(page), bw, bh)
		}
	}
	return nil
}

// inflatedLen counts the bytes a compressed strip inflates to, up to
// limit. A damaged stream counts what came before the damage: the decoder
// names the damage.
func inflatedLen(r io.Reader, comp int, limit int64) int64 {
	switch comp {
	case compressionLZW:
		lr := lzw.NewReader(r, lzw.MSB, 8)
		defer lr.Close()
		n, _ := io.Copy(io.Discard, io.LimitReader(lr, limit))
		return n
	case compressionDeflate, compressionDeflateOld:
		zr, err := zlib.NewReader(r)
		if err != nil {
			return 0
		}
		defer zr.Close()
		n, _ := io.Copy(io.Discard, io.LimitReader(zr, limit))
		return n
	case compressionPackBits:
		return packBitsLen(bufio.NewReader(r), limit)
	}
	return 0
}

// packBitsLen counts the bytes a PackBits stream unpacks to, up to limit.
func packBitsLen(r io.ByteReader, limit int64) int64 {
	var n int64
	for n < limit {
		h, err := r.ReadByte()
		if err != nil {
			return n
		}
		switch c := int8(h); {
		case c >= 0: // c+1 literal bytes
			for range int(c) + 1 {
				if _, err := r.ReadByte(); err != nil {
					return n
				}
				n++
			}
		case c > -128: // the next byte 1-c times
			if _, err := r.ReadByte(); err != nil {
				return n
			}
			n += 1 - int64(c)
		}
	}
	return n
}

// ifdArray reads the SHORT or LONG values of tag in the IFD at off,
// stored in the entry when they fit in its four bytes and at the offset
// it holds otherwise. A missing, mistyped or out-of-file array is empty.
func ifdArray(b []byte, order binary.ByteOrder, off int64, tag uint16) []int64 {
	if off < 0 || off+2 > int64(len(b)) {
		return nil
	}
	n := int64(order.Uint16(b[off : off+2]))
	if off+2+n*12 > int64(len(b)) {
		return nil
	}
	for k := int64(0); k < n; k++ {
		e := b[off+2+k*12 : off+2+k*12+12]
		if order.Uint16(e[0:2]) != tag {
			continue
		}
		size := int64(2)
		switch order.Uint16(e[2:4]) {
		case typeShort:
		case typeLong:
			size = 4
		default:
			return nil
		}
		count := int64(order.Uint32(e[4:8]))
		if count > int64(len(b))/size {
			return nil
		}
		vals := e[8:12]
		if count*size > 4 {
			at := int64(order.Uint32(e[8:12]))
			if at+count*size > int64(len(b)) {
				return nil
			}
			vals = b[at : at+count*size]
		}
		out := make([]int64, count)
		for i := range out {
			if size == 2 {
				out[i] = int64(order.Uint16(vals[2*i:]))
			} else {
				out[i] = int64(order.Uint32(vals[4*i:]))
			}
		}
		return out
	}
	return nil
}
