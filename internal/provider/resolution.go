package provider

import (
	"bytes"
	"encoding/binary"
)

// ImageResolution is the pixels per inch across (x) and down (y) an
// image, as its header gives them and leptonica, which Tesseract reads
// images with, reads them: PNG pHYs in pixels per metre, JPEG JFIF
// density, BMP pixels per metre. It is 0, 0 when the header gives none
// or is of another format (TIFF pages, which the image package reads
// from their own directories; PGM, which has no field for it). The
// bytes are untrusted: every offset is checked.
func ImageResolution(b []byte) (x, y int) {
	perMetre := func(x, y uint32) (int, int) { // rounded as leptonica does
		return int(float32(x)/39.37 + 0.5), int(float32(y)/39.37 + 0.5)
	}
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		for i := 8; i+8 <= len(b); {
			n := int(binary.BigEndian.Uint32(b[i:]))
			kind := string(b[i+4 : i+8])
			if n < 0 || n > len(b)-i-12 || kind == "IDAT" {
				return 0, 0
			}
			if kind == "pHYs" && n == 9 && b[i+16] == 1 { // unit 1: the metre
				return perMetre(binary.BigEndian.Uint32(b[i+8:]), binary.BigEndian.Uint32(b[i+12:]))
			}
			i += 12 + n
		}
	case bytes.HasPrefix(b, []byte{0xFF, 0xD8}):
		// The JFIF segment is APP0, the first after SOI.
		if len(b) >= 18 && b[2] == 0xFF && b[3] == 0xE0 && string(b[6:11]) == "JFIF\x00" {
			unit, dx, dy := b[13], int(binary.BigEndian.Uint16(b[14:])), int(binary.BigEndian.Uint16(b[16:]))
			switch unit {
			case 1: // dots per inch
				return dx, dy
			case 2: // dots per centimetre
				return int(float32(dx)*2.54 + 0.5), int(float32(dy)*2.54 + 0.5)
			}
		}
	case bytes.HasPrefix(b, []byte("BM")):
		if len(b) >= 46 && binary.LittleEndian.Uint32(b[14:]) >= 40 { // BITMAPINFOHEADER or later
			x, y := binary.LittleEndian.Uint32(b[38:]), binary.LittleEndian.Uint32(b[42:])
			if int32(x) > 0 && int32(y) > 0 {
				return perMetre(x, y)
			}
		}
	}
	return 0, 0
}
