// Package mistral reads documents with Mistral OCR (slot 1) over plain
// HTTP: POST {base}/v1/ocr with the image or the whole PDF as a base64 data
// URL; the answer is markdown per page. Mistral publishes no Go SDK, and
// the endpoint is one JSON request and one JSON answer.
package mistral

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	pageimage "github.com/docjobs/docjobs/internal/convert/image"
	"github.com/docjobs/docjobs/internal/provider"
)

// DefaultModel is the OCR model used when Config.Model is empty.
const DefaultModel = "mistral-ocr-latest"

// maxResponse bounds the answer read: markdown for up to 1000 pages
// (Mistral's limit), without the page images, which are not requested.
const maxResponse = 64 << 20

// Config configures one adapter.
type Config struct {
	// BaseURL is the host root, e.g. https://api.mistral.ai.
	BaseURL    string
	Model      string        // default DefaultModel
	Key        string        // sent as Authorization: Bearer
	HTTPClient *http.Client  // default: a plain client
	Timeout    time.Duration // per call, default provider.DefaultTimeout
	// ImageDecodes bounds the pages decoded at once to be fitted to the
	// vendor's limits, shared with the converter's (see
	// pageimage.Config.Decodes); nil: no bound.
	ImageDecodes pageimage.Decodes
}

// OCR is Mistral's OCR endpoint.
type OCR struct {
	cfg    Config
	client *http.Client
	url    string
}

// New returns an adapter for cfg.
func New(cfg Config) (*OCR, error) {
	switch {
	case cfg.BaseURL == "":
		return nil, errors.New("mistral: base URL is required")
	case cfg.Key == "":
		return nil, errors.New("mistral: key is required")
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	return &OCR{
		cfg:    cfg,
		client: provider.RecordingClient(cfg.HTTPClient),
		url:    strings.TrimRight(cfg.BaseURL, "/") + "/v1/ocr",
	}, nil
}

// document is the "document" member of an OCR request: an image_url chunk
// for images, a document_url chunk for PDFs, each a data URL.
type document struct {
	Type        string `json:"type"`
	ImageURL    string `json:"image_url,omitempty"`
	DocumentURL string `json:"document_url,omitempty"`
}

type request struct {
	Model              string   `json:"model"`
	Document           document `json:"document"`
	IncludeImageBase64 bool     `json:"include_image_base64"`
}

type response struct {
	Model string `json:"model"`
	Pages []struct {
		Index    int    `json:"index"`
		Markdown string `json:"markdown"`
	} `json:"pages"`
}

// accepted are the types sent. Mistral OCR reads PDFs and common image
// formats; other images are converted by the caller first.
var accepted = map[string]bool{
	"application/pdf": true,
	"image/jpeg":      true, "image/png": true, "image/webp": true, "image/gif": true,
	"image/tiff": true, "image/bmp": true, "image/avif": true,
}

// ImageLimits are Mistral OCR's: a document of at most 50 MB (counted here
// on the base64 sent, the stricter reading). Mistral documents no pixel
// limit.
var ImageLimits = pageimage.Limits{Vendor: "Mistral OCR", MaxBase64: 50_000_000}

// Accepts reports whether Recognize reads mime; it never calls the server.
func (o *OCR) Accepts(_ context.Context, mime string) (ok, known bool) {
	return accepted[mime], true
}

// Recognize reads one image, or a whole PDF (Recognition.Pages then holds
// each page's markdown). An image past ImageLimits is re-encoded or shrunk
// to fit first. Other types return an error wrapping
// provider.ErrUnsupportedInput without calling the server.
func (o *OCR) Recognize(ctx context.Context, doc provider.Document) (provider.Recognition, error) {
	if !accepted[doc.MIME] {
		return provider.Recognition{}, fmt.Errorf("mistral: %s: %w", doc.MIME, provider.ErrUnsupportedInput)
	}
	doc, err := pageimage.Fit(ctx, pageimage.Config{Decodes: o.cfg.ImageDecodes}, doc, ImageLimits)
	if err != nil {
		return provider.Recognition{}, err
	}
	dataURL := "data:" + doc.MIME + ";base64," + base64.StdEncoding.EncodeToString(doc.Data)
	req := request{Model: o.cfg.Model}
	if doc.MIME == "application/pdf" {
		req.Document = document{Type: "document_url", DocumentURL: dataURL}
	} else {
		req.Document = document{Type: "image_url", ImageURL: dataURL}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return provider.Recognition{}, fmt.Errorf("mistral: encode request: %w", err)
	}

	// A whole PDF's markdown may be large; an image is one page.
	call := provider.CallTranscription
	if doc.MIME == "application/pdf" {
		call = provider.Call
	}
	var res response
	var sent error
	ex, err := call(ctx, o.cfg.Timeout, o.cfg.Key, func(ctx context.Context) error {
		sent = o.post(ctx, o.url, body, &res)
		return sent
	})
	if err != nil {
		return provider.Recognition{}, refine(err, sent)
	}
	if res.Pages == nil {
		return provider.Recognition{}, provider.Malformed(ex.Status(), "no pages")
	}
	rec := provider.Recognition{
		Format:  "markdown",
		Model:   o.cfg.Model,
		Request: ex.Request(o.cfg.Key),
		RawData: ex.Response(o.cfg.Key),
	}
	// A page whose markdown is empty is a blank page: Mistral OCR is given
	// no prompt and has no blank-page answer, and reads a page without
	// text as "".
	var texts []string
	for _, p := range res.Pages {
		md := cleanMarkdown(p.Markdown)
		rec.Pages = append(rec.Pages, md)
		if md != "" {
			texts = append(texts, md)
		}
	}
	rec.Text = strings.Join(texts, "\n\n")
	if doc.MIME != "application/pdf" {
		rec.Pages = nil
	}
	return rec, nil
}

// errStatus marks a non-2xx answer; provider.Call classifies it by the
// status it recorded. errPromptTooLong is the 400 of a prompt over the
// model's context window, which refine tells apart.
var (
	errStatus        = errors.New("mistral: error status")
	errPromptTooLong = fmt.Errorf("%w: prompt too long", errStatus)
)

func (o *OCR) post(ctx context.Context, url string, body []byte, res any) error {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("Authorization", "Bearer "+o.cfg.Key)
	resp, err := o.client.Do(hreq)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Read (a bounded part of) the body so the exchange records it and
		// the connection can be reused; it is not put in any error.
		errBody, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if promptTooLong(errBody) {
			return errPromptTooLong
		}
		return errStatus
	}
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxResponse))
	if err := dec.Decode(res); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	return nil
}

