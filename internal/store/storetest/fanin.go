package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// doneRow is a DONE OCR row of file i of job j.
func doneRow(j *job.Job, i int, content string) job.OCRRow {
	return job.OCRRow{
		JobID: j.ID, FileIndex: i, File: fmt.Sprintf("http://docjobs.test/v1/files/%s-%d", j.ID, i),
		Status: job.RowDone, Content: content, OutputFormat: job.FormatPlain, Model: "txt",
		Request: "request", RawData: "raw", Duration: 1500 * time.Microsecond,
	}
}

// noPromptRow is the SKIPPED model row of a file without prompts.
func noPromptRow(r job.OCRRow) job.LLMRow { return job.SkippedLLMRow(r, job.SkipNoPrompt, "") }

func testFinishOCR(t *testing.T, s Store) {
	h := newHarness(t, s, "")
	j := newJob("acct", 2)
	row := doneRow(j, 1, "hello")
	copyFile := job.File{ID: newID("file"), AccountID: "acct", JobID: j.ID, Name: "b.txt", Size: 5,
		ContentType: "text/plain", Key: "jobs/b"}
	valid := true
	llm := []job.LLMRow{
		{JobID: j.ID, FileIndex: 1, File: row.File, ChunkIndex: 1, ChunkTotal: 2, Status: job.RowDone,
			Content: `{"total":1}`, Model: "m", Request: "r", RawData: "d", Duration: time.Second,
			SchemaValid: &valid, SchemaErrors: []string{"/a: missing"}, Consensus: []byte(`{"agreement":1}`)},
		{JobID: j.ID, FileIndex: 1, File: row.File, ChunkIndex: 0, ChunkTotal: 2, Status: job.RowPending},
	}
	var applied bool
	h.on("ocr", func(ctx context.Context, rj *river.Job[stepArgs]) error {
		var err error
		applied, err = s.FinishOCR(ctx, store.OCRDone{
			Row: row, LLM: llm, File: &copyFile,
			EnqueueWhenLast: []river.InsertManyParams{parked("finalize")},
		})
		return err
	})
	createJob(t, s, j, store.CreateJobParams{Enqueue: []river.InsertManyParams{step("ocr")}})
	run := h.waitOne()

	equal(t, "applied", applied, true)
	waitRiverState(t, s, run.JobID, rivertype.JobStateCompleted)
	res := getResult(t, s, j.ID)
	equal(t, "job status", res.Job.Status, job.StatusRunning)
	equal(t, "job files", res.Job.Files, []string{j.SourceURLs[0], row.File})
	equal(t, "row of the other file", res.OCR[0].Status, job.RowPending)
	got := res.OCR[1]
	if got.Updated.Before(got.Created) || got.Updated.Equal(time.Time{}) {
		t.Errorf("row times: created %v updated %v", got.Created, got.Updated)
	}
	want := row
	want.Created, want.Updated = got.Created, got.Updated
	equal(t, "OCR row", got, want)

	if len(res.LLM) != 2 {
		t.Fatalf("LLM rows: %d, want 2", len(res.LLM))
	}
	for i, l := range res.LLM {
		if l.Created.IsZero() || l.Updated.IsZero() {
			t.Errorf("LLM row %d has no times", i)
		}
		l.Created, l.Updated = time.Time{}, time.Time{}
		equal(t, fmt.Sprintf("LLM row %d (by chunk index)", i), l, llm[1-i])
	}
	f, err := s.GetFile(ctx(t), "acct", copyFile.ID)
	noErr(t, "GetFile of the recorded copy", err)
	equal(t, "copy's job", f.JobID, j.ID)
	equal(t, "River jobs inserted (none: model rows still pending)", len(parkedNotes(t, s)), 0)
}

