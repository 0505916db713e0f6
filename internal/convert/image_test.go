package convert

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/convert/pdf"
	"github.com/docjobs/docjobs/internal/provider"
)

// pageOCR answers each page with "Text of page N" and records what it was
// sent and how many calls it had in flight at most.
type pageOCR struct {
	mu       sync.Mutex
	docs     []provider.Document
	inFlight int
	maxIn    int
	delay    time.Duration
	fail     map[int]error // page → error to return
}

func (f *pageOCR) Recognize(ctx context.Context, doc provider.Document) (provider.Recognition, error) {
	f.mu.Lock()
	f.docs = append(f.docs, doc)
	f.inFlight++
	f.maxIn = max(f.maxIn, f.inFlight)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return provider.Recognition{}, ctx.Err()
		}
	}
	if err := f.fail[doc.Page]; err != nil {
		return provider.Recognition{}, err
	}
	return provider.Recognition{Text: fmt.Sprintf("Text of page %d", doc.Page), Format: "markdown", Model: "fake-vision"}, nil
}

// multiPageTIFF writes n uncompressed grey pages of w×h pixels as one
// little-endian TIFF, each page a flat shade of its own.
func multiPageTIFF(t *testing.T, n, w, h int) []byte {
	t.Helper()
	le := binary.LittleEndian
	b := []byte{'I', 'I', 42, 0, 0, 0, 0, 0}
	next := 4 // where the offset of the next IFD is written
	for i := range n {
		data := len(b)
		for range w * h {
			b = append(b, byte(40*i))
		}
		if len(b)%2 == 1 {
			b = append(b, 0) // IFDs start on a word boundary
		}
		le.PutUint32(b[next:], uint32(len(b)))
		const short, long = 3, 4
		entries := [][3]uint32{ // tag, type, value
			{256, long, uint32(w)}, {257, long, uint32(h)}, {258, short, 8}, {259, short, 1},
			{262, short, 1}, {273, long, uint32(data)}, {277, short, 1}, {278, long, uint32(h)},
			{279, long, uint32(w * h)},
		}
		b = le.AppendUint16(b, uint16(len(entries)))
		for _, e := range entries {
			b = le.AppendUint16(b, uint16(e[0]))
			b = le.AppendUint16(b, uint16(e[1]))
			b = le.AppendUint32(b, 1)
			b = le.AppendUint32(b, e[2])
		}
		next = len(b)
		b = le.AppendUint32(b, 0)
	}
	return b
}

func TestTIFFPagesAreReadConcurrentlyWithinTheLimit(t *testing.T) {
	ocr := &pageOCR{delay: 150 * time.Millisecond}
	conv := New(Config{PDF: pdf.Config{PageConcurrency: 2}})
	out, err := conv.Convert(context.Background(), Input{Name: "fax.tif", Data: multiPageTIFF(t, 5, 40, 30), OCR: ocr})
	if err != nil {
		t.Fatal(err)
	}
	if ocr.maxIn != 2 {
		t.Errorf("at most %d pages in flight, want 2", ocr.maxIn)
	}
	var want []string
	for p := 1; p <= 5; p++ {
		want = append(want, fmt.Sprintf("Text of page %d", p))
	}
	if out.Content != strings.Join(want, "\n\n") || out.ProviderCalls != 5 || out.Model != "fake-vision" {
		t.Errorf("content %q (%d calls, model %q), want the five pages in order", out.Content, out.ProviderCalls, out.Model)
	}
}

func TestAProviderErrorOnATIFFPageReadsAsTheProviderErrorFirst(t *testing.T) {
	perr := &provider.Error{Category: provider.CategoryAuth, Status: 401}
	ocr := &pageOCR{fail: map[int]error{2: perr}}
	_, err := New(Config{}).Convert(context.Background(), Input{Name: "fax.tif", Data: multiPageTIFF(t, 3, 40, 30), OCR: ocr})
	var got *provider.Error
	if !errors.As(err, &got) || err.Error() != "provider error (category=auth, status=401) on page 2" {
		t.Fatalf("err = %v, want page 2's provider error, its own text first", err)
	}
}
