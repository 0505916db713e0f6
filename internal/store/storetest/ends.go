package storetest

import (
	"testing"

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
