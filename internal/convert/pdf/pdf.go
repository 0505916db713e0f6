// Package pdf recognizes PDFs: the text layer through poppler becomes
// structured HTML, and pages without a usable text layer are rendered and
// read by the job's OCR provider.
package pdf

import (
	"context"
	"errors"
	"time"

	"github.com/docjobs/docjobs/internal/provider"
)

// Config bounds the work on one file.
type Config struct {
	MaxPages        int           // default 1000
	Timeout         time.Duration // per file, default 5m
	DPI             int           // page rendering for OCR, default 200
	PageConcurrency int           // pages read by the provider at once, default 4
	MemoryLimit     int64         // address-space limit of each poppler process, default 1 GiB
}

// Options are per call.
type Options struct {
	// OCRAlways sends every page to the provider (EXTRACTION_MODE_OCR_ALWAYS);
	// else only pages without a usable text layer go (HYBRID).
	OCRAlways bool
	// Format is "html" (PDF files) or "markdown" (office files rendered to
	// PDF): the format of Result.Content.
	Format string
}

// Result is the recognized document.
type Result struct {
	Content string
	// Model names the methods used: "pdftotext", the OCR model, or both
	// joined with "+".
	Model            string
	Request, RawData string // the provider exchanges of OCR'd pages, redacted
	ProviderCalls    int
	Pages            int
}

// ErrNotImplemented marks this stub until the PDF converter lands.
var ErrNotImplemented = errors.New("PDF recognition is not implemented yet")

// Convert recognizes one PDF. ocr may be nil when no page needs it.
func Convert(ctx context.Context, cfg Config, data []byte, opts Options, ocr provider.OCR) (Result, error) {
	return Result{}, ErrNotImplemented
}
