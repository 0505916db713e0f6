package openai_test

import (
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/provider/openai"
	"github.com/docjobs/docjobs/internal/provider/providertest"
)

// OpenAI takes 20 MB per image and scales large ones down itself; xAI, on
// the same protocol, 10 MiB.
func TestImagesAreSentWithinTheServersLimits(t *testing.T) {
	image := []any{"messages", 1, "content", 1, "image_url", "url"}
	t.Run("OpenAI", func(t *testing.T) {
		providertest.RunImageLimits(t, providertest.ImageVendor{
			New: open, Success: completion("text", "stop"), MaxBase64: 20_000_000, Data: image,
		})
	})
	t.Run("xAI", func(t *testing.T) {
		xai := func(t *testing.T, baseURL string, timeout time.Duration) provider.OCR {
			t.Helper()
			ocr, err := openai.New(openai.Config{BaseURL: baseURL, Model: "grok-4", Key: key, Timeout: timeout,
				ImageLimits: openai.XAIImageLimits})
			if err != nil {
				t.Fatal(err)
			}
			return ocr
		}
		providertest.RunImageLimits(t, providertest.ImageVendor{
			New: xai, Success: completion("text", "stop"), MaxBase64: 10 << 20, Data: image,
		})
	})
}
