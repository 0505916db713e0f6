package slots_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	pageimage "github.com/docjobs/docjobs/internal/convert/image"
	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/provider/providertest"
	"github.com/docjobs/docjobs/internal/provider/slots"
	"github.com/docjobs/docjobs/internal/provider/tesseract"
)

// noPlace is a decode bound with no place free.
type noPlace struct{}

func (noPlace) Acquire(context.Context, int64) error { return errors.New("no place free") }
func (noPlace) Release(int64)                        {}

// Every vision adapter fits its pages within the decode bound it is given
// (Config.ImageDecodes, the converter's in the service): a page past the
// vendor's limits waits for a place before it is decoded, so pages fitted
// by many calls at once take no more memory than the bound allows.
func TestVisionAdaptersFitPagesWithinTheDecodeBound(t *testing.T) {
	wide := provider.Document{Data: providertest.WidePNG(t), MIME: "image/png"} // past Anthropic's 8000 pixels
	heavy := provider.Document{Data: providertest.PhotoJPEG(t, 40_000_000), MIME: "image/jpeg"}
	cases := []struct {
		n     int
		model string
		page  provider.Document
	}{
		{1, "mistral-ocr-latest", heavy},
		{2, "gpt-4o", heavy},
		{3, "claude-sonnet-4-5", wide},
		{4, "gemini-2.5-flash", heavy},
		{5, "grok-4", heavy},
	}
	for _, c := range cases {
		t.Run(slot(c.n), func(t *testing.T) {
			srv := providertest.NewServer(t, providertest.Reply(200, "{}"))
			s := slots.New(slots.Config{BaseURLs: map[int]string{c.n: srv.URL + "/v1"}, MaxAttempts: 1, ImageDecodes: noPlace{}})
			ocr, err := s.OCR(slot(c.n), c.model, key)
			if err != nil {
				t.Fatal(err)
			}
			_, err = ocr.Recognize(t.Context(), c.page)
			if err == nil || !strings.Contains(err.Error(), "waiting to decode the image: no place free") {
				t.Errorf("err = %v, want the page to wait for a decode place", err)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

// The local Tesseract is opened with the table's decode bound
// (tesseract.Config.ImageDecodes), the converter's in the service: a page
// it turns upright is decoded within the same places as the converter's
// pages and the pages the vision adapters fit. Without one given, every
// engine opened gets the table's own.
func TestTheLocalEngineDecodesWithinTheTablesBound(t *testing.T) {
	given := noPlace{}
	for _, tt := range []struct {
		name    string
		decodes pageimage.Decodes
	}{
		{"the bound given", given},
		{"the table's own", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var (
				mu     sync.Mutex
				opened []tesseract.Config
			)
			s := slots.New(slots.Config{ImageDecodes: tt.decodes, Tesseract: func(cfg tesseract.Config) (provider.OCR, error) {
				mu.Lock()
				defer mu.Unlock()
				opened = append(opened, cfg)
				return fakeTesseract{cfg.Langs}, nil
			}})
			for _, model := range []string{"tesseract", "tesseract:deu+eng"} {
				if _, err := s.OCR(slot(8), model, ""); err != nil {
					t.Fatal(err)
				}
			}
			if len(opened) != 2 || opened[0].Langs != "" || opened[1].Langs != "deu+eng" {
				t.Fatalf("opened %+v, want the default languages, then deu+eng", opened)
			}
			for _, cfg := range opened {
				switch {
				case cfg.ImageDecodes == nil:
					t.Error("opened without a decode bound")
				case tt.decodes != nil && cfg.ImageDecodes != tt.decodes:
					t.Errorf("opened with %v, want the bound given", cfg.ImageDecodes)
				case cfg.ImageDecodes != opened[0].ImageDecodes:
					t.Error("two engines opened with different bounds")
				}
			}
		})
	}
}
