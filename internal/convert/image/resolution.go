package image

import (
	"bytes"
	"encoding/binary"
	"math"
)

// The resolution a page's file gives goes with the page when the page is
// re-encoded (provider.Document.DPI): the PNG written carries none, and
// Tesseract, given none, guesses it from the text and reads the same
// pixels otherwise by its guess. A page that goes out as it came keeps
// its header, which says it, unless what it says is a placeholder
// (withoutPlaceholderResolution).

// TIFF tags of a page's resolution.
const (
	tagXResolution    = 282
	tagYResolution    = 283
	tagResolutionUnit = 296
	typeRational      = 5
	resUnitCentimetre = 3
)

// uprightDPI is the pixels per inch down a page stored at x by y and shown
// upright under EXIF orientation o: orientations 5–8 swap the axes.
func uprightDPI(x, y, o int) int {
	if o >= 5 && o <= 8 {
		return x
	}
	return y
}

// maxPageInches is the longest side of a page whose resolution is believed.
// A camera writes 72 (or 96) pixels per inch into JFIF or EXIF whatever it
// photographed, so a phone photo of a receipt, 4032 pixels long, would be a
// page of 56 inches; Tesseract, told so, reads its text as huge and loses
// most of it, where its own guess from the text reads it. Documents are at
// most A3 or tabloid (17 inches); beyond 20 the value is a placeholder.
const maxPageInches = 20

// plausiblePageDPI is dpi when a page of w by h pixels at that resolution is a
// plausible document, else 0 (unknown: Tesseract guesses).
func plausiblePageDPI(dpi, w, h int) int {
	if dpi <= 0 || max(w, h) > dpi*maxPageInches {
		return 0
	}
	return dpi
}

// tiffResolution reads the resolution of the page whose IFD is at off in
// pixels per inch, as leptonica reads it (getTiffResolution): one of the
// two stands for both when only one is given, centimetres are converted,
// and any other unit (inches, the default, or none) counts as inches. 0, 0
// when the page gives none or gives nonsense.
func tiffResolution(b []byte, order binary.ByteOrder, off int64) (x, y int) {
	fx, okX := ifdRational(b, order, off, tagXResolution)
	fy, okY := ifdRational(b, order, off, tagYResolution)
	switch {
	case !okX && !okY:
		return 0, 0
	case !okX:
		fx = fy
	case !okY:
		fy = fx
	}
	if fx > 1<<29 || fy > 1<<29 {
		return 0, 0
	}
	if unit, _ := ifdShort(b, order, off, tagResolutionUnit); unit == resUnitCentimetre {
		fx, fy = fx*2.54, fy*2.54
	}
	return int(fx + 0.5), int(fy + 0.5)
}

// ifdRational returns the first value of a RATIONAL tag in the IFD at off
// (two LONGs, at the offset the entry holds). A missing, mistyped or
// out-of-file value, or one with a zero denominator, is not there.
func ifdRational(b []byte, order binary.ByteOrder, off int64, tag uint16) (float64, bool) {
	e, ok := findIFDEntry(b, order, off, tag)
	if !ok || order.Uint16(e[2:4]) != typeRational || order.Uint32(e[4:8]) < 1 {
		return 0, false
	}
	at := int64(order.Uint32(e[8:12]))
	if at+8 > int64(len(b)) {
		return 0, false
	}
	num, den := order.Uint32(b[at:]), order.Uint32(b[at+4:])
	if den == 0 {
		return 0, false
	}
	v := float64(num) / float64(den)
	return v, !math.IsNaN(v)
}

