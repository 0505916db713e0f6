package storetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// pendingChunk is PENDING model row chunk of total of file i of job j.
func pendingChunk(j *job.Job, ocr job.OCRRow, chunk, total int) job.LLMRow {
	return job.LLMRow{JobID: j.ID, FileIndex: ocr.FileIndex, File: ocr.File, ChunkIndex: chunk, ChunkTotal: total,
		Status: job.RowPending, Model: "m", Input: fmt.Sprintf("file %d chunk %d", ocr.FileIndex, chunk),
		Overlap: fmt.Sprint("overlap ", chunk)}
}

// recognizedJob creates a job of one file and records the file's
// recognition with n pending model rows, outside River, for tests of how
// the rows finish.
func recognizedJob(t *testing.T, s Store, n int) (*job.Job, []job.LLMRow) {
	t.Helper()
	j := newJob("acct", 1)
	createJob(t, s, j, store.CreateJobParams{})
	ocr := doneRow(j, 0, "the recognized text")
	rows := make([]job.LLMRow, n)
	for c := range rows {
		rows[c] = pendingChunk(j, ocr, c, n)
	}
	_, err := s.FinishOCR(ctx(t), store.OCRDone{Row: ocr, LLM: rows})
	noErr(t, "FinishOCR", err)
	return j, rows
}

// leftOf keeps of rows what FileModelRows promises: enough to answer them.
func leftOf(rows []job.LLMRow) []job.LLMRow {
	var out []job.LLMRow
	for _, r := range rows {
		out = append(out, job.LLMRow{JobID: r.JobID, FileIndex: r.FileIndex, ChunkIndex: r.ChunkIndex,
			ChunkTotal: r.ChunkTotal, File: r.File, Model: r.Model, Input: r.Input, Status: r.Status, FileName: r.FileName})
	}
	return out
}

// fileModelRows calls FileModelRows and fails the test on error.
func fileModelRows(t *testing.T, s store.Store, jobID string, fileIndex int) (bool, []job.LLMRow) {
	t.Helper()
	recognized, pending, err := s.FileModelRows(ctx(t), jobID, fileIndex)
	noErr(t, fmt.Sprint("FileModelRows of file ", fileIndex), err)
	return recognized, pending
}

// testFinishLLMFansInOnceAndKeepsInputsApart runs a job's files as the
// pipeline does: each file's River job recognizes its file, then answers
// the file's model rows at once from the inputs stored with them. Whichever
// finish leaves no row pending, in whichever file, inserts finalize; only
// it.
func testFinishLLMFansInOnceAndKeepsInputsApart(t *testing.T, s Store) {
	const files, chunks = 2, 2
	h := newHarness(t, s, "")
	j := newJob("acct", files)
	finalize := []river.InsertManyParams{parked("finalize")}
	// The files wait for each other after recognition, so that their model
	// rows finish together.
	var recognized sync.WaitGroup
	recognized.Add(files)
	all := make(chan struct{})
	go func() { recognized.Wait(); close(all) }()

	var mu sync.Mutex
	applied := map[string]bool{}
	var enqueue []river.InsertManyParams
	for i := range files {
		name := fmt.Sprint("file-", i)
		enqueue = append(enqueue, step(name))
		h.on(name, func(ctx context.Context, rj *river.Job[stepArgs]) error {
			ocr := doneRow(j, i, "chunk A chunk B")
			var rows []job.LLMRow
			for c := range chunks {
				rows = append(rows, pendingChunk(j, ocr, c, chunks))
			}
			_, err := s.FinishOCR(ctx, store.OCRDone{Row: ocr, LLM: rows, EnqueueWhenLast: finalize})
			recognized.Done()
			if err != nil {
				return err
			}
			select {
			case <-all:
			case <-time.After(5 * time.Second): // River ran them one by one; still correct
			}
			_, pending, err := s.FileModelRows(ctx, j.ID, i)
			if err != nil {
				return err
			}
			errs := make(chan error, len(pending))
			for _, row := range pending {
				go func() {
					row.Status, row.Content, row.InputTokens, row.OutputTokens = job.RowDone, `{"echo":"`+row.Input+`"}`, 100, 7
					ok, err := s.FinishLLM(ctx, store.LLMDone{Row: row, EnqueueWhenLast: finalize})
					mu.Lock()
					applied[row.Input] = ok
					mu.Unlock()
					errs <- err
				}()
			}
			for range pending {
				if e := <-errs; e != nil {
					err = e
				}
			}
			return err
		})
	}
	createJob(t, s, j, store.CreateJobParams{Enqueue: enqueue})
	for _, run := range h.wait(files) {
		noErr(t, "step "+run.Step, run.Err)
		waitRiverState(t, s, run.JobID, rivertype.JobStateCompleted)
	}

	equal(t, "rows applied", applied, map[string]bool{
		"file 0 chunk 0": true, "file 0 chunk 1": true, "file 1 chunk 0": true, "file 1 chunk 1": true})
	equal(t, "finalize inserted once, by the last model row", parkedNotes(t, s), []string{"finalize"})
	res := getResult(t, s, j.ID)
	equal(t, "model rows", len(res.LLM), files*chunks)
	for _, r := range res.LLM {
		what := fmt.Sprintf("row %d/%d ", r.FileIndex, r.ChunkIndex)
		equal(t, what+"status", r.Status, job.RowDone)
		equal(t, what+"answer", r.Content, fmt.Sprintf(`{"echo":"file %d chunk %d"}`, r.FileIndex, r.ChunkIndex))
		equal(t, what+"tokens", [2]int64{r.InputTokens, r.OutputTokens}, [2]int64{100, 7})
		equal(t, what+"input is not part of the result", r.Input, "")
	}
}

