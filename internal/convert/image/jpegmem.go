package image

import (
	"image"
	"image/color"
)

// jpegFrame is what a JPEG's frame header (SOF) says of the memory Go's
// decoder will take for it.
type jpegFrame struct {
	progressive bool
	w, h        int64
	// hv are the components' sampling factors, as the decoder uses them.
	hv [][2]int64
}

// decoderFrame finds the frame header image/jpeg decodes b by, walking the
// markers as its decoder does (reader.go, decode): bytes before a marker
// skipped one at a time, "\xff\x00" and restart markers passed over, fill
// bytes before a marker skipped, and the first SOF0, SOF1 or SOF2 taken;
// it stops at a scan, the end of the image, a marker the decoder refuses,
// or the end of the data. walkJPEG, which walks as libjpeg does for the
// metadata libjpeg and leptonica read, is not used: the two walks differ
// ("\xff\x00" has no length to the decoder; walkJPEG reads one), so a
// crafted file could show walkJPEG a baseline frame where the decoder
// reads a progressive one. ok is false when the walk finds no frame the
// decoder would use.
func decoderFrame(b []byte) (f jpegFrame, ok bool) {
	if len(b) < 2 || b[0] != 0xFF || b[1] != 0xD8 {
		return f, false
	}
	i := 2
	for {
		if i+2 > len(b) {
			return f, false
		}
		t0, t1 := b[i], b[i+1]
		i += 2
		for t0 != 0xFF {
			if i >= len(b) {
				return f, false
			}
			t0, t1 = t1, b[i]
			i++
		}
		marker := t1
		if marker == 0 {
			continue
		}
		for marker == 0xFF {
			if i >= len(b) {
				return f, false
			}
			marker = b[i]
			i++
		}
		if marker == 0xD9 { // end of image
			return f, false
		}
		if marker >= 0xD0 && marker <= 0xD7 { // restart markers: no length
			continue
		}
		if i+2 > len(b) {
			return f, false
		}
		n := int(b[i])<<8 + int(b[i+1]) - 2
		i += 2
		if n < 0 || i+n > len(b) {
			return f, false
		}
		switch {
		case marker == 0xC0, marker == 0xC1, marker == 0xC2:
			return parseSOF(b[i:i+n], marker == 0xC2)
		case marker == 0xC4, marker == 0xDB, marker == 0xDD, // DHT, DQT, DRI
			marker >= 0xE0 && marker <= 0xEF, marker == 0xFE: // APPn, COM
			i += n
		default: // a scan before a frame, or a marker the decoder refuses
			return f, false
		}
	}
}

// parseSOF reads a frame header's payload as processSOF does: 1, 3 or 4
// components of 8-bit samples, a grey component's sampling taken as 1×1.
func parseSOF(p []byte, progressive bool) (jpegFrame, bool) {
	if len(p) < 6 {
		return jpegFrame{}, false
	}
	nComp := int(p[5])
	if nComp != 1 && nComp != 3 && nComp != 4 || len(p) != 6+3*nComp {
		return jpegFrame{}, false
	}
	f := jpegFrame{progressive: progressive, h: int64(p[1])<<8 | int64(p[2]), w: int64(p[3])<<8 | int64(p[4])}
	for c := range nComp {
		hv := p[7+3*c]
		h, v := int64(hv>>4), int64(hv&0x0F)
		if h < 1 || h > 4 || v < 1 || v > 4 {
			return jpegFrame{}, false
		}
		if nComp == 1 {
			h, v = 1, 1
		}
		f.hv = append(f.hv, [2]int64{h, v})
	}
	return f, true
}

// jpegDecodeBytes is the most memory image/jpeg holds at once to decode a
// w×h JPEG whose DecodeConfig reported model, from the frame it decodes
// (scan.go makeImg, reader.go applyBlack and convertToRGB):
//
//   - the planes it decodes into, rounded up to whole MCUs: a grey plane,
//     or a YCbCr image at the file's subsampling (1.5 bytes a pixel for
//     4:2:0, 3 for 4:4:4) and for four components a black plane besides;
//   - for a CMYK page (four components) or one the file marks RGB, a
//     4-byte-a-pixel copy made while the planes are held;
//   - for a progressive JPEG, each component's coefficients, kept from the
//     first scan to the end: 64 int32 (256 bytes) for every 8×8 block of
//     its samples (d.progCoeffs), 4 bytes a pixel for each component at
//     full resolution. A few hundred kilobytes of scans that say "no
//     change" make a 9400×9400 page of 1.3 GB.
//
// A file whose frame decoderFrame cannot find (it finds the one the
// decoder reads, or the decoder fails) counts as the worst the decoder
// admits for its size and model: progressive, every component at full
// resolution.
func jpegDecodeBytes(data []byte, c image.Config) (bytes int64, progressive bool) {
	w, h := int64(c.Width), int64(c.Height)
	f, ok := decoderFrame(data)
	if !ok || f.w != w || f.h != h || len(f.hv) != componentsOf(c.ColorModel) {
		f = jpegFrame{progressive: true, w: w, h: h}
		for range componentsOf(c.ColorModel) {
			f.hv = append(f.hv, [2]int64{1, 1})
		}
	}
	h0, v0 := f.hv[0][0], f.hv[0][1]
	mxx, myy := (w+8*h0-1)/(8*h0), (h+8*v0-1)/(8*v0)
	pw, ph := 8*h0*mxx, 8*v0*myy // the planes' size
	bytes = pw * ph
	if len(f.hv) > 1 {
		// Each chroma plane at the ratio of the luma's sampling to the
		// first chroma component's (the decoder requires both alike).
		hr, vr := max(h0/f.hv[1][0], 1), max(v0/f.hv[1][1], 1)
		bytes += 2 * (pw / hr) * (ph / vr)
	}
	if len(f.hv) == 4 {
		bytes += 8 * f.hv[3][0] * mxx * 8 * f.hv[3][1] * myy // black
	}
	if len(f.hv) == 4 || c.ColorModel == color.RGBAModel {
		bytes += 4 * w * h
	}
	if f.progressive {
		for _, hv := range f.hv {
			bytes += mxx * myy * hv[0] * hv[1] * 256
		}
	}
	return bytes, f.progressive
}

// componentsOf is the number of components of a JPEG whose DecodeConfig
// reported model.
func componentsOf(m color.Model) int {
	switch m {
	case color.GrayModel:
		return 1
	case color.CMYKModel:
		return 4
	}
	return 3
}
