package convert

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	goimage "image"
	"image/color"
	"image/gif"
	_ "image/png" // DecodeConfig of what was sent
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "golang.org/x/image/webp" // DecodeConfig of what was sent

	"github.com/docjobs/docjobs/internal/convert/pdf"
	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/provider/providertest"
	"github.com/docjobs/docjobs/internal/provider/slots"
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

// sentImage is the MIME type and bytes of the image in a request to a
// Gemini or OpenAI-protocol server.
func sentImage(t *testing.T, gemini bool, body []byte) (string, []byte) {
	t.Helper()
	var mime, b64 string
	if gemini {
		mime, _ = providertest.Field(t, body, "contents", 0, "parts", 0, "inlineData", "mimeType").(string)
		b64, _ = providertest.Field(t, body, "contents", 0, "parts", 0, "inlineData", "data").(string)
	} else {
		url, _ := providertest.Field(t, body, "messages", 1, "content", 1, "image_url", "url").(string)
		var ok bool
		if mime, b64, ok = strings.Cut(strings.TrimPrefix(url, "data:"), ";base64,"); !ok {
			t.Fatalf("image_url is not a base64 data URL: %.60q", url)
		}
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("image payload: %v", err)
	}
	return mime, data
}

func testGIF(t *testing.T) []byte {
	t.Helper()
	img := goimage.NewPaletted(goimage.Rect(0, 0, 60, 20), color.Palette{color.White, color.Black})
	for x := 10; x < 50; x++ {
		img.SetColorIndex(x, 10, 1)
	}
	var buf bytes.Buffer
	if err := gif.Encode(&buf, img, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestImagesReachEachSlotInATypeItReads sends a GIF and a WebP through the
// slot table to servers speaking Gemini's and the OpenAI protocol: each
// arrives as its own type where the vendor reads it (OpenAI; WebP on
// Gemini) and as PNG where it does not (GIF on Gemini; both on xAI and
// self-hosted servers, which are sent PNG and JPEG only).
func TestImagesReachEachSlotInATypeItReads(t *testing.T) {
	const (
		chatAnswer     = `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]}`
		generateAnswer = `{"candidates":[{"content":{"role":"model","parts":[{"text":"hello"}]},"finishReason":"STOP"}]}`
	)
	gifData := testGIF(t)
	webpData := readFile(t, "image/testdata/gopher-doc.8bpp.lossless.webp")
	tests := []struct {
		slot     int
		model    string
		name     string
		data     []byte
		wantMIME string
	}{
		{2, "gpt-4o", "x.gif", gifData, "image/gif"},
		{2, "gpt-4o", "x.webp", webpData, "image/webp"},
		{4, "gemini-2.5-flash", "x.gif", gifData, "image/png"},
		{4, "gemini-2.5-flash", "x.webp", webpData, "image/webp"},
		{5, "grok-4", "x.gif", gifData, "image/png"},
		{5, "grok-4", "x.webp", webpData, "image/png"},
		{8, "qwen2.5vl", "x.gif", gifData, "image/png"},
		{8, "qwen2.5vl", "x.webp", webpData, "image/png"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("slot %d %s", tt.slot, tt.name), func(t *testing.T) {
			gemini := tt.slot == 4
			answer, base := chatAnswer, "/v1"
			if gemini {
				answer, base = generateAnswer, ""
			}
			srv := providertest.NewServer(t, providertest.Reply(200, answer))
			table := slots.New(slots.Config{BaseURLs: map[int]string{tt.slot: srv.URL + base}})
			ocr, err := table.OCR(slots.SlotPrefix+strconv.Itoa(tt.slot), tt.model, "test-key")
			if err != nil {
				t.Fatal(err)
			}
			out, err := New(Config{}).Convert(context.Background(), Input{Name: tt.name, Data: tt.data, OCR: ocr})
			if err != nil {
				t.Fatalf("Convert: %v", err)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 || out.Content != "hello" {
				t.Fatalf("%d requests, content %q; want one call and its answer", len(reqs), out.Content)
			}
			mime, data := sentImage(t, gemini, reqs[0].Body)
			if mime != tt.wantMIME {
				t.Fatalf("sent as %s, want %s", mime, tt.wantMIME)
			}
			if _, format, err := goimage.DecodeConfig(bytes.NewReader(data)); err != nil || "image/"+format != mime {
				t.Errorf("payload decodes as %q (%v), want %s", format, err, mime)
			}
		})
	}
}

// refusingOCR reads only PNG and JPEG and cannot say so beforehand, as an
// adapter outside this repository might.
type refusingOCR struct{ pageOCR }

func (f *refusingOCR) Recognize(ctx context.Context, doc provider.Document) (provider.Recognition, error) {
	if doc.MIME != "image/png" && doc.MIME != "image/jpeg" {
		f.mu.Lock()
		f.docs = append(f.docs, doc)
		f.mu.Unlock()
		return provider.Recognition{}, fmt.Errorf("fake: %s: %w", doc.MIME, provider.ErrUnsupportedInput)
	}
	return f.pageOCR.Recognize(ctx, doc)
}

func TestAnImageRefusedByAProviderThatCouldNotSayIsSentAgainAsPNG(t *testing.T) {
	ocr := &refusingOCR{}
	out, err := New(Config{}).Convert(context.Background(), Input{Name: "x.gif", Data: testGIF(t), OCR: ocr})
	if err != nil {
		t.Fatalf("Convert: %v", err)
	}
	if len(ocr.docs) != 2 || ocr.docs[0].MIME != "image/gif" || ocr.docs[1].MIME != "image/png" || out.Content != "Text of page 0" {
		var sent []string
		for _, d := range ocr.docs {
			sent = append(sent, d.MIME)
		}
		t.Fatalf("sent %v, content %q; want the GIF refused, then a PNG read", sent, out.Content)
	}
}

// Image files are decoded a few at a time across the Converter (a decoded
// page may take hundreds of megabytes): a file waits for a place, and one
// whose job ends while it waits is not decoded at all.
func TestImageFilesWaitForADecodePlace(t *testing.T) {
	conv := New(Config{ImageDecodes: 1})
	if err := conv.cfg.Image.Decodes.Acquire(t.Context(), 1); err != nil { // another file is being decoded
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	ocr := &pageOCR{}
	_, err := conv.Convert(ctx, Input{Name: "fax.tif", Data: multiPageTIFF(t, 2, 40, 30), OCR: ocr})
	if err == nil || !strings.Contains(err.Error(), "waiting to decode the image") || len(ocr.docs) != 0 {
		t.Fatalf("err = %v after %d pages; want the file to wait for the place, then give up", err, len(ocr.docs))
	}
	conv.cfg.Image.Decodes.Release(1) // the other file is done
	if _, err := conv.Convert(context.Background(), Input{Name: "fax.tif", Data: multiPageTIFF(t, 2, 40, 30), OCR: ocr}); err != nil {
		t.Fatal(err)
	}
	if len(ocr.docs) != 2 {
		t.Errorf("%d pages read once the place was free, want 2", len(ocr.docs))
	}
}

// cancellingOCR cancels the job on its first call, as a job cancelled
// while its first page is being read.
type cancellingOCR struct {
	cancel context.CancelFunc
	calls  atomic.Int32
}

func (f *cancellingOCR) Recognize(ctx context.Context, doc provider.Document) (provider.Recognition, error) {
	f.calls.Add(1)
	f.cancel()
	return provider.Recognition{}, ctx.Err()
}

// A multi-page TIFF is decoded a page at a time as the provider takes the
// pages, so a job cancelled during its first page leaves the rest of the
// file undecoded.
func TestACancelledJobStopsDecodingTheTIFFsPages(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ocr := &cancellingOCR{cancel: cancel}
	conv := New(Config{PDF: pdf.Config{PageConcurrency: 1}})
	var decoded atomic.Int32
	conv.pageDecoded = func(int) { decoded.Add(1) }

	_, err := conv.Convert(ctx, Input{Name: "fax.tif", Data: multiPageTIFF(t, 6, 40, 30), OCR: ocr})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	// Page 2 may be decoded while page 1 is with the provider; with one
	// page in flight, page 3 waits for page 1's answer and is never begun.
	if n := decoded.Load(); n > 2 {
		t.Errorf("%d of 6 pages decoded after the job was cancelled on page 1, want at most 2", n)
	}
	if n := ocr.calls.Load(); n != 1 {
		t.Errorf("%d provider calls, want 1", n)
	}
}
