// Package image prepares image files for OCR: it checks the pixel count
// from the header before decoding anything (decompression bombs), turns
// pages upright by their EXIF orientation, splits multi-page TIFFs, and
// hands each page over in a format vendors accept.
//
// Open reads only headers: every page is checked against the pixel and
// decoded-byte limits before any is decoded. Pages are then decoded one at
// a time (Pages.Page), so a caller can send each to a provider before the
// next is decoded, and a cancelled context stops a decode between reads.
//
// What leaves this package: JPEG, PNG, WebP and single-frame GIF files that
// need no rotation go out as they came (after a full decode proves they are
// intact), but for a placeholder resolution in their header (a camera's 72
// dpi on a photo 56 inches long at that), which is taken out. Everything
// that has to be re-encoded (rotated pages, TIFF and BMP pages, the first
// frame of an animated GIF) becomes PNG, because PNG is lossless and every
// vendor and Tesseract read it; the exceptions are
// rotated JPEGs and pages whose PNG would exceed the smallest vendor image
// limit, which become JPEG at quality 90 (photos are lossy already, and a
// phone photo as PNG is five to ten times larger than as JPEG). Not every
// consumer reads WebP and GIF (Gemini reads no GIF, most servers of the
// OpenAI protocol neither): Reencode turns such a page into PNG for them.
// A re-encoded page loses its file's header, so the resolution the header
// gave (TIFF, PNG pHYs, JPEG JFIF, BMP) goes with it in Document.DPI:
// Tesseract reads a page otherwise at the resolution it would guess.
//
// Pages leave at their full size, which Tesseract reads best; each vision
// adapter fits a page to its vendor's limits just before sending it (Fit).
package image

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"strconv"

	"golang.org/x/image/bmp"
	"golang.org/x/image/webp"

	"github.com/docjobs/docjobs/internal/provider"
)

// Defaults for Config's zero fields.
const (
	DefaultMaxPixels = 100_000_000
	DefaultMaxPages  = 1000
	// DefaultMaxDecodedBytes lets every 8-bit grey or palette page under
	// the pixel cap through, colour pages up to 67 megapixels (an A4 scan
	// at 600 dpi is 35) and 16-bit colour pages up to 33: a 16-bit page at
	// the pixel cap decodes to 800 MB, and the decoder holds its
	// uncompressed strip beside it.
	DefaultMaxDecodedBytes = 256 << 20
)

// Config bounds the work on one file.
type Config struct {
	MaxPixels int64 // per page, default 100 megapixels
	MaxPages  int   // TIFF pages, default 1000
	// MaxDecodedBytes bounds the memory one decoded page takes, from its
	// size and the pixel type its header declares; default 256 MiB.
	MaxDecodedBytes int64
	// Decodes, when set, bounds the pages decoded at once across the
	// process: every decode (Pages.Page, Reencode, Fit) holds one of its
	// places from before it decodes until it has encoded what it sends
	// on. The converter's pages and the pages vision adapters fit share
	// one, so the decoded pages in memory at once are that many, whatever
	// the number of files and provider calls. nil: no bound (tests).
	Decodes Decodes
}

// Decodes is a process's bound on the pages decoded at once, as the
// decoding here uses it: a place is taken with Acquire(ctx, 1) and given
// back with Release(1). golang.org/x/sync's *semaphore.Weighted is one.
type Decodes interface {
	Acquire(ctx context.Context, n int64) error
	Release(n int64)
}

// Hold takes one of c.Decodes' places for a decode (none when there is no
// bound); release gives it back. It is exported for decoders outside this
// package that share the bound (Tesseract's page turned upright), so that
// they wait, and give up with their job, as the pages decoded here do.
func (c Config) Hold(ctx context.Context) (release func(), err error) {
	if c.Decodes == nil {
		return func() {}, nil
	}
	if err := c.Decodes.Acquire(ctx, 1); err != nil {
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return nil, fmt.Errorf("waiting to decode the image: %w", err)
	}
	// A free place may be granted to a context already done: a page whose
	// job ended is not decoded.
	if ctx.Err() != nil {
		c.Decodes.Release(1)
		return nil, fmt.Errorf("waiting to decode the image: %w", context.Cause(ctx))
	}
	return func() { c.Decodes.Release(1) }, nil
}

