package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

func testFinishLLMFansInOnceAndKeepsInputsApart(t *testing.T, s Store) {
	h := newHarness(t, s, "")
	j := newJob("acct", 1)
	ocr := doneRow(j, 0, "chunk A chunk B")
	pending := func(i int, input string) job.LLMRow {
		return job.LLMRow{JobID: j.ID, FileIndex: 0, File: ocr.File, ChunkIndex: i, ChunkTotal: 2,
			Status: job.RowPending, Model: "m", Input: input}
	}
	h.on("ocr", func(ctx context.Context, rj *river.Job[stepArgs]) error {
		_, err := s.FinishOCR(ctx, rj.JobRow, store.OCRDone{Row: ocr,
			LLM:             []job.LLMRow{pending(0, "chunk A"), pending(1, "chunk B")},
			EnqueueNow:      []river.InsertManyParams{step("llm0"), step("llm1")},
			EnqueueWhenLast: []river.InsertManyParams{parked("finalize-after-ocr")}})
		return err
	})
	var mu sync.Mutex // the two model steps may run at once
	applied := map[int]bool{}
	finish := func(i int) stepFunc {
		return func(ctx context.Context, rj *river.Job[stepArgs]) error {
			_, row, err := s.ModelInput(ctx, j.ID, 0, 0, i)
			if err != nil {
				return err
			}
			row.Status, row.Content, row.InputTokens, row.OutputTokens = job.RowDone, `{"echo":"`+row.Input+`"}`, 100, 7
			ok, err := s.FinishLLM(ctx, rj.JobRow, store.LLMDone{Row: row,
				EnqueueWhenLast: []river.InsertManyParams{parked("finalize")}})
			mu.Lock()
			applied[i] = ok
			mu.Unlock()
			return err
		}
	}
	h.on("llm0", finish(0))
	h.on("llm1", finish(1))
	createJob(t, s, j, store.CreateJobParams{Enqueue: []river.InsertManyParams{step("ocr")}})
	for _, run := range h.wait(3) {
		equal(t, "River job of "+run.Step, riverState(t, s, run.JobID), rivertype.JobStateCompleted)
	}

	equal(t, "both rows applied", applied, map[int]bool{0: true, 1: true})
	equal(t, "finalize inserted once, by the last model row", parkedNotes(t, s), []string{"finalize"})
	res := getResult(t, s, j.ID)
	for i, r := range res.LLM {
		equal(t, "row status", r.Status, job.RowDone)
		equal(t, "row answer", r.Content, `{"echo":"chunk `+string(rune('A'+i))+`"}`)
		equal(t, "tokens", [2]int64{r.InputTokens, r.OutputTokens}, [2]int64{100, 7})
		equal(t, "input is not part of the result", r.Input, "")
	}
}

