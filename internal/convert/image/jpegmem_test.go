package image

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image"
	"image/jpeg"
	"runtime"
	"testing"
)

// testJPEG describes a JPEG craftJPEG writes.
type testJPEG struct {
	w, h        int
	progressive bool
	hv          []byte // each component's sampling factors, 0xHV
	ids         []byte // component ids; default 1, 2, …
	adobe       int    // the APP14 Adobe transform; -1 for no APP14
}

// craftJPEG writes a JPEG that decodes to a flat page, as small as JPEG
// allows: one Huffman code, and every block "no change" (one bit in a
// progressive DC scan, two in a baseline scan: DC 0 and end of block).
// A progressive file has its DC scan only, which is all the decoder needs
// to keep every block's coefficients: the audit's bomb, at any size.
func craftJPEG(t testing.TB, j testJPEG) []byte {
	t.Helper()
	var b bytes.Buffer
	seg := func(marker byte, payload ...byte) {
		b.Write([]byte{0xFF, marker})
		_ = binary.Write(&b, binary.BigEndian, uint16(len(payload)+2))
		b.Write(payload)
	}
	b.Write([]byte{0xFF, 0xD8})
	if j.adobe >= 0 {
		seg(0xEE, 'A', 'd', 'o', 'b', 'e', 0, 100, 0, 0, 0, 0, byte(j.adobe))
	}
	dqt := make([]byte, 65)
	for i := 1; i < 65; i++ {
		dqt[i] = 1
	}
	seg(0xDB, dqt...)
	sof := []byte{8, byte(j.h >> 8), byte(j.h), byte(j.w >> 8), byte(j.w), byte(len(j.hv))}
	for i, hv := range j.hv {
		id := byte(i + 1)
		if j.ids != nil {
			id = j.ids[i]
		}
		sof = append(sof, id, hv, 0)
	}
	sofMarker := byte(0xC0)
	if j.progressive {
		sofMarker = 0xC2
	}
	seg(sofMarker, sof...)
	// DC table 0 and AC table 0, each one code of length 1: category 0,
	// and end of block.
	oneCode := func(class byte) []byte {
		return append([]byte{class, 1}, make([]byte, 16)...)[:18]
	}
	seg(0xC4, append(oneCode(0x00), oneCode(0x10)...)...)
	sos := []byte{byte(len(j.hv))}
	for i := range j.hv {
		id := byte(i + 1)
		if j.ids != nil {
			id = j.ids[i]
		}
		sos = append(sos, id, 0x00)
	}
	bits := 2
	if j.progressive {
		sos, bits = append(sos, 0, 0, 0), 1 // the DC scan
	} else {
		sos = append(sos, 0, 63, 0)
	}
	seg(0xDA, sos...)
	h0, v0 := int(j.hv[0]>>4), int(j.hv[0]&15)
	if len(j.hv) == 1 {
		h0, v0 = 1, 1
	}
	mcus := ((j.w + 8*h0 - 1) / (8 * h0)) * ((j.h + 8*v0 - 1) / (8 * v0))
	blocks := 0
	for _, hv := range j.hv {
		if len(j.hv) == 1 {
			hv = 0x11
		}
		blocks += mcus * int(hv>>4) * int(hv&15)
	}
	b.Write(make([]byte, (blocks*bits+7)/8+1))
	b.Write([]byte{0xFF, 0xD9})
	return b.Bytes()
}

