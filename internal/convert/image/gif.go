package image

// gifFrames counts the frames of a GIF by walking its block structure
// without decompressing anything, stopping at limit. A malformed stream
// counts what was seen before the damage; decoding reports the damage.
func gifFrames(b []byte, limit int) int {
	if len(b) < 13 {
		return 0
	}
	i := 13 // header and logical screen descriptor
	if flags := b[10]; flags&0x80 != 0 {
		i += 3 << (flags&0x07 + 1) // global colour table
	}
	frames := 0
	for i < len(b) && frames < limit {
		switch b[i] {
		case 0x21: // extension: label, then sub-blocks
			i = skipSubBlocks(b, i+2)
		case 0x2C: // image descriptor, local colour table, LZW code size, data
			if i+10 > len(b) {
				return frames
			}
			frames++
			flags := b[i+9]
			i += 10
			if flags&0x80 != 0 {
				i += 3 << (flags&0x07 + 1)
			}
			i = skipSubBlocks(b, i+1)
		default: // 0x3B trailer, or damage
			return frames
		}
	}
	return frames
}

// skipSubBlocks returns the index after the data sub-blocks starting at i
// (each a length byte and that many bytes, ended by a zero length), or
// len(b) when they run off the end.
func skipSubBlocks(b []byte, i int) int {
	for i < len(b) {
		n := int(b[i])
		i++
		if n == 0 {
			return i
		}
		i += n
	}
	return len(b)
}
