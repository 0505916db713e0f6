package convert

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docjobs/docjobs/internal/convert/office"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/provider/providertest"
	"github.com/docjobs/docjobs/internal/provider/slots"
)

// fakeSofficeOnPATH puts a stand-in for LibreOffice first on PATH: it
// "converts" its input by copying the PDF at pdfPath into --outdir under
// the input's name with .pdf, as `soffice --convert-to pdf` names its output.
func fakeSofficeOnPATH(t *testing.T, pdfPath string) {
	t.Helper()
	abs, err := filepath.Abs(pdfPath)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := `#!/bin/sh
out=""
for a in "$@"; do
	if [ "$prev" = "--outdir" ]; then out="$a"; fi
	prev="$a"
	in="$a"
done
name=$(basename "$in")
cp '` + abs + `' "$out/${name%.*}.pdf"
`
	if err := os.WriteFile(filepath.Join(dir, "soffice"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestOCRAlwaysRendersOfficeFilesThroughLibreOfficeForTheProvider: under
// OCR_ALWAYS a DOCX, PPTX or XLSX is rendered to PDF by LibreOffice and
// every page read by the job's provider; the row is markdown.
func TestOCRAlwaysRendersOfficeFilesThroughLibreOfficeForTheProvider(t *testing.T) {
	fakeSofficeOnPATH(t, "pdf/testdata/pdfbox/simple-openoffice.pdf")
	const answer = `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"# Read by the vendor"},"finish_reason":"stop"}]}`
	for _, name := range []string{"docx/TestDocument.docx", "pptx/sample.pptx", "xlsx/sample.xlsx"} {
		t.Run(name, func(t *testing.T) {
			srv := providertest.NewServer(t, providertest.Reply(200, answer))
			ocr, err := slots.New(slots.Config{BaseURLs: map[int]string{2: srv.URL + "/v1"}}).OCR(slots.SlotPrefix+"2", "gpt-4o", "test-key")
			if err != nil {
				t.Fatal(err)
			}
			data := readFile(t, filepath.Join("office", "testdata", "corpus", name))
			out, err := New(Config{}).Convert(context.Background(), Input{Name: filepath.Base(name), Data: data, Mode: job.ExtractionOCRAlways, OCR: ocr})
			if err != nil {
				t.Fatalf("Convert: %v", err)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 || out.ProviderCalls != 1 {
				t.Fatalf("provider got %d requests (ProviderCalls %d), want the one page", len(reqs), out.ProviderCalls)
			}
			if mime, _ := sentImage(t, false, reqs[0].Body); mime != "image/jpeg" {
				t.Errorf("page sent as %s, want a rendered JPEG", mime)
			}
			if out.Format != job.FormatMarkdown || out.Content != "# Read by the vendor" || out.Model != "libreoffice+gpt-4o" {
				t.Errorf("row = %s %q (model %q), want the provider's markdown", out.Format, out.Content, out.Model)
			}
		})
	}
}

func TestOCRAlwaysOnAnOfficeFileWithoutLibreOfficeSaysWhatToChange(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	ocr := &pageOCR{}
	data := readFile(t, "office/testdata/corpus/docx/TestDocument.docx")
	_, err := New(Config{}).Convert(context.Background(), Input{Name: "a.docx", Data: data, Mode: job.ExtractionOCRAlways, OCR: ocr})
	want := "OCR_ALWAYS renders office files through LibreOffice, which is not installed on this server; use EXTRACTION_MODE_HYBRID or install libreoffice"
	if !errors.Is(err, office.ErrNoLibreOffice) || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if len(ocr.docs) != 0 {
		t.Errorf("the provider was called %d times", len(ocr.docs))
	}
	// HYBRID reads the same file natively.
	out, err := New(Config{}).Convert(context.Background(), Input{Name: "a.docx", Data: data, Mode: job.ExtractionHybrid, OCR: ocr})
	if err != nil || out.Format != job.FormatMarkdown || !strings.Contains(out.Content, "This is a test document.") {
		t.Fatalf("HYBRID: %v, %s %.80q", err, out.Format, out.Content)
	}
}
