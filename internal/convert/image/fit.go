package image

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image"
	"image/jpeg"
	"math"
	"strconv"
	"strings"

	"github.com/docjobs/docjobs/internal/provider"
)

// Limits are what one vendor takes in one image, as it documents them. A
// vision adapter declares its vendor's and fits every page to them (Fit)
// before the call: past them the vendor answers an opaque 400. Local
// Tesseract has none and reads pages as they came.
type Limits struct {
	// Vendor names the vendor in errors.
	Vendor string
	// MaxSide is the most pixels an image may have across or down; 0 for
	// no limit.
	MaxSide int
	// MaxBase64 is the most bytes the image may take as sent, base64
	// text (every adapter sends base64, and Anthropic counts the text:
	// "image exceeds 5 MB maximum: 5316036 bytes > 5242880 bytes" is the
	// base64's length); 0 for no limit.
	MaxBase64 int64
}

func (l Limits) String() string {
	var parts []string
	if l.MaxSide > 0 {
		parts = append(parts, strconv.Itoa(l.MaxSide)+" pixels a side")
	}
	if l.MaxBase64 > 0 {
		parts = append(parts, vendorBytes(l.MaxBase64)+" of base64")
	}
	if len(parts) == 0 {
		return "no limit"
	}
	return strings.Join(parts, " and ")
}

