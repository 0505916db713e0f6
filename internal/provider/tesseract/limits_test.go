package tesseract

import (
	"bytes"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"strings"
	"testing"

	"github.com/docjobs/docjobs/internal/provider"
)

// Tesseract has no vendor's limits: a page wider than Anthropic takes
// (8000 pixels) is read as it came, at its full resolution.
func TestRecognizeReadsAPagePastTheVisionVendorsLimitsAsItCame(t *testing.T) {
	ocr := newOCR(t, Config{})
	text := textStrip(t)
	page := image.NewGray(image.Rect(0, 0, 8400, text.Rect.Dy()))
	for i := range page.Pix {
		page.Pix[i] = 255
	}
	draw.Draw(page, text.Rect, text, image.Point{}, draw.Src)
	var buf bytes.Buffer
	if err := png.Encode(&buf, page); err != nil {
		t.Fatal(err)
	}
	rec, err := ocr.Recognize(t.Context(), provider.Document{Data: buf.Bytes(), MIME: "image/png", Format: "markdown"})
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("< image/png (%d bytes)", buf.Len()); !strings.Contains(rec.Request, want) {
		t.Errorf("Request = %q, want it to read the page as it came (%s)", rec.Request, want)
	}
	if !strings.Contains(rec.Text, "This is a lot of 12 point text") {
		t.Errorf("text = %q, want the first line of the page", rec.Text)
	}
}
