package worker

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/provider"
	"github.com/docjobs/docjobs/internal/store"
)

// deafVendor takes every page and chunk and never answers, deaf to its
// context, as a call is in a process killed mid-way: the process's stop
// gives up on the work, which is left running under the node id, as a
// crash leaves it. Its calls return only once the test has ended and the
// processes started after dieAtTheEnd was called have stopped: nothing
// else runs the files then, so River writes nothing of the dead process's
// work, and its client's stop at cleanup ends at once. Never returning,
// that stop waited out its 10 s bound, and the client went on polling the
// closed database for the rest of the test binary. Returning when the test
// ended (t.Context), they raced the next process's River jobs still
// running, and River's completer panicked on a row it had not finalized.
type deafVendor struct {
	began chan string
	gone  chan struct{}
}

// newDeafVendor is a deafVendor announcing up to n calls on began.
func newDeafVendor(n int) *deafVendor {
	return &deafVendor{began: make(chan string, n), gone: make(chan struct{})}
}

// dieAtTheEnd lets the calls return at t's cleanup, after the cleanups
// registered after it (the stops of the processes started later) and
// before those registered before it (the crashed process's own stop).
func (v *deafVendor) dieAtTheEnd(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { close(v.gone) })
}

func (v *deafVendor) OCR(string, string, string) (provider.OCR, error)   { return v, nil }
func (v *deafVendor) Chat(string, string, string) (provider.Chat, error) { return v, nil }

func (v *deafVendor) Recognize(context.Context, provider.Document) (provider.Recognition, error) {
	v.began <- "ocr"
	<-v.gone // the process is gone
	return provider.Recognition{}, errProcessGone
}

func (v *deafVendor) Complete(context.Context, provider.ChatRequest) (provider.ChatAnswer, error) {
	v.began <- "model"
	<-v.gone // the process is gone
	return provider.ChatAnswer{}, errProcessGone
}

// errProcessGone is what a deafVendor's calls return once the test is over.
var errProcessGone = errors.New("the simulated process is gone")

// answeringVendor answers every page and chunk at once and counts them.
type answeringVendor struct{ pages, chunks atomic.Int64 }

func (v *answeringVendor) OCR(string, string, string) (provider.OCR, error)   { return v, nil }
func (v *answeringVendor) Chat(string, string, string) (provider.Chat, error) { return v, nil }

func (v *answeringVendor) Recognize(context.Context, provider.Document) (provider.Recognition, error) {
	v.pages.Add(1)
	return provider.Recognition{Text: "the page's text", Format: "markdown", Model: "vision"}, nil
}

func (v *answeringVendor) Complete(context.Context, provider.ChatRequest) (provider.ChatAnswer, error) {
	v.chunks.Add(1)
	return provider.ChatAnswer{Content: `{"n":1}`}, nil
}

