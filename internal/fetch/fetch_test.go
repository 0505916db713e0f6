package fetch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"

	"github.com/docjobs/docjobs/internal/blobtest"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/outbound"
	"github.com/docjobs/docjobs/internal/s3test"
)

const publicURL = "http://docjobs.test:8080"

// fileRecords is the store's file table as far as Fetch sees it; lookups
// for another account's file answer job.ErrNotFound, as the store does.
type fileRecords map[string]job.File

func (r fileRecords) GetFile(_ context.Context, accountID, id string) (job.File, error) {
	f, ok := r[id]
	if !ok || f.AccountID != accountID {
		return job.File{}, job.ErrNotFound
	}
	return f, nil
}

type env struct {
	f      *Fetcher
	bucket *blob.Bucket
	files  fileRecords
}

// openBucket opens an empty bucket for one test.
type openBucket func(t *testing.T) *blob.Bucket

// fileBucket is a file:// bucket, NoTempDir as the default storage URL has
// it (no_tmp_dir=true): a write's temporary file sits next to its key, where
// keys() sees any that is left behind.
func fileBucket(t *testing.T) *blob.Bucket {
	t.Helper()
	bucket, err := fileblob.OpenBucket(t.TempDir(), &fileblob.Options{NoTempDir: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bucket.Close() })
	return bucket
}

// s3Bucket is a bucket of a real S3 server (versitygw, internal/s3test)
// opened by its s3:// URL, as serve opens DOCJOBS_STORAGE_URL.
func s3Bucket(t *testing.T) *blob.Bucket {
	t.Helper()
	return s3test.OpenBucket(t, "docjobs")
}

// forEachBucket runs test on a file:// bucket and on an s3:// one.
func forEachBucket(t *testing.T, test func(t *testing.T, open openBucket)) {
	t.Helper()
	t.Run("file", func(t *testing.T) { test(t, fileBucket) })
	t.Run("s3", func(t *testing.T) { test(t, s3Bucket) })
}

func newEnv(t *testing.T, cfg Config, client *http.Client) *env {
	t.Helper()
	return newEnvOn(t, fileBucket, cfg, client)
}

// newEnvOn is newEnv on the bucket open gives.
func newEnvOn(t *testing.T, open openBucket, cfg Config, client *http.Client) *env {
	t.Helper()
	bucket := open(t)
	if cfg.PublicURL == "" {
		cfg.PublicURL = publicURL
	}
	if client == nil {
		client = outbound.NewClient(outbound.Config{AllowPrivate: true})
	}
	var n atomic.Int64
	files := fileRecords{}
	f, err := New(cfg, Deps{
		Client: client,
		Bucket: bucket,
		Files:  files,
		NewID:  func() string { return "f" + strconv.FormatInt(n.Add(1), 10) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return &env{f: f, bucket: bucket, files: files}
}

func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func wantFetchError(t *testing.T, err error, wantMsg string, wantRetryable bool) *Error {
	t.Helper()
	var fe *Error
	if !errors.As(err, &fe) {
		t.Fatalf("Fetch error = %v (%T), want *Error", err, err)
	}
	t.Logf("row error: %s", fe)
	if !strings.Contains(fe.Error(), wantMsg) {
		t.Errorf("error = %q, want it to contain %q", fe.Error(), wantMsg)
	}
	if fe.Retryable != wantRetryable {
		t.Errorf("Retryable = %v, want %v (error %q)", fe.Retryable, wantRetryable, fe.Error())
	}
	return fe
}

func TestFetchDownloadsAndSaveStores(t *testing.T) {
	forEachBucket(t, func(t *testing.T, open openBucket) {
		body := "Invoice 42\nTotal: 17.00 EUR\n"
		srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("User-Agent") != userAgent {
				t.Errorf("User-Agent = %q", r.Header.Get("User-Agent"))
			}
			w.Header().Set("Content-Type", "text/plain; charset=windows-1252")
			w.Header().Set("Content-Disposition", `attachment; filename="invoice 42.txt"`)
			io.WriteString(w, body)
		})
		e := newEnvOn(t, open, Config{}, nil)

		res, err := e.f.Fetch(context.Background(), "acct", "job1", 2, srv.URL+"/download?id=42")
		if err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		if res.URL != publicURL+"/v1/files/f1" {
			t.Errorf("URL = %q", res.URL)
		}
		if res.Key != "jobs/job1/2-f1" || res.Name != "invoice 42.txt" || res.Size != int64(len(body)) ||
			res.ContentType != "text/plain; charset=windows-1252" {
			t.Errorf("Result = %+v", res)
		}
		want := job.File{ID: "f1", AccountID: "acct", JobID: "job1", Name: "invoice 42.txt", Size: int64(len(body)),
			ContentType: "text/plain; charset=windows-1252", Key: "jobs/job1/2-f1"}
		if res.File == nil {
			t.Fatal("File = nil, want the new record")
		}
		got := *res.File
		if got.Created.IsZero() {
			t.Error("File.Created is zero")
		}
		got.Created = time.Time{}
		if got != want {
			t.Errorf("File = %+v, want %+v", got, want)
		}
		if string(res.Data) != body {
			t.Errorf("Data = %q, want the download", res.Data)
		}
		if keys := blobtest.Keys(t, e.bucket, ""); len(keys) != 0 {
			t.Errorf("bucket holds %v before Save", keys)
		}
		if err := e.f.Save(context.Background(), res); err != nil {
			t.Fatalf("Save: %v", err)
		}
		data, err := e.f.Read(context.Background(), res.Key, 0)
		if err != nil || string(data) != body {
			t.Fatalf("Read after Save = %q, %v", data, err)
		}
	})
}

// A source's Content-Type header is its server's to write, up to the
// client's 64 KiB of headers. Only its media type and charset are kept:
// kept whole, a header of 9,000 bytes went to S3 as the object's
// Content-Type, which S3 refuses (AWS takes 8 KiB of request headers), so
// the file could never be stored and every attempt downloaded it again
// (and recognized it and asked the model again) before the row failed.
func TestALongContentTypeIsStoredAsItsMediaTypeAndCharset(t *testing.T) {
	forEachBucket(t, func(t *testing.T, open openBucket) {
		srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=windows-1252; x="+strings.Repeat("a", 9000))
			io.WriteString(w, "Invoice 42")
		})
		e := newEnvOn(t, open, Config{}, nil)
		res, err := e.f.Fetch(context.Background(), "acct", "job1", 0, srv.URL+"/a.txt")
		if err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		const want = "text/plain; charset=windows-1252"
		if res.ContentType != want || res.File.ContentType != want {
			t.Errorf("content type = %.80q (record %.80q), want %q", res.ContentType, res.File.ContentType, want)
		}
		if err := e.f.Save(context.Background(), res); err != nil {
			t.Fatalf("Save: %v (%v)", err, errors.Unwrap(err))
		}
		if data, err := e.f.Read(context.Background(), res.Key, 0); err != nil || string(data) != "Invoice 42" {
			t.Fatalf("Read after Save = %q, %v", data, err)
		}
	})
}

