package tesseract

import (
	"context"
	"crypto/sha256"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/image/draw"

	"github.com/docjobs/docjobs/internal/provider"
)

// Several tests read the same page the same way: the invoice scan upright
// (as it came, as image.Prepare hands it over, as the upright form of the
// turned test), the invoice grey at 200 dpi, phototest as prepared. Each
// tesseract run of a full page is seconds of CPU, and the race detector
// makes decoding and scaling the 2975×3850 scan seconds more, so each of
// these is done once per test binary and its result shared. The engine is
// still run for real on every input; only a second run of the same
// engine, configuration and bytes is spared.

// invoiceScan is testdata/AmazonWebServices.png decoded (an *image.RGBA:
// the scan is 8-bit RGB). Callers must not write to it.
var invoiceScan = sync.OnceValues(func() (image.Image, error) {
	f, err := os.Open(filepath.Join("testdata", "AmazonWebServices.png"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return png.Decode(f)
})

// invoiceGrey is the scan grey and scaled from its 350 dpi (2975 pixels
// across 8.5 inches) to 200, as pdftoppm renders a PDF page for us.
// Callers must not write to it.
var invoiceGrey = sync.OnceValues(func() (*image.Gray, error) {
	src, err := invoiceScan()
	if err != nil {
		return nil, err
	}
	b := src.Bounds()
	grey := image.NewGray(image.Rect(0, 0, b.Dx()*200/350, b.Dy()*200/350))
	draw.ApproxBiLinear.Scale(grey, grey.Bounds(), src, b, draw.Src, nil)
	return grey, nil
})

func decodedInvoice(t *testing.T) image.Image {
	t.Helper()
	img, err := invoiceScan()
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func greyInvoice(t *testing.T) *image.Gray {
	t.Helper()
	img, err := invoiceGrey()
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// recognitionKey is what a reading depends on: the engine as configured
// and the document handed over.
type recognitionKey struct {
	binary, langs, psm string
	timeout            time.Duration
	data               [sha256.Size]byte
	mime, format       string
	dpi, page          int
}

type sharedRecognition struct {
	once    sync.Once
	rec     provider.Recognition
	err     error
	elapsed time.Duration // of the one run
}

var recognitions sync.Map // recognitionKey → *sharedRecognition

// recognizeShared is ocr.Recognize(doc), run once per test binary for each
// engine configuration and document; tests reading the same page get the
// same reading, and the time the one run took.
func recognizeShared(t *testing.T, ocr *OCR, doc provider.Document) (provider.Recognition, time.Duration) {
	t.Helper()
	key := recognitionKey{
		binary: ocr.binary, langs: ocr.langs, psm: ocr.psm, timeout: ocr.timeout,
		data: sha256.Sum256(doc.Data), mime: doc.MIME, format: doc.Format, dpi: doc.DPI, page: doc.Page,
	}
	v, _ := recognitions.LoadOrStore(key, &sharedRecognition{})
	s := v.(*sharedRecognition)
	s.once.Do(func() {
		start := time.Now()
		s.rec, s.err = ocr.Recognize(context.Background(), doc)
		s.elapsed = time.Since(start)
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.rec, s.elapsed
}
