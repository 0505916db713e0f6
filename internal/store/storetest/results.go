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

// snapshotJob is a RUNNING job of three files, one prompt, whose rows each
// hold 600 KiB, so that the SQL stores read each in a batch of its own
// (they batch about a megabyte): file 0 recognized with one answer and one
// chunk still PENDING, file 1 still being recognized, file 2 recognized
// with its only chunk PENDING. finish commits the rest and ends the job
// with merged answers (through finalize, as the pipeline does).
func snapshotJob(t *testing.T, s Store) (j *job.Job, finish func()) {
	t.Helper()
	big := func(c byte) string { return strings.Repeat(string(c), 600<<10) }
	h := newHarness(t, s, "")
	j = newJob("acct", 3)
	j.Prompts = []string{"p0"}
	h.on("finalize", func(ctx context.Context, rj *river.Job[stepArgs]) error {
		_, err := s.FinishJob(ctx, rj.JobRow, store.Finish{JobID: j.ID, Status: job.StatusComplete,
			Merged: []byte(`[{"file":"a","format":"json","content":"{}"}]`)})
		return err
	})
	createJob(t, s, j, store.CreateJobParams{})

	ocr0 := doneRow(j, 0, big('a'))
	answered := pendingChunk(j, ocr0, 0, 2)
	answered.Status, answered.Content = job.RowDone, big('b')
	pending0 := pendingChunk(j, ocr0, 1, 2)
	_, err := s.FinishOCR(ctx(t), store.OCRDone{Row: ocr0, LLM: []job.LLMRow{answered, pending0}})
	noErr(t, "FinishOCR of file 0", err)
	ocr2 := doneRow(j, 2, big('c'))
	pending2 := pendingChunk(j, ocr2, 0, 1)
	_, err = s.FinishOCR(ctx(t), store.OCRDone{Row: ocr2, LLM: []job.LLMRow{pending2}})
	noErr(t, "FinishOCR of file 2", err)

	return j, func() {
		t.Helper()
		ocr1 := doneRow(j, 1, big('d'))
		row1 := pendingChunk(j, ocr1, 0, 1)
		_, err := s.FinishOCR(ctx(t), store.OCRDone{Row: ocr1, LLM: []job.LLMRow{row1}})
		noErr(t, "FinishOCR of file 1", err)
		last := []job.LLMRow{pending0, row1, pending2}
		for i, r := range last {
			r.Status, r.Content = job.RowDone, big('e'+byte(i))
			d := store.LLMDone{Row: r}
			if i == len(last)-1 {
				d.EnqueueWhenLast = []river.InsertManyParams{step("finalize")}
			}
			_, err := s.FinishLLM(ctx(t), d)
			noErr(t, "FinishLLM", err)
		}
		h.waitOne()
	}
}

// testResultRowsIsOneSnapshot commits, between the batches of a result
// being read, the recognition of a file (with its model rows), the answers
// of every pending chunk and the job's end with merged answers: the result
// read is the job as it was when ResultRows was called, row for row, job
// included; read again, it is the finished job.
func testResultRowsIsOneSnapshot(t *testing.T, s Store) {
	j, finish := snapshotJob(t, s)
	before := getResult(t, s, j.ID)
	equal(t, "job status before", before.Job.Status, job.StatusRunning)

	snapJob, seq, err := s.ResultRows(ctx(t), "acct", j.ID)
	noErr(t, "ResultRows", err)
	got := &job.Result{Job: snapJob}
	for r, err := range seq {
		noErr(t, "a row of ResultRows", err)
		if len(got.OCR) == 0 {
			finish() // after the first batch, before the others
		}
		switch {
		case r.OCR != nil:
			got.OCR = append(got.OCR, *r.OCR)
		case r.LLM != nil:
			got.LLM = append(got.LLM, *r.LLM)
		case r.Merged != nil:
			got.Merged = r.Merged
		}
	}
	after := getResult(t, s, j.ID)
	equal(t, "job status after", after.Job.Status, job.StatusComplete)
	equal(t, "rows before and after", [4]int{len(before.OCR), len(before.LLM), len(after.OCR), len(after.LLM)}, [4]int{3, 3, 3, 4})

	equal(t, "job", got.Job, before.Job)
	equal(t, "OCR rows", got.OCR, before.OCR)
	equal(t, "model rows", got.LLM, before.LLM)
	if got.Merged != nil {
		t.Errorf("merged answers %s of a job that had none when it was read", got.Merged)
	}

	again := collectResult(t, s, "acct", j.ID)
	equal(t, "job read again", again.Job, after.Job)
	equal(t, "OCR rows read again", again.OCR, after.OCR)
	equal(t, "model rows read again", again.LLM, after.LLM)
	equal(t, "merged answers read again", string(again.Merged), string(after.Merged))
}

// testResultRowsOfAJobDeletedWhileRead deletes the job after the first
// batch of its result was read: the sequence ends with an error matching
// store.ErrNotFound, not with a result that only lacks rows.
func testResultRowsOfAJobDeletedWhileRead(t *testing.T, s Store) {
	j, _ := snapshotJob(t, s)
	_, seq, err := s.ResultRows(ctx(t), "acct", j.ID)
	noErr(t, "ResultRows", err)
	rows, deleted := 0, false
	var last error
	for _, err := range seq {
		if err != nil {
			last = err
			continue
		}
		rows++
		if !deleted {
			_, err := s.DeleteJob(ctx(t), "acct", j.ID)
			noErr(t, "DeleteJob", err)
			deleted = true
		}
	}
	isErr(t, fmt.Sprintf("the end of a result whose job was deleted after %d rows", rows), last, store.ErrNotFound)
}