func TestStoredContentType(t *testing.T) {
	for _, tt := range []struct{ header, want string }{
		{"text/plain; charset=windows-1252", "text/plain; charset=windows-1252"},
		{`TEXT/HTML; Charset="UTF-8"`, "text/html; charset=UTF-8"},
		{"application/pdf; name=scan.pdf; x=y", "application/pdf"},
		{"text/plain; charset=" + strings.Repeat("u", 41), "text/plain"},
		{`text/plain; charset="a b"`, `text/plain; charset="a b"`},
		{"text/" + strings.Repeat("x", 250), "text/" + strings.Repeat("x", 250)},
		// Left to sniffing.
		{"text/" + strings.Repeat("x", 251), ""},
		{"", ""},
		{"not a type", ""},
		{"application/octet-stream", ""},
		{"binary/octet-stream; charset=utf-8", ""},
	} {
		if got := storedContentType(tt.header); got != tt.want {
			t.Errorf("storedContentType(%.60q) = %.60q, want %.60q", tt.header, got, tt.want)
		}
	}
}

func TestSaveStoresAnEmptyDownloadAndLeavesStoredFilesAlone(t *testing.T) {
	forEachBucket(t, func(t *testing.T, open openBucket) {
		srv := serve(t, func(w http.ResponseWriter, r *http.Request) {})
		e := newEnvOn(t, open, Config{}, nil)
		res, err := e.f.Fetch(context.Background(), "a", "j", 0, srv.URL+"/empty")
		if err != nil {
			t.Fatal(err)
		}
		if res.Data == nil || res.Size != 0 {
			t.Fatalf("Result = %+v, want empty but non-nil Data", res)
		}
		if err := e.f.Save(context.Background(), res); err != nil {
			t.Fatalf("Save: %v", err)
		}
		if data, err := e.f.Read(context.Background(), res.Key, 0); err != nil || len(data) != 0 {
			t.Fatalf("Read = %q, %v; want an empty stored file", data, err)
		}
		if err := e.f.Save(context.Background(), Result{Key: "uploads/u1"}); err != nil {
			t.Fatalf("Save of a stored file: %v", err)
		}
		if keys := blobtest.Keys(t, e.bucket, ""); len(keys) != 1 {
			t.Errorf("bucket holds %v, want only the saved download", keys)
		}
	})
}

func TestDiscardDeletesTheJobsCopyAndNeverAnUpload(t *testing.T) {
	forEachBucket(t, func(t *testing.T, open openBucket) {
		srv := serve(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") })
		e := newEnvOn(t, open, Config{}, nil)
		ctx := context.Background()
		up := job.File{ID: "up1", AccountID: "acct", Name: "scan.txt", Size: 5, Key: "uploads/up1"}
		e.files[up.ID] = up
		if err := e.bucket.WriteAll(ctx, up.Key, []byte("scan!"), nil); err != nil {
			t.Fatal(err)
		}
		copied, err := e.f.Fetch(ctx, "acct", "job1", 0, srv.URL+"/a.txt")
		if err != nil {
			t.Fatal(err)
		}
		if err := e.f.Save(ctx, copied); err != nil {
			t.Fatal(err)
		}
		upload, err := e.f.Fetch(ctx, "acct", "job1", 1, publicURL+"/v1/files/up1")
		if err != nil {
			t.Fatal(err)
		}

		for _, r := range []Result{copied, upload, copied, {}} { // a second discard finds nothing and is fine
			if err := e.f.Discard(ctx, r); err != nil {
				t.Fatalf("Discard(%s): %v", r.Key, err)
			}
		}
		if keys := blobtest.Keys(t, e.bucket, ""); !reflect.DeepEqual(keys, []string{up.Key}) {
			t.Errorf("bucket holds %v, want only the upload", keys)
		}
	})
}

func TestSaveFailureIsARetryableStorageError(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := e.f.Save(ctx, Result{Key: "jobs/j/0-x", Data: []byte("x")})
	fe := wantFetchError(t, err, "storing the downloaded file failed", true)
	if !errors.Is(fe, context.Canceled) {
		t.Errorf("error = %v, want it to wrap context.Canceled", fe.Err)
	}
}

func TestFetchNames(t *testing.T) {
	tests := []struct {
		name        string
		path        string
		disposition string
		want        string
	}{
		{"from Content-Disposition", "/x", `attachment; filename="report.pdf"`, "report.pdf"},
		{"RFC 5987 filename*", "/x", `attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.txt`, "résumé.txt"},
		{"directories stripped from Content-Disposition", "/x", `attachment; filename="../../etc/passwd"`, "passwd"},
		{"backslash directories stripped", "/x", `attachment; filename="C:\\Users\\a\\doc.html"`, "doc.html"},
		{"from the URL path", "/files/annual%20report.html", "", "annual report.html"},
		{"malformed Content-Disposition falls back to the path", "/a/b.xml", `attachment; filename="unterminated`, "b.xml"},
		{"no name anywhere", "/", "", "download"},
		{"dot-dot path segment", "/..", "", "download"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
				if tt.disposition != "" {
					w.Header().Set("Content-Disposition", tt.disposition)
				}
				io.WriteString(w, "x")
			})
			e := newEnv(t, Config{}, nil)
			res, err := e.f.Fetch(context.Background(), "a", "j", 0, srv.URL+tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if res.Name != tt.want {
				t.Errorf("Name = %q, want %q", res.Name, tt.want)
			}
		})
	}
}

