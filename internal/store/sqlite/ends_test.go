package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/sqlite"
	"github.com/docjobs/docjobs/internal/store/storetest"
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
	for _, tt := range storetest.JobEnds {
		t.Run(tt.Name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "docjobs.db")
			api := open(t, sqlite.Config{Path: path})
			defer api.Close()
			worker := open(t, sqlite.Config{Path: path})
			defer worker.Close()

			j, rows := storetest.Recognized(t, worker, "job-1", 1)
			live, _ := storetest.Recognized(t, worker, "job-2", 1)
			ended, stop := api.WatchEnd(j.ID)
			defer stop()
			other, stopOther := api.WatchEnd(live.ID)
			defer stopOther()

			start := time.Now()
			tt.End(t, worker, j, rows)
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
	j, rows := storetest.Recognized(t, s, "job-0", 1)
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

	live, _ := storetest.Recognized(t, s, "job-1", 1)
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

func signalledNow(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