// The decode limit counts what image/jpeg allocates for a JPEG, read from
// its source (scan.go, reader.go), checked here against what it does
// allocate: the same, but for the decoder's own tables and buffers.
func TestJPEGDecodeBytesCoverWhatTheDecoderAllocates(t *testing.T) {
	const slack = 32 << 10 // the decoder's tables and buffers: 14–18 KiB
	tests := []struct {
		name string
		j    testJPEG
	}{
		{"baseline grey", testJPEG{w: 512, h: 384, hv: []byte{0x11}, adobe: -1}},
		{"progressive grey", testJPEG{w: 512, h: 384, progressive: true, hv: []byte{0x11}, adobe: -1}},
		{"progressive grey declaring 2x2 sampling", testJPEG{w: 512, h: 384, progressive: true, hv: []byte{0x22}, adobe: -1}},
		{"baseline 4:2:0", testJPEG{w: 512, h: 384, hv: []byte{0x22, 0x11, 0x11}, adobe: -1}},
		{"progressive 4:4:4", testJPEG{w: 512, h: 384, progressive: true, hv: []byte{0x11, 0x11, 0x11}, adobe: -1}},
		{"progressive 4:2:0", testJPEG{w: 512, h: 384, progressive: true, hv: []byte{0x22, 0x11, 0x11}, adobe: -1}},
		{"progressive 4:2:0, sides not whole MCUs", testJPEG{w: 501, h: 301, progressive: true, hv: []byte{0x22, 0x11, 0x11}, adobe: -1}},
		{"progressive 4:1:1", testJPEG{w: 512, h: 384, progressive: true, hv: []byte{0x41, 0x11, 0x11}, adobe: -1}},
		{"baseline RGB", testJPEG{w: 512, h: 384, hv: []byte{0x11, 0x11, 0x11}, ids: []byte{'R', 'G', 'B'}, adobe: -1}},
		{"progressive RGB", testJPEG{w: 512, h: 384, progressive: true, hv: []byte{0x11, 0x11, 0x11}, adobe: 0}},
		{"baseline CMYK", testJPEG{w: 512, h: 384, hv: []byte{0x11, 0x11, 0x11, 0x11}, adobe: 0}},
		{"progressive YCbCrK", testJPEG{w: 512, h: 384, progressive: true, hv: []byte{0x22, 0x11, 0x11, 0x22}, adobe: 2}},
		{"progressive CMYK", testJPEG{w: 512, h: 384, progressive: true, hv: []byte{0x11, 0x11, 0x11, 0x11}, adobe: 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := craftJPEG(t, tt.j)
			c, err := jpeg.DecodeConfig(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			want, progressive := jpegDecodeBytes(data, c)
			if progressive != tt.j.progressive {
				t.Errorf("progressive = %v, want %v", progressive, tt.j.progressive)
			}
			// The least of three decodes: a test running beside this one
			// can only add to what the process allocates meanwhile.
			alloc := int64(-1)
			for range 3 {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				img, err := jpeg.Decode(bytes.NewReader(data))
				runtime.ReadMemStats(&after)
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				if b := img.Bounds(); b.Dx() != tt.j.w || b.Dy() != tt.j.h {
					t.Fatalf("decoded %v", b)
				}
				if n := int64(after.TotalAlloc - before.TotalAlloc); alloc < 0 || n < alloc {
					alloc = n
				}
			}
			t.Logf("%d bytes of JPEG: counted %d, allocated %d", len(data), want, alloc)
			if alloc > want+slack || want > alloc {
				t.Errorf("the decoder allocated %d bytes, counted %d", alloc, want)
			}
		})
	}
}

// jpegFrameHeader is a JPEG's header up to its scan, for the size and
// frame j gives: all DecodeConfig and Open read.
func jpegFrameHeader(t testing.TB, j testJPEG) []byte {
	t.Helper()
	data := craftJPEG(t, testJPEG{w: 8, h: 8, progressive: j.progressive, hv: j.hv, ids: j.ids, adobe: j.adobe})
	sof := []byte{0xFF, 0xC0}
	if j.progressive {
		sof[1] = 0xC2
	}
	i := bytes.Index(data, sof)
	binary.BigEndian.PutUint16(data[i+5:], uint16(j.h))
	binary.BigEndian.PutUint16(data[i+7:], uint16(j.w))
	end := bytes.Index(data, []byte{0xFF, 0xDA})
	return append(data[:end:end], 0xFF, 0xDA, 0, 12)
}

// The audit's bomb: half a megabyte of progressive JPEG that decoded to
// 1.3 GB under the 256 MiB limit, because the decoder's coefficients were
// not counted. Open reads headers only, so the files here end at their
// scan.
func TestOpenCountsAProgressiveJPEGsCoefficients(t *testing.T) {
	tests := []struct {
		name string
		j    testJPEG
		want string // "" for accepted
	}{
		{
			name: "the audit's bomb: 9400×9400, progressive, 4:4:4",
			j:    testJPEG{w: 9400, h: 9400, progressive: true, hv: []byte{0x11, 0x11, 0x11}, adobe: -1},
			want: "the image is a 9400×9400-pixel progressive JPEG: decoding it takes 15 bytes a pixel (the pixels and every block's coefficients), 1264 MiB, over the 256 MiB decode limit",
		},
		{
			name: "the same page baseline",
			j:    testJPEG{w: 9400, h: 9400, hv: []byte{0x11, 0x11, 0x11}, adobe: -1},
		},
		{
			name: "a grey progressive page at the pixel cap",
			j:    testJPEG{w: 10000, h: 10000, progressive: true, hv: []byte{0x11}, adobe: -1},
			want: "the image is a 10000×10000-pixel progressive JPEG: decoding it takes 5 bytes a pixel (the pixels and every block's coefficients), 476.8 MiB, over the 256 MiB decode limit",
		},
		{
			name: "a 24-megapixel progressive 4:2:0 photo",
			j:    testJPEG{w: 6000, h: 4000, progressive: true, hv: []byte{0x22, 0x11, 0x11}, adobe: -1},
		},
		{
			name: "an A4 page at 600 dpi, progressive 4:2:0: 7.5 bytes a pixel",
			j:    testJPEG{w: 4960, h: 7016, progressive: true, hv: []byte{0x22, 0x11, 0x11}, adobe: -1},
		},
		{
			name: "the same page at 4:4:4",
			j:    testJPEG{w: 4960, h: 7016, progressive: true, hv: []byte{0x11, 0x11, 0x11}, adobe: -1},
			want: "the image is a 4960×7016-pixel progressive JPEG: decoding it takes 15 bytes a pixel (the pixels and every block's coefficients), 497.8 MiB, over the 256 MiB decode limit",
		},
		{
			name: "a 4:2:0 baseline page at the pixel cap: 1.5 bytes a pixel",
			j:    testJPEG{w: 10000, h: 10000, hv: []byte{0x22, 0x11, 0x11}, adobe: -1},
		},
		{
			name: "a CMYK page: planes and the CMYK copy at once",
			j:    testJPEG{w: 6000, h: 6000, hv: []byte{0x11, 0x11, 0x11, 0x11}, adobe: 0},
			want: "the image is 6000×6000 pixels at 8 bytes a pixel, 274.7 MiB decoded, over the 256 MiB decode limit",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(Config{}, jpegFrameHeader(t, tt.j))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				return
			}
			var tl *DecodedTooLargeError
			if !errors.As(err, &tl) {
				t.Fatalf("err = %v, want a DecodedTooLargeError", err)
			}
			if err.Error() != tt.want {
				t.Errorf("message = %q\nwant        %q", err, tt.want)
			}
		})
	}
}

