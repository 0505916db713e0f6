package worker

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// lockedBuffer is a log destination the workers' goroutines share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestAPresignedSourcesSignatureIsNeitherLoggedNorKeptByRiver(t *testing.T) {
	forEachStoreAtOnce(t, func(t *testing.T, st store.Store) {
		const secret = "PRESIGNEDSECRET42"
		var requests atomic.Int64
		failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			requests.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		t.Cleanup(failing.Close)
		var logs lockedBuffer
		// The first try fails, the second 2 s later (River's backoff) too,
		// and the third would come after the 5 s bound: two tries, the
		// first one's error and metadata kept in River's row.
		startLoggingPipeline(t, st, Config{FetchTotalTimeout: 5 * time.Second}, nil, nil, nil,
			slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
		source := failing.URL + "/doc.pdf?X-Amz-Date=20261124T000000Z&X-Amz-Signature=" + secret
		createJob(t, st, "job-a", "acct-a", source)
		row := endOf(t, st, "job-a").OCR[0]
		waitAllCompleted(t, st, "file")

		shown := failing.URL + "/doc.pdf?X-Amz-Date=…&X-Amz-Signature=…"
		if want := "download of " + shown + " failed: the server answered HTTP 503 Service Unavailable"; row.Status != job.RowFailed || !strings.HasPrefix(row.Error, want) {
			t.Errorf("row %s %q, want FAILED beginning %q", row.Status, row.Error, want)
		}
		if row.File != source {
			t.Errorf("row file %q, want the source URL as given, %q", row.File, source)
		}
		if n := requests.Load(); n != 2 {
			t.Errorf("the source was asked %d times, want 2", n)
		}
		rows := riverJobsOf(t, st, "file")
		if len(rows) != 1 {
			t.Fatalf("%d River file jobs, want 1", len(rows))
		}
		kept := string(rows[0].Metadata)
		if !strings.Contains(kept, lastDownloadErrorKey) || len(rows[0].Errors) == 0 {
			t.Fatalf("River kept metadata %s and %d errors: the test no longer sees what a failed try leaves", kept, len(rows[0].Errors))
		}
		for _, e := range rows[0].Errors {
			kept += "\n" + e.Error
		}
		if strings.Contains(kept, secret) || !strings.Contains(kept, shown) {
			t.Errorf("River's row keeps %s, want the source shown as %s", kept, shown)
		}
		if text := logs.String(); strings.Contains(text, secret) || !strings.Contains(text, "will retry") {
			t.Errorf("the workers logged:\n%s\nwant the retry logged without the signature", text)
		}
	})
}
