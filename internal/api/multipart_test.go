package api

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// heldParts is a proxy in front of an S3 server that receives each part
// upload whole and then holds it before passing it on, whatever its client
// does meanwhile: like S3, which may store a part the client has stopped
// waiting for, after the upload was aborted (AWS's AbortMultipartUpload
// documentation: an abort may have to be repeated while part uploads are in
// progress).
type heldParts struct {
	endpoint string
	hold     time.Duration
	proxy    *httputil.ReverseProxy
	inFlight atomic.Int64
	wg       sync.WaitGroup
}

func holdParts(t *testing.T, endpoint string, hold time.Duration) *heldParts {
	t.Helper()
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &heldParts{hold: hold}
	p.proxy = &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host // the request is signed for the proxy's host
	}, ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) {
		w.WriteHeader(http.StatusBadGateway) // a part of an aborted upload: refused
	}}
	srv := httptest.NewServer(p)
	t.Cleanup(func() {
		p.wg.Wait()
		srv.Close()
	})
	p.endpoint = srv.URL
	return p
}

func (p *heldParts) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut || !r.URL.Query().Has("partNumber") {
		p.proxy.ServeHTTP(w, r)
		return
	}
	p.wg.Add(1)
	defer p.wg.Done()
	p.inFlight.Add(1)
	defer p.inFlight.Add(-1)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client broke off before the part was sent: S3 never has it
	}
	time.Sleep(p.hold)
	r = r.WithContext(context.WithoutCancel(r.Context()))
	r.Body = io.NopCloser(bytes.NewReader(body))
	// Only the ResponseWriter: a CloseNotifier would let the proxy cancel
	// the part when the client leaves.
	p.proxy.ServeHTTP(struct{ http.ResponseWriter }{w}, r)
}

// pausingReader is a client that sends at a finite speed: it pauses once,
// after its first at bytes, long enough for the parts before them to reach
// storage whole.
type pausingReader struct {
	r      io.Reader
	at, n  int64
	paused bool
}

func (p *pausingReader) Read(b []byte) (int, error) {
	if !p.paused && p.n >= p.at {
		p.paused = true
		time.Sleep(300 * time.Millisecond)
	}
	n, err := p.r.Read(b)
	p.n += int64(n)
	return n, err
}

// TestARefusedUploadLeavesNoPartBeingStored refuses uploads past the limit
// and cut off by their client, on S3 where each part is still being stored
// well after it was sent: StoreUpload returns only once no part upload is
// in flight, and the bucket then holds neither an object nor an unfinished
// multipart upload. Cancelling the write instead returned while parts were
// still being stored, and a part stored after the abort left an unfinished
// upload (seen in test/e2e's S3 test).
func TestARefusedUploadLeavesNoPartBeingStored(t *testing.T) {
	const limit = 20 << 20
	h := newHarnessWith(t, Config{UploadMaxBytes: limit}, openSQLite, s3HeldPartsStorage)
	broken := errors.New("client went away")
	for _, tc := range []struct {
		name string
		body io.Reader
		want error
	}{
		{"over the limit", &pausingReader{r: &countingReader{}, at: 17 << 20}, ErrTooLarge},
		{"cut off by its client", &pausingReader{r: &failingReader{left: 18 << 20, err: broken}, at: 17 << 20}, broken},
	} {
		if _, _, err := h.svc.StoreUpload(as("acme"), tc.name, tc.body); !errors.Is(err, tc.want) {
			t.Fatalf("StoreUpload %s = %v, want %v", tc.name, err, tc.want)
		}
		if n := h.parts.inFlight.Load(); n != 0 {
			t.Errorf("StoreUpload %s returned with %d part uploads still being stored", tc.name, n)
		}
		h.parts.wg.Wait()
		if keys := h.s3.Keys(t, h.s3Bucket); len(keys) != 0 {
			t.Fatalf("bucket after the upload %s holds %q, want nothing", tc.name, keys)
		}
	}
}
