// Package image prepares image files for OCR: it checks the pixel count
// from the header before decoding anything (decompression bombs), turns
// pages upright by their EXIF orientation, splits multi-page TIFFs, and
// hands each page over in a format vendors accept.
//
// What leaves this package: JPEG, PNG, WebP and single-frame GIF files that
// need no rotation go out as they came (after a full decode proves they are
// intact). Everything that has to be re-encoded (rotated pages, TIFF and BMP
// pages, the first frame of an animated GIF) becomes PNG, because PNG is
// lossless and every vendor and Tesseract read it; the exceptions are
// rotated JPEGs and pages whose PNG would exceed the smallest vendor image
// limit, which become JPEG at quality 90 (photos are lossy already, and a
// phone photo as PNG is five to ten times larger than as JPEG). Not every
// consumer reads WebP and GIF (Gemini reads no GIF, most servers of the
// OpenAI protocol neither): Reencode turns such a page into PNG for them.
package image

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"strconv"

	"golang.org/x/image/bmp"
	"golang.org/x/image/webp"

	"github.com/docjobs/docjobs/internal/provider"
)

// Defaults for Config's zero fields.
const (
	DefaultMaxPixels = 100_000_000
	DefaultMaxPages  = 1000
)

// Config bounds the work on one file.
type Config struct {
	MaxPixels int64 // per page, default 100 megapixels
	MaxPages  int   // TIFF pages, default 1000
}

func (c Config) withDefaults() Config {
	if c.MaxPixels <= 0 {
		c.MaxPixels = DefaultMaxPixels
	}
	if c.MaxPages <= 0 {
		c.MaxPages = DefaultMaxPages
	}
	return c
}

// MIME types of the Documents Prepare returns.
const (
	MIMEPNG  = "image/png"
	MIMEJPEG = "image/jpeg"
	MIMEWebP = "image/webp"
	MIMEGIF  = "image/gif"
)

// ErrUnsupported is returned (wrapped) for bytes that are none of the image
// formats this package reads.
var ErrUnsupported = errors.New("unsupported image format")

// TooLargeError refuses a page whose header promises more pixels than the
// limit; it is returned before any pixel is decoded.
type TooLargeError struct {
	Width, Height int64
	Limit         int64
	Page          int // 1-based TIFF page; 0 for a single image
}

func (e *TooLargeError) Error() string {
	what := "the image"
	if e.Page > 0 {
		what = fmt.Sprintf("page %d of the TIFF", e.Page)
	}
	return fmt.Sprintf("%s is %d×%d pixels, over the %s-megapixel limit",
		what, e.Width, e.Height, strconv.FormatFloat(float64(e.Limit)/1e6, 'f', -1, 64))
}

// checkPixels refuses empty images and images over the limit, without
// overflowing on hostile dimensions.
func checkPixels(w, h, limit int64, page int) error {
	if w <= 0 || h <= 0 {
		return fmt.Errorf("the image header gives an empty size (%d×%d)", w, h)
	}
	if w > limit/h {
		return &TooLargeError{Width: w, Height: h, Limit: limit, Page: page}
	}
	return nil
}

// Prepare returns the pages of an image file, upright, each as a Document
// with Format "markdown" and Page numbered from 1 (0 for a single image).
// The format comes from the bytes, never from a name.
func Prepare(cfg Config, data []byte) ([]provider.Document, error) {
	cfg = cfg.withDefaults()
	f := sniff(data)
	switch f {
	case formatTIFF:
		return prepareTIFF(cfg, data)
	case formatBigTIFF:
		return nil, fmt.Errorf("%w: BigTIFF files are not supported", ErrUnsupported)
	case formatNone:
		return nil, fmt.Errorf("%w: the bytes are not PNG, JPEG, TIFF, WebP, GIF or BMP", ErrUnsupported)
	}
	doc, err := prepareSingle(cfg, f, data)
	if err != nil {
		return nil, err
	}
	return []provider.Document{doc}, nil
}

