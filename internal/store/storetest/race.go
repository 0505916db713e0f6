package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// raceRounds is how many jobs each of testDeleteAndCancelRaceTheFinishes'
// ends races. Before the job row was locked in one order, PostgreSQL
// deadlocked in about one round in twenty; fifty of each made the test fail
// on every run.
const raceRounds = 50

// raceChunks is the model rows each racing file inserts: enough that its
// inserts take a while, the window a delete or cancel fell into.
const raceChunks = 40

// testDeleteAndCancelRaceTheFinishes deletes or cancels a job while its
// files finish recognition and its model rows finish, all at once, as an
// API process does to a job a worker is busy on. Neither side may fail but
// for the documented reasons (the job is gone, or already terminal), and
// the job must end whole: deleted with everything it had, or cancelled
// with every row terminal and each file either recognized with its chunk
// rows or failed with its one ocr_failed row.
func testDeleteAndCancelRaceTheFinishes(t *testing.T, s Store) {
	for _, end := range []string{"delete", "cancel"} {
		t.Run(end, func(t *testing.T) {
			for round := range raceRounds {
				raceRound(t, s, end, round)
				if t.Failed() {
					return
				}
			}
		})
	}
}

// raceRound is one job of testDeleteAndCancelRaceTheFinishes: file 0 is
// recognized beforehand and its rows are answered during the race, files 1
// and 2 finish their recognition during it.
func raceRound(t *testing.T, s Store, end string, round int) {
	const files = 3
	j := newJob("acct", files)
	j.Prompts = []string{"Extract."}
	createJob(t, s, j, store.CreateJobParams{Secrets: []job.SealedSecret{{Field: job.SecretNeuralAPIKey, Ciphertext: []byte("k")}}})
	first := doneRow(j, 0, "text")
	firstRows := make([]job.LLMRow, 4)
	for c := range firstRows {
		firstRows[c] = pendingChunk(j, first, c, len(firstRows))
	}
	_, err := s.FinishOCR(ctx(t), store.OCRDone{Row: first, LLM: firstRows, EndWhenLast: true})
	noErr(t, "FinishOCR of file 0 before the race", err)

	copies := map[int]job.File{}
	for i := 1; i < files; i++ {
		copies[i] = job.File{ID: newID("file"), AccountID: "acct", JobID: j.ID, Key: fmt.Sprintf("jobs/%s/%d", j.ID, i)}
	}

	var (
		start = make(chan struct{})
		wg    sync.WaitGroup
		mu    sync.Mutex
		errs  []error
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}
	for i := 1; i < files; i++ {
		wg.Go(func() {
			r := doneRow(j, i, "text")
			rows := make([]job.LLMRow, raceChunks)
			for c := range rows {
				rows[c] = pendingChunk(j, r, c, raceChunks)
			}
			f := copies[i]
			<-start
			if _, err := s.FinishOCR(ctx(t), store.OCRDone{Row: r, File: &f, LLM: rows, EndWhenLast: true}); err != nil {
				fail(fmt.Errorf("FinishOCR of file %d: %w", i, err))
			}
		})
	}
	for _, row := range firstRows {
		wg.Go(func() {
			row.Status, row.Content = job.RowDone, `{"n":1}`
			<-start
			if _, err := s.FinishLLM(ctx(t), store.LLMDone{Row: row, EndWhenLast: true}); err != nil {
				fail(fmt.Errorf("FinishLLM of chunk %d: %w", row.ChunkIndex, err))
			}
		})
	}
	wg.Go(func() {
		<-start
		// Spread over the finishes' transactions, the round number
		// shifting where the end falls among them.
		time.Sleep(time.Duration(round%5)*200*time.Microsecond + rand.N(300*time.Microsecond))
		var err error
		if end == "delete" {
			_, err = s.DeleteJob(ctx(t), "acct", j.ID)
		} else {
			_, err = s.CancelJob(ctx(t), "acct", j.ID)
			if errors.Is(err, store.ErrTerminal) {
				err = nil // the finishes ended it first
			}
		}
		if err != nil {
			fail(fmt.Errorf("%s: %w", end, err))
		}
	})
	close(start)
	wg.Wait()
	for _, err := range errs {
		t.Errorf("round %d: %v", round, err)
	}

	if end == "delete" {
		checkDeletedWhole(t, s, j, copies)
		return
	}
	checkCancelledWhole(t, s, j, copies)
}

// checkDeletedWhole fails the test if anything of the deleted job j is left.
func checkDeletedWhole(t *testing.T, s Store, j *job.Job, copies map[int]job.File) {
	t.Helper()
	_, err := s.GetResult(ctx(t), "", j.ID)
	isErr(t, "the deleted job", err, store.ErrNotFound)
	secrets, err := s.JobSecrets(ctx(t), j.ID)
	noErr(t, "JobSecrets", err)
	equal(t, "secrets of the deleted job", len(secrets), 0)
	for i, f := range copies {
		_, err := s.GetFile(ctx(t), "", f.ID)
		isErr(t, fmt.Sprint("file record of file ", i, " of the deleted job"), err, store.ErrNotFound)
	}
}

// checkCancelledWhole fails the test unless j ended with no row pending and
// each file consistent: recognized, with its copy recorded and its chunk
// rows, or failed by the cancel, with no copy and its one ocr_failed row.
func checkCancelledWhole(t *testing.T, s Store, j *job.Job, copies map[int]job.File) {
	t.Helper()
	res := getResult(t, s, j.ID)
	equal(t, "status of the cancelled job", res.Job.Status, job.StatusCancelled)
	byFile := map[int][]job.LLMRow{}
	for _, r := range res.LLM {
		if r.Status == job.RowPending {
			t.Errorf("model row %d/%d of the cancelled job is PENDING", r.FileIndex, r.ChunkIndex)
		}
		byFile[r.FileIndex] = append(byFile[r.FileIndex], r)
	}
	for _, o := range res.OCR {
		rows := byFile[o.FileIndex]
		f, recorded := copies[o.FileIndex]
		var copyErr error
		if recorded {
			_, copyErr = s.GetFile(ctx(t), "", f.ID)
		}
		switch o.Status {
		case job.RowDone:
			if len(rows) == 0 || rows[0].SkipReason != "" {
				t.Errorf("recognized file %d: %d model rows, first skipped for %q; want its chunks", o.FileIndex, len(rows), skipOf(rows))
			}
			if recorded && copyErr != nil {
				t.Errorf("recognized file %d: its copy is not recorded: %v", o.FileIndex, copyErr)
			}
		case job.RowFailed:
			if len(rows) != 1 || rows[0].SkipReason != job.SkipOCRFailed {
				t.Errorf("file failed by the cancel %d: %d model rows, first skipped for %q; want one ocr_failed", o.FileIndex, len(rows), skipOf(rows))
			}
			if recorded && !errors.Is(copyErr, store.ErrNotFound) {
				t.Errorf("file failed by the cancel %d: its copy is recorded (%v)", o.FileIndex, copyErr)
			}
		default:
			t.Errorf("file %d of the cancelled job: OCR row %s", o.FileIndex, o.Status)
		}
	}
	secrets, err := s.JobSecrets(ctx(t), j.ID)
	noErr(t, "JobSecrets", err)
	equal(t, "provider keys left after the cancel", len(secrets), 0)
}

func skipOf(rows []job.LLMRow) string {
	if len(rows) == 0 {
		return ""
	}
	return rows[0].SkipReason
}
