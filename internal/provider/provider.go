// Package provider is the contract between recognition and the vendors that
// read documents for it: what is sent (a Document), what comes back (a
// Recognition), how failures are classified (Error and its categories) and
// how transient ones are retried; for the model stage, what is asked (a
// ChatRequest) and answered (a ChatAnswer) through a Chat. Vendor adapters
// live in subpackages; the slot table that picks one for
// NEURAL_CLIENT_TYPE_PROVIDER_N is in slots.
package provider

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Document is one thing to recognize: an image, or a whole PDF for vendors
// that read PDFs.
type Document struct {
	Data []byte
	// MIME is image/jpeg, image/png, image/webp, image/gif, image/tiff,
	// image/bmp, image/x-portable-graymap or application/pdf.
	MIME string
	// Page is the 1-based page of the source file this image shows; 0 for
	// a standalone image or a whole document.
	Page int
	// Format is what the text should be: "markdown" (images, office pages)
	// or "html" (PDF pages). Vendors that only produce markdown return
	// markdown and say so in Recognition.Format.
	Format string
	// DPI is the image's resolution in pixels per inch (down the page,
	// should it differ across) when the sender knows it and the bytes no
	// longer say it: a page re-encoded from a file whose header gave one.
	// 0 when unknown; the image's own header (ImageResolution) may still
	// say. Engines that size their analysis by it use it (Tesseract, which
	// otherwise guesses it from the text and reads the same pixels
	// otherwise by its guess); vision models ignore it.
	DPI int
}

// Recognition is a vendor's reading of one Document.
type Recognition struct {
	// Text is the transcription; empty for a blank page.
	Text string
	// Format is the format Text is in: "markdown" or "html".
	Format string
	// Pages holds per-page texts when a whole PDF was sent (Mistral OCR);
	// Text is then their concatenation.
	Pages []string
	// Model names the engine for the row's model field (the vendor's model
	// id, "tesseract", "mistral-ocr-latest", …).
	Model string
	// Request and RawData are the exchange for the row's debug fields:
	// never a key, base64 payloads elided.
	Request string
	RawData string
}

// OCR reads documents through one vendor with one model and one key.
type OCR interface {
	Recognize(ctx context.Context, doc Document) (Recognition, error)
}

// Category classifies a provider failure (DESIGN §4).
type Category string

const (
	CategoryAuth           Category = "auth"
	CategoryRateLimit      Category = "rate_limit"
	CategoryInvalidRequest Category = "invalid_request"
	CategoryNotFound       Category = "not_found"
	CategoryServer         Category = "server"
	CategoryTimeout        Category = "timeout"
	CategoryNetwork        Category = "network"
	CategoryContentFilter  Category = "content_filter"
	CategoryContextLength  Category = "context_length"
	// CategoryTruncated is an answer cut off by the token limit.
	CategoryTruncated Category = "truncated"
)

// Error is a classified provider failure. Its message is the one rows show
// and never carries the vendor's text (which may echo the request).
type Error struct {
	Category Category
	Status   int // HTTP status; 0 when no response came
	// RetryAfter is the vendor's Retry-After, when it sent one.
	RetryAfter time.Duration
	// Permanent marks a failure that waiting does not mend although its
	// category usually passes with time: a quota spent for the day or the
	// month answers 429 like a rate limit, and retried it only spends
	// calls until the job's deadline.
	Permanent bool
	// Reason, when set, is a fixed phrase of ours that the row shows after
	// the category where the category alone would mislead ("empty answer",
	// "quota exhausted"); never the vendor's text.
	Reason string
	// Err is the cause, for logs; it must not contain the key.
	Err error
}

func (e *Error) Error() string {
	s := fmt.Sprintf("provider error (category=%s, status=%d)", e.Category, e.Status)
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether trying again later may succeed.
func (e *Error) Retryable() bool {
	if e.Permanent {
		return false
	}
	switch e.Category {
	case CategoryRateLimit, CategoryServer, CategoryTimeout, CategoryNetwork:
		return true
	}
	return false
}

// ErrUnsupportedInput is returned by an adapter asked to read a MIME type
// its vendor does not take (for example a PDF sent to a vision chat model).
var ErrUnsupportedInput = errors.New("the provider does not accept this input type")

// Accepter is an OCR that can tell, before any call, whether it reads
// documents of a MIME type, so that callers convert what it does not read
// instead of being refused. Adapters know their vendor's list; wrappers
// pass the question on (a wrapper around an OCR that cannot tell answers
// known=false). Answering may open the adapter (a job's provider is opened
// on first use), hence the context.
type Accepter interface {
	Accepts(ctx context.Context, mime string) (ok, known bool)
}

// Accepts asks ocr whether it reads mime. known is false when ocr cannot
// tell: the caller then sends what it has and handles ErrUnsupportedInput.
func Accepts(ctx context.Context, ocr OCR, mime string) (ok, known bool) {
	if a, is := ocr.(Accepter); is {
		return a.Accepts(ctx, mime)
	}
	return false, false
}

// CategoryForStatus classifies an HTTP status.
func CategoryForStatus(status int) Category {
	switch {
	case status == 401 || status == 403:
		return CategoryAuth
	case status == 404:
		return CategoryNotFound
	case status == 408 || status == 504:
		return CategoryTimeout
	case status == 413:
		// The body's bytes, not the prompt's tokens: a page image past the
		// vendor's request size (Anthropic's request_too_large). A prompt
		// over the context window is a 400 each adapter tells apart.
		return CategoryInvalidRequest
	case status == 429:
		return CategoryRateLimit
	case status >= 500:
		return CategoryServer
	default:
		return CategoryInvalidRequest
	}
}
