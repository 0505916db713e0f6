package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/store"
)

// lastAttempt is the state of River job id and the client of its last attempt.
func lastAttempt(t *testing.T, s Store, id int64) [2]string {
	t.Helper()
	row, err := s.RiverJob(ctx(t), id)
	noErr(t, "RiverJob", err)
	by := ""
	if n := len(row.AttemptedBy); n > 0 {
		by = row.AttemptedBy[n-1]
	}
	return [2]string{string(row.State), by}
}

func running(by string) [2]string { return [2]string{string(rivertype.JobStateRunning), by} }

func testWorkReclaims(t *testing.T, s Store) {
	h := &harness{t: t, s: s, steps: map[string]stepFunc{}, runs: make(chan stepRun, 10)}
	started := make(chan int, 4)
	release := make(chan struct{})
	h.on("hold", func(ctx context.Context, rj *river.Job[stepArgs]) error {
		started <- rj.Attempt
		if rj.Attempt == 1 {
			<-release // deaf to its context, as a hung job is
		}
		return nil
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	waitAttempt := func(want int) {
		t.Helper()
		select {
		case got := <-started:
			equal(t, "attempt", got, want)
		case <-time.After(15 * time.Second):
			t.Fatalf("attempt %d did not start", want)
		}
	}

	// Incarnation 1 of node-a takes the job and hangs.
	stopA1, err := h.start(store.WorkConfig{ClientID: "node-a", HardStopWait: time.Millisecond})
	noErr(t, "Work as node-a", err)
	createJob(t, s, newJob("acct", 1), store.CreateJobParams{Enqueue: []river.InsertManyParams{step("hold")}})
	waitAttempt(1)
	id := stepJobIDs(t, s)[0]
	equal(t, "River job", lastAttempt(t, s, id), running("node-a"))

	// Another node starting does not take node-a's job.
	stopB := h.work("node-b")
	equal(t, "River job after node-b started", lastAttempt(t, s, id), running("node-a"))
	stopB()

	// A second process given node-a's id while node-a lives is refused,
	// and does not take node-a's running job.
	if _, err := h.start(store.WorkConfig{ClientID: "node-a"}); !errors.Is(err, store.ErrNodeHeld) {
		t.Fatalf("second Work as the live node-a: err %v, want ErrNodeHeld", err)
	}
	equal(t, "River job after a second node-a was refused", lastAttempt(t, s, id), running("node-a"))

	// Incarnation 1 ends with its job still hung (its stop gave up on the
	// job, then the process would exit): the job is still running and
	// node-a is free.
	gone, cancel := context.WithCancel(ctx(t))
	cancel()
	_ = stopA1(gone) // the job outlived the stop: an error, by design
	equal(t, "River job after node-a's first incarnation ended", lastAttempt(t, s, id), running("node-a"))

	// node-a restarts: its job runs again at once, not after the rescue horizon.
	h.work("node-a")
	waitAttempt(2)
	h.waitOne()
	waitRiverState(t, s, id, rivertype.JobStateCompleted)

	close(release)
	h.waitOne()
	equal(t, "River job after the hung attempt ended", riverState(t, s, id), rivertype.JobStateCompleted)
}

// testWorkDerivesANodeIDOnlyWhenAllowed: with DeriveClientID, a process
// whose id is held works as the first free id-N, and finds the same one
// again when it restarts, so it still reclaims its own work at once.
func testWorkDerivesANodeIDOnlyWhenAllowed(t *testing.T, s Store) {
	h := &harness{t: t, s: s, steps: map[string]stepFunc{}, runs: make(chan stepRun, 10)}
	h.on("who", func(context.Context, *river.Job[stepArgs]) error { return nil })
	// The first holder works a queue no job is sent to, so that every job
	// below is worked by the client under test.
	stop1, err := h.start(store.WorkConfig{ClientID: "node-d",
		Queues: map[string]river.QueueConfig{"storetest_idle": {MaxWorkers: 1}}})
	noErr(t, "Work as node-d", err)
	t.Cleanup(func() { _ = stop1(context.Background()) })

	if _, err := h.start(store.WorkConfig{ClientID: "node-d"}); !errors.Is(err, store.ErrNodeHeld) {
		t.Fatalf("Work as the held node-d without DeriveClientID: err %v, want ErrNodeHeld", err)
	}
	for run := range 2 {
		stop, err := h.start(store.WorkConfig{ClientID: "node-d", DeriveClientID: true})
		noErr(t, "Work with DeriveClientID", err)
		createJob(t, s, newJob("acct", 1), store.CreateJobParams{Enqueue: []river.InsertManyParams{step("who")}})
		r := h.waitOne()
		waitRiverState(t, s, r.JobID, rivertype.JobStateCompleted)
		equal(t, fmt.Sprint("client of the job worked in run ", run+1), lastAttempt(t, s, r.JobID)[1], "node-d-2")
		noErr(t, "stop", stop(ctx(t)))
	}
}

// testWorkReclaimsSiblings: a process working under a host-derived id takes
// back at once the running jobs of its host's other ids that no process
// holds (one of two processes of a host did not come back), and leaves a
// live sibling's and another host's alone.
func testWorkReclaimsSiblings(t *testing.T, s Store) {
	h := &harness{t: t, s: s, steps: map[string]stepFunc{}, runs: make(chan stepRun, 10)}
	started := make(chan string, 8)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	h.on("hold", func(ctx context.Context, rj *river.Job[stepArgs]) error {
		started <- fmt.Sprint(rj.Attempt, " ", rj.AttemptedBy[len(rj.AttemptedBy)-1])
		if rj.Attempt == 1 {
			<-release // deaf to its context, as a hung job is
		}
		return nil
	})
	waitStarted := func(want string) {
		t.Helper()
		select {
		case got := <-started:
			equal(t, "attempt and client", got, want)
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not start", want)
		}
	}
	// hung leaves one job hung in its first attempt under id; the process
	// stays alive when live, else ends with the job still running.
	hung := func(id string, live bool) int64 {
		t.Helper()
		cfg := store.WorkConfig{ClientID: id, HardStopWait: time.Millisecond}
		if live {
			// Its one worker stays busy with the hung job, so the jobs
			// below are worked by the process under test.
			cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 1}}
		}
		stop, err := h.start(cfg)
		noErr(t, "Work as "+id, err)
		createJob(t, s, newJob("acct", 1), store.CreateJobParams{Enqueue: []river.InsertManyParams{step("hold")}})
		waitStarted("1 " + id)
		ids := stepJobIDs(t, s)
		jobID := ids[len(ids)-1]
		if live {
			t.Cleanup(func() {
				gone, cancel := context.WithCancel(ctx(t))
				cancel()
				_ = stop(gone)
			})
			return jobID
		}
		gone, cancel := context.WithCancel(ctx(t))
		cancel()
		_ = stop(gone) // the job outlived the stop, by design
		return jobID
	}
	dead := hung("host-s-2", false)
	other := hung("elsewhere", false)
	live := hung("host-s-3", true)

	stop, err := h.start(store.WorkConfig{ClientID: "host-s", DeriveClientID: true})
	noErr(t, "Work as host-s", err)
	t.Cleanup(func() { _ = stop(context.Background()) })
	waitStarted("2 host-s")
	waitRiverState(t, s, dead, rivertype.JobStateCompleted)
	equal(t, "live sibling's job", lastAttempt(t, s, live), running("host-s-3"))
	equal(t, "another host's job", lastAttempt(t, s, other), running("elsewhere"))
}
