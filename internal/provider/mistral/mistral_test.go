package mistral_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/provider/mistral"
	"github.com/docjobs/docjobs/internal/provider/providertest"
)

const key = "mistral-test-0123456789abcdefKEY"

func open(t *testing.T, baseURL string, timeout time.Duration) provider.OCR {
	t.Helper()
	ocr, err := mistral.New(mistral.Config{BaseURL: baseURL, Key: key, Timeout: timeout})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return ocr
}

// pages is an OCR answer with one page per markdown text, as Mistral
// sends it (dimensions, images and usage included).
func pages(markdown ...string) string {
	var b strings.Builder
	b.WriteString(`{"model":"mistral-ocr-2505","pages":[`)
	for i, md := range markdown {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"index":` + strconv.Itoa(i) + `,"markdown":` + quote(md) +
			`,"images":[],"dimensions":{"dpi":200,"height":2200,"width":1700}}`)
	}
	b.WriteString(`],"usage_info":{"pages_processed":` + strconv.Itoa(len(markdown)) + `,"doc_size_bytes":3000}}`)
	return b.String()
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

func TestOCRProtocol(t *testing.T) {
	providertest.Run(t, providertest.Vendor{
		Path: "/v1/ocr",
		Key:  key,
		New:  open,
		KeyFromHeader: func(h http.Header) string {
			return strings.TrimPrefix(h.Get("Authorization"), "Bearer ")
		},
		Success:     pages("# Invoice 42\n\nTotal: 10 EUR"),
		Answer:      func(text string) string { return pages(text) },
		SuccessText: "# Invoice 42\n\nTotal: 10 EUR",
		Unauthorized: func(echo string) string {
			return `{"message":"Unauthorized ` + echo + `","request_id":"abc"}`
		},
		Payload: func(t *testing.T, body []byte) string {
			s, _ := providertest.Field(t, body, "document", "image_url").(string)
			return strings.TrimPrefix(s, "data:image/png;base64,")
		},
		Doc: providertest.TestImage(),
	})
}

func TestRequestShape(t *testing.T) {
	pdf := []byte("%PDF-1.7\n" + strings.Repeat("stream of page content ", 20))
	cases := []struct {
		name string
		doc  provider.Document
		want map[string]any
	}{
		{"an image goes as an image_url data URL", providertest.TestImage(), map[string]any{
			"model": mistral.DefaultModel, "document.type": "image_url",
			"document.image_url":   "data:image/png;base64," + base64.StdEncoding.EncodeToString(providertest.TestImage().Data),
			"include_image_base64": false,
		}},
		{"a PDF goes whole as a document_url data URL", provider.Document{Data: pdf, MIME: "application/pdf", Format: "html"}, map[string]any{
			"model": mistral.DefaultModel, "document.type": "document_url",
			"document.document_url": "data:application/pdf;base64," + base64.StdEncoding.EncodeToString(pdf),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, providertest.Reply(200, pages("x")))
			if _, err := open(t, srv.URL, time.Second).Recognize(t.Context(), c.doc); err != nil {
				t.Fatalf("Recognize: %v", err)
			}
			r := srv.Requests()[0]
			for path, want := range c.want {
				var p []any
				for _, k := range strings.Split(path, ".") {
					p = append(p, k)
				}
				if got := providertest.Field(t, r.Body, p...); got != want {
					t.Errorf("%s = %.60v, want %.60v", path, got, want)
				}
			}
			if ct := r.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
		})
	}
}

func TestPDFPages(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply(200, pages(
		"# Page one\n\n![img-0.jpeg](img-0.jpeg)\n\nText after the figure.",
		"",
		"Page three",
	)))
	rec, err := open(t, srv.URL, time.Second).Recognize(t.Context(), provider.Document{Data: []byte("%PDF-1.7"), MIME: "application/pdf", Format: "html"})
	if err != nil {
		t.Fatalf("Recognize: %v", err)
	}
	want := []string{"# Page one\n\nText after the figure.", "", "Page three"}
	if strings.Join(rec.Pages, "|") != strings.Join(want, "|") {
		t.Errorf("pages = %q, want %q (picture placeholders dropped, blank page empty)", rec.Pages, want)
	}
	if rec.Text != want[0]+"\n\n"+want[2] {
		t.Errorf("text = %q", rec.Text)
	}
	if rec.Format != "markdown" || rec.Model != mistral.DefaultModel {
		t.Errorf("format %q model %q: Mistral answers markdown, model is the configured one", rec.Format, rec.Model)
	}
}

// Mistral OCR is given no prompt, so it has no blank-page answer: an
// image without text reads as empty markdown, which is a blank page, not
// a failed call.
func TestAnEmptyPageIsBlank(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply(200, pages("")))
	rec, err := provider.WithRetry(open(t, srv.URL, time.Second), provider.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond}).
		Recognize(t.Context(), providertest.TestImage())
	if err != nil || rec.Text != "" {
		t.Fatalf("text %q, err %v; want a blank page", rec.Text, err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("calls = %d, want 1", n)
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		want   provider.Category
	}{
		{"422 validation error is an invalid request", 422, `{"object":"error","message":{"detail":[{"type":"missing","loc":["body","document"]}]},"type":"invalid_request_error"}`, provider.CategoryInvalidRequest},
		{"404 unknown model", 404, `{"object":"error","message":"Invalid model: x","type":"invalid_model","code":"1500"}`, provider.CategoryNotFound},
		{"503 is a server error", 503, `upstream connect error`, provider.CategoryServer},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewServer(t, providertest.Reply(c.status, c.body))
			_, err := open(t, srv.URL, time.Second).Recognize(t.Context(), providertest.TestImage())
			providertest.AssertCategory(t, err, c.want, c.status)
		})
	}
}

func TestUnsupportedInput(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply(200, pages("x")))
	_, err := open(t, srv.URL, time.Second).Recognize(t.Context(), provider.Document{Data: []byte("P5"), MIME: "image/x-portable-graymap"})
	if !errors.Is(err, provider.ErrUnsupportedInput) || len(srv.Requests()) != 0 {
		t.Fatalf("err = %v, calls %d; want ErrUnsupportedInput and no call", err, len(srv.Requests()))
	}
}

func TestNewNeedsAKey(t *testing.T) {
	if _, err := mistral.New(mistral.Config{BaseURL: "http://127.0.0.1:1"}); err == nil {
		t.Fatal("New without a key succeeded")
	}
}

// TestAnEchoedKeyLeavesNoPageNorDebugField: wrapped with the job's
// secrets, a 200 answer whose pages quote this key, another key of the job
// and their encodings keeps none of them in the pages, the text or rawData.
func TestAnEchoedKeyLeavesNoPageNorDebugField(t *testing.T) {
	const other = "sk-model-key-of-the-same-job-42"
	echo := func(s string) string {
		return s + " " + base64.StdEncoding.EncodeToString([]byte(s)) + " " + strconv.Quote(s)
	}
	srv := providertest.NewServer(t, providertest.Reply(200, pages("page one "+echo(key), "page two "+echo(other))))
	ocr := provider.RedactOCR(open(t, srv.URL, time.Second), provider.NewSecrets(key, other))
	rec, err := ocr.Recognize(t.Context(), provider.Document{Data: []byte("%PDF-1.7"), MIME: "application/pdf", Format: "html"})
	if err != nil {
		t.Fatalf("Recognize: %v", err)
	}
	for field, text := range map[string]string{"pages": strings.Join(rec.Pages, "|"), "text": rec.Text, "rawData": rec.RawData} {
		for _, s := range []string{key, other, base64.StdEncoding.EncodeToString([]byte(key)), base64.StdEncoding.EncodeToString([]byte(other))} {
			if strings.Contains(text, s) {
				t.Errorf("%s keeps %q: %s", field, s, text)
			}
		}
	}
	if len(rec.Pages) != 2 || !strings.HasPrefix(rec.Pages[1], "page two [key elided]") {
		t.Errorf("pages = %q, want the pages with the keys elided", rec.Pages)
	}
}

// A whole PDF's markdown, up to a thousand pages, may be larger than what
// one page's answer is allowed (provider.CallTranscription).
func TestAPDFsAnswerIsReadPastAPagesLimit(t *testing.T) {
	text := strings.Repeat("word ", provider.MaxAnswerBytes/5+1)
	srv := providertest.NewServer(t, providertest.Reply(200, pages(text)))
	rec, err := open(t, srv.URL, 10*time.Second).Recognize(t.Context(), provider.Document{Data: []byte("%PDF-1.7"), MIME: "application/pdf", Format: "html"})
	if err != nil {
		t.Fatalf("Recognize: %v", err)
	}
	if rec.Text != strings.TrimSpace(text) {
		t.Errorf("text of %d bytes, want %d", len(rec.Text), len(strings.TrimSpace(text)))
	}
}