func TestFetchLongNameKeepsExtension(t *testing.T) {
	long := strings.Repeat("é", 300) + ".pdf"
	if got := cleanName(long); len(got) > maxNameLen || !strings.HasSuffix(got, "é.pdf") {
		t.Fatalf("cleanName = %q (%d bytes)", got, len(got))
	}
}

func TestFetchSniffsGenericContentType(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		io.WriteString(w, "%PDF-1.4\n%âãÏÓ\n1 0 obj\n")
	})
	e := newEnv(t, Config{}, nil)
	res, err := e.f.Fetch(context.Background(), "a", "j", 0, srv.URL+"/blob")
	if err != nil {
		t.Fatal(err)
	}
	if res.ContentType != "application/pdf" {
		t.Errorf("ContentType = %q, want application/pdf", res.ContentType)
	}
}

func TestFetchHTTPErrors(t *testing.T) {
	tests := []struct {
		status    int
		wantMsg   string
		retryable bool
	}{
		{http.StatusNotFound, "the server answered HTTP 404 Not Found", false},
		{http.StatusForbidden, "HTTP 403 Forbidden", false},
		{http.StatusTooManyRequests, "HTTP 429 Too Many Requests", true},
		{http.StatusServiceUnavailable, "HTTP 503 Service Unavailable", true},
		{599, "HTTP 599", true},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(tt.status) })
			e := newEnv(t, Config{}, nil)
			_, err := e.f.Fetch(context.Background(), "a", "j", 0, srv.URL+"/doc.pdf?token=t")
			fe := wantFetchError(t, err, tt.wantMsg, tt.retryable)
			if !strings.Contains(fe.Error(), "/doc.pdf?token=…") {
				t.Errorf("error %q does not name the URL", fe.Error())
			}
			if keys := blobtest.Keys(t, e.bucket, ""); len(keys) != 0 {
				t.Errorf("bucket holds %v after a failed download", keys)
			}
		})
	}
}

func TestFetchSizeCap(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
	}{
		{"declared Content-Length over the cap", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "4096")
			w.Write(make([]byte, 4096))
		}},
		{"chunked body over the cap", func(w http.ResponseWriter, r *http.Request) {
			w.Write(make([]byte, 2048))
			w.(http.Flusher).Flush()
			w.Write(make([]byte, 2048))
		}},
		{"endless body", func(w http.ResponseWriter, r *http.Request) {
			buf := bytes.Repeat([]byte("a"), 32<<10)
			for r.Context().Err() == nil {
				if _, err := w.Write(buf); err != nil {
					return
				}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, tt.handler)
			e := newEnv(t, Config{MaxBytes: 1 << 10}, nil)
			_, err := e.f.Fetch(context.Background(), "a", "j", 0, srv.URL+"/big")
			wantFetchError(t, err, "the file is larger than the 1 KiB limit", false)
			if keys := blobtest.Keys(t, e.bucket, ""); len(keys) != 0 {
				t.Errorf("bucket holds %v after a refused download", keys)
			}
		})
	}
}

func TestFetchExactlyAtCap(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { w.Write(make([]byte, 1024)) })
	e := newEnv(t, Config{MaxBytes: 1024}, nil)
	res, err := e.f.Fetch(context.Background(), "a", "j", 0, srv.URL+"/f")
	if err != nil || res.Size != 1024 {
		t.Fatalf("Fetch = %+v, %v", res, err)
	}
}

func TestFetchTimeout(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("start"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	e := newEnv(t, Config{Timeout: 200 * time.Millisecond}, nil)
	start := time.Now()
	_, err := e.f.Fetch(context.Background(), "a", "j", 0, srv.URL+"/slow")
	wantFetchError(t, err, "timed out after 200ms, the limit per download attempt", true)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Fetch took %v with a 200ms timeout", d)
	}
}

// holdUntilDone keeps a handler's request open until the client gives up
// or the test ends, as a stalled server does.
func holdUntilDone(t *testing.T, r *http.Request) {
	t.Helper()
	select {
	case <-r.Context().Done():
	case <-t.Context().Done():
	}
}

// flushed writes b and sends it at once.
func flushed(w http.ResponseWriter, b []byte) {
	w.Write(b)
	w.(http.Flusher).Flush()
}

