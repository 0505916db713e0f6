package tesseract

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"
	"io"
	"strconv"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"
	"golang.org/x/image/webp"

	pageimage "github.com/docjobs/docjobs/internal/convert/image"
	"github.com/docjobs/docjobs/internal/provider"
)

// Turning a page image upright for a second reading.
//
// Tesseract reads a page it finds turned (--psm 1) in the scan's frame,
// after binarizing the scan as it lies, and with tiled binarization
// (thresholding_method=1) it reads it otherwise than the same page
// upright: the invoice rendered grey at 200 dpi and turned right kept 3
// of its 14 amounts, the scan without its resolution 7, 6 and 1 of 12
// (docs/decisions.md, "Tesseract: a page found turned is read again
// upright"). So a page it read turned is turned upright here and read once
// more. A quarter or half turn moves pixels without changing them, and
// with the scan's resolution passed on, tesseract reads the very page it
// would have read scanned upright.

// maxUprightPixels bounds the copies a turn makes beside the decoded
// image, which pageimage.CheckDecode bounds: a page that is neither grey
// nor opaque RGBA once decoded (a JPEG's YCbCr, a palette) is drawn into a
// grey or RGBA copy, and that is turned into another. At 4 bytes a pixel
// each is at most the image package's default decode limit, so a turn
// holds at most about three times it. A larger page keeps its first,
// turned reading.
const maxUprightPixels = pageimage.DefaultMaxDecodedBytes / 4

// errNotTurnable: the image is in a format or of a kind this package does
// not decode (JPEG 2000, ASCII or 16-bit PNM), or too large.
var errNotTurnable = errors.New("the image cannot be turned here")

// uprightImage decodes a page image (one that looksLikeImage) and returns
// it turned upright from t as PNG: grey when the image is grey (a palette
// of greys too), RGB otherwise, transparency laid on white. For a PNG, a
// PGM or a BMP the pixels are exactly those tesseract decodes itself; for
// a JPEG or a lossy WebP, Go's decoder may differ from libjpeg's or
// libwebp's by a level here and there. PNG at zlib's fastest level, not
// raw PNM: leptonica reads PNM a sample at a time, and on the invoice's
// 11 megapixels a 34 MB PPM cost tesseract 0.65 s more CPU than the PNG,
// which takes Go 0.12 s to write.
//
// The decode is the process's like any other (docs/decisions.md, "A JPEG
// counts what its decoder holds"): the header is checked by the image
// package's rule (pageimage.CheckDecode: a progressive JPEG counts its
// coefficients, which a count of 4 bytes a pixel missed) before any place
// is taken, and one of cfg.Decodes' places is held from before the decode
// until the PNG is written; a wait that outlives ctx gives up.
func uprightImage(ctx context.Context, cfg pageimage.Config, data []byte, t turn) ([]byte, error) {
	decode, decodeConfig := decoderOf(data)
	if decode == nil {
		return nil, fmt.Errorf("%w: not a format it decodes", errNotTurnable)
	}
	hdr, err := decodeConfig(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNotTurnable, err)
	}
	if err := pageimage.CheckDecode(cfg, data, hdr); err != nil {
		return nil, fmt.Errorf("%w: %w", errNotTurnable, err)
	}
	if int64(hdr.Width)*int64(hdr.Height) > maxUprightPixels {
		return nil, fmt.Errorf("%w: %d×%d pixels, the limit for a turn is %d", errNotTurnable, hdr.Width, hdr.Height, maxUprightPixels)
	}
	release, err := cfg.Hold(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	img, err := decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNotTurnable, err)
	}
	var up image.Image
	b := img.Bounds()
	switch m := img.(type) {
	case *image.Gray:
		pix, stride, r := turned(m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride, b.Dx(), b.Dy(), 1, t)
		up = &image.Gray{Pix: pix, Stride: stride, Rect: r}
	case *image.RGBA:
		if m.Opaque() {
			pix, stride, r := turned(m.Pix[m.PixOffset(b.Min.X, b.Min.Y):], m.Stride, b.Dx(), b.Dy(), 4, t)
			up = &image.RGBA{Pix: pix, Stride: stride, Rect: r}
		}
	}
	if up == nil && greyModel(img.ColorModel()) {
		g := image.NewGray(image.Rect(0, 0, b.Dx(), b.Dy()))
		draw.Draw(g, g.Rect, img, b.Min, draw.Src)
		pix, stride, r := turned(g.Pix, g.Stride, b.Dx(), b.Dy(), 1, t)
		up = &image.Gray{Pix: pix, Stride: stride, Rect: r}
	}
	if up == nil {
		rgba := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
		draw.Draw(rgba, rgba.Rect, image.White, image.Point{}, draw.Src)
		draw.Draw(rgba, rgba.Rect, img, b.Min, draw.Over)
		pix, stride, r := turned(rgba.Pix, rgba.Stride, b.Dx(), b.Dy(), 4, t)
		up = &image.RGBA{Pix: pix, Stride: stride, Rect: r}
	}
	var out bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&out, up); err != nil {
		return nil, fmt.Errorf("%w: %v", errNotTurnable, err)
	}
	return out.Bytes(), nil
}