type format int

const (
	formatNone format = iota
	formatPNG
	formatJPEG
	formatGIF
	formatWebP
	formatBMP
	formatTIFF
	formatBigTIFF
)

func (f format) String() string {
	switch f {
	case formatPNG:
		return "PNG"
	case formatJPEG:
		return "JPEG"
	case formatGIF:
		return "GIF"
	case formatWebP:
		return "WebP"
	case formatBMP:
		return "BMP"
	case formatTIFF, formatBigTIFF:
		return "TIFF"
	}
	return "unknown"
}

// sniff names the format from the magic bytes.
func sniff(b []byte) format {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return formatPNG
	case bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF}):
		return formatJPEG
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return formatGIF
	case len(b) >= 12 && string(b[0:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return formatWebP
	case bytes.HasPrefix(b, []byte("BM")) && len(b) >= 26:
		return formatBMP
	case bytes.HasPrefix(b, []byte("II*\x00")), bytes.HasPrefix(b, []byte("MM\x00*")):
		return formatTIFF
	case bytes.HasPrefix(b, []byte("II+\x00")), bytes.HasPrefix(b, []byte("MM\x00+")):
		return formatBigTIFF
	}
	return formatNone
}

// prepareSingle handles the one-page formats: header check, orientation,
// a full decode (a truncated file fails here, not at the vendor), and
// re-encoding only when the bytes cannot go out as they are.
func prepareSingle(cfg Config, f format, data []byte) (provider.Document, error) {
	var (
		decodeConfig func([]byte) (image.Config, error)
		decode       func([]byte) (image.Image, error)
		mime         string
		orientation  = 1
		reencode     bool
	)
	switch f {
	case formatPNG:
		decodeConfig = func(b []byte) (image.Config, error) { return png.DecodeConfig(bytes.NewReader(b)) }
		decode = func(b []byte) (image.Image, error) { return png.Decode(bytes.NewReader(b)) }
		mime, orientation = MIMEPNG, pngOrientation(data)
	case formatJPEG:
		decodeConfig = func(b []byte) (image.Config, error) { return jpeg.DecodeConfig(bytes.NewReader(b)) }
		decode = func(b []byte) (image.Image, error) { return jpeg.Decode(bytes.NewReader(b)) }
		mime, orientation = MIMEJPEG, jpegOrientation(data)
	case formatWebP:
		decodeConfig = func(b []byte) (image.Config, error) { return webp.DecodeConfig(bytes.NewReader(b)) }
		decode = func(b []byte) (image.Image, error) { return webp.Decode(bytes.NewReader(b)) }
		mime, orientation = MIMEWebP, webpOrientation(data)
	case formatGIF:
		decodeConfig = func(b []byte) (image.Config, error) { return gif.DecodeConfig(bytes.NewReader(b)) }
		// gif.Decode reads the first frame only, whatever follows.
		decode = func(b []byte) (image.Image, error) { return gif.Decode(bytes.NewReader(b)) }
		mime = MIMEGIF
		// OpenAI refuses animated GIFs, and a document page is one frame.
		reencode = gifFrames(data, 2) > 1
	case formatBMP:
		decodeConfig = func(b []byte) (image.Config, error) { return bmp.DecodeConfig(bytes.NewReader(b)) }
		decode = func(b []byte) (image.Image, error) { return bmp.Decode(bytes.NewReader(b)) }
		reencode = true // no vendor takes BMP
	}
	c, err := decodeConfig(data)
	if err != nil {
		return provider.Document{}, fmt.Errorf("the %s header cannot be read: %w", f, err)
	}
	if err := checkPixels(int64(c.Width), int64(c.Height), cfg.MaxPixels, 0); err != nil {
		return provider.Document{}, err
	}
	img, err := decode(data)
	if err != nil {
		return provider.Document{}, fmt.Errorf("the %s image cannot be decoded: %w", f, err)
	}
	if orientation == 1 && !reencode {
		return provider.Document{Data: data, MIME: mime, Format: "markdown"}, nil
	}
	out, outMIME, err := encode(orient(img, orientation), f == formatJPEG)
	if err != nil {
		return provider.Document{}, err
	}
	return provider.Document{Data: out, MIME: outMIME, Format: "markdown"}, nil
}