func TestADownloadThatReceivesNothingForTheStallLimitTimesOut(t *testing.T) {
	const stall = 300 * time.Millisecond
	tests := []struct {
		name    string
		handler func(t *testing.T, w http.ResponseWriter, r *http.Request)
	}{
		{"before its headers", func(t *testing.T, w http.ResponseWriter, r *http.Request) {
			holdUntilDone(t, r)
		}},
		{"after its headers", func(t *testing.T, w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			holdUntilDone(t, r)
		}},
		{"while the type is sniffed", func(t *testing.T, w http.ResponseWriter, r *http.Request) {
			flushed(w, []byte("%PDF-1.7\n"))
			holdUntilDone(t, r)
		}},
		{"in the middle of the body", func(t *testing.T, w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1000000")
			flushed(w, make([]byte, 4*sniffLen))
			holdUntilDone(t, r)
		}},
		{"after a redirect", func(t *testing.T, w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/stall" {
				http.Redirect(w, r, "/stalled-target", http.StatusFound)
				return
			}
			holdUntilDone(t, r)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, func(w http.ResponseWriter, r *http.Request) { tt.handler(t, w, r) })
			e := newEnv(t, Config{Timeout: time.Hour, StallTimeout: stall}, nil)
			// Without a stall limit the download would wait for the hour;
			// the test waits 10 s and would fail as the caller's deadline.
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			source := srv.URL + "/stall?id=7"
			start := time.Now()
			_, err := e.f.Fetch(ctx, "a", "j", 0, source)
			took := time.Since(start)
			wantFetchError(t, err, "download of "+srv.URL+"/stall?id=… timed out: it stalled, nothing arrived for 300ms, the limit on a stalled download", true)
			if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, errStalled) {
				t.Errorf("error %v does not wrap context.DeadlineExceeded and errStalled", err)
			}
			if errors.Is(err, context.Canceled) {
				t.Errorf("error %v wraps context.Canceled, which reads as the caller's cancellation", err)
			}
			if took < stall || took > 3*time.Second {
				t.Errorf("Fetch failed after %v with a %v stall limit", took, stall)
			}
		})
	}
}

// rawSource is a server that answers every request with pieces, each
// written gap after the one before, and then holds the connection until
// the client closes it or the test ends: a server that stops in the middle
// of its headers, which net/http's server cannot be made to do.
func rawSource(t *testing.T, gap time.Duration, pieces ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				// The request is small and comes at once; its end is a blank line.
				r := bufio.NewReader(conn)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if line == "\r\n" {
						break
					}
				}
				closed := make(chan struct{})
				go func() { io.Copy(io.Discard, r); close(closed) }()
				for i, p := range pieces {
					if i > 0 {
						select {
						case <-time.After(gap):
						case <-closed:
							return
						case <-t.Context().Done():
							return
						}
					}
					if _, err := io.WriteString(conn, p); err != nil {
						return
					}
				}
				select {
				case <-closed:
				case <-t.Context().Done():
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

func TestADownloadWhoseHeadersStopHalfwayNamesTheLimitThatEndedIt(t *testing.T) {
	const stall = 300 * time.Millisecond
	// A header line every 100 ms is never 300 ms of silence, but the
	// headers are not complete 300 ms after the request: that limit ends
	// it, and is the one named. Before, the first header byte re-armed the
	// stall watch, and the transport's header timeout, as long as the stall
	// limit (30 s each in service) but counted from the request written,
	// fired first as a bare "timed out".
	lines := []string{"HTTP/1.1 200 OK\r\n"}
	for i := range 40 {
		lines = append(lines, fmt.Sprintf("X-Drip-%d: x\r\n", i))
	}
	sources := []struct {
		name   string
		source func(t *testing.T) string
	}{
		{"a status line, then nothing", func(t *testing.T) string { return rawSource(t, 0, "HTTP/1.1 200 OK\r\n") }},
		{"a header line every 100 ms", func(t *testing.T) string { return rawSource(t, 100*time.Millisecond, lines...) }},
		{"a status line, then nothing, after a redirect", func(t *testing.T) string {
			target := rawSource(t, 0, "HTTP/1.1 200 OK\r\n")
			return rawSource(t, 0, "HTTP/1.1 302 Found\r\nLocation: "+target+"/target\r\nContent-Length: 0\r\n\r\n")
		}},
	}
	clients := []struct {
		name          string
		headerTimeout time.Duration // the transport's; 0 leaves outbound's 30 s
	}{
		{"outbound's transport", 0},
		{"a transport giving headers the stall limit, as in service", stall},
	}
	for _, c := range clients {
		for _, src := range sources {
			t.Run(c.name+"/"+src.name, func(t *testing.T) {
				client := outbound.NewClient(outbound.Config{AllowPrivate: true})
				if c.headerTimeout > 0 {
					client.Transport.(*http.Transport).ResponseHeaderTimeout = c.headerTimeout
				}
				e := newEnv(t, Config{Timeout: time.Hour, StallTimeout: stall}, client)
				// The test waits 10 s, and would fail as the caller's deadline.
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				source := src.source(t) + "/half.txt"
				start := time.Now()
				_, err := e.f.Fetch(ctx, "a", "j", 0, source)
				took := time.Since(start)
				wantFetchError(t, err, "download of "+source+" timed out: no complete headers arrived within 300ms, the limit on waiting for a response's headers", true)
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
				}
				if took < stall || took > 3*time.Second {
					t.Errorf("Fetch failed after %v with a %v stall limit", took, stall)
				}
			})
		}
	}
}

func TestTheTransportsHeaderTimeoutIsNamedWhenItFiresFirst(t *testing.T) {
	// A client whose transport gives headers 300 ms, under an hour's
	// stall limit: the transport ends the download, and its limit is named.
	client := outbound.NewClient(outbound.Config{AllowPrivate: true})
	client.Transport.(*http.Transport).ResponseHeaderTimeout = 300 * time.Millisecond
	e := newEnv(t, Config{Timeout: time.Hour, StallTimeout: time.Hour}, client)
	source := rawSource(t, 0, "HTTP/1.1 200 OK\r\n") + "/half.txt"
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := e.f.Fetch(ctx, "a", "j", 0, source)
	wantFetchError(t, err, "download of "+source+" timed out: no complete headers arrived within 300ms, the limit on waiting for a response's headers", true)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
	}
}