// greyModel reports whether every colour of m is an opaque grey: a grey
// image, or a palette of greys (a black-and-white page as image.Prepare
// writes it, a 1-bit PNG), which is written grey, not as RGB.
func greyModel(m color.Model) bool {
	switch m := m.(type) {
	case color.Palette:
		for _, c := range m {
			r, g, b, a := c.RGBA()
			if r != g || g != b || a != 0xFFFF {
				return false
			}
		}
		return true
	}
	return m == color.GrayModel || m == color.Gray16Model
}

// turned moves the pixels of a packed w×h image (bpp bytes a pixel) into
// a new buffer, turned upright from t; it returns the buffer, its stride
// and its bounds. For each turn, the stored pixel (sx, sy) that lands at
// (dx, dy) upright:
//
//	upside down    sx = w-1-dx   sy = h-1-dy
//	turned left    sx = dy       sy = h-1-dx   (a quarter turn clockwise)
//	turned right   sx = w-1-dy   sy = dx       (a quarter turn counter-clockwise)
func turned(pix []byte, stride, w, h, bpp int, t turn) ([]byte, int, image.Rectangle) {
	dw, dh := w, h
	if t == turnedLeft || t == turnedRight {
		dw, dh = h, w
	}
	dstStride := dw * bpp
	dst := make([]byte, dstStride*dh)
	for dy := 0; dy < dh; dy++ {
		row := dst[dy*dstStride : (dy+1)*dstStride]
		for dx := 0; dx < dw; dx++ {
			sx, sy := dx, dy
			switch t {
			case upsideDown:
				sx, sy = w-1-dx, h-1-dy
			case turnedLeft:
				sx, sy = dy, h-1-dx
			case turnedRight:
				sx, sy = w-1-dy, dx
			}
			s := sy*stride + sx*bpp
			copy(row[dx*bpp:dx*bpp+bpp], pix[s:s+bpp])
		}
	}
	return dst, dstStride, image.Rect(0, 0, dw, dh)
}

// resolution is the pixels per inch down the page upright from t, as
// the image's header gives it (provider.ImageResolution), or 0 when it
// gives none. The PNG written for the second reading carries no
// resolution, so it is passed as --dpi: tesseract sizes its analysis by
// it, and guessed from the text instead (362 for the invoice's 350) the
// same pixels read otherwise.
func resolution(data []byte, t turn) int {
	x, y := provider.ImageResolution(data)
	if t == turnedLeft || t == turnedRight {
		return x // the scan's rows are the upright page's columns
	}
	return y
}