// testFinishLLMBurst finishes a file's model rows all at once, as a job's
// answers arrive: FinishLLM groups them into shared transactions. Every row
// must be applied once and finalize enqueued once; a member whose River job
// cannot be completed fails alone, not the rows grouped with it.
func testFinishLLMBurst(t *testing.T, s Store) {
	const n = 8 // the harness's MaxWorkers: all of them finish at once
	const refused = 3
	h := newHarness(t, s, "")
	j := newJob("acct", 1)
	ocr := doneRow(j, 0, "text")
	var (
		rows    []job.LLMRow
		enqueue []river.InsertManyParams
	)
	for i := range n {
		rows = append(rows, job.LLMRow{JobID: j.ID, FileIndex: 0, File: ocr.File, ChunkIndex: i, ChunkTotal: n,
			Status: job.RowPending, Model: "m", Input: fmt.Sprint("chunk ", i)})
		enqueue = append(enqueue, step(fmt.Sprint("llm", i)))
	}
	h.on("ocr", func(ctx context.Context, rj *river.Job[stepArgs]) error {
		_, err := s.FinishOCR(ctx, rj.JobRow, store.OCRDone{Row: ocr, LLM: rows, EnqueueNow: enqueue})
		return err
	})
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	for i := range n {
		h.on(fmt.Sprint("llm", i), func(ctx context.Context, rj *river.Job[stepArgs]) error {
			_, row, err := s.ModelInput(ctx, j.ID, 0, 0, i)
			if err != nil {
				return err
			}
			riverRow := rj.JobRow
			if rj.Attempt == 1 {
				arrived.Done()
				select {
				case <-all:
				case <-time.After(5 * time.Second): // River ran them one by one; still correct
				}
				if i == refused {
					// A River job that is not running cannot be completed.
					copied := *rj.JobRow
					copied.State = rivertype.JobStateAvailable
					riverRow = &copied
				}
			}
			row.Status, row.Content = job.RowDone, fmt.Sprintf(`{"i":%d}`, i)
			ok, err := s.FinishLLM(ctx, riverRow, store.LLMDone{Row: row,
				EnqueueWhenLast: []river.InsertManyParams{parked("finalize")}})
			if err == nil && !ok {
				err = fmt.Errorf("row %d: applied = false", i)
			}
			return err
		})
	}
	createJob(t, s, j, store.CreateJobParams{Enqueue: []river.InsertManyParams{step("ocr")}})
	runs := h.wait(1 + n + 1) // ocr, n model rows, the refused row's retry
	failed := 0
	for _, r := range runs {
		switch {
		case r.Step == fmt.Sprint("llm", refused) && r.Attempt == 1:
			if r.Err == nil {
				t.Errorf("the refused row's first finish succeeded")
			}
			failed++
		case r.Err != nil:
			t.Errorf("step %s attempt %d: %v", r.Step, r.Attempt, r.Err)
		default:
			equal(t, "River job of "+r.Step, riverState(t, s, r.JobID), rivertype.JobStateCompleted)
		}
	}
	equal(t, "refused finishes", failed, 1)
	equal(t, "finalize inserted once, by the last model row", parkedNotes(t, s), []string{"finalize"})
	res := getResult(t, s, j.ID)
	equal(t, "model rows", len(res.LLM), n)
	for _, r := range res.LLM {
		equal(t, fmt.Sprint("row ", r.ChunkIndex), r.Status, job.RowDone)
		equal(t, fmt.Sprint("row ", r.ChunkIndex, " answer"), r.Content, fmt.Sprintf(`{"i":%d}`, r.ChunkIndex))
	}
}

// testFinishOCRManyChunks stores a file's model rows in several INSERTs
// (more rows than one statement carries); none may be lost or misplaced.
func testFinishOCRManyChunks(t *testing.T, s Store) {
	const n = 77
	h := newHarness(t, s, "")
	j := newJob("acct", 1)
	ocr := doneRow(j, 0, "text")
	rows := make([]job.LLMRow, n)
	for i := range rows {
		rows[i] = job.LLMRow{JobID: j.ID, FileIndex: 0, File: ocr.File, ChunkIndex: i, ChunkTotal: n,
			Status: job.RowPending, Model: "m", Input: fmt.Sprint("chunk ", i), Overlap: fmt.Sprint("overlap ", i)}
	}
	h.on("ocr", func(ctx context.Context, rj *river.Job[stepArgs]) error {
		_, err := s.FinishOCR(ctx, rj.JobRow, store.OCRDone{Row: ocr, LLM: rows})
		return err
	})
	createJob(t, s, j, store.CreateJobParams{Enqueue: []river.InsertManyParams{step("ocr")}})
	h.waitOne()
	res := getResult(t, s, j.ID)
	equal(t, "model rows", len(res.LLM), n)
	for i, r := range res.LLM {
		equal(t, fmt.Sprint("row ", i, " chunk"), [2]int{r.ChunkIndex, r.ChunkTotal}, [2]int{i, n})
		equal(t, fmt.Sprint("row ", i, " status"), r.Status, job.RowPending)
	}
	for _, i := range []int{0, 31, 32, 63, 64, n - 1} {
		_, r, err := s.ModelInput(ctx(t), j.ID, 0, 0, i)
		noErr(t, "ModelInput", err)
		equal(t, fmt.Sprint("input of row ", i), r.Input, fmt.Sprint("chunk ", i))
	}
}
