package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
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

	// What the ids own outside the database (serve: their conversion
	// folders) is claimed with them: the dead sibling's while its id is
	// held for the reclaim, and given up again before its job is retried.
	claims := newClaimLog()
	stop, err := h.start(store.WorkConfig{ClientID: "host-s", DeriveClientID: true, ClaimNode: claims.claim})
	noErr(t, "Work as host-s", err)
	t.Cleanup(func() { _ = stop(context.Background()) })
	waitStarted("2 host-s")
	waitRiverState(t, s, dead, rivertype.JobStateCompleted)
	equal(t, "live sibling's job", lastAttempt(t, s, live), running("host-s-3"))
	equal(t, "another host's job", lastAttempt(t, s, other), running("elsewhere"))
	equal(t, "claims", claims.get(), []string{"claim host-s", "claim host-s-2", "release host-s-2"})
}

// claimLog records the calls of a WorkConfig.ClaimNode; ids in held are
// claimed by another process.
type claimLog struct {
	mu   sync.Mutex
	log  []string
	held map[string]bool
}

func newClaimLog(held ...string) *claimLog {
	c := &claimLog{held: map[string]bool{}}
	for _, id := range held {
		c.held[id] = true
	}
	return c
}

func (c *claimLog) claim(id string) (func(), error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held[id] {
		c.log = append(c.log, "held "+id)
		return nil, fmt.Errorf("%s's folder: %w", id, store.ErrNodeHeld)
	}
	c.log = append(c.log, "claim "+id)
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.log = append(c.log, "release "+id)
	}, nil
}

func (c *claimLog) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.log)
}

// testWorkClaimsTheNodeIDOutsideTheDatabase: an id whose claim outside the
// database (WorkConfig.ClaimNode) is held by another process is not worked
// under: a configured id fails Work with ErrNodeHeld and frees the id in
// the database again, a host-derived one moves on to the next; the claim
// is given up when Work stops.
func testWorkClaimsTheNodeIDOutsideTheDatabase(t *testing.T, s Store) {
	h := &harness{t: t, s: s, steps: map[string]stepFunc{}, runs: make(chan stepRun, 10)}
	idle := map[string]river.QueueConfig{"storetest_idle": {MaxWorkers: 1}}
	claims := newClaimLog("node-c")
	if _, err := h.start(store.WorkConfig{ClientID: "node-c", Queues: idle, ClaimNode: claims.claim}); !errors.Is(err, store.ErrNodeHeld) {
		t.Fatalf("Work as node-c, its claim held: err %v, want ErrNodeHeld", err)
	}
	stop, err := h.start(store.WorkConfig{ClientID: "node-c", Queues: idle})
	noErr(t, "Work as node-c once the refused Work is gone (its database hold given up)", err)
	noErr(t, "stop", stop(ctx(t)))

	var got string
	stop, err = h.start(store.WorkConfig{ClientID: "node-c", DeriveClientID: true, Queues: idle, ClaimNode: claims.claim,
		OnClientID: func(id string) { got = id }})
	noErr(t, "Work as node-c with DeriveClientID, its claim held", err)
	equal(t, "id worked under", got, "node-c-2")
	noErr(t, "stop", stop(ctx(t)))
	equal(t, "claims", claims.get(), []string{"held node-c", "held node-c", "claim node-c-2", "release node-c-2"})
}

// testNoteRunLimit: an attempt's noted limit is read back from its River
// job as River's rescuer reads the row, and a note naming an attempt that
// is not the job's running one (an earlier attempt's late note, another
// client's) writes nothing over it.
func testNoteRunLimit(t *testing.T, s Store) {
	h := &harness{t: t, s: s, steps: map[string]stepFunc{}, runs: make(chan stepRun, 10)}
	noted := make(chan *rivertype.JobRow, 1)
	release := make(chan struct{})
	h.on("note", func(ctx context.Context, rj *river.Job[stepArgs]) error {
		err := s.NoteRunLimit(ctx, rj.JobRow, 3*time.Hour)
		noted <- rj.JobRow
		if err != nil {
			return err
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})
	stop := h.work("node-long")
	defer stop()
	defer close(release) // before the stop, which waits for the step
	createJob(t, s, newJob("acct", 1), store.CreateJobParams{Enqueue: []river.InsertManyParams{step("note")}})
	var attempt *rivertype.JobRow
	select {
	case attempt = <-noted:
	case <-time.After(15 * time.Second):
		t.Fatal("the step did not run")
	}
	row, err := s.RiverJob(ctx(t), attempt.ID)
	noErr(t, "RiverJob", err)
	equal(t, "the running attempt's noted limit", store.RunLimitOf(row), 3*time.Hour)

	stale := *attempt
	stale.Attempt++
	noErr(t, "NoteRunLimit of another attempt", s.NoteRunLimit(ctx(t), &stale, time.Minute))
	other := *attempt
	other.AttemptedBy = []string{"node-other"}
	noErr(t, "NoteRunLimit of another client", s.NoteRunLimit(ctx(t), &other, time.Minute))
	row, err = s.RiverJob(ctx(t), attempt.ID)
	noErr(t, "RiverJob", err)
	equal(t, "the noted limit after notes of other attempts", store.RunLimitOf(row), 3*time.Hour)
}
