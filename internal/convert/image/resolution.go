package image

import (
	"encoding/binary"
	"math"
)

// The resolution a page's file gives goes with the page when the page is
// re-encoded (provider.Document.DPI): the PNG written carries none, and
// Tesseract, given none, guesses it from the text and reads the same
// pixels otherwise by its guess. A page that goes out as it came keeps
// its header, which says it.

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