func testFinishOCRFanIn(t *testing.T, s Store) {
	const n = 5
	h := newHarness(t, s, "")
	j := newJob("acct", n)
	// The steps wait for each other, so that their transactions overlap.
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()

	var enqueue []river.InsertManyParams
	for i := range n {
		name := fmt.Sprint("ocr-", i)
		enqueue = append(enqueue, step(name))
		h.on(name, func(ctx context.Context, rj *river.Job[stepArgs]) error {
			arrived.Done()
			select {
			case <-all:
			case <-time.After(5 * time.Second): // River ran them one by one; still correct
			}
			r := doneRow(j, i, "text")
			applied, err := s.FinishOCR(ctx, store.OCRDone{
				Row: r, LLM: []job.LLMRow{noPromptRow(r)},
				EnqueueWhenLast: []river.InsertManyParams{parked("finalize")},
			})
			if err == nil && !applied {
				err = fmt.Errorf("file %d: applied = false", i)
			}
			return err
		})
	}
	createJob(t, s, j, store.CreateJobParams{Enqueue: enqueue})
	for _, r := range h.wait(n) {
		if r.Err != nil {
			t.Errorf("step %s: %v", r.Step, r.Err)
		}
		waitRiverState(t, s, r.JobID, rivertype.JobStateCompleted)
	}

	equal(t, "River jobs inserted", parkedNotes(t, s), []string{"finalize"})
	res := getResult(t, s, j.ID)
	for i, f := range res.Job.Files {
		equal(t, fmt.Sprint("job file ", i), f, doneRow(j, i, "").File)
	}
	equal(t, "LLM rows", len(res.LLM), n)
}

// testFinishOCROnAFinishedRow finishes a file twice, as a file job that
// River runs again after its first attempt committed does: the second finish
// must record nothing, not even its stored copy, and fan in nothing.
func testFinishOCROnAFinishedRow(t *testing.T, s Store) {
	h := newHarness(t, s, "")
	j := newJob("acct", 1)
	dup := job.File{ID: newID("file"), AccountID: "acct", JobID: j.ID, Key: "dup"}
	var secondApplied = true
	h.on("first", func(ctx context.Context, rj *river.Job[stepArgs]) error {
		r := doneRow(j, 0, "first")
		_, err := s.FinishOCR(ctx, store.OCRDone{Row: r, LLM: []job.LLMRow{noPromptRow(r)},
			EnqueueWhenLast: []river.InsertManyParams{parked("first-last"), step("second")}})
		return err
	})
	h.on("second", func(ctx context.Context, rj *river.Job[stepArgs]) error {
		r := doneRow(j, 0, "second")
		r.Status = job.RowFailed
		var err error
		secondApplied, err = s.FinishOCR(ctx, store.OCRDone{Row: r, LLM: []job.LLMRow{noPromptRow(r)},
			File:            &dup,
			EnqueueWhenLast: []river.InsertManyParams{parked("second-last")}})
		return err
	})
	createJob(t, s, j, store.CreateJobParams{Enqueue: []river.InsertManyParams{step("first")}})
	h.waitOne()
	second := h.waitOne()

	equal(t, "second applied", secondApplied, false)
	waitRiverState(t, s, second.JobID, rivertype.JobStateCompleted)
	res := getResult(t, s, j.ID)
	equal(t, "row content", res.OCR[0].Content, "first")
	equal(t, "row status", res.OCR[0].Status, job.RowDone)
	equal(t, "LLM rows", len(res.LLM), 1)
	_, err := s.GetFile(ctx(t), "", dup.ID)
	isErr(t, "the second finish's file record", err, store.ErrNotFound)
	equal(t, "River jobs inserted", parkedNotes(t, s), []string{"first-last"})
}

func testFinishOCRCancelled(t *testing.T, s Store) {
	h := newHarness(t, s, "")
	j := newJob("acct", 1)
	copyFile := job.File{ID: newID("file"), AccountID: "acct", JobID: j.ID, Key: "jobs/late"}
	proceed := make(chan struct{})
	var applied = true
	h.on("ocr", func(ctx context.Context, rj *river.Job[stepArgs]) error {
		<-proceed
		r := doneRow(j, 0, "late")
		var err error
		applied, err = s.FinishOCR(ctx, store.OCRDone{Row: r, LLM: []job.LLMRow{noPromptRow(r)}, File: &copyFile,
			EnqueueWhenLast: []river.InsertManyParams{parked("last")}})
		return err
	})
	createJob(t, s, j, store.CreateJobParams{Enqueue: []river.InsertManyParams{step("ocr")}})
	_, err := s.CancelJob(ctx(t), "acct", j.ID)
	noErr(t, "CancelJob", err)
	close(proceed)
	run := h.waitOne()

	equal(t, "applied", applied, false)
	waitRiverState(t, s, run.JobID, rivertype.JobStateCompleted)
	res := getResult(t, s, j.ID)
	equal(t, "job status", res.Job.Status, job.StatusCancelled)
	equal(t, "job files (the source URL: nothing stored)", res.Job.Files, j.SourceURLs)
	equal(t, "row", [2]string{string(res.OCR[0].Status), res.OCR[0].Error}, [2]string{"FAILED", "job cancelled"})
	// The cancel gave the file its ocr_failed row; the late finish's rows
	// are not there.
	equal(t, "LLM rows", len(res.LLM), 1)
	equal(t, "LLM row", [2]string{string(res.LLM[0].Status), res.LLM[0].SkipReason}, [2]string{"SKIPPED", job.SkipOCRFailed})
	_, err = s.GetFile(ctx(t), "", copyFile.ID)
	isErr(t, "file record", err, store.ErrNotFound)
	equal(t, "River jobs inserted", len(parkedNotes(t, s)), 0)
}

