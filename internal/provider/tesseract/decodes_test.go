package tesseract

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"

	pageimage "github.com/docjobs/docjobs/internal/convert/image"
	"github.com/docjobs/docjobs/internal/provider"
)

// countedDecodes is a decode bound that counts its places: taken, waited
// for, and the most held at once. With refuse set it grants none.
type countedDecodes struct {
	sem    *semaphore.Weighted
	refuse error

	mu                        sync.Mutex
	taken, waiting, held, top int
	waited                    chan struct{} // told of each wait begun
}

func newCountedDecodes(n int64) *countedDecodes {
	return &countedDecodes{sem: semaphore.NewWeighted(n), waited: make(chan struct{}, 16)}
}

func (d *countedDecodes) Acquire(ctx context.Context, n int64) error {
	if d.refuse != nil {
		return d.refuse
	}
	d.mu.Lock()
	d.waiting++
	d.mu.Unlock()
	d.waited <- struct{}{}
	err := d.sem.Acquire(ctx, n)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.waiting--
	if err != nil {
		return err
	}
	d.taken++
	d.held++
	d.top = max(d.top, d.held)
	return nil
}

func (d *countedDecodes) Release(n int64) {
	d.mu.Lock()
	d.held--
	d.mu.Unlock()
	d.sem.Release(n)
}

func (d *countedDecodes) counts() (taken, top int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.taken, d.top
}

// progressiveJPEG writes a w×h progressive JPEG of comps components, each
// sampled 1×1 (4:4:4), that is as small as JPEG allows: its DC scan only,
// every block "no change" in one bit. That scan is all image/jpeg needs to
// keep every block's coefficients until the end (4 bytes a pixel for each
// component) besides the pixels: a few hundred kilobytes that decode to
// gigabytes.
func progressiveJPEG(t *testing.T, w, h, comps int) []byte {
	t.Helper()
	var b bytes.Buffer
	seg := func(marker byte, payload ...byte) {
		b.Write([]byte{0xFF, marker})
		_ = binary.Write(&b, binary.BigEndian, uint16(len(payload)+2))
		b.Write(payload)
	}
	b.Write([]byte{0xFF, 0xD8})
	dqt := make([]byte, 65)
	for i := 1; i < 65; i++ {
		dqt[i] = 1
	}
	seg(0xDB, dqt...)
	sof := []byte{8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), byte(comps)}
	sos := []byte{byte(comps)}
	for c := range comps {
		sof = append(sof, byte(c+1), 0x11, 0)
		sos = append(sos, byte(c+1), 0x00)
	}
	seg(0xC2, sof...)
	// DC table 0 and AC table 0, one code each of length 1.
	oneCode := func(class byte) []byte { return append([]byte{class, 1}, make([]byte, 16)...)[:18] }
	seg(0xC4, append(oneCode(0x00), oneCode(0x10)...)...)
	seg(0xDA, append(sos, 0, 0, 0)...) // the DC scan
	blocks := ((w + 7) / 8) * ((h + 7) / 8) * comps
	b.Write(make([]byte, (blocks+7)/8+1))
	b.Write([]byte{0xFF, 0xD9})
	return b.Bytes()
}

// A page is turned upright only when the image package would decode it:
// its header is checked by the one rule every decode in the process
// follows (pageimage.CheckDecode) before a decode place is taken. The
// progressive JPEG, 35 megapixels, passed the turn's own check of 4 bytes
// a pixel and was decoded: image/jpeg kept its coefficients besides the
// pixels, about 500 MiB for the decode alone.
func TestUprightImageDecodesOnlyWhatTheDecodeLimitAdmits(t *testing.T) {
	var tooMany, overTurn bytes.Buffer
	fmt.Fprintf(&tooMany, "P5\n%d %d\n255\n", 10001, 10000)
	fmt.Fprintf(&overTurn, "P5\n%d %d\n255\n", 10000, 7000)
	tests := []struct {
		name string
		data []byte
		want string // the refusal; "" for a page turned
		as   any    // the image package's error it wraps, if any
	}{
		{
			name: "a progressive 4:4:4 A4 page at 600 dpi: 15 bytes a pixel to decode",
			data: progressiveJPEG(t, 4960, 7016, 3),
			want: "the image cannot be turned here: the image is a 4960×7016-pixel progressive JPEG: decoding it takes 15 bytes a pixel (the pixels and every block's coefficients), 497.8 MiB, over the 256 MiB decode limit",
			as:   new(*pageimage.DecodedTooLargeError),
		},
		{
			name: "a grey page over the pixel limit",
			data: tooMany.Bytes(),
			want: "the image cannot be turned here: the image is 10001×10000 pixels, over the 100-megapixel limit",
			as:   new(*pageimage.TooLargeError),
		},
		{
			name: "a grey page the decode admits, too large for the turn's copies",
			data: overTurn.Bytes(),
			want: "the image cannot be turned here: 10000×7000 pixels, the limit for a turn is 67108864",
		},
		{
			name: "a small progressive page is turned",
			data: progressiveJPEG(t, 64, 48, 3),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			decodes := newCountedDecodes(1)
			up, err := uprightImage(t.Context(), pageimage.Config{Decodes: decodes}, tt.data, turnedLeft)
			taken, _ := decodes.counts()
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if b := decodePNG(t, up).Bounds(); b.Dx() != 48 || b.Dy() != 64 {
					t.Errorf("turned to %v, want 48×64", b)
				}
				if taken != 1 {
					t.Errorf("%d decode places taken, want 1", taken)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v\nwant       %s", err, tt.want)
			}
			if !errors.Is(err, errNotTurnable) {
				t.Errorf("err is not errNotTurnable")
			}
			if tt.as != nil && !errors.As(err, tt.as) {
				t.Errorf("err does not wrap a %T", tt.as)
			}
			if taken != 0 {
				t.Errorf("%d decode places taken for a page refused from its header", taken)
			}
		})
	}
}

