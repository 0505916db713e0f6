package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/docjobs/docjobs/internal/job"
)

// multipartBody builds a small multipart body in memory.
func multipartBody(t *testing.T, fields map[string]string, fileField, fileName, content string) (string, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		if err := mw.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if fileField != "" {
		fw, err := mw.CreateFormFile(fileField, fileName)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write([]byte(content))
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return mw.FormDataContentType(), &buf
}

// streamedUpload returns a multipart body that produces size bytes of file
// content on the fly, so the client never holds the file either. Before
// the last chunk it runs beforeLast (nil: nothing); if the returned body is
// closed early it stops.
func streamedUpload(size int64, beforeLast func() error) (contentType string, body io.ReadCloser) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		fw, err := mw.CreateFormFile("file", "big.bin")
		if err != nil {
			pw.CloseWithError(err)
			return
		}
		chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB, reused
		for sent := int64(0); sent < size; {
			n := min(int64(len(chunk)), size-sent)
			if sent+n >= size && beforeLast != nil {
				if err := beforeLast(); err != nil {
					pw.CloseWithError(err)
					return
				}
			}
			if _, err := fw.Write(chunk[:n]); err != nil {
				pw.CloseWithError(err)
				return
			}
			sent += n
		}
		pw.CloseWithError(mw.Close())
	}()
	return mw.FormDataContentType(), pr
}

func TestUploadStoresTheFileAndAnswersSnakeCase(t *testing.T) {
	env := startServer(t)
	content := "hello, docjobs\n"
	ct, body := multipartBody(t, map[string]string{"note": "skipped"}, "file", `C:\Users\me\..\notes.txt`, content)
	resp := env.do("POST", "/v1/jobs/upload", keyAlice, ct, body)
	raw := readBody(t, resp)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
	m := decodeObject(t, raw)
	want := map[string]any{
		"url":        "http://docjobs.test/v1/files/file-1",
		"name":       "notes.txt",
		"size_bytes": json.Number(fmt.Sprint(len(content))), // an integer, not a string
	}
	if fmt.Sprint(m) != fmt.Sprint(want) {
		t.Errorf("body = %s, want %v", raw, want)
	}
	stored, err := os.ReadFile(filepath.Join(env.files.dir, "file-1"))
	if err != nil || string(stored) != content {
		t.Errorf("stored %q, %v", stored, err)
	}
}

func TestUploadRefusesBadRequestsWithoutDetails(t *testing.T) {
	env := startServer(t)
	noFileCT, noFile := multipartBody(t, map[string]string{"name": "x"}, "", "", "")
	otherCT, other := multipartBody(t, nil, "document", "a.txt", "x")
	tests := []struct {
		name        string
		contentType string
		body        io.Reader
		wantMessage string
	}{
		{"a JSON body", "application/json", strings.NewReader(`{"name":"a","content":"eA=="}`), "multipart/form-data"},
		{"multipart without a boundary", "multipart/form-data", strings.NewReader("x"), "multipart/form-data"},
		{"no Content-Type", "", strings.NewReader("x"), "multipart/form-data"},
		{"a form without any file", noFileCT, noFile, `"file" is missing`},
		{"a file under another field name", otherCT, other, `"file" is missing`},
		{"a body that is not multipart after all", "multipart/form-data; boundary=xyz", strings.NewReader("garbage"), `"file" is missing`},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is 400", func(t *testing.T) {
			resp := env.do("POST", "/v1/jobs/upload", keyAlice, tt.contentType, tt.body)
			m := wantStatusBody(t, resp, 400, codes.InvalidArgument, false)
			if msg := m["message"].(string); !strings.Contains(msg, tt.wantMessage) {
				t.Errorf("message %q lacks %q", msg, tt.wantMessage)
			}
		})
	}
}

// panickingFiles is storage whose StoreUpload panics, as a driver bug would.
type panickingFiles struct{ *diskFiles }

func (panickingFiles) StoreUpload(context.Context, string, io.Reader) (job.File, string, error) {
	panic("storage exploded")
}

// The spec gives every upload failure the body {code, message}, with no
// details array; a panic is one too, answered by the recovery every route
// shares.
func TestAnUploadThatPanicsIsInternalWithoutDetails(t *testing.T) {
	env := startServer(t, func(_ *Config, d *Deps) { d.Files = panickingFiles{d.Files.(*diskFiles)} })
	ct, body := multipartBody(t, nil, "file", "a.txt", "x")
	m := wantStatusBody(t, env.do("POST", "/v1/jobs/upload", keyAlice, ct, body), 500, codes.Internal, false)
	if msg := m["message"].(string); !strings.HasPrefix(msg, "internal error (id=") || strings.Contains(msg, "exploded") {
		t.Errorf("message = %q, want the error id only", msg)
	}
	// The other routes keep their details array.
	wantStatusBody(t, env.doJSON("GET", "/v1/jobs/panic/result", keyAlice, ""), 500, codes.Internal, true)
}

