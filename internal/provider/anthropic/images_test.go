package anthropic_test

import (
	"testing"

	"github.com/docjobs/docjobs/internal/provider/providertest"
)

// Anthropic refuses an image larger than 8000×8000 pixels, and one whose
// base64 takes more than 5 MB ("image exceeds 5 MB maximum: 5316036 bytes >
// 5242880 bytes").
func TestImagesAreSentWithinAnthropicsLimits(t *testing.T) {
	providertest.RunImageLimits(t, providertest.ImageVendor{
		New:       open,
		Success:   message("text", "end_turn"),
		MaxSide:   8000,
		MaxBase64: 5 << 20,
		Data:      []any{"messages", 0, "content", 0, "source", "data"},
		MIME:      []any{"messages", 0, "content", 0, "source", "media_type"},
	})
}