// testFinishLLMBurst finishes a file's model rows all at once, as its
// answers arrive: FinishLLM groups them into shared transactions. Every row
// must be applied once and finalize enqueued once.
func testFinishLLMBurst(t *testing.T, s Store) {
	const n = 16
	h := newHarness(t, s, "")
	j := newJob("acct", 1)
	ocr := doneRow(j, 0, "text")
	var rows []job.LLMRow
	for i := range n {
		rows = append(rows, pendingChunk(j, ocr, i, n))
	}
	applied := make([]bool, n)
	h.on("file", func(ctx context.Context, rj *river.Job[stepArgs]) error {
		if _, err := s.FinishOCR(ctx, store.OCRDone{Row: ocr, LLM: rows}); err != nil {
			return err
		}
		start := make(chan struct{})
		errs := make(chan error, n)
		for i, row := range rows {
			go func() {
				<-start
				row.Status, row.Content = job.RowDone, fmt.Sprintf(`{"i":%d}`, i)
				ok, err := s.FinishLLM(ctx, store.LLMDone{Row: row,
					EnqueueWhenLast: []river.InsertManyParams{parked("finalize")}})
				applied[i] = ok
				errs <- err
			}()
		}
		close(start)
		var err error
		for range n {
			if e := <-errs; e != nil {
				err = e
			}
		}
		return err
	})
	createJob(t, s, j, store.CreateJobParams{Enqueue: []river.InsertManyParams{step("file")}})
	run := h.waitOne()
	waitRiverState(t, s, run.JobID, rivertype.JobStateCompleted)

	for i, ok := range applied {
		equal(t, fmt.Sprint("row ", i, " applied"), ok, true)
	}
	equal(t, "finalize inserted once, by the last model row", parkedNotes(t, s), []string{"finalize"})

	// A repeat finish (a rescued file job overlapping a hung attempt) of a
	// row already terminal changes nothing and fans in nothing.
	again := rows[0]
	again.Status, again.Content = job.RowDone, `{"i":"again"}`
	ok, err := s.FinishLLM(ctx(t), store.LLMDone{Row: again, EnqueueWhenLast: []river.InsertManyParams{parked("finalize again")}})
	noErr(t, "FinishLLM again", err)
	equal(t, "repeat applied", ok, false)
	equal(t, "finalize still inserted once", parkedNotes(t, s), []string{"finalize"})

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
		rows[i] = pendingChunk(j, ocr, i, n)
	}
	h.on("ocr", func(ctx context.Context, rj *river.Job[stepArgs]) error {
		_, err := s.FinishOCR(ctx, store.OCRDone{Row: ocr, LLM: rows})
		return err
	})
	createJob(t, s, j, store.CreateJobParams{Enqueue: []river.InsertManyParams{step("ocr")}})
	h.waitOne()
	res := getResult(t, s, j.ID)
	equal(t, "model rows", len(res.LLM), n)
	for i, r := range res.LLM {
		equal(t, fmt.Sprint("row ", i, " chunk"), [2]int{r.ChunkIndex, r.ChunkTotal}, [2]int{i, n})
		equal(t, fmt.Sprint("row ", i, " status"), r.Status, job.RowPending)
		equal(t, fmt.Sprint("row ", i, " overlap"), r.Overlap, fmt.Sprint("overlap ", i))
	}
	recognized, pending := fileModelRows(t, s, j.ID, 0)
	equal(t, "recognized", recognized, true)
	equal(t, "rows left, inputs included", leftOf(pending), leftOf(rows))
}