func TestUploadAboveTheLimitIsRefusedWhileMemoryStaysFlat(t *testing.T) {
	env := startServer(t)
	var (
		mu   sync.Mutex
		peak uint64
		next int64
	)
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		mu.Lock()
		peak = max(peak, ms.HeapInuse)
		mu.Unlock()
	}
	env.files.onRead = func(total int64) {
		mu.Lock()
		due := total >= next // every 2 MiB: ReadMemStats stops the world
		if due {
			next = total + 2<<20
		}
		mu.Unlock()
		if due {
			sample()
		}
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	ct, body := streamedUpload(21<<20, nil)
	defer body.Close()
	resp := env.do("POST", "/v1/jobs/upload", keyAlice, ct, body)
	m := wantStatusBody(t, resp, http.StatusRequestEntityTooLarge, codes.ResourceExhausted, false)
	if msg := m["message"]; msg != "file exceeds the upload limit of 20971520 bytes" {
		t.Errorf("message = %q", msg)
	}
	sample()
	mu.Lock()
	defer mu.Unlock()
	if peak == 0 || next < 20<<20 {
		t.Fatalf("storage read only %d bytes; the test did not stream the file", next)
	}
	t.Logf("grew %d KiB", (int64(peak)-int64(before.HeapInuse))>>10)
	if grew := int64(peak) - int64(before.HeapInuse); grew > 8<<20 {
		t.Errorf("heap in use grew by %d MiB during a 21 MiB upload; the file was buffered", grew>>20)
	}
}

func TestUploadReachesStorageBeforeTheBodyEnds(t *testing.T) {
	env := startServer(t)
	firstRead := make(chan struct{})
	var once sync.Once
	env.files.onFirstRead = func() { once.Do(func() { close(firstRead) }) }
	// The client holds back the last chunk until storage has read: a
	// handler that buffered the whole body first would never get there.
	ct, body := streamedUpload(3<<20, func() error {
		select {
		case <-firstRead:
			return nil
		case <-time.After(5 * time.Second):
			return fmt.Errorf("storage saw nothing before the end of the body")
		}
	})
	defer body.Close()
	resp := env.do("POST", "/v1/jobs/upload", keyAlice, ct, body)
	raw := readBody(t, resp)
	if resp.StatusCode != 200 || decodeObject(t, raw)["size_bytes"] != json.Number(fmt.Sprint(3<<20)) {
		t.Errorf("status %d: %s", resp.StatusCode, raw)
	}
}

func TestUploadRefusedByStorageIsTooLarge(t *testing.T) {
	env := startServer(t)
	env.files.limit = 1 << 10 // storage stricter than the edge
	ct, body := multipartBody(t, nil, "file", "a.bin", strings.Repeat("x", 2<<10))
	resp := env.do("POST", "/v1/jobs/upload", keyAlice, ct, body)
	wantStatusBody(t, resp, http.StatusRequestEntityTooLarge, codes.ResourceExhausted, false)
}

func TestUploadBodyLimitCoversOtherFields(t *testing.T) {
	env := startServer(t)
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		w, _ := mw.CreateFormField("padding")
		chunk := make([]byte, 64<<10)
		for range (DefaultUploadMaxBytes + 2<<20) / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(mw.Close())
	}()
	defer pr.Close()
	resp := env.do("POST", "/v1/jobs/upload", keyAlice, mw.FormDataContentType(), pr)
	wantStatusBody(t, resp, http.StatusRequestEntityTooLarge, codes.ResourceExhausted, false)
}

func TestUploadCutOffMidFileIsABadRequest(t *testing.T) {
	env := startServer(t)
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile("file", "a.txt")
	_, _ = fw.Write([]byte("half a file"))
	// No closing boundary: the body ends inside the part.
	resp := env.do("POST", "/v1/jobs/upload", keyAlice, mw.FormDataContentType(), &buf)
	m := wantStatusBody(t, resp, 400, codes.InvalidArgument, false)
	if msg := m["message"].(string); !strings.Contains(msg, "incomplete multipart body") {
		t.Errorf("message = %q", msg)
	}
}

