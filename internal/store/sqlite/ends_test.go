package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/sqlite"
)

// heardWithin bounds how long an end committed by another process may take
// to reach a watcher. The store looks every 25 ms; the bound is generous
// for a loaded machine and still far below the 2 s poll a file job falls
// back on (and the 500 ms of a progress stream).
const heardWithin = 400 * time.Millisecond

// Two stores on one file are two processes of one deployment (`serve
// --role=api` and `--role=worker`): a job ended through one reaches the
// watchers of the other within heardWithin, whichever way it ended, and a
// watched job that did not end is not signalled.
func TestAnEndCommittedByAnotherProcessReachesTheWatchersSoon(t *testing.T) {
	ends := []struct {
		name string
		end  func(t *testing.T, s store.Store, j *job.Job, rows []job.LLMRow)
	}{
		{"cancel", func(t *testing.T, s store.Store, j *job.Job, _ []job.LLMRow) {
			if _, err := s.CancelJob(t.Context(), j.AccountID, j.ID); err != nil {
				t.Fatal(err)
			}
		}},
		{"delete", func(t *testing.T, s store.Store, j *job.Job, _ []job.LLMRow) {
			if _, err := s.DeleteJob(t.Context(), j.AccountID, j.ID); err != nil {
				t.Fatal(err)
			}
		}},
		{"deadline", func(t *testing.T, s store.Store, j *job.Job, _ []job.LLMRow) {
			if _, err := s.ExpireJob(t.Context(), j.ID, "timed out", "deadline"); err != nil {
				t.Fatal(err)
			}
		}},
		{"last row", func(t *testing.T, s store.Store, _ *job.Job, rows []job.LLMRow) {
			r := rows[0]
			r.Status, r.Content = job.RowDone, `{"ok":true}`
			if _, err := s.FinishLLM(t.Context(), store.LLMDone{Row: r, EndWhenLast: true}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range ends {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "docjobs.db")
			api := open(t, sqlite.Config{Path: path})
			defer api.Close()
			worker := open(t, sqlite.Config{Path: path})
			defer worker.Close()

			j, rows := recognized(t, worker, "job-1", 1)
			live, _ := recognized(t, worker, "job-2", 1)
			ended, stop := api.WatchEnd(j.ID)
			defer stop()
			other, stopOther := api.WatchEnd(live.ID)
			defer stopOther()

			start := time.Now()
			tt.end(t, worker, j, rows)
			select {
			case <-ended:
				t.Logf("heard %v after the end was begun", time.Since(start).Round(time.Millisecond))
			case <-time.After(heardWithin):
				t.Fatalf("the end committed by another process was not heard within %v", heardWithin)
			}
			if signalledNow(other) {
				t.Error("the watch of a job that did not end was signalled")
			}
		})
	}
}

// An idle process does not poll: data_version is read only while a job's
// end is watched, and no longer once the last watch stops.
func TestNothingIsPolledWhileNoJobIsWatched(t *testing.T) {
	s := open(t, sqlite.Config{Path: filepath.Join(t.TempDir(), "docjobs.db")})
	defer s.Close()
	// A job created, recognized and answered: commits, none watched.
	j, rows := recognized(t, s, "job-0", 1)
	r := rows[0]
	r.Status, r.Content = job.RowDone, `{"ok":true}`
	if _, err := s.FinishLLM(t.Context(), store.LLMDone{Row: r, EndWhenLast: true}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetJob(t.Context(), j.AccountID, j.ID); err != nil || !got.Status.Terminal() {
		t.Fatalf("the answered job: %v, %v; want it ended", got, err)
	}
	time.Sleep(200 * time.Millisecond)
	if n := sqlite.EndLooks(s); n != 0 {
		t.Fatalf("%d looks with nothing watched; want none", n)
	}

	live, _ := recognized(t, s, "job-1", 1)
	_, stop := s.WatchEnd(live.ID)
	time.Sleep(200 * time.Millisecond)
	if n := sqlite.EndLooks(s); n < 2 {
		t.Fatalf("%d looks in 200ms with a job watched; want it polled", n)
	}
	stop()
	time.Sleep(100 * time.Millisecond) // a look under way when it stopped may finish
	after := sqlite.EndLooks(s)
	time.Sleep(200 * time.Millisecond)
	if n := sqlite.EndLooks(s); n != after {
		t.Fatalf("%d looks in 200ms after the last watch stopped; want none", n-after)
	}
}

// recognized stores a running job of one recognized file with n pending
// model rows.
func recognized(t *testing.T, s store.Store, id string, n int) (*job.Job, []job.LLMRow) {
	t.Helper()
	j := &job.Job{ID: id, AccountID: "acct", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a"},
		Prompts: []string{"p"}, ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", Created: time.Now()}
	if _, _, err := s.CreateJob(t.Context(), store.CreateJobParams{Job: j}); err != nil {
		t.Fatal(err)
	}
	ocr := job.OCRRow{JobID: id, File: "https://example.com/a", Status: job.RowDone, Content: "text", OutputFormat: job.FormatPlain}
	rows := make([]job.LLMRow, n)
	for c := range rows {
		rows[c] = job.LLMRow{JobID: id, File: ocr.File, ChunkIndex: c, ChunkTotal: n, Status: job.RowPending, Input: "chunk"}
	}
	if _, err := s.FinishOCR(t.Context(), store.OCRDone{Row: ocr, LLM: rows}); err != nil {
		t.Fatal(err)
	}
	return j, rows
}

func signalledNow(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