// testFileModelRows reads what a file's River job, run again, has left to
// do: nothing known before its recognition is recorded, then the first
// prompt's rows of that file still pending, in chunk order.
func testFileModelRows(t *testing.T, s Store) {
	j := newJob("acct", 2)
	j.Prompts = []string{"Extract the total.", "Extract the date."}
	createJob(t, s, j, store.CreateJobParams{})

	recognized, pending := fileModelRows(t, s, j.ID, 0)
	equal(t, "before recognition", [2]any{recognized, pending}, [2]any{false, []job.LLMRow(nil)})

	ocr := doneRow(j, 0, "chunks")
	secondPrompt := pendingChunk(j, ocr, 0, 1)
	secondPrompt.PromptIndex, secondPrompt.Input = 1, "second prompt"
	// Out of chunk order, as nothing says a caller writes them in order.
	rows := []job.LLMRow{pendingChunk(j, ocr, 2, 3), secondPrompt, pendingChunk(j, ocr, 0, 3), pendingChunk(j, ocr, 1, 3)}
	// The file's name comes back with each of its rows, for the user
	// message; the other file, recorded without one, has none.
	const name = "Totals März 2025.pdf"
	for i := range rows {
		rows[i].FileName = name
	}
	applied, err := s.FinishOCR(ctx(t), store.OCRDone{Row: ocr, LLM: rows, Name: name})
	noErr(t, "FinishOCR of file 0", err)
	equal(t, "FinishOCR of file 0 applied", applied, true)
	recognized, pending = fileModelRows(t, s, j.ID, 1)
	equal(t, "another file before its recognition", [2]any{recognized, pending}, [2]any{false, []job.LLMRow(nil)})
	other := doneRow(j, 1, "other")
	_, err = s.FinishOCR(ctx(t), store.OCRDone{Row: other, LLM: []job.LLMRow{pendingChunk(j, other, 0, 1)}})
	noErr(t, "FinishOCR of file 1", err)

	recognized, pending = fileModelRows(t, s, j.ID, 0)
	equal(t, "recognized", recognized, true)
	equal(t, "rows left", leftOf(pending), leftOf([]job.LLMRow{rows[2], rows[3], rows[0]}))
	recognized, pending = fileModelRows(t, s, j.ID, 1)
	equal(t, "the other file's rows left", [2]any{recognized, leftOf(pending)},
		[2]any{true, leftOf([]job.LLMRow{pendingChunk(j, other, 0, 1)})})

	answered := rows[3] // chunk 1
	answered.Status, answered.Content = job.RowDone, `{"total":1}`
	applied, err = s.FinishLLM(ctx(t), store.LLMDone{Row: answered})
	noErr(t, "FinishLLM of chunk 1", err)
	equal(t, "FinishLLM of chunk 1 applied", applied, true)
	_, pending = fileModelRows(t, s, j.ID, 0)
	equal(t, "rows left after chunk 1", leftOf(pending), leftOf([]job.LLMRow{rows[2], rows[0]}))

	for _, c := range []struct {
		what  string
		jobID string
		file  int
	}{
		{"an unknown job", newID("job"), 0},
		{"a file past the job's last", j.ID, 2},
		{"a negative file index", j.ID, -1},
	} {
		recognized, pending, err := s.FileModelRows(ctx(t), c.jobID, c.file)
		isErr(t, c.what, err, store.ErrNotFound)
		equal(t, c.what+": nothing", [2]any{recognized, pending}, [2]any{false, []job.LLMRow(nil)})
	}

	// A cancelled job has nothing left to answer; a deleted one is gone.
	_, err = s.CancelJob(ctx(t), "acct", j.ID)
	noErr(t, "CancelJob", err)
	recognized, pending = fileModelRows(t, s, j.ID, 0)
	equal(t, "rows left after cancel", [2]any{recognized, len(pending)}, [2]any{true, 0})
	_, err = s.DeleteJob(ctx(t), "acct", j.ID)
	noErr(t, "DeleteJob", err)
	_, _, err = s.FileModelRows(ctx(t), j.ID, 0)
	isErr(t, "a deleted job", err, store.ErrNotFound)
}

