// Package image prepares image files for OCR: it checks the pixel count
// from the header before decoding anything (decompression bombs), turns
// pages upright by their EXIF orientation, splits multi-page TIFFs, and
// hands each page over in a format vendors accept.
package image

import (
	"errors"

	"github.com/docjobs/docjobs/internal/provider"
)

// Config bounds the work on one file.
type Config struct {
	MaxPixels int64 // per page, default 100 megapixels
	MaxPages  int   // TIFF pages, default 1000
}

// ErrNotImplemented marks this stub until the image preparation lands.
var ErrNotImplemented = errors.New("image recognition is not implemented yet")

// Prepare returns the pages of an image file, upright, each as a Document
// with Format "markdown" and Page numbered from 1 (0 for a single image).
func Prepare(cfg Config, data []byte) ([]provider.Document, error) {
	return nil, ErrNotImplemented
}
