package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/store"
)

// stepArgs is the River job the suite's worker runs: Step names the function
// to call, which the test registered with on.
type stepArgs struct {
	Step string `json:"step"`
	// JobID names the docjobs job the River job is of, as the pipeline's
	// file, finalize and webhook jobs do.
	JobID string `json:"job_id,omitempty"`
}

func (stepArgs) Kind() string { return "storetest_step" }

// step enqueues a worker step (for CreateJobParams.Enqueue and friends).
func step(name string) river.InsertManyParams {
	return river.InsertManyParams{Args: stepArgs{Step: name}}
}

// parkedArgs is a River job nobody works: it stays available in a queue no
// client polls, so a test can see exactly which follow-up jobs were inserted.
type parkedArgs struct {
	Note string `json:"note"`
}

func (parkedArgs) Kind() string { return "storetest_parked" }

const parkedQueue = "storetest_parked"

func parked(note string) river.InsertManyParams {
	return river.InsertManyParams{Args: parkedArgs{Note: note}, InsertOpts: &river.InsertOpts{Queue: parkedQueue}}
}

// parkedNotes lists the notes of the parked River jobs, by insertion.
func parkedNotes(t *testing.T, s Store) []string {
	t.Helper()
	rows, err := s.RiverJobsByKind(ctx(t), parkedArgs{}.Kind())
	noErr(t, "RiverJobsByKind", err)
	var notes []string
	for _, r := range rows {
		var a parkedArgs
		if err := json.Unmarshal(r.EncodedArgs, &a); err != nil {
			t.Fatalf("parked args: %v", err)
		}
		if r.State != rivertype.JobStateAvailable {
			t.Errorf("parked job %q is %s, want available", a.Note, r.State)
		}
		notes = append(notes, a.Note)
	}
	return notes
}

// stepFunc is a test's worker code; job is the running River job.
type stepFunc func(ctx context.Context, job *river.Job[stepArgs]) error

// stepRun is one finished execution of a step.
type stepRun struct {
	Step    string
	JobID   int64 // River job id
	Attempt int
	Err     error
}

// harness runs River workers over a store for one test.
type harness struct {
	t     *testing.T
	s     Store
	mu    sync.Mutex
	steps map[string]stepFunc
	runs  chan stepRun
}

type stepWorker struct {
	river.WorkerDefaults[stepArgs]
	h *harness
}

func (w *stepWorker) Work(ctx context.Context, job *river.Job[stepArgs]) error {
	w.h.mu.Lock()
	fn := w.h.steps[job.Args.Step]
	w.h.mu.Unlock()
	var err error
	if fn == nil {
		err = fmt.Errorf("no step %q registered", job.Args.Step)
	} else {
		err = fn(ctx, job)
	}
	w.h.runs <- stepRun{Step: job.Args.Step, JobID: job.ID, Attempt: job.Attempt, Err: err}
	return err
}

// newHarness starts a River client working the suite's steps; clientID ""
// picks a fresh one.
func newHarness(t *testing.T, s Store, clientID string) *harness {
	t.Helper()
	h := &harness{t: t, s: s, steps: map[string]stepFunc{}, runs: make(chan stepRun, 100)}
	if clientID == "" {
		clientID = newID("client")
	}
	h.work(clientID)
	return h
}

// work starts one more River client with the given id over the same steps;
// it stops with the test, or earlier through the returned func.
func (h *harness) work(clientID string) (stop func()) {
	h.t.Helper()
	stopRiver, err := h.start(store.WorkConfig{ClientID: clientID})
	noErr(h.t, "Work", err)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			c, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			if err := stopRiver(c); err != nil {
				h.t.Errorf("stop river client: %v", err)
			}
		})
	}
	h.t.Cleanup(stop)
	return stop
}

// start calls Work with cfg over the harness's steps, on the default queue
// unless cfg names queues, polling every 20ms. The caller stops the client.
func (h *harness) start(cfg store.WorkConfig) (stop func(context.Context) error, err error) {
	h.t.Helper()
	cfg.Workers = river.NewWorkers()
	river.AddWorker(cfg.Workers, &stepWorker{h: h})
	if cfg.Queues == nil {
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 8}}
	}
	cfg.FetchPollInterval = 20 * time.Millisecond
	return h.s.Work(ctx(h.t), cfg)
}

// on registers the function run for a step name.
func (h *harness) on(name string, fn stepFunc) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.steps[name] = fn
}

// wait returns the next n finished step runs.
func (h *harness) wait(n int) []stepRun {
	h.t.Helper()
	var out []stepRun
	timeout := time.After(20 * time.Second)
	for len(out) < n {
		select {
		case r := <-h.runs:
			out = append(out, r)
		case <-timeout:
			h.t.Fatalf("waited for %d step runs, got %d: %+v", n, len(out), out)
		}
	}
	return out
}

// waitOne returns the next finished run and fails the test if its step
// returned an error.
func (h *harness) waitOne() stepRun {
	h.t.Helper()
	r := h.wait(1)[0]
	if r.Err != nil {
		h.t.Fatalf("step %s: %v", r.Step, r.Err)
	}
	return r
}

// riverState returns the state of a River job.
func riverState(t *testing.T, s Store, id int64) rivertype.JobState {
	t.Helper()
	row, err := s.RiverJob(ctx(t), id)
	noErr(t, "RiverJob", err)
	return row.State
}

// waitRiverState waits until a River job reaches state (River's completer
// records a worker's success asynchronously).
func waitRiverState(t *testing.T, s Store, id int64, state rivertype.JobState) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := riverState(t, s, id)
		if got == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("River job %d is %s, want %s", id, got, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stepJobIDs returns the ids of the River step jobs, by insertion.
func stepJobIDs(t *testing.T, s Store) []int64 {
	t.Helper()
	rows, err := s.RiverJobsByKind(ctx(t), stepArgs{}.Kind())
	noErr(t, "RiverJobsByKind", err)
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids
}

// webhookJobs counts the webhook deliveries enqueued for a job.
func webhookJobs(t *testing.T, s Store, jobID string) int {
	t.Helper()
	rows, err := s.RiverJobsByKind(ctx(t), store.WebhookArgs{}.Kind())
	noErr(t, "RiverJobsByKind", err)
	n := 0
	for _, r := range rows {
		var a store.WebhookArgs
		noErr(t, "webhook args", json.Unmarshal(r.EncodedArgs, &a))
		if a.JobID == jobID {
			n++
		}
	}
	return n
}