// decoderOf picks the decoder by the magic bytes looksLikeImage checks.
func decoderOf(b []byte) (func(io.Reader) (image.Image, error), func(io.Reader) (image.Config, error)) {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return png.Decode, png.DecodeConfig
	case bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF}):
		return jpeg.Decode, jpeg.DecodeConfig
	case bytes.HasPrefix(b, []byte("II*\x00")), bytes.HasPrefix(b, []byte("MM\x00*")):
		return tiff.Decode, tiff.DecodeConfig
	case bytes.HasPrefix(b, []byte("GIF8")):
		return gif.Decode, gif.DecodeConfig
	case bytes.HasPrefix(b, []byte("BM")):
		return bmp.Decode, bmp.DecodeConfig
	case len(b) >= 12 && string(b[0:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return webp.Decode, webp.DecodeConfig
	case bytes.HasPrefix(b, []byte("P5")), bytes.HasPrefix(b, []byte("P6")):
		return decodePNM, func(r io.Reader) (image.Config, error) {
			_, cfg, err := readPNMHeader(bufio.NewReader(r))
			return cfg, err
		}
	}
	return nil, nil
}

// decodePNM reads a raw PGM (P5) or PPM (P6) of 8-bit samples, what
// pdftoppm renders a PDF page as for this engine.
func decodePNM(r io.Reader) (image.Image, error) {
	br := bufio.NewReader(r)
	magic, cfg, err := readPNMHeader(br)
	if err != nil {
		return nil, err
	}
	w, h := cfg.Width, cfg.Height
	if magic == "P5" {
		g := image.NewGray(image.Rect(0, 0, w, h))
		if _, err := io.ReadFull(br, g.Pix); err != nil {
			return nil, fmt.Errorf("pgm: %w", err)
		}
		return g, nil
	}
	row := make([]byte, 3*w)
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		if _, err := io.ReadFull(br, row); err != nil {
			return nil, fmt.Errorf("ppm: %w", err)
		}
		p := m.Pix[y*m.Stride:]
		for x := 0; x < w; x++ {
			p[4*x], p[4*x+1], p[4*x+2], p[4*x+3] = row[3*x], row[3*x+1], row[3*x+2], 0xFF
		}
	}
	return m, nil
}

// readPNMHeader reads the magic, width, height and maxval of a raw PNM
// and the one white-space byte after them.
func readPNMHeader(br *bufio.Reader) (string, image.Config, error) {
	var magic [2]byte
	if _, err := io.ReadFull(br, magic[:]); err != nil {
		return "", image.Config{}, fmt.Errorf("pnm: %w", err)
	}
	var fields [3]int
	for i := range fields {
		n, err := pnmNumber(br)
		if err != nil {
			return "", image.Config{}, err
		}
		fields[i] = n
	}
	if fields[2] < 1 || fields[2] > 255 {
		return "", image.Config{}, fmt.Errorf("pnm: maxval %d, only 8-bit samples are read", fields[2])
	}
	if _, err := br.ReadByte(); err != nil { // the white space before the samples
		return "", image.Config{}, fmt.Errorf("pnm: %w", err)
	}
	cfg := image.Config{ColorModel: color.RGBAModel, Width: fields[0], Height: fields[1]}
	if string(magic[:]) == "P5" {
		cfg.ColorModel = color.GrayModel
	}
	return string(magic[:]), cfg, nil
}

// pnmNumber reads a decimal number after white space and comments.
func pnmNumber(br *bufio.Reader) (int, error) {
	var digits []byte
	for {
		c, err := br.ReadByte()
		if err != nil {
			return 0, fmt.Errorf("pnm header: %w", err)
		}
		switch {
		case c >= '0' && c <= '9':
			if len(digits) >= 9 {
				return 0, errors.New("pnm header: a number too large")
			}
			digits = append(digits, c)
			continue
		case c == '#' && len(digits) == 0:
			if _, err := br.ReadString('\n'); err != nil {
				return 0, fmt.Errorf("pnm header: %w", err)
			}
			continue
		case (c == ' ' || c == '\t' || c == '\n' || c == '\r') && len(digits) == 0:
			continue
		}
		if len(digits) == 0 {
			return 0, fmt.Errorf("pnm header: %q where a number was expected", c)
		}
		// The white space after the number is the header's: put it back
		// for the next number or for readPNMHeader's last byte.
		if err := br.UnreadByte(); err != nil {
			return 0, err
		}
		n, err := strconv.Atoi(string(digits))
		return n, err
	}
}