func testResultToFinish(t *testing.T, s Store) {
	j, rows := recognizedJob(t, s, 2)
	answered := rows[0]
	answered.Status, answered.Content, answered.Request, answered.RawData = job.RowDone, `{"n":1}`, "the request", "the answer"
	_, err := s.FinishLLM(ctx(t), store.LLMDone{Row: answered})
	noErr(t, "FinishLLM", err)

	full := getResult(t, s, j.ID)
	lean, err := s.ResultToFinish(ctx(t), j.ID, 0)
	noErr(t, "ResultToFinish", err)
	equal(t, "job", lean.Job.ID, j.ID)
	// Everything the full result says, less the text and the exchanges.
	for i := range full.OCR {
		full.OCR[i].Content, full.OCR[i].Request, full.OCR[i].RawData = "", "", ""
	}
	for i := range full.LLM {
		full.LLM[i].Request, full.LLM[i].RawData = "", ""
	}
	equal(t, "OCR rows", lean.OCR, full.OCR)
	equal(t, "model rows", lean.LLM, full.LLM)
	equal(t, "the answer's content is kept for merge", lean.LLM[0].Content, `{"n":1}`)
	if lean.Merged != nil {
		t.Errorf("merged = %s, want none", lean.Merged)
	}

	_, err = s.ResultToFinish(ctx(t), "job-unknown", 0)
	isErr(t, "ResultToFinish of an unknown job", err, store.ErrNotFound)
}

