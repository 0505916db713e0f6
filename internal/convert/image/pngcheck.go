package image

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// checkPNG proves a PNG intact without decoding it into pixels, for one
// that goes out as it came: every chunk's CRC, then the image data
// inflated into nothing, with the zlib checksum, the filter byte of each
// row and the exact number of bytes the header's size, depth and
// interlacing call for. It holds the inflater's window, not the page
// (a 60-megapixel colour page is 240 MB decoded), and stops when ctx is
// done.
func checkPNG(ctx context.Context, b []byte) error {
	const sigLen = 8
	var (
		idat   []io.Reader
		ihdr   []byte
		ended  bool
		chunks int
	)
	for i := sigLen; i < len(b) && !ended; chunks++ {
		if i+12 > len(b) {
			return errors.New("the file is truncated")
		}
		n := int(binary.BigEndian.Uint32(b[i:]))
		if n < 0 || n > len(b)-i-12 {
			return errors.New("the file is truncated")
		}
		typ, data := b[i+4:i+8], b[i+8:i+8+n]
		if crc32.ChecksumIEEE(b[i+4:i+8+n]) != binary.BigEndian.Uint32(b[i+8+n:]) {
			return fmt.Errorf("its %q chunk fails its checksum", typ)
		}
		switch string(typ) {
		case "IHDR":
			if chunks != 0 || n != 13 {
				return errors.New("its header chunk is misplaced or malformed")
			}
			ihdr = data
		case "IDAT":
			idat = append(idat, bytes.NewReader(data))
		case "IEND":
			ended = true
		}
		i += 12 + n
	}
	if ihdr == nil || len(idat) == 0 || !ended {
		return errors.New("the file is truncated: image data or its end is missing")
	}
	zr, err := zlib.NewReader(&ctxReader{ctx: ctx, r: io.MultiReader(idat...)})
	if err != nil {
		return fmt.Errorf("its image data cannot be read: %w", err)
	}
	defer zr.Close()
	if err := checkPNGRows(zr, ihdr); err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return err
	}
	return nil
}

// checkPNGRows reads the inflated image data row by row: a filter byte
// (0–4) and the row's bytes, for each pass of an interlaced image, then
// the end of the stream (which checks zlib's checksum).
func checkPNGRows(r io.Reader, ihdr []byte) error {
	w, h := int64(binary.BigEndian.Uint32(ihdr[0:])), int64(binary.BigEndian.Uint32(ihdr[4:]))
	depth, colorType, interlace := int64(ihdr[8]), ihdr[9], ihdr[12]
	samples := map[byte]int64{0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[colorType]
	if samples == 0 {
		return fmt.Errorf("colour type %d is not one PNG has", colorType)
	}
	bitsPerPixel := samples * depth
	passes := [][4]int64{{0, 0, 1, 1}} // x0, y0, dx, dy
	if interlace == 1 {
		passes = [][4]int64{{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}}
	}
	row := make([]byte, 0, 1<<16)
	for _, p := range passes {
		pw, ph := (w-p[0]+p[2]-1)/p[2], (h-p[1]+p[3]-1)/p[3]
		if pw <= 0 || ph <= 0 {
			continue
		}
		rowBytes := (pw*bitsPerPixel + 7) / 8
		for range ph {
			var f [1]byte
			if _, err := io.ReadFull(r, f[:]); err != nil {
				return pngDataErr(err)
			}
			if f[0] > 4 {
				return fmt.Errorf("a row has filter type %d", f[0])
			}
			// Rows are skipped in pieces, so a wide row needs no buffer
			// of its own size.
			for left := rowBytes; left > 0; {
				k := min(left, int64(cap(row)))
				if _, err := io.ReadFull(r, row[:k]); err != nil {
					return pngDataErr(err)
				}
				left -= k
			}
		}
	}
	// What follows the last row must be the end of the stream, whose
	// checksum the zlib reader checks when it reaches it.
	var extra [1]byte
	switch _, err := io.ReadFull(r, extra[:]); {
	case err == nil:
		return errors.New("it holds more image data than its size calls for")
	case err != io.EOF:
		return pngDataErr(err)
	}
	return nil
}

func pngDataErr(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return errors.New("its image data ends early")
	}
	return fmt.Errorf("its image data cannot be read: %w", err)
}