func TestASlowButSteadyDownloadIsNotAStall(t *testing.T) {
	// Headers after 350 ms, then 12 pieces 300 ms apart: 3.95 s in all,
	// far beyond the 1.2 s stall limit, never that long without a byte.
	// The first piece comes 650 ms after the request: the headers count.
	// The margin (900 ms) is wide enough for a loaded machine running
	// -race: at 200 ms a late wake-up made it a stall.
	const (
		stall      = 1200 * time.Millisecond
		headerWait = 350 * time.Millisecond
		gap        = 300 * time.Millisecond
		pieces     = 12
	)
	piece := bytes.Repeat([]byte("steady "), 100)
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(headerWait)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for range pieces {
			time.Sleep(gap)
			flushed(w, piece)
		}
	})
	e := newEnv(t, Config{Timeout: time.Minute, StallTimeout: stall}, nil)
	start := time.Now()
	res, err := e.f.Fetch(t.Context(), "a", "j", 0, srv.URL+"/slow.txt")
	if err != nil {
		t.Fatalf("Fetch of a steady source failed after %v: %v", time.Since(start), err)
	}
	if want := bytes.Repeat(piece, pieces); !bytes.Equal(res.Data, want) {
		t.Errorf("Fetch got %d bytes, want %d", len(res.Data), len(want))
	}
}

func TestTheAttemptLimitStillEndsADownloadThatNeverStalls(t *testing.T) {
	// A byte every 50 ms never stalls; the attempt limit ends it and is
	// the limit named.
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		for {
			flushed(w, []byte("x"))
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	e := newEnv(t, Config{Timeout: 500 * time.Millisecond, StallTimeout: 200 * time.Millisecond}, nil)
	_, err := e.f.Fetch(t.Context(), "a", "j", 0, srv.URL+"/drip")
	fe := wantFetchError(t, err, "timed out after 500ms, the limit per download attempt", true)
	if strings.Contains(fe.Msg, "stalled") {
		t.Errorf("error %q blames a stall on a source that never stalled", fe.Msg)
	}
}

func TestACallersDeadlineIsNotBlamedOnTheAttemptLimit(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	e := newEnv(t, Config{Timeout: time.Hour}, nil)
	// The worker bounds a file's downloads, retries included, this way.
	budget := errors.New("the file's downloads ran out of time")
	ctx, cancel := context.WithTimeoutCause(context.Background(), 100*time.Millisecond, budget)
	defer cancel()
	_, err := e.f.Fetch(ctx, "a", "j", 0, srv.URL+"/hang")
	fe := wantFetchError(t, err, "timed out", true)
	if strings.Contains(fe.Msg, "limit per download attempt") || strings.Contains(fe.Msg, "1h0m0s") {
		t.Errorf("error = %q blames the hour-long attempt limit for the caller's deadline", fe.Msg)
	}
	if !errors.Is(err, budget) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap the caller's cause and the deadline", err)
	}
}

func TestFetchCancelled(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	e := newEnv(t, Config{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := e.f.Fetch(ctx, "a", "j", 0, srv.URL+"/hang")
	wantFetchError(t, err, "was cancelled", true)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v does not wrap context.Canceled", err)
	}
}

func TestFetchPrivateAddressRefused(t *testing.T) {
	var hits atomic.Int64
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	e := newEnv(t, Config{}, outbound.NewClient(outbound.Config{}))
	_, err := e.f.Fetch(context.Background(), "a", "j", 0, srv.URL+"/x")
	wantFetchError(t, err, "refused: 127.0.0.1 is a private or reserved address", false)
	if !errors.Is(err, outbound.ErrForbiddenAddress) {
		t.Errorf("error does not wrap outbound.ErrForbiddenAddress")
	}
	if hits.Load() != 0 {
		t.Errorf("server was reached %d times", hits.Load())
	}
}

func TestFetchBadSourceURLs(t *testing.T) {
	tests := []struct {
		url, wantMsg string
	}{
		{"ftp://example.com/a.txt", "source URL must be an absolute http or https URL"},
		{"https://user:secret@example.com/a.txt", "source URL must not contain user credentials"},
		{"not a url", "source URL must be an absolute http or https URL"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			e := newEnv(t, Config{}, nil)
			_, err := e.f.Fetch(context.Background(), "a", "j", 0, tt.url)
			fe := wantFetchError(t, err, tt.wantMsg, false)
			if strings.Contains(fe.Error(), "secret") {
				t.Errorf("error %q leaks the URL's credentials", fe.Error())
			}
		})
	}
}

func TestFetchUnknownHost(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	_, err := e.f.Fetch(context.Background(), "a", "j", 0, "http://no-such-host.invalid/a.txt")
	var fe *Error
	if !errors.As(err, &fe) || !strings.Contains(fe.Error(), "no-such-host.invalid") {
		t.Fatalf("Fetch = %v, want an error naming the host", err)
	}
}

