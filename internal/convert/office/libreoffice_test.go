package office

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gabriel-vasile/mimetype"
	"github.com/xuri/excelize/v2"
)

// TestNoLibreOffice: legacy formats and PDF rendering say LibreOffice is
// missing rather than failing obscurely.
func TestNoLibreOffice(t *testing.T) {
	doc := readTestdata(t, "doc/test2.doc")
	missing := Config{Soffice: filepath.Join(t.TempDir(), "soffice")}
	_, _, err := Markdown(context.Background(), missing, mimetype.Detect(doc).String(), doc)
	if !errors.Is(err, ErrNoLibreOffice) || !strings.Contains(err.Error(), "not installed") {
		t.Errorf("Markdown = %v, want ErrNoLibreOffice", err)
	}
	// A DOCX needs LibreOffice only to be rendered for OCR_ALWAYS: the
	// message names the mode and the way out, not the file type.
	_, err = ToPDF(context.Background(), missing, DOCX, readTestdata(t, "docx/TestDocument.docx"))
	want := "OCR_ALWAYS renders office files through LibreOffice, which is not installed on this server; use EXTRACTION_MODE_HYBRID or install libreoffice"
	if !errors.Is(err, ErrNoLibreOffice) || err.Error() != want {
		t.Errorf("ToPDF(DOCX) = %v, want ErrNoLibreOffice saying %q", err, want)
	}
	// A legacy file needs it in either mode.
	_, err = ToPDF(context.Background(), missing, mimetype.Detect(doc).String(), doc)
	if !errors.Is(err, ErrNoLibreOffice) || !strings.HasPrefix(err.Error(), ErrNoLibreOffice.Error()) {
		t.Errorf("ToPDF(DOC) = %v, want %v", err, ErrNoLibreOffice)
	}

	t.Setenv("PATH", t.TempDir())
	_, _, err = Markdown(context.Background(), Config{}, XLS, readTestdata(t, "xls_ods/testEXCEL.xls"))
	if !errors.Is(err, ErrNoLibreOffice) {
		t.Errorf("Markdown with an empty PATH = %v, want ErrNoLibreOffice", err)
	}
}

// fakeSoffice writes a shell script standing in for LibreOffice.
func fakeSoffice(t *testing.T, script string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "soffice")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// shellQuote quotes s for sh: LibreOffice's environment is the
// converter's own, so a fake soffice is told where to write in its text.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// TestLibreOfficeTimeoutKillsItsProcesses: a conversion past the timeout
// fails with a sentence, and the launcher's children die with it.
func TestLibreOfficeTimeoutKillsItsProcesses(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	// Like soffice, the launcher starts the real worker and waits for it.
	bin := fakeSoffice(t, `sleep 60 & echo $! > `+shellQuote(pidFile)+`; wait`)
	start := time.Now()
	_, _, err := Markdown(context.Background(), Config{Soffice: bin, Timeout: 500 * time.Millisecond}, DOC, readTestdata(t, "doc/test2.doc"))
	if err == nil || err.Error() != "LibreOffice took longer than the 500ms limit to convert the file" {
		t.Fatalf("Markdown = %v", err)
	}
	if elapsed := time.Since(start); elapsed > 10*time.Second {
		t.Errorf("took %v", elapsed)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d still running after the timeout", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether a process runs; a zombie waiting to be reaped
// by init has been killed.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// pid (comm) state …: the state follows the last parenthesis.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestLibreOfficeFailureSaysWhy: LibreOffice's own complaint reaches the row.
func TestLibreOfficeFailureSaysWhy(t *testing.T) {
	bin := fakeSoffice(t, `echo "Error: source file could not be loaded" >&2; exit 1`)
	_, _, err := Markdown(context.Background(), Config{Soffice: bin}, DOC, readTestdata(t, "doc/test2.doc"))
	want := "LibreOffice could not convert the file: Error: source file could not be loaded (exit status 1)"
	if err == nil || err.Error() != want {
		t.Errorf("Markdown = %v, want %q", err, want)
	}
}

// LibreOffice works on a copy of the document: in the directory
// Config.TempDir gives (serve's own, emptied at start), never in the
// system's, where a crash would leave the copy for good.
func TestLibreOfficeWorksInTheGivenTempDir(t *testing.T) {
	system, own := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", system)
	pwdFile := filepath.Join(t.TempDir(), "pwd")
	bin := fakeSoffice(t, `pwd > `+shellQuote(pwdFile)+`; exit 1`)
	cfg := Config{Soffice: bin, TempDir: func(context.Context) (string, error) { return own, nil }}
	if _, _, err := Markdown(context.Background(), cfg, DOC, readTestdata(t, "doc/test2.doc")); err == nil {
		t.Fatal("a LibreOffice that failed converted")
	}
	pwd, err := os.ReadFile(pwdFile)
	if err != nil {
		t.Fatal(err)
	}
	if dir := strings.TrimSpace(string(pwd)); filepath.Dir(dir) != own {
		t.Errorf("LibreOffice ran in %s, want a folder of %s", dir, own)
	}
	for _, d := range []string{system, own} {
		if left, _ := os.ReadDir(d); len(left) != 0 {
			t.Errorf("left in %s: %v", d, left)
		}
	}
}

// The directory may not be ready yet (serve's waits for the node id): a
// conversion ended meanwhile ends with its context.
func TestAConversionWaitingForTheTempDirEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cfg := Config{TempDir: func(ctx context.Context) (string, error) {
		cancel() // the job is cancelled while its conversion waits
		<-ctx.Done()
		return "", ctx.Err()
	}}
	data := workbook(t, func(f *excelize.File, s string) { set(t, f, s, "A1", "x") })
	if _, _, err := Markdown(ctx, cfg, XLSX, data); !errors.Is(err, context.Canceled) {
		t.Errorf("Markdown = %v, want context.Canceled", err)
	}
}

// TestOLEContainers: what an OLE compound file holds decides its fate.
func TestOLEContainers(t *testing.T) {
	f := excelize.NewFile()
	_ = f.SetCellValue("Sheet1", "A1", "secret")
	var enc bytes.Buffer
	if err := f.Write(&enc, excelize.Options{Password: "pw"}); err != nil {
		t.Fatal(err)
	}
	encrypted := enc.Bytes()
	for _, kind := range []string{mimetype.Detect(encrypted).String(), XLSX} {
		_, _, err := Markdown(context.Background(), Config{}, kind, encrypted)
		if !errors.Is(err, ErrEncrypted) || !strings.Contains(err.Error(), "password-protected") {
			t.Errorf("Markdown(%s) of an encrypted workbook = %v, want ErrEncrypted", kind, err)
		}
	}
	corrupt := append(append([]byte{}, oleMagic...), make([]byte, 600)...)
	_, _, err := Markdown(context.Background(), Config{}, OLE, corrupt)
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("Markdown of a corrupt OLE file = %v, want ErrInvalid", err)
	}
	_, _, err = Markdown(context.Background(), Config{}, "application/x-foo", []byte("x"))
	if !errors.Is(err, ErrUnsupported) || err.Error() != "unsupported file type application/x-foo" {
		t.Errorf("Markdown of another type = %v", err)
	}
}