func (c Config) withDefaults() Config {
	if c.MaxPixels <= 0 {
		c.MaxPixels = DefaultMaxPixels
	}
	if c.MaxDecodedBytes <= 0 {
		c.MaxDecodedBytes = DefaultMaxDecodedBytes
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

// DecodedTooLargeError refuses a page under the pixel limit whose pixel
// type makes it decode to more bytes than the limit (a 16-bit colour page
// takes 8 bytes a pixel, a progressive JPEG up to 24); it is returned
// before any pixel is decoded.
type DecodedTooLargeError struct {
	Width, Height int64
	Bytes         int64 // what decoding the page would take
	Limit         int64 // bytes
	Page          int   // 1-based TIFF page; 0 for a single image
	// Progressive is set for a progressive JPEG, whose decoder keeps every
	// block's coefficients besides the pixels (counted in Bytes).
	Progressive bool
}

func (e *DecodedTooLargeError) Error() string {
	what := "the image"
	if e.Page > 0 {
		what = fmt.Sprintf("page %d of the TIFF", e.Page)
	}
	perPixel := math.Round(float64(e.Bytes)/float64(max(e.Width*e.Height, 1))*10) / 10
	unit := "bytes"
	if perPixel == 1 {
		unit = "byte"
	}
	if e.Progressive {
		return fmt.Sprintf("%s is a %d×%d-pixel progressive JPEG: decoding it takes %s %s a pixel (the pixels and every block's coefficients), %s, over the %s decode limit",
			what, e.Width, e.Height, strconv.FormatFloat(perPixel, 'f', -1, 64), unit, byteSize(e.Bytes), byteSize(e.Limit))
	}
	return fmt.Sprintf("%s is %d×%d pixels at %s %s a pixel, %s decoded, over the %s decode limit",
		what, e.Width, e.Height, strconv.FormatFloat(perPixel, 'f', -1, 64), unit, byteSize(e.Bytes), byteSize(e.Limit))
}

// byteSize writes n in MiB to a tenth, or in bytes below a MiB.
func byteSize(n int64) string {
	if n < 1<<20 {
		return strconv.FormatInt(n, 10) + " bytes"
	}
	return strconv.FormatFloat(math.Round(float64(n)/(1<<20)*10)/10, 'f', -1, 64) + " MiB"
}

// checkDecoded refuses a page whose decoded pixels would take more than
// limit bytes. Call it after checkPixels, which bounds w×h.
func checkDecoded(w, h int64, m color.Model, limit int64, page int) error {
	return checkDecodedBytes(w, h, bytesPerPixel(m), limit, page)
}

func checkDecodedBytes(w, h, bpp, limit int64, page int) error {
	if w*h > limit/bpp {
		return &DecodedTooLargeError{Width: w, Height: h, Bytes: w * h * bpp, Limit: limit, Page: page}
	}
	return nil
}

// checkDecodedImage is checkDecoded for a one-page format, whose decoder
// may hold more than the pixels: a JPEG counts what image/jpeg holds at
// its peak (jpegDecodeBytes), a progressive one's coefficients included.
func checkDecodedImage(f format, data []byte, c image.Config, limit int64, page int) error {
	if f != formatJPEG {
		return checkDecoded(int64(c.Width), int64(c.Height), c.ColorModel, limit, page)
	}
	// checkPixels bounds w×h, so the count cannot overflow.
	n, progressive := jpegDecodeBytes(data, c)
	if n > limit {
		return &DecodedTooLargeError{Width: int64(c.Width), Height: int64(c.Height), Bytes: n, Limit: limit, Page: page, Progressive: progressive}
	}
	return nil
}

// CheckDecode refuses, from its header alone, a one-page image that Open
// would refuse to decode under cfg's limits: more pixels than MaxPixels
// (a *TooLargeError), or more bytes decoded than MaxDecodedBytes (a
// *DecodedTooLargeError), counted as here: a JPEG by what image/jpeg
// holds at its peak, a progressive one's coefficients included
// (jpegDecodeBytes), anything else by the colour model c gives. c is what
// the format's DecodeConfig read from data. It is for decoders outside
// this package (Tesseract's page turned upright), so that every decode in
// the process is bounded by one rule.
func CheckDecode(cfg Config, data []byte, c image.Config) error {
	cfg = cfg.withDefaults()
	if err := checkPixels(int64(c.Width), int64(c.Height), cfg.MaxPixels, 0); err != nil {
		return err
	}
	return checkDecodedImage(sniff(data), data, c, cfg.MaxDecodedBytes, 0)
}

// bytesPerPixel is what the standard decoders allocate a pixel for the
// colour model their DecodeConfig reports. YCbCr counts 3 (4:4:4, the
// largest subsampling); a model not listed counts 8, the largest of all.
func bytesPerPixel(m color.Model) int64 {
	switch m {
	case color.GrayModel, color.AlphaModel:
		return 1
	case color.Gray16Model, color.Alpha16Model:
		return 2
	case color.YCbCrModel:
		return 3
	case color.RGBAModel, color.NRGBAModel, color.CMYKModel, color.NYCbCrAModel:
		return 4
	}
	if _, ok := m.(color.Palette); ok {
		return 1
	}
	return 8
}

// Pages is an image file whose pages have passed the header checks and
// are decoded on demand, one at a time.
type Pages struct {
	cfg  Config
	data []byte
	f    format
	tiff []tiffPage // TIFF pages; nil for the one-page formats
	w, h int        // size of a one-page format's page, from its header
}

// Open checks data's pages from their headers alone: format, pixel count
// and decoded size of every page, before any is decoded. The format comes
// from the bytes, never from a name.
func Open(cfg Config, data []byte) (*Pages, error) {
	cfg = cfg.withDefaults()
	p := &Pages{cfg: cfg, data: data, f: sniff(data)}
	switch p.f {
	case formatTIFF:
		pages, err := openTIFF(cfg, data)
		if err != nil {
			return nil, err
		}
		p.tiff = pages
		return p, nil
	case formatBigTIFF:
		return nil, fmt.Errorf("%w: BigTIFF files are not supported", ErrUnsupported)
	case formatNone:
		return nil, fmt.Errorf("%w: the bytes are not PNG, JPEG, TIFF, WebP, GIF or BMP", ErrUnsupported)
	}
	codec := codecs[p.f]
	c, err := codec.decodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("the %s header cannot be read: %w", p.f, err)
	}
	if err := checkPixels(int64(c.Width), int64(c.Height), cfg.MaxPixels, 0); err != nil {
		return nil, err
	}
	if err := checkDecodedImage(p.f, data, c, cfg.MaxDecodedBytes, 0); err != nil {
		return nil, err
	}
	p.w, p.h = c.Width, c.Height
	return p, nil
}

// Len is the number of pages.
func (p *Pages) Len() int {
	if p.tiff != nil {
		return len(p.tiff)
	}
	return 1
}

// Page decodes page i (0-based) and returns it upright as a Document with
// Format "markdown" and Page numbered from 1 (0 for a single image),
// holding one of Config.Decodes' places meanwhile. A cancelled ctx stops
// the decode at its next read of the file and returns ctx's error.
func (p *Pages) Page(ctx context.Context, i int) (provider.Document, error) {
	if err := ctx.Err(); err != nil {
		return provider.Document{}, err
	}
	release, err := p.cfg.Hold(ctx)
	if err != nil {
		return provider.Document{}, err
	}
	defer release()
	if p.tiff != nil {
		return p.tiffPage(ctx, i)
	}
	return p.single(ctx)
}

// Prepare decodes every page of an image file: Open, then Page for each.
func Prepare(ctx context.Context, cfg Config, data []byte) ([]provider.Document, error) {
	p, err := Open(cfg, data)
	if err != nil {
		return nil, err
	}
	docs := make([]provider.Document, 0, p.Len())
	for i := range p.Len() {
		d, err := p.Page(ctx, i)
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
	}
	return docs, nil
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

// codec is one of the one-page formats' standard decoder.
type codec struct {
	decodeConfig func(io.Reader) (image.Config, error)
	decode       func(io.Reader) (image.Image, error)
}

// gif.Decode reads the first frame only, whatever follows.
var codecs = map[format]codec{
	formatPNG:  {png.DecodeConfig, png.Decode},
	formatJPEG: {jpeg.DecodeConfig, jpeg.Decode},
	formatWebP: {webp.DecodeConfig, webp.Decode},
	formatGIF:  {gif.DecodeConfig, gif.Decode},
	formatBMP:  {bmp.DecodeConfig, bmp.Decode},
}

// single handles the one-page formats, whose headers Open checked:
// orientation, a full decode (a truncated file fails here, not at the
// vendor), and re-encoding only when the bytes cannot go out as they are.
func (p *Pages) single(ctx context.Context) (provider.Document, error) {
	var (
		mime        string
		orientation = 1
		reencode    bool
	)
	switch p.f {
	case formatPNG:
		mime, orientation = MIMEPNG, pngOrientation(p.data)
	case formatJPEG:
		mime, orientation = MIMEJPEG, jpegOrientation(p.data)
	case formatWebP:
		mime, orientation = MIMEWebP, webpOrientation(p.data)
	case formatGIF:
		mime = MIMEGIF
		// OpenAI refuses animated GIFs, and a document page is one frame.
		reencode = gifFrames(p.data, 2) > 1
	case formatBMP:
		reencode = true // no vendor takes BMP
	}
	if orientation == 1 && !reencode {
		if err := p.checkIntact(ctx); err != nil {
			return provider.Document{}, err
		}
		return provider.Document{Data: withoutPlaceholderResolution(p.f, p.data, p.w, p.h), MIME: mime, Format: "markdown"}, nil
	}
	img, err := p.decodeSingle(ctx)
	if err != nil {
		return provider.Document{}, err
	}
	upright := orient(img, orientation)
	out, outMIME, err := encode(ctx, upright, p.f == formatJPEG)
	if err != nil {
		return provider.Document{}, err
	}
	// The file's resolution is in a header the page no longer has.
	x, y := provider.ImageResolution(p.data)
	b := upright.Bounds()
	return provider.Document{Data: out, MIME: outMIME, Format: "markdown",
		DPI: plausiblePageDPI(uprightDPI(x, y, orientation), b.Dx(), b.Dy())}, nil
}

// checkIntact fails a file that goes out as it came but would not decode
// (a truncated upload fails here, not at the vendor). A PNG is checked
// without holding its pixels (checkPNG); the other formats have no such
// check in the standard decoders and are decoded, within the decoded-byte
// limit Open checked.
func (p *Pages) checkIntact(ctx context.Context) error {
	if p.f != formatPNG {
		_, err := p.decodeSingle(ctx)
		return err
	}
	if err := checkPNG(ctx, p.data); err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("the PNG image cannot be decoded: %w", err)
	}
	return nil
}

func (p *Pages) decodeSingle(ctx context.Context) (image.Image, error) {
	img, err := codecs[p.f].decode(&ctxReader{ctx: ctx, r: bytes.NewReader(p.data)})
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, fmt.Errorf("the %s image cannot be decoded: %w", p.f, err)
	}
	return img, nil
}