// testFinishOCRAtomic has the database refuse a finish part-way: the file's
// model rows name one chunk twice, the second time after more rows than one
// statement carries, so that some of the finish is written before the
// refusal. None of it may stay.
func testFinishOCRAtomic(t *testing.T, s Store) {
	const n = 77
	j := newJob("acct", 1)
	createJob(t, s, j, store.CreateJobParams{})
	copyFile := job.File{ID: newID("file"), AccountID: "acct", JobID: j.ID, Key: "jobs/a"}
	r := doneRow(j, 0, "text")
	rows := make([]job.LLMRow, n)
	for i := range rows {
		rows[i] = job.LLMRow{JobID: j.ID, FileIndex: 0, File: r.File, ChunkIndex: i, ChunkTotal: n,
			Status: job.RowPending, Input: fmt.Sprint("chunk ", i)}
	}
	rows[n-1].ChunkIndex = 0

	applied, err := s.FinishOCR(ctx(t), store.OCRDone{Row: r, LLM: rows, File: &copyFile,
		EnqueueWhenLast: []river.InsertManyParams{parked("last")}})
	if err == nil {
		t.Fatal("FinishOCR with one chunk twice succeeded")
	}
	equal(t, "applied", applied, false)
	res := getResult(t, s, j.ID)
	equal(t, "job status", res.Job.Status, job.StatusNew)
	equal(t, "job files (the source URL: nothing stored)", res.Job.Files, j.SourceURLs)
	equal(t, "row status", res.OCR[0].Status, job.RowPending)
	equal(t, "LLM rows", len(res.LLM), 0)
	_, err = s.GetFile(ctx(t), "", copyFile.ID)
	isErr(t, "file record", err, store.ErrNotFound)
	equal(t, "River jobs inserted", len(parkedNotes(t, s)), 0)

	// The file's next attempt finds it as unrecognized as before.
	rows[n-1].ChunkIndex = n - 1
	applied, err = s.FinishOCR(ctx(t), store.OCRDone{Row: r, LLM: rows, File: &copyFile})
	noErr(t, "FinishOCR again", err)
	equal(t, "applied again", applied, true)
	equal(t, "LLM rows after the retry", len(getResult(t, s, j.ID).LLM), n)
}

