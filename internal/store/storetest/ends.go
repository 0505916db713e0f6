package storetest

import (
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// signalled reports whether a WatchEnd channel is closed.
func signalled(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func testWatchEndSignalsEveryEndInThisProcess(t *testing.T, s Store) {
	tests := []struct {
		name string
		// act acts on a job of one recognized file with two pending model
		// rows, watched while it runs; wantEnded says whether the watch
		// is signalled after it.
		act       func(t *testing.T, j *job.Job, rows []job.LLMRow)
		wantEnded bool
	}{
		{
			name: "an answer that leaves a row pending does not end it",
			act: func(t *testing.T, _ *job.Job, rows []job.LLMRow) {
				finishLLM(t, s, rows[0])
			},
		},
		{
			name: "the last answer ends it",
			act: func(t *testing.T, _ *job.Job, rows []job.LLMRow) {
				finishLLM(t, s, rows[0])
				finishLLM(t, s, rows[1])
			},
			wantEnded: true,
		},
		{
			name: "the deadline ends it",
			act: func(t *testing.T, j *job.Job, _ []job.LLMRow) {
				_, err := s.ExpireJob(ctx(t), j.ID, "timed out", "job deadline exceeded")
				noErr(t, "ExpireJob", err)
			},
			wantEnded: true,
		},
		{
			name: "a cancel ends it",
			act: func(t *testing.T, j *job.Job, _ []job.LLMRow) {
				_, err := s.CancelJob(ctx(t), "acct", j.ID)
				noErr(t, "CancelJob", err)
			},
			wantEnded: true,
		},
		{
			name: "a delete ends it",
			act: func(t *testing.T, j *job.Job, _ []job.LLMRow) {
				_, err := s.DeleteJob(ctx(t), "acct", j.ID)
				noErr(t, "DeleteJob", err)
			},
			wantEnded: true,
		},
		{
			name: "another account's cancel changes nothing",
			act: func(t *testing.T, j *job.Job, _ []job.LLMRow) {
				_, err := s.CancelJob(ctx(t), "other", j.ID)
				isErr(t, "CancelJob of another account", err, store.ErrNotFound)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, rows := recognizedJob(t, s, 2)
			ended, stop := s.WatchEnd(j.ID)
			defer stop()
			// Another job, live: a watched id with no job is signalled by
			// a store that rereads its watched jobs (SQLite looking for
			// other processes' ends), as a deleted job is.
			live, _ := recognizedJob(t, s, 1)
			other, stopOther := s.WatchEnd(live.ID)
			defer stopOther()
			tt.act(t, j, rows)
			equal(t, "the watch is signalled", signalled(ended), tt.wantEnded)
			equal(t, "another job's watch is signalled", signalled(other), false)
		})
	}

	t.Run("a stopped watch is not signalled", func(t *testing.T) {
		j, _ := recognizedJob(t, s, 1)
		ended, stop := s.WatchEnd(j.ID)
		stop()
		_, err := s.CancelJob(ctx(t), "acct", j.ID)
		noErr(t, "CancelJob", err)
		equal(t, "the watch is signalled", signalled(ended), false)
	})
}

func finishLLM(t *testing.T, s Store, r job.LLMRow) {
	t.Helper()
	r.Status, r.Content = job.RowDone, `{"ok":true}`
	_, err := s.FinishLLM(ctx(t), store.LLMDone{Row: r, EndWhenLast: true})
	noErr(t, "FinishLLM", err)
}

// Recognized creates job id with one recognized file of n pending model
// rows in s, for tests of how its end is heard.
func Recognized(t *testing.T, s store.Store, id string, n int) (*job.Job, []job.LLMRow) {
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

// JobEnd is one way a job of Recognized ends.
type JobEnd struct {
	Name string
	End  func(t *testing.T, s store.Store, j *job.Job, rows []job.LLMRow)
}

// JobEnds are the ways a job ends, which every watcher of its end must
// hear: cancelled, deleted, past its deadline, its last row answered.
var JobEnds = []JobEnd{
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