func TestFetchOwnUploadIsCopiedForTheJob(t *testing.T) {
	forEachBucket(t, func(t *testing.T, open openBucket) {
		e := newEnvOn(t, open, Config{}, nil) // PublicURL's host does not resolve: any HTTP to ourselves would fail
		ctx := context.Background()
		up := job.File{ID: "up1", AccountID: "acct", Name: "scan.txt", Size: 5, ContentType: "text/plain", Key: "uploads/acct/up1"}
		e.files[up.ID] = up
		if err := e.bucket.WriteAll(ctx, up.Key, []byte("scan!"), nil); err != nil {
			t.Fatal(err)
		}

		res, err := e.f.Fetch(ctx, "acct", "job1", 0, publicURL+"/v1/files/up1")
		if err != nil {
			t.Fatalf("Fetch: %v", err)
		}
		// The job's own copy, so that deleting or expiring the upload leaves
		// the job's file in place.
		wantFile := &job.File{ID: "f1", AccountID: "acct", JobID: "job1", Name: "scan.txt", Size: 5,
			ContentType: "text/plain", Key: SharedCopyKey("job1", up.Key), Created: res.File.Created}
		want := Result{URL: publicURL + "/v1/files/f1", File: wantFile, Key: wantFile.Key, Name: "scan.txt", ContentType: "text/plain", Size: 5, Shared: true}
		if !reflect.DeepEqual(res, want) { // Data nil: the copy is in storage
			t.Errorf("Result = %+v (File %+v), want %+v (File %+v)", res, res.File, want, want.File)
		}
		if err := e.bucket.Delete(ctx, up.Key); err != nil {
			t.Fatal(err)
		}
		if data, err := e.f.Read(ctx, res.Key, 0); err != nil || string(data) != "scan!" {
			t.Errorf("Read of the copy after the upload was deleted = %q, %v", data, err)
		}
	})
}

func TestFetchOfAnUploadDeletedFromStorageIsNotFound(t *testing.T) {
	forEachBucket(t, func(t *testing.T, open openBucket) {
		e := newEnvOn(t, open, Config{}, nil)
		// Recorded, but its bytes are gone: deleted while the job waited.
		e.files["up1"] = job.File{ID: "up1", AccountID: "acct", Key: "uploads/acct/up1"}
		_, err := e.f.Fetch(context.Background(), "acct", "job1", 0, publicURL+"/v1/files/up1")
		wantFetchError(t, err, "source file "+publicURL+"/v1/files/up1 not found", false)
		if !errors.Is(err, job.ErrNotFound) {
			t.Errorf("error does not wrap job.ErrNotFound")
		}
		if keys := blobtest.Keys(t, e.bucket, ""); len(keys) != 0 {
			t.Errorf("bucket holds %v, want nothing", keys)
		}
	})
}

func TestFetchAnotherAccountsUploadIsNotFound(t *testing.T) {
	e := newEnv(t, Config{}, nil)
	e.files["up1"] = job.File{ID: "up1", AccountID: "owner", Key: "uploads/up1"}
	_, err := e.f.Fetch(context.Background(), "intruder", "job1", 0, publicURL+"/v1/files/up1")
	wantFetchError(t, err, "source file "+publicURL+"/v1/files/up1 not found", false)
	if !errors.Is(err, job.ErrNotFound) {
		t.Errorf("error does not wrap job.ErrNotFound")
	}
}

func TestFetchOwnJobCopyIsCopied(t *testing.T) {
	forEachBucket(t, func(t *testing.T, open openBucket) {
		e := newEnvOn(t, open, Config{}, nil)
		ctx := context.Background()
		if err := e.bucket.WriteAll(ctx, "jobs/old/0-c1", []byte("hello"), nil); err != nil {
			t.Fatal(err)
		}
		e.files["c1"] = job.File{ID: "c1", AccountID: "acct", JobID: "old", Name: "a.txt", Size: 5, ContentType: "text/plain", Key: "jobs/old/0-c1"}

		res, err := e.f.Fetch(ctx, "acct", "new", 3, publicURL+"/v1/files/c1")
		if err != nil {
			t.Fatal(err)
		}
		if res.File == nil || res.File.JobID != "new" || res.Key != SharedCopyKey("new", "jobs/old/0-c1") || res.URL != publicURL+"/v1/files/f1" {
			t.Fatalf("Result = %+v, File %+v", res, res.File)
		}
		data, err := e.f.Read(ctx, res.Key, 0)
		if err != nil || string(data) != "hello" {
			t.Fatalf("Read copy = %q, %v", data, err)
		}
	})
}

func TestOwnFileID(t *testing.T) {
	e := newEnv(t, Config{PublicURL: "https://api.example.com/docjobs/"}, nil)
	tests := []struct {
		url    string
		wantID string
	}{
		{"https://api.example.com/docjobs/v1/files/abc", "abc"},
		{"HTTPS://API.EXAMPLE.COM/docjobs/v1/files/abc?download=1", "abc"},
		{"https://api.example.com/v1/files/abc", ""},
		{"http://api.example.com/docjobs/v1/files/abc", ""},
		{"https://api.example.com:8443/docjobs/v1/files/abc", ""},
		{"https://evil.example.com/docjobs/v1/files/abc", ""},
		{"https://api.example.com/docjobs/v1/files/", ""},
		{"https://api.example.com/docjobs/v1/files/a/b", ""},
		{"https://u:p@api.example.com/docjobs/v1/files/abc", ""},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			id, ok := e.f.OwnFileID(tt.url)
			if id != tt.wantID || ok != (tt.wantID != "") {
				t.Errorf("OwnFileID = %q, %v; want %q", id, ok, tt.wantID)
			}
		})
	}
	if got := e.f.FileURL("abc"); got != "https://api.example.com/docjobs/v1/files/abc" {
		t.Errorf("FileURL = %q", got)
	}
}