// TestAFileReclaimedAfterItsLastAttemptIsGivenUpOnlyInRecognition: with
// River for real, a process dies (its work never returns) in the last
// attempt of two files, and a process with its node id starts again and
// reclaims them past their last attempt. The file whose recognition was
// recorded, its row only waiting on the model, has its row asked and
// answered; the file that died in recognition is still given up without
// a call, for it may be what killed the process. Before, both were given
// up: every crash spent an attempt of every file in progress, and five in
// a row failed the rows of files that only waited on answers
// (audit-crash F2).
func TestAFileReclaimedAfterItsLastAttemptIsGivenUpOnlyInRecognition(t *testing.T) {
	forEachStoreAtOnce(t, func(t *testing.T, st store.Store) {
		src := scanSource(t)
		create := func(id string, j *job.Job) {
			t.Helper()
			j.ID, j.AccountID, j.Status, j.Created = id, "acct", job.StatusNew, time.Now()
			j.ConsensusMode = "CONSENSUS_MODE_UNSPECIFIED"
			enqueue := FirstStage(id, len(j.SourceURLs))
			for i := range enqueue {
				enqueue[i].InsertOpts = &river.InsertOpts{MaxAttempts: 1} // the first attempt is the last
			}
			if _, _, err := st.CreateJob(context.Background(), store.CreateJobParams{Job: j, Enqueue: enqueue,
				Secrets: []job.SealedSecret{
					{Field: job.SecretOCRProviderKey, Ciphertext: []byte(drainOCRKey)},
					{Field: job.SecretNeuralAPIKey, Ciphertext: []byte(drainModelKey)},
				}}); err != nil {
				t.Fatal(err)
			}
		}
		create("job-crash-model", &job.Job{SourceURLs: []string{src.URL + "/a.txt"}, Prompts: []string{"extract"},
			Neural: job.Neural{Type: "NEURAL_CLIENT_TYPE_PROVIDER_2", Model: "gpt-4.1", ChunkBudgetTokens: 4000}})
		create("job-crash-recognition", &job.Job{SourceURLs: []string{src.URL + "/scan.png"},
			OCR: job.OCR{Provider: "NEURAL_CLIENT_TYPE_PROVIDER_8", Model: "vision"}})

		deaf := newDeafVendor(2)
		stop := startNode(t, st, node{id: "node-crash", providers: deaf, chats: deaf, hardStop: 50 * time.Millisecond})
		var began []string
		for range 2 {
			select {
			case b := <-deaf.began:
				began = append(began, b)
			case <-time.After(time.Minute):
				t.Fatalf("calls begun: %v; want an OCR and a model call", began)
			}
		}
		// The model row is asked before the recognition is recorded; the
		// crash comes once it is.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			res, err := st.GetResult(context.Background(), "", "job-crash-model")
			if err != nil {
				t.Fatal(err)
			}
			if res.OCR[0].Status == job.RowDone {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the text file's recognition is not recorded: %s", res.OCR[0].Status)
			}
		}
		gone, cancel := context.WithCancel(context.Background())
		cancel()
		if err := stop(gone); err == nil {
			t.Fatal("the process stopped with its work returned; want it left running, as a crash leaves it")
		}
		deaf.dieAtTheEnd(t)

		vendor := &answeringVendor{}
		startNode(t, st, node{id: "node-crash", providers: vendor, chats: vendor})
		res := endOf(t, st, "job-crash-model")
		if res.Job.Status != job.StatusComplete || len(res.LLM) != 1 || res.LLM[0].Status != job.RowDone {
			t.Errorf("the file past recognition: job %s, model rows %+v; want COMPLETE with its row DONE", res.Job.Status, res.LLM)
		}
		if n := vendor.chunks.Load(); n != 1 {
			t.Errorf("the model was asked %d times after the restart, want once", n)
		}
		res = endOf(t, st, "job-crash-recognition")
		const want = "the file's last attempt (1 of 1) failed: the worker process ended while the file was in progress"
		if res.Job.Status != job.StatusFailed || res.OCR[0].Status != job.RowFailed || res.OCR[0].Error != want {
			t.Errorf("the file in recognition: job %s, OCR row %s %q; want FAILED %q", res.Job.Status, res.OCR[0].Status, res.OCR[0].Error, want)
		}
		if n := vendor.pages.Load(); n != 0 {
			t.Errorf("the page was read %d times after the restart, want none", n)
		}
	})
}

// TestARecognizedFileIsReclaimedPastItsLastAttemptWithinABound: a file
// whose recognition is recorded is run again after each crash up to
// modelStageCrashes past its River attempts, then given up, so that a
// process that keeps dying with it still ends it.
func TestARecognizedFileIsReclaimedPastItsLastAttemptWithinABound(t *testing.T) {
	tests := []struct {
		name    string
		attempt int
		asked   bool
	}{
		{"reclaimed after its last attempt, its rows are asked", 6, true},
		{"at the bound, its rows are asked", 5 + modelStageCrashes, true},
		{"past the bound, it is given up", 5 + modelStageCrashes + 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chat := &sendingChat{release: make(chan struct{})}
			close(chat.release)
			w, st, j := recognizedFile(t, 2, chat)
			if err := workAttempt(w, j, tt.attempt); err != nil {
				t.Fatalf("Work = %v, want nil", err)
			}
			res := result(t, st, j.ID)
			var statuses []job.RowStatus
			for _, r := range res.LLM {
				statuses = append(statuses, r.Status)
			}
			want, calls := []job.RowStatus{job.RowFailed, job.RowFailed}, int64(0)
			if tt.asked {
				want, calls = []job.RowStatus{job.RowDone, job.RowDone}, 2
			}
			if !slices.Equal(statuses, want) || chat.started.Load() != calls {
				t.Fatalf("rows %v after %d calls, want %v after %d", statuses, chat.started.Load(), want, calls)
			}
			if !tt.asked && res.LLM[0].Error != "the file's last attempt (5 of 5) failed: the worker process ended while the file was in progress" {
				t.Errorf("row error %q", res.LLM[0].Error)
			}
		})
	}
}
