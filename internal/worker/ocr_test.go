package worker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/sqlite"
)

// countingOCR answers every page and counts what it was paid for.
type countingOCR struct{ calls atomic.Int64 }

func (c *countingOCR) Recognize(_ context.Context, doc provider.Document) (provider.Recognition, error) {
	c.calls.Add(1)
	return provider.Recognition{Text: "page text " + string(doc.Data), Format: "markdown", Model: "m"}, nil
}

func TestAPageAlreadyReadIsNotPaidForAgain(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: migratedSQLitePath(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	j := &job.Job{ID: "job-1", AccountID: "a", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a.pdf"},
		ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", Created: time.Now()}
	if _, _, err := st.CreateJob(ctx, store.CreateJobParams{Job: j}); err != nil {
		t.Fatal(err)
	}

	inner := &countingOCR{}
	first := &cachedOCR{store: st, jobID: j.ID, fileIndex: 0, next: inner}
	page2 := provider.Document{Data: []byte("scan-2"), MIME: "image/jpeg", Page: 2, Format: "html"}
	rec, err := first.Recognize(ctx, page2)
	if err != nil || rec.Text != "page text scan-2" {
		t.Fatalf("first read = %+v, %v", rec, err)
	}

	// A retried recognize job builds a new provider and reads the page again.
	retry := &cachedOCR{store: st, jobID: j.ID, fileIndex: 0, next: inner}
	rec, err = retry.Recognize(ctx, page2)
	if err != nil || rec.Text != "page text scan-2" || rec.Model != "m" {
		t.Fatalf("retried read = %+v, %v", rec, err)
	}
	if n := inner.calls.Load(); n != 1 {
		t.Fatalf("provider paid %d times for one page, want once", n)
	}

	// Another page, or different bytes for the page, is a new call.
	if _, err := retry.Recognize(ctx, provider.Document{Data: []byte("scan-3"), MIME: "image/jpeg", Page: 3, Format: "html"}); err != nil {
		t.Fatal(err)
	}
	if n := inner.calls.Load(); n != 2 {
		t.Fatalf("provider calls = %d, want 2", n)
	}
}

func TestTheOCRProviderIsOpenedOnlyWhenAPageNeedsIt(t *testing.T) {
	var opens atomic.Int64
	inner := &countingOCR{}
	open := func(context.Context) (provider.OCR, error) { opens.Add(1); return inner, nil }

	used := &lazyOCR{open: open}
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Go(func() {
			if _, err := used.Recognize(context.Background(), provider.Document{Data: []byte{byte(p)}, Page: p + 1}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if opens.Load() != 1 || inner.calls.Load() != 4 {
		t.Fatalf("opened %d times for 4 pages (calls %d), want once", opens.Load(), inner.calls.Load())
	}

	failing := &lazyOCR{open: func(context.Context) (provider.OCR, error) { return nil, errors.New("no key") }}
	if _, err := failing.Recognize(context.Background(), provider.Document{}); err == nil || err.Error() != "no key" {
		t.Fatalf("err = %v, want the reason the provider could not be opened", err)
	}
}

// pngOnlyOCR reads PNG only and says so.
type pngOnlyOCR struct{ countingOCR }

func (*pngOnlyOCR) Accepts(_ context.Context, mime string) (ok, known bool) {
	return mime == "image/png", true
}

// TestTheJobsProviderSaysWhichTypesItReads: the page cache and the lazy
// opening pass the question to the adapter, so recognition can convert a
// page the vendor would refuse; a provider that cannot be opened cannot
// tell, and its call then fails with the reason.
func TestTheJobsProviderSaysWhichTypesItReads(t *testing.T) {
	ctx := context.Background()
	ocr := &cachedOCR{next: &lazyOCR{open: func(context.Context) (provider.OCR, error) { return &pngOnlyOCR{}, nil }}}
	for mime, want := range map[string]bool{"image/png": true, "image/gif": false} {
		if ok, known := provider.Accepts(ctx, ocr, mime); ok != want || !known {
			t.Errorf("Accepts(%s) = %v, %v; want %v, known", mime, ok, known, want)
		}
	}
	failing := &cachedOCR{next: &lazyOCR{open: func(context.Context) (provider.OCR, error) { return nil, errors.New("no key") }}}
	if ok, known := provider.Accepts(ctx, failing, "image/png"); ok || known {
		t.Errorf("Accepts on a provider that cannot be opened = %v, %v; want unknown", ok, known)
	}
}

// memoryPages is a page cache in memory.
type memoryPages struct {
	mu    sync.Mutex
	pages map[string][]byte
}

func (m *memoryPages) PutOCRPage(_ context.Context, jobID string, fileIndex int, key string, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pages == nil {
		m.pages = map[string][]byte{}
	}
	m.pages[jobID+"/"+key] = value
	return nil
}

func (m *memoryPages) GetOCRPage(_ context.Context, jobID string, fileIndex int, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.pages[jobID+"/"+key]; ok {
		return v, nil
	}
	return nil, store.ErrNotFound
}

// bulkyOCR answers every page with text of its size.
type bulkyOCR struct{ size int }

func (b bulkyOCR) Recognize(context.Context, provider.Document) (provider.Recognition, error) {
	return provider.Recognition{Text: strings.Repeat("x", b.size), Format: "markdown", Model: "m"}, nil
}

// Each page's answer is bounded, but a file's pages, joined into its row,
// were not: an endpoint answering 8 MiB a page made a thousand-page file 8
// GB of content. The pages of one file stop at maxRecognizedBytes, the
// pages read before a retry included.
func TestAFilesPagesStopAtTheRecognizedLimit(t *testing.T) {
	const page = 8 << 20
	pages := &memoryPages{}
	ocr := &cachedOCR{store: pages, jobID: "job-1", next: bulkyOCR{size: page}}
	read := 0
	var err error
	for p := 1; p <= 2*maxRecognizedBytes/page; p++ {
		if _, err = ocr.Recognize(context.Background(), provider.Document{Data: []byte{byte(p)}, MIME: "image/png", Page: p, Format: "markdown"}); err != nil {
			break
		}
		read++
	}
	if !errors.Is(err, errRecognizedTooLarge) || read != maxRecognizedBytes/page {
		t.Fatalf("read %d pages of %d MiB, then %v; want %d, then the file's limit", read, page>>20, err, maxRecognizedBytes/page)
	}
	retry := &cachedOCR{store: pages, jobID: "job-1", next: bulkyOCR{size: page}}
	for p := 1; p <= read; p++ {
		if _, err := retry.Recognize(context.Background(), provider.Document{Data: []byte{byte(p)}, MIME: "image/png", Page: p, Format: "markdown"}); err != nil {
			t.Fatalf("a retry's page %d, read before: %v", p, err)
		}
	}
	if _, err := retry.Recognize(context.Background(), provider.Document{Data: []byte{byte(read + 1)}, MIME: "image/png", Page: read + 1, Format: "markdown"}); !errors.Is(err, errRecognizedTooLarge) {
		t.Fatalf("a retry past the limit: %v, want the file's limit", err)
	}
}