// promptTooLong reports Mistral's error body for a prompt over the
// model's context window, by the message's fixed words: "Prompt contains
// 300000 tokens, too large for model with 131072 maximum context length".
func promptTooLong(body []byte) bool {
	var e struct {
		Message json.RawMessage `json:"message"`
	}
	var msg string
	if json.Unmarshal(body, &e) != nil || json.Unmarshal(e.Message, &msg) != nil {
		return false
	}
	return strings.HasPrefix(msg, "Prompt contains") && strings.Contains(msg, "too large for model with")
}

// refine sharpens a classified error with what post saw of the body.
func refine(err, sent error) error {
	pe := (*provider.Error)(nil)
	if errors.As(err, &pe) && pe.Category == provider.CategoryInvalidRequest && errors.Is(sent, errPromptTooLong) {
		pe.Category = provider.CategoryContextLength
		pe.Err = fmt.Errorf("%w (prompt too long)", pe.Err)
	}
	return err
}

// imageRef matches the placeholders Mistral OCR puts where a page has a
// picture (![img-0.jpeg](img-0.jpeg)); the pictures are not requested, so
// the references would point nowhere.
var (
	imageRef   = regexp.MustCompile(`!\[[^\]\n]*\]\(img-\d+\.[A-Za-z0-9]+\)`)
	blankLines = regexp.MustCompile(`\n[ \t]*\n(?:[ \t]*\n)+`)
)

func cleanMarkdown(md string) string {
	if !strings.Contains(md, "](img-") {
		return strings.TrimSpace(md)
	}
	md = imageRef.ReplaceAllString(md, "")
	return strings.TrimSpace(blankLines.ReplaceAllString(md, "\n\n"))
}