// vendorBytes writes a limit in the unit a vendor gives it in: MiB when it
// is a whole number of them (Anthropic's 5242880), else MB.
func vendorBytes(n int64) string {
	if n%(1<<20) == 0 {
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
	return strconv.FormatFloat(float64(n)/1e6, 'f', -1, 64) + " MB"
}

// OverLimitError refuses a page that cannot be brought within a vendor's
// limits: one whose format cannot be re-encoded, or one still too large at
// the smallest size and quality Fit goes down to.
type OverLimitError struct {
	Limits Limits
	MIME   string
	// Width and Height are the last size tried; 0 when none was.
	Width, Height int
	Base64        int64 // the last encoding's base64 length
}

func (e *OverLimitError) Error() string {
	if e.Width > 0 {
		return fmt.Sprintf("the page, at %d×%d pixels and JPEG quality %d, still takes %s as base64, over %s's limit of %s per image",
			e.Width, e.Height, minQuality, byteSize(e.Base64), e.Limits.Vendor, e.Limits)
	}
	return fmt.Sprintf("the %s page takes %s as base64 and cannot be re-encoded to fit %s's limit of %s per image",
		e.MIME, byteSize(e.Base64), e.Limits.Vendor, e.Limits)
}

// The ladder Fit goes down when a page's bytes are over the limit: JPEG at
// each quality, then smaller and smaller at minQuality, down to minFitSide
// on the long side (a page's print is past reading not far below).
var fitQualities = []int{90, 80, 70}

const (
	minQuality = 70
	minFitSide = 1000
	// maxShrinks bounds the tries after the qualities: each aims at the
	// limit from the last size, so one or two suffice.
	maxShrinks = 8
)

// base64Len is the length of n bytes as padded base64.
func base64Len(n int) int64 { return int64(base64.StdEncoding.EncodedLen(n)) }

// Fit returns page within lim: as it is when it already is (most pages, at
// the cost of reading a header), else shrunk to lim.MaxSide on its long
// side (aspect kept) and re-encoded, PNG for a page that was not a photo
// when that fits, else JPEG stepping down in quality and then in size until
// it fits. A page whose size changes has Document.DPI scaled with it (the
// header that said it is gone; a page re-encoded at its size keeps the
// resolution it had). Only images are fitted: a PDF goes as it is.
//
// Decoding is bounded as Open bounds it with cfg, and holds one of
// cfg.Decodes' places from the decode to the last encoding; a page within
// the limits takes none. The shrunk copy is of the decoded page's kind
// and no larger, but for a palette page, whose copy is RGBA: a page being
// fitted holds at most about twice the decode limit. A page with
// transparency is flattened onto white first (onWhite): JPEG keeps no
// alpha, and the shrinking averages colours as they are stored.
func Fit(ctx context.Context, cfg Config, page provider.Document, lim Limits) (provider.Document, error) {
	if !strings.HasPrefix(page.MIME, "image/") {
		return page, nil
	}
	overBytes := lim.MaxBase64 > 0 && base64Len(len(page.Data)) > lim.MaxBase64
	f := sniff(page.Data)
	c, ok := codecs[f]
	var w, h int
	if ok {
		if cfg, err := c.decodeConfig(bytes.NewReader(page.Data)); err == nil {
			w, h = cfg.Width, cfg.Height
		}
	}
	overSide := lim.MaxSide > 0 && max(w, h) > lim.MaxSide
	if !overBytes && !overSide {
		return page, nil
	}
	if w <= 0 || h <= 0 {
		// Nothing here reads it (a TIFF or AVIF sent to a vendor that
		// reads those, or damage): it can only go as it is, and it is
		// too large to.
		return provider.Document{}, &OverLimitError{Limits: lim, MIME: page.MIME, Base64: base64Len(len(page.Data))}
	}
	p, err := Open(cfg, page.Data)
	if err != nil {
		return provider.Document{}, err
	}
	release, err := p.cfg.Hold(ctx)
	if err != nil {
		return provider.Document{}, err
	}
	defer release()
	img, err := p.decodeSingle(ctx)
	if err != nil {
		return provider.Document{}, err
	}
	// A page goes upright from Prepare; one that came another way with an
	// orientation tag would lose it here and go sideways.
	o := orientation(f, page.Data)
	img = orient(eightBit(img), o)
	b := img.Bounds()
	w, h = b.Dx(), b.Dy()

	dw, dh := w, h
	if overSide {
		dw, dh = fitSide(w, h, lim.MaxSide)
	}
	// A JPEG stays JPEG, as Prepare keeps it: lossy already, and five to
	// ten times smaller than its PNG. So does a lossy WebP.
	_, ycbcr := img.(*image.YCbCr)
	photo := f == formatJPEG || ycbcr
	out, err := fitEncode(ctx, onWhite(img), dw, dh, photo, lim)
	if err != nil {
		return provider.Document{}, err
	}
	page.DPI = scaledDPI(page, o, h, out.h)
	page.Data, page.MIME = out.data, out.mime
	return page, nil
}

// encoded is a page as it will be sent, with the height it was encoded at.
type encoded struct {
	data []byte
	mime string
	h    int
}

// fitEncode encodes img at dw×dh, going down the ladder until it fits.
func fitEncode(ctx context.Context, img image.Image, dw, dh int, photo bool, lim Limits) (encoded, error) {
	b := img.Bounds()
	sized := func(w, h int) (image.Image, error) {
		if w == b.Dx() && h == b.Dy() {
			return img, nil
		}
		return shrink(ctx, img, w, h)
	}
	fits := func(n int) bool { return lim.MaxBase64 <= 0 || base64Len(n) <= lim.MaxBase64 }
	m, err := sized(dw, dh)
	if err != nil {
		return encoded{}, err
	}
	var buf bytes.Buffer
	w := &ctxWriter{ctx: ctx, w: &buf}
	if !photo {
		if err := encodePNG(w, m); err != nil {
			return encoded{}, encodeErr(ctx, "PNG", err)
		}
		if fits(buf.Len()) {
			return encoded{buf.Bytes(), MIMEPNG, dh}, nil
		}
	}
	jpegAt := func(m image.Image, q int) error {
		buf.Reset()
		if err := jpeg.Encode(w, m, &jpeg.Options{Quality: q}); err != nil {
			return encodeErr(ctx, "JPEG", err)
		}
		return nil
	}
	for _, q := range fitQualities {
		if err := jpegAt(m, q); err != nil {
			return encoded{}, err
		}
		if fits(buf.Len()) {
			return encoded{buf.Bytes(), MIMEJPEG, dh}, nil
		}
	}
	// JPEG bytes go roughly with the pixels: aim a little under the limit
	// from the last try, shrinking by at least a tenth and at most half.
	for range maxShrinks {
		ratio := math.Sqrt(float64(lim.MaxBase64)/float64(base64Len(buf.Len()))) * 0.95
		ratio = min(max(ratio, 0.5), 0.9)
		if max(dw, dh) <= minFitSide {
			break
		}
		nw, nh := max(int(float64(dw)*ratio), 1), max(int(float64(dh)*ratio), 1)
		if max(nw, nh) < minFitSide {
			nw, nh = fitSide(dw, dh, minFitSide)
		}
		dw, dh = nw, nh
		if m, err = sized(dw, dh); err != nil {
			return encoded{}, err
		}
		if err := jpegAt(m, minQuality); err != nil {
			return encoded{}, err
		}
		if fits(buf.Len()) {
			return encoded{buf.Bytes(), MIMEJPEG, dh}, nil
		}
	}
	return encoded{}, &OverLimitError{Limits: lim, MIME: MIMEJPEG, Width: dw, Height: dh, Base64: base64Len(buf.Len())}
}

func encodeErr(ctx context.Context, format string, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return fmt.Errorf("encoding the page as %s: %w", format, err)
}

// fitSide is w×h shrunk so that its long side is max, the short side
// rounded and at least a pixel.
func fitSide(w, h, maxSide int) (int, int) {
	if w >= h {
		return maxSide, max(int(math.Round(float64(h)*float64(maxSide)/float64(w))), 1)
	}
	return max(int(math.Round(float64(w)*float64(maxSide)/float64(h))), 1), maxSide
}

// orientation is the EXIF orientation a page's header gives, 1 when none.
func orientation(f format, data []byte) int {
	switch f {
	case formatJPEG:
		return jpegOrientation(data)
	case formatPNG:
		return pngOrientation(data)
	case formatWebP:
		return webpOrientation(data)
	}
	return 1
}

// scaledDPI is the resolution down a page h pixels long (upright, under
// EXIF orientation o) once it is newH long: the one the sender gave, or
// else the one its header gave (the re-encoded page has no header to say
// it), scaled. 0 when neither says.
func scaledDPI(page provider.Document, o, h, newH int) int {
	dpi := page.DPI
	if dpi <= 0 {
		x, y := provider.ImageResolution(page.Data)
		if dpi = uprightDPI(x, y, o); dpi <= 0 {
			dpi = max(x, y)
		}
	}
	if dpi <= 0 || h <= 0 {
		return 0
	}
	return max(int(math.Round(float64(dpi)*float64(newH)/float64(h))), 1)
}
