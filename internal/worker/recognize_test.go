package worker

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/convert"
	"github.com/docjobs/docjobs/internal/fetch"
	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/provider"
)

// sourceFetcher serves one stored file, or fails the way it is told to.
type sourceFetcher struct {
	data     []byte
	fetchErr error
}

func (f sourceFetcher) Fetch(_ context.Context, _, jobID string, i int, _ string) (fetch.Result, error) {
	if f.fetchErr != nil {
		return fetch.Result{}, f.fetchErr
	}
	return fetch.Result{URL: "http://dj/v1/files/x", Key: "k", Name: "a.txt", Size: int64(len(f.data))}, nil
}

func (f sourceFetcher) Save(context.Context, fetch.Result) error { return nil }

func (f sourceFetcher) Discard(context.Context, fetch.Result) error { return nil }

func (f sourceFetcher) Read(context.Context, string, int64) ([]byte, error) { return f.data, nil }

func TestRecognizeTurnsInputProblemsIntoRowsAndRetriesTransientOnes(t *testing.T) {
	elf := append([]byte("\x7fELF\x02\x01\x01\x00"), make([]byte, 56)...)
	tests := []struct {
		name       string
		fetcher    sourceFetcher
		wantRetry  bool
		wantStatus job.RowStatus
		wantFormat string
		wantError  string // part of a FAILED row's error
	}{
		{"text file", sourceFetcher{data: []byte("hello")}, false, job.RowDone, job.FormatPlain, ""},
		{"zero bytes", sourceFetcher{data: []byte{}}, false, job.RowSkipped, "", ""},
		{"a truncated PDF fails as damaged", sourceFetcher{data: []byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")}, false, job.RowFailed, "", "the PDF is damaged"},
		// The fetcher names every file a.txt: the type comes from the bytes.
		{"an executable names its type", sourceFetcher{data: elf}, false, job.RowFailed, "", "unsupported file type application/x-elf"},
		{"a zip that is no office document names its type", sourceFetcher{data: zipOf(t, "photo.jpg", "notes/readme.md")}, false, job.RowFailed, "",
			"unsupported file type application/zip (a zip archive that is not an office document)"},
		{"404 is final", sourceFetcher{fetchErr: &fetch.Error{Msg: "download of x failed: 404 Not Found"}}, false, job.RowFailed, "", "404 Not Found"},
		{"503 is retried", sourceFetcher{fetchErr: &fetch.Error{Msg: "503", Retryable: true}}, true, "", "", ""},
		{"an unclassified error is retried", sourceFetcher{fetchErr: errors.New("boom")}, true, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newFileWorker(Config{MaxFileBytes: 1 << 20}.withDefaults(), Deps{
				Fetcher: tt.fetcher, Convert: convert.New(convert.Config{}).Convert, Logger: slog.Default(),
			})
			j := &job.Job{ID: "j", AccountID: "a", SourceURLs: []string{"https://example.com/a.txt"}}
			row, _, err := w.recognize(context.Background(), j, 0, downloads{})
			if tt.wantRetry {
				if err == nil {
					t.Fatalf("row %+v, want an error to retry", row)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v, want a row", err)
			}
			if row.Status != tt.wantStatus || row.OutputFormat != tt.wantFormat {
				t.Fatalf("row = %s %q (%s), want %s %q", row.Status, row.OutputFormat, row.Error, tt.wantStatus, tt.wantFormat)
			}
			if row.Status == job.RowFailed && (row.Error == "" || !strings.Contains(row.Error, tt.wantError)) {
				t.Fatalf("FAILED row says %q, want it to say %q", row.Error, tt.wantError)
			}
		})
	}
}

// zipOf is a zip archive of empty entries with the given names.
func zipOf(t *testing.T, names ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte("content of " + n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// wordChunker splits text into chunks of n words.
type wordChunker struct{ n int }

func (c wordChunker) Split(text, _ string, budget, maxChunks int, _ string) ([]Chunk, error) {
	words := strings.Fields(text)
	var out []Chunk
	for len(words) > 0 {
		if maxChunks > 0 && len(out) == maxChunks {
			return nil, &TooManyChunksError{AtLeast: maxChunks + 1, Limit: maxChunks, Budget: budget}
		}
		k := min(c.n, len(words))
		out = append(out, Chunk{Text: strings.Join(words[:k], " ")})
		words = words[k:]
	}
	return out, nil
}

func TestModelRowsFollowRecognition(t *testing.T) {
	w := &fileWorker{deps: Deps{Chunker: wordChunker{n: 2}}}
	j := &job.Job{ID: "j", Neural: job.Neural{Model: "m", ChunkBudgetTokens: 4000}}
	done := job.OCRRow{JobID: "j", FileIndex: 1, File: "f", Status: job.RowDone, Content: "one two three"}

	rows := w.modelRows(done, j)
	if len(rows) != 1 || rows[0].Status != job.RowSkipped || rows[0].SkipReason != job.SkipNoPrompt {
		t.Fatalf("no prompts: %+v", rows)
	}

	j.Prompts = []string{"extract"}
	rows = w.modelRows(done, j)
	if len(rows) != 2 {
		t.Fatalf("two chunks: %d rows", len(rows))
	}
	for i, r := range rows {
		if r.Status != job.RowPending || r.ChunkIndex != i || r.ChunkTotal != 2 || r.FileIndex != 1 || r.Input == "" || r.Model != "m" {
			t.Fatalf("row %d = %+v", i, r)
		}
	}

	rows = (&fileWorker{}).modelRows(done, j)
	if rows[0].Status != job.RowFailed || rows[0].Error == "" {
		t.Fatalf("without a chunker: %+v", rows[0])
	}
}

func TestABusyProviderIsRetriedLaterAndARefusingOneFailsTheRow(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		wantSnooze bool
		wantRetry  bool
	}{
		{"rate limited snoozes for Retry-After", &provider.Error{Category: provider.CategoryRateLimit, Status: 429, RetryAfter: 30 * time.Second}, true, true},
		{"server error is retried", &provider.Error{Category: provider.CategoryServer, Status: 502}, false, true},
		{"bad key fails the row", &provider.Error{Category: provider.CategoryAuth, Status: 401}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newFileWorker(Config{}.withDefaults(), Deps{
				Fetcher: sourceFetcher{data: []byte("\x89PNG\r\n\x1a\n")},
				Convert: func(context.Context, convert.Input) (convert.Output, error) {
					return convert.Output{}, fmt.Errorf("%w on page 1", tt.err)
				},
				Logger: slog.Default(),
			})
			j := &job.Job{ID: "j", AccountID: "a", SourceURLs: []string{"https://example.com/a.png"}}
			row, _, err := w.recognize(context.Background(), j, 0, downloads{})
			if !tt.wantRetry {
				if err != nil || row.Status != job.RowFailed || !strings.Contains(row.Error, "category=auth") {
					t.Fatalf("row %+v, err %v; want a FAILED row naming the category", row, err)
				}
				return
			}
			busy := (*providerBusyError)(nil)
			if !errors.As(err, &busy) {
				t.Fatalf("err = %v, want a provider-busy error", err)
			}
			if busy.rateLimited() != tt.wantSnooze {
				t.Fatalf("rateLimited = %v, want %v", busy.rateLimited(), tt.wantSnooze)
			}
			if tt.wantSnooze && busy.retryAfter != 30*time.Second {
				t.Fatalf("retry after %s, want the provider's Retry-After", busy.retryAfter)
			}
		})
	}
}