// ctxReader fails its reads once ctx is done, which stops a decoder
// between two reads of the file instead of after the whole page.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r *ctxReader) Read(b []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(b)
}

// ctxWriter fails its writes once ctx is done, which stops an encoder.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (w *ctxWriter) Write(b []byte) (int, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	return w.w.Write(b)
}

// Reencode returns page in a type every vendor and Tesseract read: PNG
// (JPEG when the PNG would pass the smallest vendor limit, as Prepare
// does), for a consumer that does not read the type Prepare left it in.
// PNG and JPEG pages come back as they are; so do Page and Format. The
// decode holds one of cfg.Decodes' places.
func Reencode(ctx context.Context, cfg Config, page provider.Document) (provider.Document, error) {
	if page.MIME == MIMEPNG || page.MIME == MIMEJPEG {
		return page, nil
	}
	cfg = cfg.withDefaults()
	f := sniff(page.Data)
	if f != formatGIF && f != formatWebP && f != formatBMP {
		return provider.Document{}, fmt.Errorf("%w: a %s page cannot be re-encoded", ErrUnsupported, page.MIME)
	}
	c, err := codecs[f].decodeConfig(bytes.NewReader(page.Data))
	if err != nil {
		return provider.Document{}, fmt.Errorf("the %s header cannot be read: %w", f, err)
	}
	if err := checkPixels(int64(c.Width), int64(c.Height), cfg.MaxPixels, page.Page); err != nil {
		return provider.Document{}, err
	}
	if err := checkDecodedImage(f, page.Data, c, cfg.MaxDecodedBytes, page.Page); err != nil {
		return provider.Document{}, err
	}
	release, err := cfg.Hold(ctx)
	if err != nil {
		return provider.Document{}, err
	}
	defer release()
	p := &Pages{cfg: cfg, data: page.Data, f: f}
	img, err := p.decodeSingle(ctx)
	if err != nil {
		return provider.Document{}, err
	}
	out, mime, err := encode(ctx, img, false)
	if err != nil {
		return provider.Document{}, err
	}
	page.Data, page.MIME = out, mime
	return page, nil
}