func testFinishJob(t *testing.T, s Store) {
	h := newHarness(t, s, "")
	j := newJob("acct", 1)
	j.WebhookURL = "https://hooks.example.com/done"
	var firstApplied, againApplied = false, true
	// The job is watched once it exists, before its first step runs: a
	// watched id with no job may be signalled as a deleted job is.
	watching := make(chan struct{})
	h.on("ocr", func(ctx context.Context, rj *river.Job[stepArgs]) error {
		select {
		case <-watching:
		case <-ctx.Done():
			return ctx.Err()
		}
		r := doneRow(j, 0, "text")
		_, err := s.FinishOCR(ctx, store.OCRDone{Row: r, LLM: []job.LLMRow{noPromptRow(r)},
			EnqueueWhenLast: []river.InsertManyParams{step("finalize")}})
		return err
	})
	h.on("finalize", func(ctx context.Context, rj *river.Job[stepArgs]) error {
		var err error
		firstApplied, err = s.FinishJob(ctx, rj.JobRow, store.Finish{JobID: j.ID, Status: job.StatusComplete,
			Merged:  []byte(`[{"file":"","format":"json","content":"{\"a\":1}"}]`),
			Enqueue: []river.InsertManyParams{parked("webhook"), step("again")}})
		return err
	})
	h.on("again", func(ctx context.Context, rj *river.Job[stepArgs]) error {
		var err error
		againApplied, err = s.FinishJob(ctx, rj.JobRow, store.Finish{JobID: j.ID, Status: job.StatusFailed,
			Error: "late", Merged: []byte(`[]`), Enqueue: []river.InsertManyParams{parked("webhook-again")}})
		return err
	})
	createJob(t, s, j, store.CreateJobParams{Enqueue: []river.InsertManyParams{step("ocr")}, Secrets: []job.SealedSecret{
		{Field: job.SecretNeuralAPIKey, Ciphertext: []byte("n")},
		{Field: job.SecretOCRProviderKey, Ciphertext: []byte("o")},
		{Field: job.SecretWebhookSecret, Ciphertext: []byte("w")},
	}})
	ended, stopWatch := s.WatchEnd(j.ID)
	defer stopWatch()
	equal(t, "the live job's watch is signalled", signalled(ended), false)
	close(watching)
	runs := []stepRun{h.waitOne(), h.waitOne(), h.waitOne()}
	equal(t, "the end is signalled to a watcher", signalled(ended), true)

	// Each step exists only because the one before inserted it; the order
	// the runs are reported in is not the order they started (a follow-up
	// may return before the step that inserted it has).
	steps := []string{runs[0].Step, runs[1].Step, runs[2].Step}
	slices.Sort(steps)
	equal(t, "steps", steps, []string{"again", "finalize", "ocr"})
	equal(t, "first FinishJob applied", firstApplied, true)
	equal(t, "second FinishJob applied", againApplied, false)
	for _, r := range runs {
		waitRiverState(t, s, r.JobID, rivertype.JobStateCompleted)
	}
	got := getJob(t, s, j.ID)
	equal(t, "job status and error", [2]string{string(got.Status), got.Error}, [2]string{string(job.StatusComplete), ""})
	equal(t, "merged answers", string(getResult(t, s, j.ID).Merged), `[{"file":"","format":"json","content":"{\"a\":1}"}]`)
	equal(t, "River jobs inserted", parkedNotes(t, s), []string{"webhook"})
	secrets, err := s.JobSecrets(ctx(t), j.ID)
	noErr(t, "JobSecrets", err)
	equal(t, "secrets left (only the webhook's)", secrets, []job.SealedSecret{{Field: job.SecretWebhookSecret, Ciphertext: []byte("w")}})
	equal(t, "webhook deliveries enqueued", webhookJobs(t, s, j.ID), 1)
}

func testFinishJobPendingRows(t *testing.T, s Store) {
	h := newHarness(t, s, "")
	j := newJob("acct", 2)
	h.on("finalize", func(ctx context.Context, rj *river.Job[stepArgs]) error {
		applied, err := s.FinishJob(ctx, rj.JobRow, store.Finish{JobID: j.ID, Status: job.StatusFailed, Error: "boom"})
		if err == nil && !applied {
			err = fmt.Errorf("applied = false")
		}
		return err
	})
	createJob(t, s, j, store.CreateJobParams{Enqueue: []river.InsertManyParams{step("finalize")}})
	h.waitOne()

	res := getResult(t, s, j.ID)
	equal(t, "job", [2]string{string(res.Job.Status), res.Job.Error}, [2]string{string(job.StatusFailed), "boom"})
	for _, r := range res.OCR {
		equal(t, fmt.Sprint("row ", r.FileIndex), [2]string{string(r.Status), r.Error}, [2]string{"FAILED", "boom"})
	}
}

