package providertest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/provider"
)

// ImageVendor is a vendor that enforces its documented image limits, as
// RunImageLimits plays it: an image past them is answered 400, as the
// vendor answers it.
type ImageVendor struct {
	New func(t *testing.T, baseURL string, timeout time.Duration) provider.OCR
	// Success is a 200 body.
	Success string
	// MaxSide is the most pixels the vendor takes across or down, and
	// MaxBase64 the most bytes of base64 per image; 0 for no limit.
	MaxSide   int
	MaxBase64 int
	// Data is the JSON path of the image's base64 in a request body, or
	// of its data URL; MIME is the path of its type (nil for a data URL).
	Data, MIME []any
}

// WidePNG is a scan strip of 8400 by 1200 pixels, rows of marks like
// print on white: a small file, wider than Anthropic takes. Each caller
// gets its own copy of bytes encoded once per test binary (encoding costs
// a fraction of a second under -race, and RunImageLimits runs per vendor).
func WidePNG(t testing.TB) []byte {
	t.Helper()
	raw, err := widePNG()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(raw)
}

var widePNG = sync.OnceValues(func() ([]byte, error) {
	img := image.NewGray(image.Rect(0, 0, 8400, 1200))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	for y := 100; y < 1100; y += 40 {
		for x := 100; x < 8300; x++ {
			if (x/7)%3 == 0 {
				for dy := range 12 {
					img.Pix[(y+dy)*img.Stride+x] = 0
				}
			}
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
})

// PhotoJPEG is a phone photo of n bytes: a 2000×1500 picture and, after
// its end, data the decoders skip (a phone's secondary images follow the
// main one so). Its pixels cost little to re-encode; its bytes are what
// matters to a vendor. The picture is encoded once per test binary.
func PhotoJPEG(t testing.TB, n int) []byte {
	t.Helper()
	picture, err := photoPicture()
	if err != nil {
		t.Fatal(err)
	}
	if len(picture) > n {
		t.Fatalf("the picture alone takes %d bytes, more than %d", len(picture), n)
	}
	out := make([]byte, n)
	tail := out[copy(out, picture):]
	for i := range tail {
		tail[i] = byte(i*131 + i>>9)
	}
	return out
}

var photoPicture = sync.OnceValues(func() ([]byte, error) {
	img := image.NewYCbCr(image.Rect(0, 0, 2000, 1500), image.YCbCrSubsampleRatio420)
	for y := range 1500 {
		for x := range 2000 {
			v := 128 + 100*math.Sin(float64(x)/97)*math.Cos(float64(y)/61)
			img.Y[y*img.YStride+x] = uint8(v)
		}
	}
	for i := range img.Cb {
		img.Cb[i], img.Cr[i] = 120, 136
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 95}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
})

// RunImageLimits checks that the adapter sends an 8400-pixel-wide PNG, a
// 10.5 MB JPEG and a JPEG just over the vendor's byte limit within the
// vendor's limits: as they came when they are within them, else shrunk
// or re-encoded, with the aspect kept.
func RunImageLimits(t *testing.T, v ImageVendor) {
	t.Helper()
	type page struct {
		name     string
		data     []byte
		mime     string
		w, h     int
		wantSize [2]int // the size the vendor must get
	}
	pages := []page{
		{name: "an 8400-pixel-wide PNG", data: WidePNG(t), mime: "image/png", w: 8400, h: 1200},
		{name: "a 10.5 MB JPEG", data: PhotoJPEG(t, 10_500_000), mime: "image/jpeg", w: 2000, h: 1500},
	}
	if v.MaxBase64 > 0 {
		pages = append(pages, page{name: "a JPEG just over the vendor's bytes",
			data: PhotoJPEG(t, v.MaxBase64/4*3+1), mime: "image/jpeg", w: 2000, h: 1500})
	}
	for _, p := range pages {
		t.Run(p.name, func(t *testing.T) {
			p.wantSize = [2]int{p.w, p.h}
			if v.MaxSide > 0 && max(p.w, p.h) > v.MaxSide {
				// The long side at the limit, the other in proportion.
				p.wantSize = [2]int{v.MaxSide, int(math.Round(float64(p.h) * float64(v.MaxSide) / float64(p.w)))}
			}
			within := p.wantSize == [2]int{p.w, p.h} &&
				(v.MaxBase64 == 0 || base64.StdEncoding.EncodedLen(len(p.data)) <= v.MaxBase64)

			srv := NewServer(t, v.enforce)
			ocr := v.New(t, srv.URL, time.Minute)
			if _, err := ocr.Recognize(t.Context(), provider.Document{Data: p.data, MIME: p.mime, Format: "markdown"}); err != nil {
				t.Fatalf("Recognize: %v", err)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("calls = %d, want 1", len(reqs))
			}
			mime, b64, err := v.image(reqs[0].Body)
			if err != nil {
				t.Fatal(err)
			}
			if within {
				if b64 != base64.StdEncoding.EncodeToString(p.data) || mime != p.mime {
					t.Fatalf("a page within the limits went as %s of %d base64 bytes, want as it came", mime, len(b64))
				}
				return
			}
			got, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				t.Fatal(err)
			}
			c, format, err := image.DecodeConfig(bytes.NewReader(got))
			if err != nil {
				t.Fatalf("the image sent does not decode: %v", err)
			}
			if "image/"+format != mime {
				t.Errorf("the image sent is %s labelled %s", format, mime)
			}
			if [2]int{c.Width, c.Height} != p.wantSize {
				t.Errorf("the image sent is %d×%d, want %d×%d", c.Width, c.Height, p.wantSize[0], p.wantSize[1])
			}
		})
	}
}

// enforce answers as the vendor does: 400 for an image past its limits.
func (v ImageVendor) enforce(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	refuse := func(why string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, `{"error":{"type":"invalid_request_error","message":%q}}`, why)
	}
	_, b64, err := v.image(body)
	if err != nil {
		refuse(err.Error())
		return
	}
	if v.MaxBase64 > 0 && len(b64) > v.MaxBase64 {
		refuse(fmt.Sprintf("image exceeds maximum: %d bytes > %d bytes", len(b64), v.MaxBase64))
		return
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		refuse("invalid base64")
		return
	}
	c, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		refuse("could not process image")
		return
	}
	if v.MaxSide > 0 && max(c.Width, c.Height) > v.MaxSide {
		refuse(fmt.Sprintf("image dimensions exceed max allowed size: %d pixels", v.MaxSide))
		return
	}
	Reply(200, v.Success)(w, r)
}

// image finds the image's type and base64 in a request body.
func (v ImageVendor) image(body []byte) (mime, b64 string, err error) {
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", "", fmt.Errorf("request body is not JSON: %w", err)
	}
	data, ok := walk(doc, v.Data).(string)
	if !ok {
		return "", "", fmt.Errorf("no image at %v", v.Data)
	}
	if v.MIME == nil {
		head, rest, ok := strings.Cut(strings.TrimPrefix(data, "data:"), ";base64,")
		if !ok {
			return "", "", fmt.Errorf("%.40q is not a base64 data URL", data)
		}
		return head, rest, nil
	}
	mime, _ = walk(doc, v.MIME).(string)
	return mime, data, nil
}

func walk(v any, path []any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}
