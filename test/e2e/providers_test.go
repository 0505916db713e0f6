package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// visionVendor speaks the OpenAI chat-completions protocol, answers every
// page with a fixed transcription and records what it was sent.
type visionVendor struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []vendorCall
}

type vendorCall struct {
	auth string
	body string
}

func newVisionVendor(t *testing.T) *visionVendor {
	t.Helper()
	v := &visionVendor{}
	v.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		v.mu.Lock()
		v.calls = append(v.calls, vendorCall{auth: r.Header.Get("Authorization"), body: string(body)})
		v.mu.Unlock()
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		writeChat(w, "Transcribed by the vendor.", "stop", 10)
	}))
	t.Cleanup(v.srv.Close)
	return v
}

func (v *visionVendor) callCount() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.calls)
}

func visionJob(urls []string, mode string) map[string]any {
	body := createBody(urls...)
	body["ocr"] = map[string]any{"provider": "NEURAL_CLIENT_TYPE_PROVIDER_2", "model": "vision-1", "providerKey": "sk-ocr-VENDOR-KEY-42"}
	if mode != "" {
		body["extractionMode"] = mode
	}
	return body
}

func TestHybridReadsTheTextLayerAndOCRAlwaysPaysTheProvider(t *testing.T) {
	t.Parallel()
	pdf, err := os.ReadFile("testdata/simple-openoffice.pdf")
	if err != nil {
		t.Fatal(err)
	}
	vendor := newVisionVendor(t)
	src := sources(t, map[string]string{"simple.pdf": string(pdf)})
	s := startServer(t, "", "DOCJOBS_PROVIDER_2_BASE_URL="+vendor.srv.URL+"/v1")

	hybrid := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, visionJob([]string{src + "/simple.pdf"}, ""))["id"].(string)
	s.waitTerminal(hybrid, keyA, time.Minute)
	row := ocrRow(t, s, hybrid, 0)
	if row["status"] != "JOB_OCR_STATUS_DONE" || row["outputFormat"] != "html" ||
		!strings.Contains(row["content"].(string), "I am a simple pdf.") || !strings.Contains(row["content"].(string), `data-page="1"`) {
		t.Fatalf("HYBRID row = %v", row)
	}
	if n := vendor.callCount(); n != 0 {
		t.Fatalf("HYBRID on a text-layer PDF called the provider %d times, want 0", n)
	}

	always := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, visionJob([]string{src + "/simple.pdf"}, "EXTRACTION_MODE_OCR_ALWAYS"))["id"].(string)
	s.waitTerminal(always, keyA, time.Minute)
	row = ocrRow(t, s, always, 0)
	if row["status"] != "JOB_OCR_STATUS_DONE" || !strings.Contains(row["content"].(string), "Transcribed by the vendor.") {
		t.Fatalf("OCR_ALWAYS row = %v", row)
	}
	if n := vendor.callCount(); n != 1 {
		t.Fatalf("OCR_ALWAYS on a one-page PDF called the provider %d times, want 1", n)
	}
	call := vendor.calls[0]
	if call.auth != "Bearer sk-ocr-VENDOR-KEY-42" || strings.Contains(call.body, "VENDOR-KEY") || !strings.Contains(call.body, "data:image/jpeg;base64,") {
		t.Fatalf("vendor got auth %q and a body without the page image or with the key", call.auth)
	}
	for _, f := range []string{"request", "rawData", "error", "model"} {
		if v, _ := row[f].(string); strings.Contains(v, "VENDOR-KEY") {
			t.Fatalf("row %s holds the provider key", f)
		}
	}
	if req, _ := row["request"].(string); req == "" || strings.Contains(req, "/9j/") {
		t.Errorf("row request should record the exchange with the image elided: %.300s", req)
	}
}

func ocrRow(t *testing.T, s *server, id string, i int) map[string]any {
	t.Helper()
	res := s.mustDo(http.StatusOK, "GET", "/v1/jobs/"+id+"/result", keyA, nil)["result"].(map[string]any)
	return res["ocr"].([]any)[i].(map[string]any)
}

func TestTesseractReadsAScanOffline(t *testing.T) {
	t.Parallel()
	tif, err := os.ReadFile("testdata/phototest.tif")
	if err != nil {
		t.Fatal(err)
	}
	src := sources(t, map[string]string{"scan.tif": string(tif)})
	s := startServer(t, "")
	body := createBody(src + "/scan.tif")
	body["ocr"] = map[string]any{"provider": "NEURAL_CLIENT_TYPE_PROVIDER_8", "model": "tesseract", "providerKey": "unused"}
	id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, body)["id"].(string)
	if j := s.waitTerminal(id, keyA, 2*time.Minute); j["status"] != "JOB_STATUS_COMPLETE" {
		t.Fatalf("job ended %v", j["status"])
	}
	row := ocrRow(t, s, id, 0)
	content, _ := row["content"].(string)
	if row["outputFormat"] != "markdown" || !strings.HasPrefix(row["model"].(string), "tesseract") ||
		!strings.Contains(content, "quick brown dog") {
		t.Fatalf("row = %v", row)
	}
}

func TestOnlyTheScannedPageOfAPDFGoesToTheProvider(t *testing.T) {
	t.Parallel()
	pdf, err := os.ReadFile("testdata/scan-page2.pdf")
	if err != nil {
		t.Fatal(err)
	}
	vendor := newVisionVendor(t)
	src := sources(t, map[string]string{"mixed.pdf": string(pdf)})
	s := startServer(t, "", "DOCJOBS_PROVIDER_2_BASE_URL="+vendor.srv.URL+"/v1")
	id := s.mustDo(http.StatusOK, "POST", "/v1/jobs", keyA, visionJob([]string{src + "/mixed.pdf"}, ""))["id"].(string)
	s.waitTerminal(id, keyA, time.Minute)
	row := ocrRow(t, s, id, 0)
	content, _ := row["content"].(string)
	if row["status"] != "JOB_OCR_STATUS_DONE" || !strings.Contains(content, `data-page="2"`) || !strings.Contains(content, "Transcribed by the vendor.") {
		t.Fatalf("row = %v", row)
	}
	if n := vendor.callCount(); n != 1 {
		t.Fatalf("provider called %d times for a PDF with one scanned page, want 1", n)
	}
	if m := row["model"].(string); !strings.HasPrefix(m, "pdftotext+") {
		t.Errorf("model = %q, want pdftotext+<vision model> for a mixed PDF", m)
	}
}