func testWorkStop(t *testing.T, s Store) {
	h := &harness{t: t, s: s, steps: map[string]stepFunc{}, runs: make(chan stepRun, 10)}
	entered := make(chan string, 2)
	h.on("slow", func(ctx context.Context, rj *river.Job[stepArgs]) error {
		entered <- "slow"
		select {
		case <-time.After(300 * time.Millisecond):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	h.on("stuck", func(ctx context.Context, rj *river.Job[stepArgs]) error {
		entered <- "stuck"
		<-ctx.Done()
		return ctx.Err()
	})
	start := func(workCtx context.Context) func(context.Context) error {
		workers := river.NewWorkers()
		river.AddWorker(workers, &stepWorker{h: h})
		stop, err := s.Work(workCtx, store.WorkConfig{Workers: workers, ClientID: newID("client"),
			Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2}}, FetchPollInterval: 20 * time.Millisecond})
		noErr(t, "Work", err)
		return stop
	}
	waitEntered := func() {
		t.Helper()
		select {
		case <-entered:
		case <-time.After(15 * time.Second):
			t.Fatal("step did not start")
		}
	}

	// The process's context ends (a signal) while a job runs: the job
	// finishes, and stop waits for it.
	workCtx, endProcess := context.WithCancel(ctx(t))
	stop := start(workCtx)
	createJob(t, s, newJob("acct", 1), store.CreateJobParams{Enqueue: []river.InsertManyParams{step("slow")}})
	waitEntered()
	endProcess()
	noErr(t, "stop", stop(ctx(t)))
	select {
	case r := <-h.runs:
		equal(t, "error of the running job", r.Err, error(nil))
		equal(t, "its River job", riverState(t, s, r.JobID), rivertype.JobStateCompleted)
	default:
		t.Fatal("stop returned before the running job finished")
	}

	// A job that does not finish before stop's deadline is cancelled.
	stop = start(ctx(t))
	createJob(t, s, newJob("acct", 1), store.CreateJobParams{Enqueue: []river.InsertManyParams{step("stuck")}})
	waitEntered()
	short, cancel := context.WithTimeout(ctx(t), 100*time.Millisecond)
	defer cancel()
	if err := stop(short); err == nil {
		t.Error("stop with a job that outlives its deadline returned nil")
	}
	select {
	case r := <-h.runs:
		equal(t, "step", r.Step, "stuck")
		if r.Err == nil {
			t.Error("the stuck job's context was not cancelled")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the stuck job never returned")
	}
}

// testHandOffsWakeTheQueue polls only once an hour: a job created, and the
// follow-up a fan-in transaction inserts, are worked only if their commit
// wakes the queue (LISTEN/NOTIFY on PostgreSQL, the store's own wake on
// SQLite).
func testHandOffsWakeTheQueue(t *testing.T, s Store) {
	h := &harness{t: t, s: s, steps: map[string]stepFunc{}, runs: make(chan stepRun, 10)}
	j := newJob("acct", 1)
	h.on("ocr", func(ctx context.Context, rj *river.Job[stepArgs]) error {
		_, err := s.FinishOCR(ctx, store.OCRDone{Row: doneRow(j, 0, "x"),
			EnqueueWhenLast: []river.InsertManyParams{step("finalize")}})
		return err
	})
	h.on("finalize", func(context.Context, *river.Job[stepArgs]) error { return nil })
	workers := river.NewWorkers()
	river.AddWorker(workers, &stepWorker{h: h})
	stop, err := s.Work(ctx(t), store.WorkConfig{Workers: workers, ClientID: newID("client"),
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2}},
		FetchPollInterval: time.Hour, FetchCooldown: time.Millisecond})
	noErr(t, "Work", err)
	t.Cleanup(func() { _ = stop(context.Background()) })
	// River's producer fetches once as it starts; let that pass, so the
	// job below can only be found through a wake.
	time.Sleep(100 * time.Millisecond)

	createJob(t, s, j, store.CreateJobParams{Enqueue: []river.InsertManyParams{step("ocr")}})
	runs := h.wait(2)
	steps := []string{runs[0].Step, runs[1].Step}
	slices.Sort(steps)
	equal(t, "steps worked", steps, []string{"finalize", "ocr"})
}