// maxPNGBytes is the size above which a re-encoded page goes out as JPEG
// instead: the most whose base64 Anthropic takes (5 MiB of base64 text),
// the smallest limit among the vendors, so that its adapter need not
// re-encode the page again (Fit). A PNG is five to ten times a JPEG of a
// photo; a scan's PNG rarely comes near this.
const maxPNGBytes = 5 << 20 / 4 * 3

// encode writes a re-encoded page: JPEG for photos, PNG otherwise (and
// JPEG when the PNG would be too large for vendors to take).
func encode(ctx context.Context, img image.Image, photo bool) ([]byte, string, error) {
	img = eightBit(img)
	var buf bytes.Buffer
	w := &ctxWriter{ctx: ctx, w: &buf}
	if !photo {
		if err := encodePNG(w, img); err != nil {
			if ctx.Err() != nil {
				return nil, "", context.Cause(ctx)
			}
			return nil, "", fmt.Errorf("encoding the page as PNG: %w", err)
		}
		if buf.Len() <= maxPNGBytes {
			return buf.Bytes(), MIMEPNG, nil
		}
		buf.Reset()
	}
	if err := jpeg.Encode(w, onWhite(img), &jpeg.Options{Quality: 90}); err != nil {
		if ctx.Err() != nil {
			return nil, "", context.Cause(ctx)
		}
		return nil, "", fmt.Errorf("encoding the page as JPEG: %w", err)
	}
	return buf.Bytes(), MIMEJPEG, nil
}

