package worker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// TestAFileOfALongerConfiguredProcessIsNotTakenForStuckByTheLeader: River's
// rescuer runs on the one client leading the queue and asks that client's
// own worker how long a running job may take (Timeout, River v0.47
// internal/maintenance/job_rescuer.go), for every job, whichever process
// runs it. A process configured for longer files (DOCJOBS_FILE_TIMEOUT
// raised on it, or on the new nodes of a rolling restart) had its files
// taken for stuck once the leader's own limit passed, and run a second
// time beside the first, their rows asked twice. The test runs a file on a
// process allowed three hours, holds its model call, and asks a process of
// the default configuration the rescuer's question about the River job as
// the database holds it.
func TestAFileOfALongerConfiguredProcessIsNotTakenForStuckByTheLeader(t *testing.T) {
	forEachStoreAtOnce(t, func(t *testing.T, st store.Store) {
		src := scanSource(t)
		j := &job.Job{ID: "job-long", AccountID: "acct", Status: job.StatusNew, Created: time.Now(),
			ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", SourceURLs: []string{src.URL + "/a.txt"}, Prompts: []string{"extract"},
			Neural: job.Neural{Type: "NEURAL_CLIENT_TYPE_PROVIDER_2", Model: "gpt-4.1", ChunkBudgetTokens: 4000}}
		if _, _, err := st.CreateJob(context.Background(), store.CreateJobParams{Job: j, Enqueue: FirstStage(j.ID, 1),
			Secrets: []job.SealedSecret{{Field: job.SecretNeuralAPIKey, Ciphertext: []byte(drainModelKey)}}}); err != nil {
			t.Fatal(err)
		}
		long := Config{FileTimeout: 3 * time.Hour}
		deaf := &deafVendor{began: make(chan string, 1)}
		stop := startNode(t, st, node{id: "node-long", providers: deaf, chats: deaf, hardStop: 50 * time.Millisecond, cfg: long})
		select {
		case <-deaf.began:
		case <-time.After(time.Minute):
			t.Fatal("the model call did not begin")
		}
		files := riverJobsOf(t, st, FileArgs{}.Kind())
		if len(files) != 1 || files[0].State != "running" {
			t.Fatalf("file River jobs %v; want one running", files)
		}
		running := files[0]

		leader := newFileWorker(Config{}.withDefaults(), Deps{})
		want := long.withDefaults().fileTimeout() + RescueMargin
		if got := leader.Timeout(&river.Job[FileArgs]{JobRow: running}); got < want {
			t.Errorf("the leader takes the running attempt for stuck after %s; want at least its own limit and the margin, %s", got, want)
		}
		// The limit is the attempt's: the next attempt, by another
		// process, is judged by the leader's own.
		next := *running
		next.Attempt++
		next.AttemptedBy = append(slices.Clone(running.AttemptedBy), "node-short")
		if got, own := leader.Timeout(&river.Job[FileArgs]{JobRow: &next}), leader.cfg.fileTimeout(); got != own {
			t.Errorf("the next attempt's limit is %s; want the leader's own %s", got, own)
		}
		stopAtTheBudget(t, stop)
	})
}
