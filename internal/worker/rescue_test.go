package worker

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

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
		createOneFileJob(t, st, "job-long")
		long := Config{FileTimeout: 3 * time.Hour, runLimitNoteAfter: 50 * time.Millisecond}
		deaf := newDeafVendor(1)
		stop := startNode(t, st, node{id: "node-long", providers: deaf, chats: deaf, hardStop: 50 * time.Millisecond, cfg: long})
		deaf.dieAtTheEnd(t)
		select {
		case <-deaf.began:
		case <-time.After(time.Minute):
			t.Fatal("the model call did not begin")
		}
		// The attempt notes its limit once it has run runLimitNoteAfter.
		var running *rivertype.JobRow
		for deadline := time.Now().Add(time.Minute); running == nil; time.Sleep(10 * time.Millisecond) {
			files := riverJobsOf(t, st, FileArgs{}.Kind())
			if len(files) != 1 || files[0].State != "running" {
				t.Fatalf("file River jobs %v; want one running", files)
			}
			if store.RunLimitOf(files[0]) > 0 {
				running = files[0]
			} else if time.Now().After(deadline) {
				t.Fatal("the running attempt noted no limit within a minute")
			}
		}

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

// TestAFileThatEndsSoonNotesNoLimit: the note is for attempts that run
// long enough for a rescuer to look at them; written at every attempt's
// start it was one more write, on SQLite's single writer, on each job's way
// to its first provider call.
func TestAFileThatEndsSoonNotesNoLimit(t *testing.T) {
	forEachStoreAtOnce(t, func(t *testing.T, st store.Store) {
		j := createOneFileJob(t, st, "job-short")
		vendor := newHeldVendor(t)
		close(vendor.release)
		startProcess(t, st, vendor)
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			got, err := st.GetJob(context.Background(), "", j.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Terminal() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the job is %s after a minute", got.Status)
			}
		}
		for _, rj := range riverJobsOf(t, st, FileArgs{}.Kind()) {
			if strings.Contains(string(rj.Metadata), store.RunLimitKey) {
				t.Errorf("the file's River job noted a limit, %s, though it ended at once", rj.Metadata)
			}
		}
	})
}

// createOneFileJob creates a job of one text file and a prompt, whose
// model key is drainModelKey.
func createOneFileJob(t *testing.T, st store.Store, id string) *job.Job {
	t.Helper()
	src := scanSource(t)
	j := &job.Job{ID: id, AccountID: "acct", Status: job.StatusNew, Created: time.Now(),
		ConsensusMode: "CONSENSUS_MODE_UNSPECIFIED", SourceURLs: []string{src.URL + "/a.txt"}, Prompts: []string{"extract"},
		Neural: job.Neural{Type: "NEURAL_CLIENT_TYPE_PROVIDER_2", Model: "gpt-4.1", ChunkBudgetTokens: 4000}}
	if _, _, err := st.CreateJob(context.Background(), store.CreateJobParams{Job: j, Enqueue: FirstStage(j.ID, 1),
		Secrets: []job.SealedSecret{{Field: job.SecretNeuralAPIKey, Ciphertext: []byte(drainModelKey)}}}); err != nil {
		t.Fatal(err)
	}
	return j
}