// withoutPlaceholderResolution is the file of a page that goes out as it
// came, w by h pixels and upright, without the resolution its header gives
// when that resolution is a placeholder (plausiblePageDPI): the page is
// then read as one that gives none, as a re-encoded page with such a
// resolution is. Only the header is touched, not the pixels: a JPEG's
// JFIF density unit becomes 0 (the densities then give the pixels' aspect
// ratio only) and a PNG's pHYs chunk is left out, the two fields
// leptonica reads from these formats (the EXIF resolution of a JPEG it
// does not read, and WebP and GIF have no field it reads); the other
// formats are re-encoded. data itself is never written to: a file that
// changes is a copy.
func withoutPlaceholderResolution(f format, data []byte, w, h int) []byte {
	switch f {
	case formatJPEG:
		units, dpi := jfifDensity(data)
		if dpi == 0 || plausiblePageDPI(dpi, w, h) != 0 {
			return data
		}
		out := bytes.Clone(data)
		for _, at := range units {
			out[at] = 0
		}
		return out
	case formatPNG:
		chunks, dpi := pngPHYs(data)
		if dpi == 0 || plausiblePageDPI(dpi, w, h) != 0 {
			return data
		}
		out := make([]byte, 0, len(data))
		from := 0
		for _, c := range chunks {
			out = append(out, data[from:c[0]]...)
			from = c[1]
		}
		return append(out, data[from:]...)
	}
	return data
}

// jfifDensity finds a JPEG's JFIF APP0 segments as libjpeg reads them,
// which leptonica takes the resolution from: any APP0 before the first
// scan that starts "JFIF\0" and holds at least the 14 bytes of its fields,
// each overriding the one before (it need not be the first segment). It
// returns the offset of each one's density unit and the pixels per inch
// down the image the last gives (0 for its unit 0, no unit), converted
// from centimetres and rounded as leptonica does.
func jfifDensity(b []byte) (units []int, dpi int) {
	walkJPEG(b, func(marker byte, off int, seg []byte) bool {
		if marker == 0xE0 && len(seg) >= 14 && bytes.HasPrefix(seg, []byte("JFIF\x00")) {
			units = append(units, off+7)
			switch y := int(binary.BigEndian.Uint16(seg[10:12])); seg[7] {
			case 1: // dots per inch
				dpi = y
			case 2: // dots per centimetre
				dpi = int(float32(y)*2.54 + 0.5)
			default:
				dpi = 0
			}
		}
		return true
	})
	return units, dpi
}

// walkJPEG calls visit with each marker segment of a JPEG before its first
// scan: the marker, the offset of the segment's payload and the payload,
// until visit returns false. It walks as libjpeg reads: stray bytes before
// a marker are skipped (libjpeg warns), fill bytes and markers without a
// length passed over, and it stops at the first scan, the end of the
// image, or a segment that runs past the data. Each step moves on at least
// a byte, so untrusted data costs at most a pass over it.
func walkJPEG(b []byte, visit func(marker byte, off int, seg []byte) bool) {
	i := 2 // past SOI
	for i+1 < len(b) {
		if b[i] != 0xFF {
			i++
			continue
		}
		marker := b[i+1]
		switch {
		case marker == 0xFF: // fill byte
			i++
			continue
		case marker == 0xD8 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7):
			i += 2 // markers without a length
			continue
		case marker == 0xDA || marker == 0xD9: // start of scan, end of image
			return
		}
		if i+4 > len(b) {
			return
		}
		size := int(binary.BigEndian.Uint16(b[i+2 : i+4]))
		if size < 2 || i+2+size > len(b) {
			return
		}
		if !visit(marker, i+4, b[i+4:i+2+size]) {
			return
		}
		i += 2 + size
	}
}

// pngPHYs finds a PNG's pHYs chunks before its image data, as start and
// end offsets, and the pixels per inch down the image of the one libpng
// reads, which leptonica takes the resolution from: the first of the
// right length (a later one is a duplicate, one after the image data out
// of place, both ignored), in pixels per metre (unit 1; 0 for any other),
// rounded as leptonica does.
func pngPHYs(b []byte) (chunks [][2]int, dpi int) {
	read := false
	for i := 8; i+8 <= len(b); { // past the signature
		n := int64(binary.BigEndian.Uint32(b[i : i+4]))
		end := int64(i) + 12 + n // length, type, data, CRC
		typ := string(b[i+4 : i+8])
		if end > int64(len(b)) || typ == "IDAT" || typ == "IEND" {
			break
		}
		if typ == "pHYs" {
			chunks = append(chunks, [2]int{i, int(end)})
			if n == 9 && !read {
				read = true
				if b[i+16] == 1 { // the metre
					dpi = int(float32(binary.BigEndian.Uint32(b[i+12:]))/39.37 + 0.5)
				}
			}
		}
		i = int(end)
	}
	return chunks, dpi
}