// testTheLastRowEndsAJobThatDoesNotMerge finishes every row of jobs whose
// rows ask to end them (EndWhenLast): the finish that leaves no row
// pending ends the job in its own transaction, as FinishJob would, and
// inserts no finalize step.
func testTheLastRowEndsAJobThatDoesNotMerge(t *testing.T, s Store) {
	failed := func(j *job.Job, i int, why string) job.OCRRow {
		return job.OCRRow{JobID: j.ID, FileIndex: i, File: j.SourceURLs[i], Status: job.RowFailed, Error: why}
	}
	tests := []struct {
		name    string
		files   int
		webhook string
		// finish records the job's rows through FinishOCR and FinishLLM.
		finish     func(t *testing.T, j *job.Job)
		wantStatus job.Status
		wantError  string
		// wantSecrets are the fields left once the job ended.
		wantSecrets []string
	}{
		{
			name: "the last answer of two files ends it COMPLETE and enqueues its webhook", files: 2,
			webhook: "https://hooks.example.com/done",
			finish: func(t *testing.T, j *job.Job) {
				var rows []job.LLMRow
				for i := range 2 {
					ocr := doneRow(j, i, "text")
					pending := []job.LLMRow{pendingChunk(j, ocr, 0, 2), pendingChunk(j, ocr, 1, 2)}
					_, err := s.FinishOCR(ctx(t), store.OCRDone{Row: ocr, LLM: pending, EndWhenLast: true})
					noErr(t, "FinishOCR", err)
					rows = append(rows, pending...)
				}
				equal(t, "status while answers are pending", getJob(t, s, j.ID).Status, job.StatusRunning)
				var wg sync.WaitGroup
				for _, r := range rows {
					r.Status, r.Content = job.RowDone, `{"ok":true}`
					wg.Go(func() {
						_, err := s.FinishLLM(ctx(t), store.LLMDone{Row: r, EndWhenLast: true})
						noErr(t, "FinishLLM", err)
					})
				}
				wg.Wait()
			},
			wantStatus: job.StatusComplete, wantSecrets: []string{job.SecretWebhookSecret},
		},
		{
			name: "the last of two failed files ends it FAILED and erases every secret", files: 2,
			finish: func(t *testing.T, j *job.Job) {
				for i := range 2 {
					ocr := failed(j, i, "download failed")
					_, err := s.FinishOCR(ctx(t), store.OCRDone{Row: ocr,
						LLM: []job.LLMRow{job.SkippedLLMRow(ocr, job.SkipOCRFailed, "m")}, EndWhenLast: true})
					noErr(t, "FinishOCR", err)
				}
			},
			wantStatus: job.StatusFailed, wantError: "no file could be recognized",
		},
		{
			name: "a single failed file ends it FAILED with the file's error", files: 1,
			finish: func(t *testing.T, j *job.Job) {
				ocr := failed(j, 0, "the server answered HTTP 404")
				_, err := s.FinishOCR(ctx(t), store.OCRDone{Row: ocr,
					LLM: []job.LLMRow{job.SkippedLLMRow(ocr, job.SkipOCRFailed, "m")}, EndWhenLast: true})
				noErr(t, "FinishOCR", err)
			},
			wantStatus: job.StatusFailed, wantError: "no file could be recognized: the server answered HTTP 404",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := newJob("acct", tt.files)
			j.WebhookURL = tt.webhook
			createJob(t, s, j, store.CreateJobParams{Secrets: []job.SealedSecret{
				{Field: job.SecretNeuralAPIKey, Ciphertext: []byte("n")},
				{Field: job.SecretOCRProviderKey, Ciphertext: []byte("o")},
				{Field: job.SecretWebhookSecret, Ciphertext: []byte("w")},
			}})
			ended, stopWatch := s.WatchEnd(j.ID)
			defer stopWatch()
			tt.finish(t, j)

			equal(t, "the end is signalled to a watcher", signalled(ended), true)
			got := getJob(t, s, j.ID)
			equal(t, "job status and error", [2]string{string(got.Status), got.Error}, [2]string{string(tt.wantStatus), tt.wantError})
			secrets, err := s.JobSecrets(ctx(t), j.ID)
			noErr(t, "JobSecrets", err)
			var fields []string
			for _, sec := range secrets {
				fields = append(fields, sec.Field)
			}
			equal(t, "secrets left", fields, tt.wantSecrets)
			want := 0
			if tt.webhook != "" {
				want = 1
			}
			equal(t, "webhook deliveries enqueued", webhookJobs(t, s, j.ID), want)
			rows, err := s.RiverJobsByKind(ctx(t), "finalize")
			noErr(t, "RiverJobsByKind", err)
			equal(t, "finalize steps", len(rows), 0)
		})
	}
}

// HandOff inserts its jobs and completes its own River job together, and a
// unique job handed on twice is inserted once: how the River jobs of
// retired kinds hand their files to today's.
func testHandOff(t *testing.T, s Store) {
	h := newHarness(t, s, "")
	next := parked("next")
	next.InsertOpts.UniqueOpts = river.UniqueOpts{ByArgs: true}
	hand := func(ctx context.Context, rj *river.Job[stepArgs]) error {
		if err := s.HandOff(ctx, rj.JobRow, []river.InsertManyParams{next}); err != nil {
			return err
		}
		// Completed by HandOff itself, not later by River.
		row, err := s.RiverJob(ctx, rj.ID)
		if err != nil {
			return err
		}
		if row.State != rivertype.JobStateCompleted {
			return fmt.Errorf("River job %d is %s after HandOff, want completed", rj.ID, row.State)
		}
		return nil
	}
	h.on("first", hand)
	h.on("second", hand)
	createJob(t, s, newJob("acct", 1), store.CreateJobParams{Enqueue: []river.InsertManyParams{step("first"), step("second")}})
	for _, r := range h.wait(2) {
		noErr(t, "step "+r.Step, r.Err)
		waitRiverState(t, s, r.JobID, rivertype.JobStateCompleted)
	}
	equal(t, "River jobs handed on", parkedNotes(t, s), []string{"next"})
}