// The frame the decoder uses is found as the decoder walks, not as
// libjpeg does (walkJPEG): the two read "\xff\x00" differently, so a file
// can show walkJPEG a baseline frame of the same size while image/jpeg
// reads a progressive one, and count a third of what the decode takes.
func TestTheDecodersFrameIsFoundAsTheDecoderWalks(t *testing.T) {
	progressive := craftJPEG(t, testJPEG{w: 512, h: 384, progressive: true, hv: []byte{0x11, 0x11, 0x11}, adobe: -1})
	// 0: SOI. 2: "\xff\x00", which the decoder passes over and walkJPEG
	// takes for a marker whose length is the next two bytes, 0x0020. 4:
	// those two bytes, which the decoder skips as stray. 6: a comment the
	// decoder skips whole, in which walkJPEG lands at 2+2+0x20 = 36 on a
	// baseline frame of the same size, and at 55 on a segment that runs
	// past the file, where it stops. 74: the real file from its first
	// segment on, with its progressive frame.
	var b bytes.Buffer
	b.Write([]byte{0xFF, 0xD8, 0xFF, 0x00, 0x00, 0x20})
	payload := make([]byte, 64)
	copy(payload[36-10:], []byte{0xFF, 0xC0, 0, 17, 8, 0x01, 0x80, 0x02, 0x00, 3, 1, 0x11, 0, 2, 0x11, 0, 3, 0x11, 0})
	copy(payload[55-10:], []byte{0xFF, 0xE0, 0xFF, 0xFF})
	b.Write([]byte{0xFF, 0xFE, 0, byte(len(payload) + 2)})
	b.Write(payload)
	b.Write(progressive[2:])
	data := b.Bytes()

	var walked []byte
	walkJPEG(data, func(marker byte, _ int, _ []byte) bool {
		walked = append(walked, marker)
		return true
	})
	if !bytes.Equal(walked, []byte{0x00, 0xC0}) {
		t.Fatalf("walkJPEG saw markers % X, want 00 C0: the file does not show it the decoy", walked)
	}
	img, err := jpeg.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if img.Bounds() != image.Rect(0, 0, 512, 384) {
		t.Fatalf("decoded %v", img.Bounds())
	}
	f, ok := decoderFrame(data)
	if !ok || !f.progressive || f.w != 512 || f.h != 384 {
		t.Errorf("decoderFrame = %+v, %v; want the progressive 512×384 frame the decoder reads", f, ok)
	}
}