// Reencode returns page in a type every vendor and Tesseract read: PNG
// (JPEG when the PNG would pass the smallest vendor limit, as Prepare
// does), for a consumer that does not read the type Prepare left it in.
// PNG and JPEG pages come back as they are; so do Page and Format.
func Reencode(cfg Config, page provider.Document) (provider.Document, error) {
	if page.MIME == MIMEPNG || page.MIME == MIMEJPEG {
		return page, nil
	}
	cfg = cfg.withDefaults()
	var (
		decodeConfig func(io.Reader) (image.Config, error)
		decode       func(io.Reader) (image.Image, error)
	)
	f := sniff(page.Data)
	switch f {
	case formatGIF:
		decodeConfig, decode = gif.DecodeConfig, gif.Decode
	case formatWebP:
		decodeConfig, decode = webp.DecodeConfig, webp.Decode
	case formatBMP:
		decodeConfig, decode = bmp.DecodeConfig, bmp.Decode
	default:
		return provider.Document{}, fmt.Errorf("%w: a %s page cannot be re-encoded", ErrUnsupported, page.MIME)
	}
	c, err := decodeConfig(bytes.NewReader(page.Data))
	if err != nil {
		return provider.Document{}, fmt.Errorf("the %s header cannot be read: %w", f, err)
	}
	if err := checkPixels(int64(c.Width), int64(c.Height), cfg.MaxPixels, page.Page); err != nil {
		return provider.Document{}, err
	}
	img, err := decode(bytes.NewReader(page.Data))
	if err != nil {
		return provider.Document{}, fmt.Errorf("the %s image cannot be decoded: %w", f, err)
	}
	out, mime, err := encode(img, false)
	if err != nil {
		return provider.Document{}, err
	}
	page.Data, page.MIME = out, mime
	return page, nil
}

// maxPNGBytes is the size above which a re-encoded page goes out as JPEG
// instead: Anthropic's 5 MB per-image limit, the smallest among the vendors.
const maxPNGBytes = 5 << 20

// encode writes a re-encoded page: JPEG for photos, PNG otherwise (and
// JPEG when the PNG would be too large for vendors to take).
func encode(img image.Image, photo bool) ([]byte, string, error) {
	var buf bytes.Buffer
	if !photo {
		if err := encodePNG(&buf, img); err != nil {
			return nil, "", fmt.Errorf("encoding the page as PNG: %w", err)
		}
		if buf.Len() <= maxPNGBytes {
			return buf.Bytes(), MIMEPNG, nil
		}
		buf.Reset()
	}
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		return nil, "", fmt.Errorf("encoding the page as JPEG: %w", err)
	}
	return buf.Bytes(), MIMEJPEG, nil
}

// encodePNG writes img as PNG. A grey page that holds only black and white
// (a fax or a bilevel scan) is written with a two-colour palette, which the
// encoder packs at one bit per pixel: an eighth of the data to compress.
func encodePNG(buf *bytes.Buffer, img image.Image) error {
	if g, ok := img.(*image.Gray); ok && bilevel(g) {
		// Palette index 0 is black, 1 is white. The page's own buffer is
		// rewritten in place: nothing else holds it.
		for i, v := range g.Pix {
			g.Pix[i] = v >> 7
		}
		img = &image.Paletted{
			Pix: g.Pix, Stride: g.Stride, Rect: g.Rect,
			Palette: color.Palette{color.Gray{Y: 0}, color.Gray{Y: 255}},
		}
	}
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	return enc.Encode(buf, img)
}

func bilevel(g *image.Gray) bool {
	for _, v := range g.Pix {
		if v != 0 && v != 255 {
			return false
		}
	}
	return true
}