// testResultToFinishReadsAnswersWithinTheBudget: answers are read in row
// order while they fit the budget; one that would pass it is not read (and
// is marked), a later, smaller one still is: merge's rule for its input
// limit, so finalize loads no answer merge leaves out (audit-merge2 F2).
// A failed row's content is not read at all.
func testResultToFinishReadsAnswersWithinTheBudget(t *testing.T, s Store) {
	j, rows := recognizedJob(t, s, 5)
	contents := []string{"0123456789", strings.Repeat("x", 30), "", "12345", "partial"}
	for i, r := range rows {
		r.Status, r.Content = job.RowDone, contents[i]
		if i == 4 {
			r.Status, r.Error = job.RowFailed, "truncated"
		}
		_, err := s.FinishLLM(ctx(t), store.LLMDone{Row: r})
		noErr(t, "FinishLLM", err)
	}
	type read struct {
		Content string
		Unread  bool
	}
	tests := []struct {
		name   string
		budget int64
		want   []read
	}{
		{"no budget reads every answer", 0,
			[]read{{"0123456789", false}, {contents[1], false}, {"", false}, {"12345", false}, {"", false}}},
		{"a budget all answers fit reads them all", 45,
			[]read{{"0123456789", false}, {contents[1], false}, {"", false}, {"12345", false}, {"", false}}},
		{"the answer that would pass the budget is not read, a later smaller one is", 20,
			[]read{{"0123456789", false}, {"", true}, {"", false}, {"12345", false}, {"", false}}},
		{"answers past the budget from the first", 9,
			[]read{{"", true}, {"", true}, {"", false}, {"12345", false}, {"", false}}},
		{"nothing fits", 1,
			[]read{{"", true}, {"", true}, {"", false}, {"", true}, {"", false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := s.ResultToFinish(ctx(t), j.ID, tt.budget)
			noErr(t, "ResultToFinish", err)
			var got []read
			for _, r := range res.LLM {
				got = append(got, read{r.Content, r.ContentUnread})
			}
			equal(t, "answers read", got, tt.want)
		})
	}
}

func testFinishLLMWritesEveryField(t *testing.T, s Store) {
	j, rows := recognizedJob(t, s, 4)
	valid, invalid := true, false
	rows[0].Status, rows[0].Content, rows[0].SchemaValid = job.RowDone, `{"a":1}`, &valid
	rows[1].Status, rows[1].Content, rows[1].SchemaValid = job.RowDone, `{"a":"x"}`, &invalid
	rows[1].SchemaErrors = []string{"/a: got string, want integer"}
	rows[2].Status, rows[2].Content, rows[2].Consensus = job.RowDone, `{"a":2}`, []byte(`{"k":3,"runsVotable":3,"minAgreement":1}`)
	rows[3].Status, rows[3].Error = job.RowFailed, "provider error (category=auth, status=401)"
	for i := range rows {
		rows[i].Model, rows[i].Request, rows[i].RawData = "m-2", fmt.Sprint("request ", i), fmt.Sprint("raw ", i)
		rows[i].Duration, rows[i].InputTokens, rows[i].OutputTokens = time.Duration(i+1)*time.Millisecond, int64(100+i), int64(i)
	}
	// All four in flight at once, so that they commit in groups.
	errs := make(chan error, len(rows))
	for _, r := range rows {
		go func() {
			applied, err := s.FinishLLM(ctx(t), store.LLMDone{Row: r})
			if err == nil && !applied {
				err = fmt.Errorf("row %d not applied", r.ChunkIndex)
			}
			errs <- err
		}()
	}
	for range rows {
		noErr(t, "FinishLLM", <-errs)
	}
	got := getResult(t, s, j.ID).LLM
	if len(got) != len(rows) {
		t.Fatalf("%d model rows, want %d", len(got), len(rows))
	}
	for i, g := range got {
		w := rows[i]
		equal(t, fmt.Sprint("row ", i, " status"), g.Status, w.Status)
		equal(t, fmt.Sprint("row ", i, " content"), g.Content, w.Content)
		equal(t, fmt.Sprint("row ", i, " schemaValid"), g.SchemaValid, w.SchemaValid)
		equal(t, fmt.Sprint("row ", i, " schemaErrors"), g.SchemaErrors, w.SchemaErrors)
		equal(t, fmt.Sprint("row ", i, " consensus"), string(g.Consensus), string(w.Consensus))
		equal(t, fmt.Sprint("row ", i, " error"), g.Error, w.Error)
		equal(t, fmt.Sprint("row ", i, " model"), g.Model, w.Model)
		equal(t, fmt.Sprint("row ", i, " request"), g.Request, w.Request)
		equal(t, fmt.Sprint("row ", i, " raw data"), g.RawData, w.RawData)
		equal(t, fmt.Sprint("row ", i, " duration"), g.Duration, w.Duration)
		equal(t, fmt.Sprint("row ", i, " tokens"), [2]int64{g.InputTokens, g.OutputTokens}, [2]int64{w.InputTokens, w.OutputTokens})
	}
	// A second finish of an ended row changes nothing.
	again := rows[0]
	again.Content = `{"a":99}`
	applied, err := s.FinishLLM(ctx(t), store.LLMDone{Row: again})
	noErr(t, "FinishLLM again", err)
	equal(t, "applied again", applied, false)
	equal(t, "content after a repeat finish", getResult(t, s, j.ID).LLM[0].Content, `{"a":1}`)
}

// testConcurrentFinishesOfOneRow finishes one row from several callers at
// once, as a rescued file job overlapping a hung attempt would: the
// callers land in the same group, and exactly one ends the row, with its
// own answer.
func testConcurrentFinishesOfOneRow(t *testing.T, s Store) {
	const callers = 8
	j, rows := recognizedJob(t, s, 2)

	start := make(chan struct{})
	applied := make([]bool, callers)
	errs := make(chan error, callers+1)
	for i := range callers {
		go func() {
			<-start
			r := rows[0]
			r.Status, r.Content = job.RowDone, fmt.Sprintf(`{"caller":%d}`, i)
			ok, err := s.FinishLLM(ctx(t), store.LLMDone{Row: r})
			applied[i] = ok
			errs <- err
		}()
	}
	go func() {
		<-start
		r := rows[1]
		r.Status, r.Content = job.RowDone, `{"other":true}`
		_, err := s.FinishLLM(ctx(t), store.LLMDone{Row: r})
		errs <- err
	}()
	close(start)
	for range callers + 1 {
		noErr(t, "FinishLLM", <-errs)
	}
	winner := -1
	for i, ok := range applied {
		if ok {
			if winner >= 0 {
				t.Fatalf("callers %d and %d both ended the row", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("no caller ended the row")
	}
	res := getResult(t, s, j.ID)
	equal(t, "the row holds the answer of the caller that ended it", res.LLM[0].Content, fmt.Sprintf(`{"caller":%d}`, winner))
	equal(t, "the other row", res.LLM[1].Content, `{"other":true}`)
}