func TestRead(t *testing.T) {
	forEachBucket(t, func(t *testing.T, open openBucket) {
		e := newEnvOn(t, open, Config{}, nil)
		ctx := context.Background()
		if err := e.bucket.WriteAll(ctx, "k", []byte("0123456789"), nil); err != nil {
			t.Fatal(err)
		}
		if data, err := e.f.Read(ctx, "k", 10); err != nil || string(data) != "0123456789" {
			t.Errorf("Read(max 10) = %q, %v", data, err)
		}
		if _, err := e.f.Read(ctx, "k", 9); err == nil || !strings.Contains(err.Error(), "larger than the 9-byte limit") {
			t.Errorf("Read(max 9) = %v, want a size error", err)
		}
		if _, err := e.f.Read(ctx, "missing", 0); !errors.Is(err, job.ErrNotFound) {
			t.Errorf("Read(missing) = %v, want job.ErrNotFound", err)
		}
	})
}

func TestNewValidates(t *testing.T) {
	bucket, err := fileblob.OpenBucket(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bucket.Close()
	ok := Deps{Client: http.DefaultClient, Bucket: bucket, Files: fileRecords{}, NewID: func() string { return "x" }}
	tests := []struct {
		name string
		cfg  Config
		deps Deps
	}{
		{"relative public URL", Config{PublicURL: "/api"}, ok},
		{"negative cap", Config{PublicURL: publicURL, MaxBytes: -1}, ok},
		{"negative stall limit", Config{PublicURL: publicURL, StallTimeout: -time.Second}, ok},
		{"no client", Config{PublicURL: publicURL}, Deps{Bucket: bucket, Files: fileRecords{}, NewID: ok.NewID}},
		{"no id source", Config{PublicURL: publicURL}, Deps{Client: http.DefaultClient, Bucket: bucket, Files: fileRecords{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg, tt.deps); err == nil {
				t.Fatal("New succeeded")
			}
		})
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{100 << 20: "100 MiB", 1 << 30: "1 GiB", 2048: "2 KiB", 1000: "1000-byte"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestRemoveJobFilesLeavesNoFolderBehind(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	bucket, err := fileblob.OpenBucket(dir, &fileblob.Options{NoTempDir: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bucket.Close() })
	// 1-b.18eacdae80739726.tmp is what a write cut off by a crash leaves
	// with no_tmp_dir: a key under the job's prefix like any other.
	for _, key := range []string{"jobs/j1/0-a", "jobs/j1/1-b", "jobs/j1/1-b.18eacdae80739726.tmp", "jobs/j2/0-c"} {
		if err := bucket.WriteAll(ctx, key, []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if errs := RemoveJobFiles(ctx, bucket, dir, "j1", []string{"jobs/j1/0-a"}); len(errs) != 0 {
		t.Fatal(errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "jobs", "j1")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the deleted job's folder: %v, want it gone", err)
	}
	if ok, err := bucket.Exists(ctx, "jobs/j2/0-c"); !ok || err != nil {
		t.Errorf("another job's file: exists %t, %v", ok, err)
	}
	// Removing again (a retried delete) finds nothing and is fine.
	if errs := RemoveJobFiles(ctx, bucket, dir, "j1", nil); len(errs) != 0 {
		t.Fatal(errs)
	}
}

func TestRemoveJobFilesRemovesEveryKeyOfTheJobAndNoOther(t *testing.T) {
	forEachBucket(t, func(t *testing.T, open openBucket) {
		ctx := context.Background()
		bucket := open(t)
		// jobs/j10/ shares the prefix "jobs/j1" without the slash.
		for _, key := range []string{"jobs/j1/0-a", "jobs/j1/1-b", "jobs/j10/0-c", "uploads/acct/u1"} {
			if err := bucket.WriteAll(ctx, key, []byte("x"), nil); err != nil {
				t.Fatal(err)
			}
		}
		// dir "": the listing alone finds the job's keys, as for any bucket
		// but file://.
		if errs := RemoveJobFiles(ctx, bucket, "", "j1", []string{"jobs/j1/0-a", "jobs/j1/9-gone"}); len(errs) != 0 {
			t.Fatal(errs)
		}
		e := &env{bucket: bucket}
		if keys := blobtest.Keys(t, e.bucket, ""); !reflect.DeepEqual(keys, []string{"jobs/j10/0-c", "uploads/acct/u1"}) {
			t.Errorf("bucket holds %v, want the other job's and the upload", keys)
		}
	})
}

func TestRemoveUploadFolderRemovesOnlyAnEmptyAccountFolder(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"uploads/acme", "uploads/bob/u2", "jobs/j1"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []string{"uploads/acme/u1", "uploads/bob/u1", "jobs/j1/0-a", "uploads/../x", "uploads/nofile"} {
		if err := RemoveUploadFolder(dir, key); err != nil {
			t.Errorf("RemoveUploadFolder(%q): %v", key, err)
		}
	}
	if err := RemoveUploadFolder("", "uploads/acme/u1"); err != nil {
		t.Errorf("without a directory (not file:// storage): %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "uploads", "acme")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("acme's empty folder: %v, want it gone", err)
	}
	for _, kept := range []string{"uploads/bob/u2", "jobs/j1", "uploads"} {
		if _, err := os.Stat(filepath.Join(dir, kept)); err != nil {
			t.Errorf("%s: %v, want it kept", kept, err)
		}
	}
}

// BucketDir is where a file:// storage keeps its keys, the folder of its
// prefix= included; RootDir the directory the URL names.
func TestBucketDir(t *testing.T) {
	for _, tt := range []struct{ url, dir, root string }{
		{"file:///srv/dj/files?create_dir=true&metadata=skip&no_tmp_dir=true", "/srv/dj/files", "/srv/dj/files"},
		{"file://localhost/srv/files", "/srv/files", "/srv/files"},
		{"s3://bucket?region=eu-west-1", "", ""},
		{"s3://bucket?region=eu-west-1&prefix=dep-a/", "", ""},
		{"mem://", "", ""},
		{"file://otherhost/srv/files", "", ""},
		{"file:///srv/files?no_tmp_dir=true&prefix=dep-f/", "/srv/files/dep-f", "/srv/files"},
		{"file:///srv/files?prefix=a/b/", "/srv/files/a/b", "/srv/files"},
		{"file:///srv/files?prefix=dep%20f/", "/srv/files/dep f", "/srv/files"},
		// No folder of its own: prefix=x stores xuploads/…, xjobs/….
		{"file:///srv/files?prefix=x", "", "/srv/files"},
		{"file:///srv/files?prefix=a/b", "", "/srv/files"},
		// Folders fileblob names otherwise, or not inside the directory.
		{"file:///srv/files?prefix=../", "", "/srv/files"},
		{"file:///srv/files?prefix=a/../../", "", "/srv/files"},
		{"file:///srv/files?prefix=/abs/", "", "/srv/files"},
		{"file:///srv/files?prefix=a//b/", "", "/srv/files"},
		{"file:///srv/files?prefix=./", "", "/srv/files"},
		{"file:///srv/files?prefix=a__0x2f__b/", "", "/srv/files"},
		{"file:///srv/files?prefix=a%0Ab/", "", "/srv/files"},
	} {
		if got := BucketDir(tt.url); got != tt.dir {
			t.Errorf("BucketDir(%q) = %q, want %q", tt.url, got, tt.dir)
		}
		if got := RootDir(tt.url); got != tt.root {
			t.Errorf("RootDir(%q) = %q, want %q", tt.url, got, tt.root)
		}
	}
}

// Where BucketDir says a prefixed file:// storage keeps a key is where
// fileblob writes it.
func TestBucketDirIsWhereAPrefixedStorageWritesItsKeys(t *testing.T) {
	for name, prefix := range map[string]string{"one folder": "p/", "two folders": "a/b/", "a space": "dep%20f/", "an accent": "d%C3%A9p/"} {
		t.Run(name, func(t *testing.T) {
			url := "file://" + t.TempDir() + "?no_tmp_dir=true&prefix=" + prefix
			bucket, err := blob.OpenBucket(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			defer bucket.Close()
			if err := bucket.WriteAll(context.Background(), "uploads/alice/u1", []byte("x"), nil); err != nil {
				t.Fatal(err)
			}
			dir := BucketDir(url)
			if dir == "" {
				t.Fatalf("BucketDir(%q) = \"\"", url)
			}
			if _, err := os.Stat(filepath.Join(dir, "uploads", "alice", "u1")); err != nil {
				t.Errorf("the key is not under BucketDir %s: %v", dir, err)
			}
		})
	}
}

// A file:// URL relative to the working directory (file://./dir, as
// fileblob reads it) names that directory, made absolute; it was taken
// for another host's, "", and the folder removals and the sweep's
// file://-only parts (staged writes a crash left) never ran on it.
func TestBucketDirOfARelativeStorageIsWhereItWritesItsKeys(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	for _, tt := range []struct{ url, dir, root string }{
		{"file://./files?create_dir=true&no_tmp_dir=true", "files", "files"},
		{"file://./data/files?create_dir=true&prefix=dep-a/", "data/files/dep-a", "data/files"},
		{"file://./data/files?create_dir=true&prefix=x", "", "data/files"},
	} {
		bucket, err := blob.OpenBucket(context.Background(), tt.url)
		if err != nil {
			t.Fatal(err)
		}
		if err := bucket.WriteAll(context.Background(), "uploads/alice/u1", []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
		bucket.Close()
		if got, want := RootDir(tt.url), filepath.Join(root, tt.root); got != want {
			t.Errorf("RootDir(%q) = %q, want %q", tt.url, got, want)
		}
		dir := BucketDir(tt.url)
		if tt.dir == "" {
			if dir != "" {
				t.Errorf("BucketDir(%q) = %q, want \"\"", tt.url, dir)
			}
			continue
		}
		if want := filepath.Join(root, tt.dir); dir != want {
			t.Errorf("BucketDir(%q) = %q, want %q", tt.url, dir, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "uploads", "alice", "u1")); err != nil {
			t.Errorf("the key is not under BucketDir %s: %v", dir, err)
		}
	}
}

// Under prefix=p/, a deleted upload and a deleted job leave no folder
// under p/, and the folder removals never reach outside it: an empty
// folder of a deployment without a prefix sharing the directory stays.
func TestEmptyFoldersGoUnderAPrefix(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	url := "file://" + root + "?no_tmp_dir=true&metadata=skip&prefix=p/"
	bucket, err := blob.OpenBucket(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer bucket.Close()
	for _, key := range []string{"uploads/alice/u1", "jobs/j1/0-a"} {
		if err := bucket.WriteAll(ctx, key, []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
	}
	outside := []string{filepath.Join(root, "uploads", "alice"), filepath.Join(root, "jobs", "j1")}
	for _, d := range outside {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}

	dir := BucketDir(url)
	if err := bucket.Delete(ctx, "uploads/alice/u1"); err != nil {
		t.Fatal(err)
	}
	if err := RemoveUploadFolder(dir, "uploads/alice/u1"); err != nil {
		t.Fatal(err)
	}
	if errs := RemoveJobFiles(ctx, bucket, dir, "j1", []string{"jobs/j1/0-a"}); len(errs) != 0 {
		t.Fatal(errs)
	}
	for _, gone := range []string{"p/uploads/alice", "p/jobs/j1"} {
		if _, err := os.Stat(filepath.Join(root, gone)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v, want the empty folder gone", gone, err)
		}
	}
	for _, d := range outside {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s, outside the prefix: %v, want it kept", d, err)
		}
	}
}
