package worker

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// riverRowsNaming counts the River rows of kind webhook whose args name
// job jobID.
func riverRowsNaming(t *testing.T, st store.Store, jobID string) int {
	t.Helper()
	rows, err := st.(interface {
		RiverJobsByKind(context.Context, string) ([]*rivertype.JobRow, error)
	}).RiverJobsByKind(context.Background(), store.WebhookArgs{}.Kind())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rows {
		var a store.WebhookArgs
		if err := json.Unmarshal(r.EncodedArgs, &a); err != nil {
			t.Fatal(err)
		}
		if a.JobID == jobID {
			n++
		}
	}
	return n
}

// The retention sweep's delete takes the River rows of the job it deletes
// that River finished; one still running goes with the removal sweep once
// it has finished. Another job's rows stay.
func TestRetentionLeavesNoRiverRowOfTheJobsItDeletes(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		release := make(chan struct{})
		workers := river.NewWorkers()
		river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, rj *river.Job[store.WebhookArgs]) error {
			if rj.Args.JobID == "job-held" {
				<-release
			}
			return nil
		}))
		stop, err := st.Work(ctx, store.WorkConfig{ClientID: "riverrows", Workers: workers,
			Queues: map[string]river.QueueConfig{store.QueueWebhook: {MaxWorkers: 4}}, FetchPollInterval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			c, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			_ = stop(c)
		})
		old := time.Now().Add(-2 * time.Hour)
		create := func(id string, created time.Time) {
			t.Helper()
			j := &job.Job{ID: id, AccountID: "acme", Status: job.StatusComplete, SourceURLs: []string{"https://example.com/private/a.pdf"},
				RequestHash: "h", Created: created}
			if _, _, err := st.CreateJob(ctx, store.CreateJobParams{Job: j,
				Enqueue: []river.InsertManyParams{{Args: store.WebhookArgs{JobID: id}}}}); err != nil {
				t.Fatal(err)
			}
		}
		create("job-old", old)
		create("job-held", old)
		create("job-new", time.Now())
		inspector := st.(interface {
			RiverJobsByKind(context.Context, string) ([]*rivertype.JobRow, error)
		})
		waitFor(t, func() bool {
			rows, err := inspector.RiverJobsByKind(ctx, store.WebhookArgs{}.Kind())
			if err != nil {
				t.Fatal(err)
			}
			done := 0
			for _, r := range rows {
				if r.FinalizedAt != nil {
					done++
				}
			}
			return done == 2
		})

		w := &retentionWorker{cfg: Config{Retention: time.Hour}, deps: Deps{Store: st, Logger: slog.New(slog.DiscardHandler)}}
		if err := w.Work(ctx, nil); err != nil {
			t.Fatalf("retention: %v", err)
		}
		for id, want := range map[string]int{"job-old": 0, "job-held": 1, "job-new": 1} {
			if got := riverRowsNaming(t, st, id); got != want {
				t.Errorf("River rows naming %s after retention: %d, want %d", id, got, want)
			}
		}
		close(release)
		waitFor(t, func() bool {
			rows, err := inspector.RiverJobsByKind(ctx, store.WebhookArgs{}.Kind())
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				if r.FinalizedAt == nil {
					return false
				}
			}
			return true
		})
		sweep := &removalWorker{cfg: Config{}, deps: Deps{Store: st, Logger: slog.New(slog.DiscardHandler)}}
		if err := sweep.Work(ctx, nil); err != nil {
			t.Fatalf("removal sweep: %v", err)
		}
		for id, want := range map[string]int{"job-old": 0, "job-held": 0, "job-new": 1} {
			if got := riverRowsNaming(t, st, id); got != want {
				t.Errorf("River rows naming %s after the removal sweep: %d, want %d", id, got, want)
			}
		}
	})
}
