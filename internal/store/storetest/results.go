package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/riverqueue/river"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// collectResult ranges over ResultRows into the shape GetResult returns.
func collectResult(t *testing.T, s store.Store, accountID, id string) *job.Result {
	t.Helper()
	j, rows, err := s.ResultRows(ctx(t), accountID, id)
	noErr(t, "ResultRows", err)
	res := &job.Result{Job: j}
	for r, err := range rows {
		noErr(t, "a row of ResultRows", err)
		switch {
		case r.OCR != nil:
			if len(res.LLM) > 0 || res.Merged != nil {
				t.Errorf("OCR row %d after a model row or the merged answers", r.OCR.FileIndex)
			}
			res.OCR = append(res.OCR, *r.OCR)
		case r.LLM != nil:
			if res.Merged != nil {
				t.Errorf("model row %d/%d/%d after the merged answers", r.LLM.FileIndex, r.LLM.PromptIndex, r.LLM.ChunkIndex)
			}
			res.LLM = append(res.LLM, *r.LLM)
		case r.Merged != nil:
			if res.Merged != nil {
				t.Errorf("merged answers yielded twice")
			}
			res.Merged = r.Merged
		default:
			t.Errorf("ResultRows yielded an empty row")
		}
	}
	return res
}

// testResultRowsIsGetResultOneRowAtATime reads a finished job of two files,
// two prompts and more than ten chunks (so that a text order of chunk
// indexes would show) both ways.
func testResultRowsIsGetResultOneRowAtATime(t *testing.T, s Store) {
	h := newHarness(t, s, "")
	j := newJob("acct", 2)
	j.Prompts = []string{"p0", "p1"}
	j.ConsensusMode = "CONSENSUS_MODE_THREE_RUNS"
	h.on("finalize", func(ctx context.Context, rj *river.Job[stepArgs]) error {
		_, err := s.FinishJob(ctx, rj.JobRow, store.Finish{JobID: j.ID, Status: job.StatusComplete,
			Merged: []byte(`[{"file":"a","format":"json","content":"{}"}]`)})
		return err
	})
	createJob(t, s, j, store.CreateJobParams{})

	failed := job.OCRRow{JobID: j.ID, FileIndex: 1, File: j.SourceURLs[1], Status: job.RowFailed, Error: "fetch failed"}
	_, err := s.FinishOCR(ctx(t), store.OCRDone{Row: failed, LLM: []job.LLMRow{job.SkippedLLMRow(failed, job.SkipOCRFailed, "m")}})
	noErr(t, "FinishOCR of the failed file", err)

	ocr := doneRow(j, 0, "the recognized text")
	var rows []job.LLMRow
	for p, chunks := range []int{12, 2} {
		for c := range chunks {
			r := pendingChunk(j, ocr, c, chunks)
			r.PromptIndex = p
			rows = append(rows, r)
		}
	}
	// Inserted out of order: the order read is the query's.
	rand.Shuffle(len(rows), func(a, b int) { rows[a], rows[b] = rows[b], rows[a] })
	_, err = s.FinishOCR(ctx(t), store.OCRDone{Row: ocr, LLM: rows})
	noErr(t, "FinishOCR", err)
	for i, r := range rows {
		r.Status, r.Content, r.Request, r.RawData = job.RowDone, fmt.Sprintf(`{"n":%d}`, i), "request", "raw"
		r.Consensus = []byte(`{"k":3,"runsVotable":3,"minAgreement":1}`)
		d := store.LLMDone{Row: r}
		if i == len(rows)-1 {
			d.EnqueueWhenLast = []river.InsertManyParams{step("finalize")}
		}
		_, err := s.FinishLLM(ctx(t), d)
		noErr(t, "FinishLLM", err)
	}
	h.waitOne()

	want := getResult(t, s, j.ID)
	got := collectResult(t, s, "acct", j.ID)
	equal(t, "job", got.Job, want.Job)
	equal(t, "OCR rows", got.OCR, want.OCR)
	equal(t, "model rows", got.LLM, want.LLM)
	equal(t, "merged answers", string(got.Merged), string(want.Merged))
	equal(t, "rows read", [2]int{len(got.OCR), len(got.LLM)}, [2]int{2, 15})
	equal(t, "the 11th chunk of the first prompt", [2]int{got.LLM[10].PromptIndex, got.LLM[10].ChunkIndex}, [2]int{0, 10})

	// A caller that stops early stops the reading.
	_, seq, err := s.ResultRows(ctx(t), "acct", j.ID)
	noErr(t, "ResultRows", err)
	n := 0
	for _, err := range seq {
		noErr(t, "a row", err)
		if n++; n == 3 {
			break
		}
	}
	equal(t, "rows read before the caller stopped", n, 3)

	_, _, err = s.ResultRows(ctx(t), "bob", j.ID)
	isErr(t, "ResultRows of another account's job", err, store.ErrNotFound)
	_, _, err = s.ResultRows(ctx(t), "", "job_missing")
	isErr(t, "ResultRows of an unknown job", err, store.ErrNotFound)
}

// testResultRowsOfANewJob reads a job before anything was recognized: its
// pending OCR rows and nothing else.
func testResultRowsOfANewJob(t *testing.T, s Store) {
	j := newJob("acct", 3)
	createJob(t, s, j, store.CreateJobParams{})
	want := getResult(t, s, j.ID)
	got := collectResult(t, s, "", j.ID)
	equal(t, "OCR rows", got.OCR, want.OCR)
	equal(t, "model rows", len(got.LLM), 0)
	if got.Merged != nil {
		t.Errorf("merged = %s, want none", got.Merged)
	}
}

// testResultRowsReadsLargeAndManyRows reads rows past the sizes the SQL
// store batches by (a megabyte of text, 512 rows a page): rows of 400 KiB,
// one of 1.5 MiB, and 700 small ones.
func testResultRowsReadsLargeAndManyRows(t *testing.T, s Store) {
	j := newJob("acct", 2)
	j.Prompts = []string{"p0"}
	createJob(t, s, j, store.CreateJobParams{})
	for i, n := range []int{6, 700} {
		ocr := doneRow(j, i, strings.Repeat("t", 1500<<10*(1-i)))
		var rows []job.LLMRow
		for c := range n {
			r := pendingChunk(j, ocr, c, n)
			r.Status, r.Content = job.RowDone, fmt.Sprint(c)
			if i == 0 {
				r.Request = strings.Repeat(fmt.Sprint(c), 400<<10)
			}
			rows = append(rows, r)
		}
		_, err := s.FinishOCR(ctx(t), store.OCRDone{Row: ocr, LLM: rows})
		noErr(t, "FinishOCR", err)
	}
	want := getResult(t, s, j.ID)
	got := collectResult(t, s, "acct", j.ID)
	equal(t, "rows read", [2]int{len(got.OCR), len(got.LLM)}, [2]int{2, 706})
	equal(t, "OCR rows", got.OCR, want.OCR)
	if len(got.LLM) == len(want.LLM) {
		for i := range got.LLM {
			equal(t, fmt.Sprint("model row ", i), got.LLM[i], want.LLM[i])
		}
	}
}
