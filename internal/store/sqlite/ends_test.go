package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/sqlite"
)

// SQLite announces nothing between processes, so a job ended by another
// process is seen only when read. RecheckWatched is that read for every
// watched job at once (what the PostgreSQL listener runs once it listens
// again after losing its connection): it signals the jobs that ended or
// are gone, and only those.
func TestRecheckWatchedSignalsTheWatchedJobsThatEndedElsewhere(t *testing.T) {
	path := filepath.Join(t.TempDir(), "docjobs.db")
	here := open(t, sqlite.Config{Path: path})
	defer here.Close()
	elsewhere := open(t, sqlite.Config{Path: path})
	defer elsewhere.Close()

	watches := map[string]<-chan struct{}{}
	for _, id := range []string{"cancelled", "deleted", "live"} {
		j := &job.Job{ID: id, AccountID: "acct", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a"},
			ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", Created: time.Now()}
		if _, _, err := here.CreateJob(t.Context(), store.CreateJobParams{Job: j}); err != nil {
			t.Fatal(err)
		}
		ch, stop := here.WatchEnd(id)
		defer stop()
		watches[id] = ch
	}
	if _, err := elsewhere.CancelJob(t.Context(), "acct", "cancelled"); err != nil {
		t.Fatal(err)
	}
	if _, err := elsewhere.DeleteJob(t.Context(), "acct", "deleted"); err != nil {
		t.Fatal(err)
	}
	if ended(watches["cancelled"]) || ended(watches["deleted"]) {
		t.Fatal("an end in another process was signalled here; SQLite has no channel for it")
	}
	if err := here.RecheckWatched(t.Context()); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"cancelled": true, "deleted": true, "live": false} {
		if got := ended(watches[id]); got != want {
			t.Errorf("%s: signalled %t, want %t", id, got, want)
		}
	}
}

func ended(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
