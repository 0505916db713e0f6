package worker

import (
	"context"
	"testing"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/postgres/pgtest"
)

// hostileChat answers with NUL and a byte that is not UTF-8 in every text
// a provider returns.
type hostileChat struct{}

func (hostileChat) Complete(context.Context, provider.ChatRequest) (provider.ChatAnswer, error) {
	return provider.ChatAnswer{Content: "{\"n\":\"a\x00b\xff\"}", Request: "req\x00", RawData: "raw\xff"}, nil
}

// The audit's finding: on PostgreSQL, which refuses NUL and invalid UTF-8
// in TEXT, a provider answer holding them failed the write of its row, and
// the file was retried until its job ended, paying the provider again each
// time. The same answers end DONE on both databases, with the same text
// stored. (Documents reach the store through convert, which reads text
// files with NUL as binary and decodes the rest; the store suite covers
// every text column whatever its source.)
func TestAnswersWithNULEndDoneOnEveryDatabase(t *testing.T) {
	for _, db := range []struct {
		name string
		open func(t *testing.T) Store
	}{
		{"sqlite", func(t *testing.T) Store { return openStore(t) }},
		{"postgres", func(t *testing.T) Store {
			url, schema := pgtest.Schema(t)
			return openPostgresSchema(t, url, schema)
		}},
	} {
		t.Run(db.name, func(t *testing.T) {
			st := db.open(t)
			source := &savingFetcher{data: "one two three four"}
			j := newTextFileJob(t, st.(interface {
				CreateJob(context.Context, store.CreateJobParams) (*job.Job, bool, error)
			}))
			if err := workAttempt(textFileWorker(st, source, hostileChat{}), j, 1); err != nil {
				t.Fatalf("the file's attempt: %v", err)
			}
			res, err := st.(interface {
				GetResult(ctx context.Context, accountID, id string) (*job.Result, error)
			}).GetResult(t.Context(), "", j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.OCR) != 1 || res.OCR[0].Status != job.RowDone {
				t.Fatalf("OCR rows = %+v, want one DONE", res.OCR)
			}
			if len(res.LLM) == 0 {
				t.Fatal("no model rows")
			}
			for _, r := range res.LLM {
				if r.Status != job.RowDone || r.Content != "{\"n\":\"a\uFFFDb\uFFFD\"}" || r.Request != "req\uFFFD" || r.RawData != "raw\uFFFD" {
					t.Errorf("model row %d: status %s, content %q, request %q, raw data %q; want DONE with U+FFFD",
						r.ChunkIndex, r.Status, r.Content, r.Request, r.RawData)
				}
			}
		})
	}
}