func TestDownload(t *testing.T) {
	env := startServer(t)
	upload := func(name, content string) string {
		t.Helper()
		ct, body := multipartBody(t, nil, "file", name, content)
		resp := env.do("POST", "/v1/jobs/upload", keyAlice, ct, body)
		url := decodeObject(t, readBody(t, resp))["url"].(string)
		return url[strings.LastIndex(url, "/")+1:]
	}
	plain := upload("notes.txt", "some text")
	accented := upload("résumé.txt", "é")

	t.Run("the owner downloads the file as an attachment", func(t *testing.T) {
		resp := env.do("GET", "/v1/files/"+plain, keyAlice, "", nil)
		body := readBody(t, resp)
		h := resp.Header
		if resp.StatusCode != 200 || body != "some text" {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
		for k, want := range map[string]string{
			"Content-Type":           "text/plain; charset=utf-8",
			"Content-Length":         "9",
			"Content-Disposition":    `attachment; filename=notes.txt`,
			"X-Content-Type-Options": "nosniff",
		} {
			if h.Get(k) != want {
				t.Errorf("%s = %q, want %q", k, h.Get(k), want)
			}
		}
	})
	t.Run("a non-ASCII name is encoded per RFC 2231", func(t *testing.T) {
		resp := env.do("GET", "/v1/files/"+accented, keyAlice, "", nil)
		if got := resp.Header.Get("Content-Disposition"); got != `attachment; filename*=utf-8''r%C3%A9sum%C3%A9.txt` {
			t.Errorf("Content-Disposition = %q", got)
		}
	})
	for _, tt := range []struct{ name, id, key string }{
		{"another account's file is a JSON 404 saying file not found", plain, keyBob},
		{"an unknown file is a JSON 404 saying file not found", "nope", keyAlice},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := wantStatusBody(t, env.do("GET", "/v1/files/"+tt.id, tt.key, "", nil), 404, codes.NotFound, true)
			if m["message"] != "file not found" {
				t.Errorf("message = %q, want %q", m["message"], "file not found")
			}
		})
	}
}

// formPart is one part of a multipart body built by multipartParts.
type formPart struct {
	field, fileName, content string // fileName "" makes a plain form field
}

// multipartParts builds a multipart body of parts in order; unclosed leaves
// out the closing boundary, as a body cut off after its last part.
func multipartParts(t *testing.T, unclosed bool, parts ...formPart) (string, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		var w io.Writer
		var err error
		if p.fileName != "" {
			w, err = mw.CreateFormFile(p.field, p.fileName)
		} else {
			w, err = mw.CreateFormField(p.field)
		}
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(p.content))
	}
	if !unclosed {
		if err := mw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return mw.FormDataContentType(), &buf
}

func TestUploadTakesExactlyOneFileAndNamesWhatItSkips(t *testing.T) {
	tests := []struct {
		name        string
		parts       []formPart
		unclosed    bool
		wantStatus  int
		wantMessage string // for an error answer
		wantWarning string
		wantStored  int
	}{
		{
			name:        "a second file part is 400 and the first file is not kept",
			parts:       []formPart{{"file", "a.txt", "first"}, {"file", "b.html", "<p>second</p>"}},
			wantStatus:  400,
			wantMessage: "file: exactly one file per upload",
		},
		{
			name:        "a second file part after other fields is 400 naming those fields too",
			parts:       []formPart{{"file", "a.txt", "first"}, {"extra", "", "1"}, {"file", "b.txt", "second"}},
			wantStatus:  400,
			wantMessage: "file: exactly one file per upload",
			wantWarning: "ignored: extra",
		},
		{
			name:        "other fields before and after the file are named once each, in order",
			parts:       []formPart{{"note", "", "x"}, {"file", "a.txt", "content"}, {"extra", "", "1"}, {"note", "", "y"}, {"document", "d.txt", "z"}},
			wantStatus:  200,
			wantWarning: "ignored: note, extra, document",
			wantStored:  1,
		},
		{
			name:       "a file alone has no warning",
			parts:      []formPart{{"file", "a.txt", "content"}},
			wantStatus: 200,
			wantStored: 1,
		},
		{
			name:        "a body cut off after the file is 400 and the file is not kept",
			parts:       []formPart{{"file", "a.txt", "content"}, {"extra", "", "half a field"}},
			unclosed:    true,
			wantStatus:  400,
			wantMessage: "malformed or incomplete multipart body",
			wantWarning: "ignored: extra",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := startServer(t)
			ct, body := multipartParts(t, tt.unclosed, tt.parts...)
			resp := env.do("POST", "/v1/jobs/upload", keyAlice, ct, body)
			if got := resp.Header.Get(WarningHeader); got != tt.wantWarning {
				t.Errorf("%s = %q, want %q", WarningHeader, got, tt.wantWarning)
			}
			if tt.wantStatus == 200 {
				if raw := readBody(t, resp); resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, raw)
				}
			} else {
				m := wantStatusBody(t, resp, tt.wantStatus, codes.InvalidArgument, false)
				if m["message"] != tt.wantMessage {
					t.Errorf("message = %q, want %q", m["message"], tt.wantMessage)
				}
			}
			if got := env.files.stored(t); len(got) != tt.wantStored {
				t.Errorf("stored files %q, want %d", got, tt.wantStored)
			}
		})
	}
}