// TestLegacyFormats converts legacy and OpenDocument files through
// LibreOffice and reads the result natively; TestCorpusExpectations covers
// DOC, XLS and ODS from the corpus, so the PPT and ODT inputs here are
// made by LibreOffice from corpus files.
func TestLegacyFormats(t *testing.T) {
	needSoffice(t)
	bin, _ := sofficePath(Config{})
	cfg := Config{}.withDefaults()
	tests := []struct {
		name      string
		kind      string
		data      func(t *testing.T) []byte
		wantModel string
		want      string
	}{
		{"PowerPoint 97", PPT, func(t *testing.T) []byte {
			data, err := convertWithLibreOffice(context.Background(), cfg, bin, readTestdata(t, "pptx/sample.pptx"), "pptx", "ppt")
			if err != nil {
				t.Fatal(err)
			}
			return data
		}, "libreoffice+pptx", "## Slide 2: Lorem ipsum dolor sit amet\n\n- Lorem\n- ipsum"},
		{"OpenDocument text", ODT, func(t *testing.T) []byte {
			data, err := convertWithLibreOffice(context.Background(), cfg, bin, readTestdata(t, "docx/TestDocument.docx"), "docx", "odt")
			if err != nil {
				t.Fatal(err)
			}
			return data
		}, "libreoffice+docx", "We have a [hyperlink](http://poi.apache.org/) here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			md, model := markdown(t, Config{}, tt.kind, tt.data(t))
			if model != tt.wantModel {
				t.Errorf("model = %q, want %q", model, tt.wantModel)
			}
			if !strings.Contains(md, tt.want) {
				t.Errorf("markdown lacks %q:\n%s", tt.want, md)
			}
		})
	}
}

// TestToPDF renders through LibreOffice for OCR_ALWAYS.
func TestToPDF(t *testing.T) {
	needSoffice(t)
	t.Parallel()
	pdf, err := ToPDF(context.Background(), Config{}, DOCX, readTestdata(t, "docx/TestDocument.docx"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(pdf, []byte("%PDF-")) {
		t.Errorf("not a PDF: %q", pdf[:min(len(pdf), 16)])
	}
}
