package image

import (
	"bytes"
	"encoding/binary"
)

// Orientation values (EXIF/TIFF tag 274) name where the stored rows and
// columns belong when the picture is shown upright. 1 is already upright;
// 2–8 are the seven flips and rotations. Phones store photos sideways and
// set the tag instead of rotating the pixels, and OCR engines read the
// pixels, not the tag.
const tagOrientation = 0x0112

// The parsers below read untrusted bytes: every offset is checked against
// the slice, loops are bounded, and anything malformed means "upright".

// jpegOrientation reads the Orientation tag of a JPEG's APP1 Exif segment.
func jpegOrientation(b []byte) int {
	o := 1
	walkJPEG(b, func(marker byte, _ int, seg []byte) bool {
		if marker == 0xE1 && bytes.HasPrefix(seg, []byte("Exif\x00\x00")) {
			o = tiffOrientation(seg[6:])
			return false
		}
		return true
	})
	return o
}

// pngOrientation reads the Orientation tag of a PNG's eXIf chunk.
func pngOrientation(b []byte) int {
	i := 8 // past the signature
	for i+8 <= len(b) {
		size := int64(binary.BigEndian.Uint32(b[i : i+4]))
		typ := string(b[i+4 : i+8])
		end := int64(i) + 12 + size // length, type, data, CRC
		if end > int64(len(b)) {
			return 1
		}
		switch typ {
		case "eXIf":
			return tiffOrientation(b[i+8 : i+8+int(size)])
		case "IEND":
			return 1
		}
		i = int(end)
	}
	return 1
}

// webpOrientation reads the Orientation tag of a WebP's EXIF chunk.
func webpOrientation(b []byte) int {
	i := 12 // past "RIFF", size, "WEBP"
	for i+8 <= len(b) {
		fourCC := string(b[i : i+4])
		size := int64(binary.LittleEndian.Uint32(b[i+4 : i+8]))
		end := int64(i) + 8 + size + size&1 // chunks are padded to even sizes
		if int64(i)+8+size > int64(len(b)) {
			return 1
		}
		if fourCC == "EXIF" {
			data := b[i+8 : i+8+int(size)]
			// Some writers keep the JPEG "Exif\0\0" prefix, some do not.
			data = bytes.TrimPrefix(data, []byte("Exif\x00\x00"))
			return tiffOrientation(data)
		}
		if end > int64(len(b)) {
			return 1
		}
		i = int(end)
	}
	return 1
}

// tiffOrientation reads the Orientation tag from the first IFD of a
// TIFF-structured block (an Exif payload).
func tiffOrientation(b []byte) int {
	order, ok := tiffByteOrder(b)
	if !ok || len(b) < 8 {
		return 1
	}
	v, ok := ifdShort(b, order, int64(order.Uint32(b[4:8])), tagOrientation)
	if !ok {
		return 1
	}
	return validOrientation(v)
}

func validOrientation(v int) int {
	if v < 1 || v > 8 {
		return 1
	}
	return v
}

func tiffByteOrder(b []byte) (binary.ByteOrder, bool) {
	switch {
	case bytes.HasPrefix(b, []byte("II*\x00")):
		return binary.LittleEndian, true
	case bytes.HasPrefix(b, []byte("MM\x00*")):
		return binary.BigEndian, true
	}
	return nil, false
}

// TIFF field types this package reads.
const (
	typeShort = 3
	typeLong  = 4
)

// findIFDEntry returns the 12 bytes of the first entry of tag in the IFD at
// off, if the IFD lies within b and has one.
func findIFDEntry(b []byte, order binary.ByteOrder, off int64, tag uint16) ([]byte, bool) {
	if off < 0 || off+2 > int64(len(b)) {
		return nil, false
	}
	n := int64(order.Uint16(b[off : off+2]))
	if off+2+n*12 > int64(len(b)) {
		return nil, false
	}
	for k := int64(0); k < n; k++ {
		if e := b[off+2+k*12 : off+2+k*12+12]; order.Uint16(e[0:2]) == tag {
			return e, true
		}
	}
	return nil, false
}

// ifdShort returns the first value of a SHORT or LONG tag in the IFD at
// off. Single values of these types are stored inside the entry itself.
func ifdShort(b []byte, order binary.ByteOrder, off int64, tag uint16) (int, bool) {
	e, ok := findIFDEntry(b, order, off, tag)
	if !ok {
		return 0, false
	}
	switch order.Uint16(e[2:4]) {
	case typeShort:
		return int(order.Uint16(e[8:10])), true
	case typeLong:
		v := order.Uint32(e[8:12])
		if v > 1<<31-1 {
			return 0, false
		}
		return int(v), true
	}
	return 0, false
}
