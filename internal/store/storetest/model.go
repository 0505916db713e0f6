package storetest

import (
	"context"
	"sync"
	"testing"

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
