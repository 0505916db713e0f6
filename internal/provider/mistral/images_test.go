package mistral_test

import (
	"testing"

	"github.com/docjobs/docjobs/internal/provider/providertest"
)

// Mistral OCR takes a document of at most 50 MB, and no pixel limit.
func TestImagesAreSentWithinMistralsLimits(t *testing.T) {
	providertest.RunImageLimits(t, providertest.ImageVendor{
		New:       open,
		Success:   pages("text"),
		MaxBase64: 50_000_000,
		Data:      []any{"document", "image_url"},
	})
}