// turnedScanEngine is a stand-in for the tesseract binary that reads every
// page turned left on its first run and upright on the second (told by the
// --dpi 300 the second run is given from the scan's pHYs).
func turnedScanEngine(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "turned.tsv"), []byte(fixtureTSV(t, "L", labels, amounts)), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "tesseract")
	err := os.WriteFile(script, []byte(`#!/bin/sh
if [ "$1" = "--list-langs" ]; then
  printf 'List of available languages in "/x/" (2):\neng\nosd\n'
  exit 0
fi
cat > /dev/null
if [ "$3" != "--dpi" ]; then
  cat "`+dir+`/turned.tsv"
  exit 0
fi
printf 'level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n'
printf '5\t1\t1\t1\t1\t1\t0\t0\t10\t10\t91.5\tread\n'
printf '5\t1\t1\t1\t1\t2\t20\t0\t10\t10\t91.5\tupright\n'
printf '5\t1\t1\t1\t1\t3\t40\t0\t10\t10\t91.5\tnow\n'
`), 0o755)
	if err != nil {
		t.Fatal(err)
	}
	return script
}

// turnedScan is a small grey page scanned turned left, as PNG at 300 dpi.
func turnedScan(t *testing.T) []byte {
	t.Helper()
	grey := image.NewGray(image.Rect(0, 0, 30, 20))
	var buf bytes.Buffer
	if err := png.Encode(&buf, scannedTurned(t, grey, "left")); err != nil {
		t.Fatal(err)
	}
	// 11811 pixels a metre, 300 a inch.
	phys := "\x00\x00\x00\x09pHYs\x00\x00\x2e\x23\x00\x00\x2e\x23\x01" + "\x78\xa5\x3f\x76"
	return withChunkOf(t, buf.Bytes(), phys, "pHYs")
}

// Pages turned upright share the process's decode bound
// (Config.ImageDecodes) with the converter and the vision adapters: with
// its one place held elsewhere, two pages read turned wait for it before
// decoding, and once it is free they decode one at a time, each then read
// again upright.
func TestPagesTurnedUprightWaitForADecodePlace(t *testing.T) {
	decodes := newCountedDecodes(1)
	ocr, err := New(Config{Binary: turnedScanEngine(t), ImageDecodes: decodes})
	if err != nil {
		t.Fatal(err)
	}
	if err := decodes.Acquire(t.Context(), 1); err != nil { // another page's decode
		t.Fatal(err)
	}
	<-decodes.waited
	scan := turnedScan(t)
	type result struct {
		rec provider.Recognition
		err error
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			rec, err := ocr.Recognize(t.Context(), provider.Document{Data: scan, MIME: "image/png"})
			results <- result{rec, err}
		}()
	}
	for range 2 {
		select {
		case <-decodes.waited:
		case r := <-results:
			t.Fatalf("a page was turned while the only decode place was held: %+v", r)
		case <-time.After(time.Minute):
			t.Fatal("the pages did not ask for a decode place")
		}
	}
	decodes.Release(1)
	for range 2 {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.rec.Text != "read upright now" || !strings.Contains(r.rec.Request, "read again from the image turned upright: tesseract") {
			t.Errorf("Text %q, Request %q: want the second, upright reading", r.rec.Text, r.rec.Request)
		}
	}
	if taken, top := decodes.counts(); taken != 3 || top != 1 {
		t.Errorf("%d places taken, %d held at once; want 3 (the other page's and one a turn), 1 at once", taken, top)
	}
}

// A page that gets no decode place keeps its first reading, and says why;
// the caller's cancellation still fails it.
func TestAPageWithoutADecodePlaceKeepsItsFirstReading(t *testing.T) {
	decodes := newCountedDecodes(1)
	decodes.refuse = errors.New("no place free")
	ocr, err := New(Config{Binary: turnedScanEngine(t), ImageDecodes: decodes})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ocr.Recognize(t.Context(), provider.Document{Data: turnedScan(t), MIME: "image/png"})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Text != labelsTable {
		t.Errorf("Text = %q, want the first reading", rec.Text)
	}
	if want := "; read turned left, so read again from the image turned upright: not done (waiting to decode the image: no place free), the first reading is kept"; !strings.HasSuffix(rec.Request, want) {
		t.Errorf("Request = %q\nwant it to end %q", rec.Request, want)
	}
}