// encodePNG writes img as PNG. A grey page that holds only black and white
// (a fax or a bilevel scan) is written with a two-colour palette, which the
// encoder packs at one bit per pixel: an eighth of the data to compress.
func encodePNG(w io.Writer, img image.Image) error {
	if g, ok := img.(*image.Gray); ok && bilevel(g) {
		// Palette index 0 is black, 1 is white. The page's own buffer is
		// rewritten in place, and back afterwards: a page whose PNG is
		// too large is written again as JPEG from the same pixels.
		for i, v := range g.Pix {
			g.Pix[i] = v >> 7
		}
		defer func() {
			for i, v := range g.Pix {
				g.Pix[i] = -v // 0 stays 0, 1 is 255 again
			}
		}()
		img = &image.Paletted{
			Pix: g.Pix, Stride: g.Stride, Rect: g.Rect,
			Palette: color.Palette{color.Gray{Y: 0}, color.Gray{Y: 255}},
		}
	}
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	return enc.Encode(w, img)
}

func bilevel(g *image.Gray) bool {
	for _, v := range g.Pix {
		if v != 0 && v != 255 {
			return false
		}
	}
	return true
}

// eightBit returns a 16-bit page as 8-bit: recognition reads no more than
// 8 bits a channel, the PNG is half the size, and the JPEG encoder reads a
// 16-bit page a pixel at a time through interfaces, several times slower.
// The page is rewritten in its own buffer (nothing else holds a page
// being encoded), so the conversion takes no memory of its own.
func eightBit(img image.Image) image.Image {
	switch m := img.(type) {
	case *image.Gray16:
		highBytes(m.Pix, m.Stride/2, m.Pix, m.Stride, m.Rect.Dy(), m.Rect.Dx())
		return &image.Gray{Pix: m.Pix[:len(m.Pix)/2], Stride: m.Stride / 2, Rect: m.Rect}
	case *image.RGBA64:
		highBytes(m.Pix, m.Stride/2, m.Pix, m.Stride, m.Rect.Dy(), 4*m.Rect.Dx())
		return &image.RGBA{Pix: m.Pix[:len(m.Pix)/2], Stride: m.Stride / 2, Rect: m.Rect}
	case *image.NRGBA64:
		highBytes(m.Pix, m.Stride/2, m.Pix, m.Stride, m.Rect.Dy(), 4*m.Rect.Dx())
		return &image.NRGBA{Pix: m.Pix[:len(m.Pix)/2], Stride: m.Stride / 2, Rect: m.Rect}
	}
	return img
}

// highBytes keeps the high byte of each big-endian 16-bit sample, n
// samples a row: the same rounding for premultiplied and straight alpha.
// dst may be src itself with half its stride: each byte is written at or
// before the sample it comes from, after that sample was read.
func highBytes(dst []byte, dstStride int, src []byte, srcStride, rows, n int) {
	for y := range rows {
		d, s := dst[y*dstStride:y*dstStride+n], src[y*srcStride:]
		for i := range d {
			d[i] = s[2*i]
		}
	}
}
