package worker

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/sqlite"
)

// failingExpiry is a store whose ExpireJob fails for one job.
type failingExpiry struct {
	*sqlite.Store
	failing string
}

func (f failingExpiry) ExpireJob(ctx context.Context, jobID, rowError, jobError string) (bool, error) {
	if jobID == f.failing {
		return false, errors.New("the ending failed")
	}
	return f.Store.ExpireJob(ctx, jobID, rowError, jobError)
}

// A job whose end keeps failing is the oldest overdue one, so every sweep
// met it first: the sweep returned there, and the overdue jobs behind it
// stayed past their deadline. They are ended, and the sweep's error names
// the one that was not.
func TestADeadlineSweepEndsTheJobsBehindOneWhoseEndFails(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	for i, id := range []string{"job-stuck", "job-late"} {
		j := &job.Job{ID: id, AccountID: "acme", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a.txt"},
			ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", RequestHash: "h", Created: time.Now().Add(-3*time.Hour + time.Duration(i)*time.Minute)}
		if _, _, err := st.CreateJob(ctx, store.CreateJobParams{Job: j}); err != nil {
			t.Fatal(err)
		}
	}
	w := &deadlineWorker{cfg: Config{JobDeadline: time.Hour}, deps: Deps{Store: failingExpiry{st, "job-stuck"}, Logger: slog.New(slog.DiscardHandler)}}
	err := w.Work(ctx, nil)
	if err == nil || !strings.Contains(err.Error(), "job-stuck") {
		t.Errorf("the sweep's error = %v, want it to name job-stuck", err)
	}
	for id, want := range map[string]job.Status{"job-stuck": job.StatusNew, "job-late": job.StatusFailed} {
		j, err := st.GetJob(ctx, "", id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Status != want {
			t.Errorf("%s is %s after the sweep, want %s", id, j.Status, want)
		}
	}
}
