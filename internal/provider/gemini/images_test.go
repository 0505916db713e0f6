package gemini_test

import (
	"testing"

	"github.com/docjobs/docjobs/internal/provider/providertest"
)

// Gemini takes inline data in a request of at most 20 MB, and no pixel
// limit.
func TestImagesAreSentWithinGeminisLimits(t *testing.T) {
	providertest.RunImageLimits(t, providertest.ImageVendor{
		New:       open,
		Success:   generated("text", "STOP"),
		MaxBase64: 20_000_000,
		Data:      []any{"contents", 0, "parts", 0, "inlineData", "data"},
		MIME:      []any{"contents", 0, "parts", 0, "inlineData", "mimeType"},
	})
}
