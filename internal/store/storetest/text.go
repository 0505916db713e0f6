package storetest

import (
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// hostile is text PostgreSQL refuses in a TEXT column, and stored is what
// every store keeps of it: each NUL and each invalid byte becomes U+FFFD.
const (
	hostile = "a\x00b\xffc\xe2\x82"
	stored  = "a\uFFFDb\uFFFDc\uFFFD\uFFFD"
)

// testTextWithNULOrInvalidUTF8IsStoredAlike: recognized text, model answers,
// file names and errors come from documents and providers, and may hold
// NUL or bytes that are not UTF-8. Every store writes them, the same way,
// rather than failing the write on one database (a failed write of a row
// is retried until its job ends); a lookup by such an id finds nothing.
func testTextWithNULOrInvalidUTF8IsStoredAlike(t *testing.T, s Store) {
	j := newJob("acct", 1)
	j.Title, j.Neural.Model, j.OCR.Model, j.IdempotencyKey = hostile, hostile, hostile, hostile
	createJob(t, s, j, store.CreateJobParams{})
	got := getJob(t, s, j.ID)
	equal(t, "title", got.Title, stored)
	equal(t, "neural model", got.Neural.Model, stored)
	equal(t, "ocr model", got.OCR.Model, stored)
	equal(t, "idempotency key", got.IdempotencyKey, stored)

	ocr := doneRow(j, 0, hostile)
	ocr.Request, ocr.RawData = hostile, hostile
	copyFile := job.File{ID: newID("file"), AccountID: "acct", JobID: j.ID, Name: hostile, Size: 5,
		ContentType: "text/plain", Key: "jobs/" + j.ID + "/0"}
	chunk := pendingChunk(j, ocr, 0, 2)
	chunk.Input, chunk.Overlap = hostile, hostile
	failed := job.LLMRow{JobID: j.ID, File: ocr.File, ChunkIndex: 1, ChunkTotal: 2, Status: job.RowPending, Model: "m"}
	_, err := s.FinishOCR(ctx(t), store.OCRDone{Row: ocr, LLM: []job.LLMRow{chunk, failed}, File: &copyFile, Name: hostile})
	noErr(t, "FinishOCR with hostile text", err)

	recognized, pending := fileModelRows(t, s, j.ID, 0)
	equal(t, "recognized", recognized, true)
	if len(pending) != 2 {
		t.Fatalf("%d pending model rows, want 2", len(pending))
	}
	equal(t, "chunk input", pending[0].Input, stored)
	equal(t, "file name of the model rows", pending[0].FileName, stored)

	answer := chunk
	answer.Status, answer.Content, answer.Request, answer.RawData = job.RowDone, hostile, hostile, hostile
	answer.Duration = time.Millisecond
	applied, err := s.FinishLLM(ctx(t), store.LLMDone{Row: answer})
	noErr(t, "FinishLLM with a hostile answer", err)
	equal(t, "answer applied", applied, true)
	failed.Status, failed.Error = job.RowFailed, hostile
	applied, err = s.FinishLLM(ctx(t), store.LLMDone{Row: failed})
	noErr(t, "FinishLLM with a hostile error", err)
	equal(t, "failure applied", applied, true)

	res := getResult(t, s, j.ID)
	o := res.OCR[0]
	equal(t, "ocr content, request, raw data",
		[]string{o.Content, o.Request, o.RawData}, []string{stored, stored, stored})
	l := res.LLM[0]
	equal(t, "answer content, request, raw data",
		[]string{l.Content, l.Request, l.RawData}, []string{stored, stored, stored})
	equal(t, "model row error", res.LLM[1].Error, stored)
	f, err := s.GetFile(ctx(t), "acct", copyFile.ID)
	noErr(t, "GetFile", err)
	equal(t, "file name", f.Name, stored)

	// A job's own error and its rows' errors, as its end writes them.
	expired := newJob("acct", 1)
	createJob(t, s, expired, store.CreateJobParams{})
	_, err = s.ExpireJob(ctx(t), expired.ID, hostile, hostile)
	noErr(t, "ExpireJob with hostile errors", err)
	res = getResult(t, s, expired.ID)
	equal(t, "job status", res.Job.Status, job.StatusFailed)
	equal(t, "job error, row error", []string{res.Job.Error, res.OCR[0].Error}, []string{stored, stored})

	// Ids no store makes: nothing found, on every database.
	for _, id := range []string{"\x00", "\xff", j.ID + "\x00"} {
		_, err := s.GetJob(ctx(t), "acct", id)
		isErr(t, "GetJob of "+id, err, store.ErrNotFound)
		_, err = s.GetFile(ctx(t), "acct", id)
		isErr(t, "GetFile of "+id, err, store.ErrNotFound)
	}
	// A hand-made page token naming such an id lists what follows it.
	b, _ := json.Marshal(map[string]any{"a": "acct", "c": time.Now().UnixMicro(), "i": "\x00"})
	_, err = s.ListJobs(ctx(t), store.ListParams{AccountID: "acct", PageSize: 10, PageToken: base64.RawURLEncoding.EncodeToString(b)})
	noErr(t, "ListJobs after an id with NUL", err)
}
