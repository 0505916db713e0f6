package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/postgres"
	"github.com/docjobs/docjobs/internal/store/postgres/pgtest"
)

// nodeKey is the advisory lock key of node id $2 in schema $1, as the
// store computes it on a connection whose current schema is $1.
const nodeKey = `hashtextextended('docjobs_node.' || $1::text || '.' || $2::text, 0)`

// nodeHolder returns the backend pid holding node id in schema, 0 if none.
func nodeHolder(t *testing.T, conn *pgx.Conn, schema, id string) int32 {
	t.Helper()
	var pid int32
	err := conn.QueryRow(t.Context(), `SELECT coalesce(max(pid), 0) FROM pg_locks
		WHERE locktype = 'advisory' AND objsubid = 1 AND granted
		AND ((classid::bigint << 32) | objid::bigint) = `+nodeKey, schema, id).Scan(&pid)
	if err != nil {
		t.Fatalf("node holder: %v", err)
	}
	return pid
}

// blockArgs is a River job that runs until its context ends.
type blockArgs struct{}

func (blockArgs) Kind() string { return "postgres_test_block" }

type blockWorker struct {
	river.WorkerDefaults[blockArgs]
	started, cancelled chan struct{}
}

func (w *blockWorker) Work(ctx context.Context, _ *river.Job[blockArgs]) error {
	close(w.started)
	<-ctx.Done()
	close(w.cancelled)
	return ctx.Err()
}

func connect(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// work starts a client as node id on s, its jobs run by w.
func work(t *testing.T, s *postgres.Store, id string, w *blockWorker, onLost func(error)) (func(context.Context) error, error) {
	t.Helper()
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	return s.Work(t.Context(), store.WorkConfig{Workers: workers, ClientID: id, OnNodeLost: onLost,
		Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2}}, FetchPollInterval: 20 * time.Millisecond})
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 15s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestADroppedNodeLockConnectionTakesTheIDAgain: the session holding the
// node id ends (a database restart, a dropped connection); nobody else
// wants the id, so the process takes it again on a new connection and
// goes on working, and a second process is still refused.
func TestADroppedNodeLockConnectionTakesTheIDAgain(t *testing.T) {
	url := pgtest.URL(t)
	s, schema := openNamedSchema(t)
	s.Close()
	s = openConfig(t, postgres.Config{URL: url, Schema: schema, NodeCheck: 20 * time.Millisecond})
	defer s.Close()
	conn := connect(t)
	lost := make(chan error, 1)
	stop, err := work(t, s, "node-p", &blockWorker{}, func(err error) { lost <- err })
	if err != nil {
		t.Fatal(err)
	}
	defer stop(context.Background())
	old := nodeHolder(t, conn, schema, "node-p")
	if old == 0 {
		t.Fatal("node-p is held by no session while its client works")
	}
	if _, err := conn.Exec(t.Context(), `SELECT pg_terminate_backend($1, 10000)`, old); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "node-p held again", func() bool {
		pid := nodeHolder(t, conn, schema, "node-p")
		return pid != 0 && pid != old
	})
	select {
	case err := <-lost:
		t.Fatalf("hold reported lost: %v", err)
	default:
	}
	other := openConfig(t, postgres.Config{URL: url, Schema: schema})
	defer other.Close()
	if _, err := work(t, other, "node-p", &blockWorker{}, nil); !errors.Is(err, store.ErrNodeHeld) {
		t.Fatalf("second process as node-p: err %v, want ErrNodeHeld", err)
	}
}

// TestANodeWhoseIDIsTakenWhileItsConnectionIsDownStopsWorking: when
// another session took the id in the gap, the process may no longer work
// its jobs (the new holder reclaims them): OnNodeLost says why before
// anything is stopped (serve exits there, so that River writes nothing
// over the new runs of those jobs), and if it returns the running jobs
// are cancelled.
func TestANodeWhoseIDIsTakenWhileItsConnectionIsDownStopsWorking(t *testing.T) {
	url := pgtest.URL(t)
	s, schema := openNamedSchema(t)
	s.Close()
	s = openConfig(t, postgres.Config{URL: url, Schema: schema, NodeCheck: 500 * time.Millisecond})
	defer s.Close()
	conn := connect(t)
	w := &blockWorker{started: make(chan struct{}), cancelled: make(chan struct{})}
	lost := make(chan error, 1)
	cancelledFirst := false
	stop, err := work(t, s, "node-q", w, func(err error) {
		select {
		case <-w.cancelled:
			cancelledFirst = true
		default:
		}
		lost <- err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_ = stop(c)
	}()
	_, _, err = s.CreateJob(t.Context(), store.CreateJobParams{
		Job:     &job.Job{ID: "job_q", AccountID: "acct", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a"}},
		Enqueue: []river.InsertManyParams{{Args: blockArgs{}}}})
	if err != nil {
		t.Fatal(err)
	}
	<-w.started

	// The test's session spins on the lock from the moment it ends the
	// store's session, so it has the id long before the store's next
	// check of its connection notices the drop.
	holder := nodeHolder(t, conn, schema, "node-q")
	_, err = conn.Exec(t.Context(), fmt.Sprintf(`DO $$ BEGIN
		PERFORM pg_terminate_backend(%d);
		LOOP EXIT WHEN pg_try_advisory_lock(hashtextextended('docjobs_node.%s.node-q', 0)); END LOOP;
	END $$`, holder, schema))
	if err != nil {
		t.Fatalf("taking node-q from its session %d: %v", holder, err)
	}
	if got := nodeHolder(t, conn, schema, "node-q"); uint32(got) != conn.PgConn().PID() {
		t.Fatalf("node-q is held by session %d, want the test's %d", got, conn.PgConn().PID())
	}
	select {
	case err := <-lost:
		if !errors.Is(err, store.ErrNodeHeld) {
			t.Errorf("OnNodeLost(%v), want ErrNodeHeld", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("OnNodeLost was not called")
	}
	if cancelledFirst {
		t.Error("the running job was cancelled before OnNodeLost: River hands it back over its new run")
	}
	select {
	case <-w.cancelled:
	case <-time.After(15 * time.Second):
		t.Error("the running job was not cancelled once OnNodeLost returned")
	}
}

// TestANewcomerWaitsBeforeReclaimingALiveHoldersJobs: a process started
// with an id whose holder's connection has just dropped gets the id, but
// the holder lives and works its job until its next check notices. The
// newcomer must not run that job meanwhile: it reclaims only after the
// holder has had the time to notice and cancel it.
func TestANewcomerWaitsBeforeReclaimingALiveHoldersJobs(t *testing.T) {
	url := pgtest.URL(t)
	s, schema := openNamedSchema(t)
	s.Close()
	const check = 2 * time.Second
	s = openConfig(t, postgres.Config{URL: url, Schema: schema, NodeCheck: check})
	defer s.Close()
	conn := connect(t)
	first := &blockWorker{started: make(chan struct{}), cancelled: make(chan struct{})}
	stop, err := work(t, s, "node-r", first, func(error) {})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond) // its job blocks: cancel it soon
		defer cancel()
		_ = stop(c)
	}()
	_, _, err = s.CreateJob(t.Context(), store.CreateJobParams{
		Job:     &job.Job{ID: "job_r", AccountID: "acct", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a"}},
		Enqueue: []river.InsertManyParams{{Args: blockArgs{}}}})
	if err != nil {
		t.Fatal(err)
	}
	<-first.started

	other := openConfig(t, postgres.Config{URL: url, Schema: schema, NodeCheck: check})
	defer other.Close()
	second := &blockWorker{started: make(chan struct{}), cancelled: make(chan struct{})}
	holder := nodeHolder(t, conn, schema, "node-r")
	if _, err := conn.Exec(t.Context(), `SELECT pg_terminate_backend($1, 5000)`, holder); err != nil {
		t.Fatal(err)
	}
	stopOther, err := work(t, other, "node-r", second, nil)
	if errors.Is(err, store.ErrNodeHeld) {
		t.Skip("the first process took its id back before the newcomer asked; nothing to test this run")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond) // its job blocks: cancel it soon
		defer cancel()
		_ = stopOther(c)
	}()
	select {
	case <-second.started:
		select {
		case <-first.cancelled:
		default:
			t.Fatal("the newcomer ran the job while the first process was still running it")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the newcomer never ran the job the first process gave up")
	}
}

// pause parks a store's check of its node id's connection, as a process
// stopped (SIGSTOP, a frozen VM) stops checking, while the test ends that
// connection's session; its River client goes on.
type pause struct {
	on             atomic.Bool
	parked, resume chan struct{}
	parkOnce, goOn sync.Once
}

func newPause(t *testing.T) *pause {
	p := &pause{parked: make(chan struct{}), resume: make(chan struct{})}
	t.Cleanup(p.end)
	return p
}

// check is the store's NodeHooks.Check.
func (p *pause) check() {
	if p.on.Load() {
		p.parkOnce.Do(func() { close(p.parked) })
		<-p.resume
	}
}

// start returns once the next check is parked.
func (p *pause) start(t *testing.T) {
	t.Helper()
	p.on.Store(true)
	select {
	case <-p.parked:
	case <-time.After(15 * time.Second):
		t.Fatal("the node id's check did not come round")
	}
}

func (p *pause) end() { p.goOn.Do(func() { close(p.resume) }) }

// blockJob is the state, attempt and last client of the test's one River
// job in schema.
func blockJob(t *testing.T, conn *pgx.Conn, schema string) string {
	t.Helper()
	var state, by string
	var attempt int
	err := conn.QueryRow(t.Context(), `SELECT state, attempt, attempted_by[array_upper(attempted_by, 1)] FROM `+
		pgx.Identifier{schema, "river_job"}.Sanitize()+` WHERE kind = $1`, blockArgs{}.Kind()).Scan(&state, &attempt, &by)
	if err != nil {
		t.Fatalf("river job: %v", err)
	}
	return fmt.Sprintf("%s, attempt %d by %s", state, attempt, by)
}

// workAs starts a client on s working blockArgs with w as cfg says.
func workAs(t *testing.T, s *postgres.Store, w *blockWorker, cfg store.WorkConfig) func(context.Context) error {
	t.Helper()
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	cfg.Workers = workers
	cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 1}}
	cfg.FetchPollInterval = 20 * time.Millisecond
	stop, err := s.Work(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Work as %s: %v", cfg.ClientID, err)
	}
	return stop
}

// stopSoon stops a client whose jobs block: they are cancelled at once.
func stopSoon(stop func(context.Context) error) {
	c, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_ = stop(c)
}

// TestAPausedNodeWhoseJobsASiblingReclaimedStopsWithoutWritingThem (audit
// ops3 F2, F3): a process is paused while its job runs, and its sessions
// end; a sibling's sweep takes its id, hands the job back to the queue
// (the sibling runs it again) and gives the id up. When the paused
// process resumes it must not take its id back as if nothing happened
// (it worked the job beside the sibling, every provider call paid twice):
// the id's generation moved on, so the hold is lost. And it must write
// nothing to the job the sibling now runs: River's stop made it available
// again with its attempt undone, and a third run started.
func TestAPausedNodeWhoseJobsASiblingReclaimedStopsWithoutWritingThem(t *testing.T) {
	url, schema := pgtest.Schema(t)
	open := func(cfg postgres.Config) *postgres.Store {
		cfg.URL, cfg.Schema = url, schema
		s := openConfig(t, cfg)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	conn := connect(t)
	paused := open(postgres.Config{NodeCheck: 20 * time.Millisecond})
	p := newPause(t)
	postgres.SetNodeHooks(paused, postgres.NodeHooks{Check: p.check})
	first := &blockWorker{started: make(chan struct{}), cancelled: make(chan struct{})}
	lost := make(chan error, 1)
	exited := make(chan struct{}) // OnNodeLost ends the process: nothing runs after it
	stopFirst := workAs(t, paused, first, store.WorkConfig{ClientID: "host-g",
		OnNodeLost: func(err error) { lost <- err; <-exited }})
	// At the end the sibling stops first, its job's last state written,
	// and only then does the process that lost its id stop (as if its
	// OnNodeLost returned): two clients writing one job's state at once
	// is what River's completer panics on ("a job that wasn't finalized").
	defer stopSoon(stopFirst)
	defer close(exited)
	_, _, err := paused.CreateJob(t.Context(), store.CreateJobParams{
		Job:     &job.Job{ID: "job_g", AccountID: "acct", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a"}},
		Enqueue: []river.InsertManyParams{{Args: blockArgs{}}}})
	if err != nil {
		t.Fatal(err)
	}
	<-first.started

	sibling := open(postgres.Config{NodeCheck: 20 * time.Millisecond, NodeCheckTimeout: 500 * time.Millisecond})
	second := &blockWorker{started: make(chan struct{}), cancelled: make(chan struct{})}
	stopSecond := workAs(t, sibling, second, store.WorkConfig{ClientID: "host-g", DeriveClientID: true,
		SiblingSweepEvery: 50 * time.Millisecond})
	defer stopSoon(stopSecond)

	p.start(t)
	if _, err := conn.Exec(t.Context(), `SELECT pg_terminate_backend($1, 10000)`, nodeHolder(t, conn, schema, "host-g")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-second.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the sibling's sweep did not hand the paused process's job back")
	}
	want := "running, attempt 2 by host-g-2"
	if got := blockJob(t, conn, schema); got != want {
		t.Fatalf("job run by the sibling: %s, want %s", got, want)
	}

	p.end()
	select {
	case err := <-lost:
		if !errors.Is(err, store.ErrNodeHeld) {
			t.Errorf("OnNodeLost(%v), want ErrNodeHeld", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the resumed process took its id back and works on the job its sibling runs")
	}
	if got := blockJob(t, conn, schema); got != want {
		t.Errorf("job after the resumed process lost its id: %s, want still %s", got, want)
	}
}

// TestASiblingSweepLeavesANodeThatTakesItsIDBackInTime (audit ops3 F2b):
// a live process's connection drops (a failover drops them all) just as a
// sibling's sweep looks at its id and finds it free. The process takes
// its id back at its next check; the sweep must not have taken the id at
// that first look (the process then found it held and stopped, healthy),
// nor take it or the process's job afterwards.
func TestASiblingSweepLeavesANodeThatTakesItsIDBackInTime(t *testing.T) {
	url, schema := pgtest.Schema(t)
	open := func(cfg postgres.Config) *postgres.Store {
		cfg.URL, cfg.Schema = url, schema
		s := openConfig(t, cfg)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	conn := connect(t)
	live := open(postgres.Config{NodeCheck: 20 * time.Millisecond})
	p := newPause(t)
	retaken := make(chan struct{}, 1)
	postgres.SetNodeHooks(live, postgres.NodeHooks{Check: p.check, Retaken: func(string) { retaken <- struct{}{} }})
	first := &blockWorker{started: make(chan struct{}), cancelled: make(chan struct{})}
	lost := make(chan error, 1)
	stopFirst := workAs(t, live, first, store.WorkConfig{ClientID: "host-b",
		OnNodeLost: func(err error) { lost <- err }})
	defer stopSoon(stopFirst)
	_, _, err := live.CreateJob(t.Context(), store.CreateJobParams{
		Job:     &job.Job{ID: "job_b", AccountID: "acct", Status: job.StatusNew, SourceURLs: []string{"https://example.com/a"}},
		Enqueue: []river.InsertManyParams{{Args: blockArgs{}}}})
	if err != nil {
		t.Fatal(err)
	}
	<-first.started

	// The sweep's look at host-b once it is free waits until the test
	// has let the process take it back; its looks after that are told.
	var armed atomic.Bool
	seenFree, goOn := make(chan struct{}), make(chan struct{})
	looks := make(chan bool, 100)
	var once sync.Once
	sibling := open(postgres.Config{NodeCheck: 20 * time.Millisecond, NodeCheckTimeout: 500 * time.Millisecond})
	postgres.SetNodeHooks(sibling, postgres.NodeHooks{Looked: func(id string, free bool) {
		if id != "host-b" || !armed.Load() {
			return
		}
		first := false
		if free {
			once.Do(func() { first = true; close(seenFree); <-goOn })
		}
		if first {
			return
		}
		select {
		case looks <- free:
		default:
		}
	}})
	second := &blockWorker{started: make(chan struct{}), cancelled: make(chan struct{})}
	stopSecond := workAs(t, sibling, second, store.WorkConfig{ClientID: "host-b", DeriveClientID: true,
		SiblingSweepEvery: 50 * time.Millisecond})
	defer stopSoon(stopSecond)
	defer func() {
		select {
		case <-goOn:
		default:
			close(goOn)
		}
	}()

	p.start(t)
	armed.Store(true)
	if _, err := conn.Exec(t.Context(), `SELECT pg_terminate_backend($1, 10000)`, nodeHolder(t, conn, schema, "host-b")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-seenFree:
	case <-time.After(30 * time.Second):
		t.Fatal("the sibling's sweep never looked at host-b while it was free")
	}
	p.end()
	select {
	case <-retaken:
	case err := <-lost:
		t.Fatalf("the live process lost its id to the sibling's first look: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("the live process did not take its id back")
	}
	close(goOn)
	// The looks after the free one: the sweep's second (held) and its
	// next rounds' (held), once the sweep has done with host-b.
	for range 2 {
		select {
		case free := <-looks:
			if free {
				t.Fatal("the sweep found host-b free again although its process holds it")
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the sweep did not look at host-b again")
		}
	}
	select {
	case err := <-lost:
		t.Fatalf("the live process lost its id: %v", err)
	default:
	}
	if got, want := blockJob(t, conn, schema), "running, attempt 1 by host-b"; got != want {
		t.Errorf("the live process's job: %s, want %s", got, want)
	}
}

// TestANodeWhoseOldSessionOutlivesItsConnection (hunt-nodelock): the
// connection holding the node id ends on the client's side before the
// server has ended its session (a terminated session still exiting when
// its client reads the FATAL, a half-open connection), so the process's
// retakes find the id held by its own old session. That is not another
// process: it waits for the session to end and takes its id back, and
// stops (ErrNodeHeld) only when the session outlives its wait.
func TestANodeWhoseOldSessionOutlivesItsConnection(t *testing.T) {
	for _, tc := range []struct {
		name       string
		endSession bool // the server ends the old session while the process waits
		wantLost   bool
	}{
		{name: "takes its id back once the session ends", endSession: true},
		{name: "stops when the session outlives the wait", wantLost: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, schema := pgtest.Schema(t)
			proxied, orphan := pgtest.Orphaning(t, url)
			s := openConfig(t, postgres.Config{URL: proxied, Schema: schema, NodeCheck: 20 * time.Millisecond,
				NodeCheckTimeout: 500 * time.Millisecond})
			t.Cleanup(func() { _ = s.Close() })
			held := make(chan struct{}, 100)
			retaken := make(chan struct{}, 1)
			postgres.SetNodeHooks(s, postgres.NodeHooks{
				Looked: func(id string, free bool) {
					if !free {
						select {
						case held <- struct{}{}:
						default: // the test reads two
						}
					}
				},
				Retaken: func(string) { retaken <- struct{}{} },
			})
			conn := connect(t)
			lost := make(chan error, 1)
			stop, err := work(t, s, "node-o", &blockWorker{}, func(err error) { lost <- err })
			if err != nil {
				t.Fatal(err)
			}
			defer stopSoon(stop)
			old := nodeHolder(t, conn, schema, "node-o")
			var port int
			if err := conn.QueryRow(t.Context(), `SELECT client_port FROM pg_stat_activity WHERE pid = $1`, old).Scan(&port); err != nil {
				t.Fatal(err)
			}
			end, ok := orphan(port)
			if !ok {
				t.Fatalf("session %d (client port %d) is not behind the proxy", old, port)
			}
			defer end()

			// Two retakes that found the id held: the first was not
			// taken for another process's hold.
			for range 2 {
				select {
				case <-held:
				case err := <-lost:
					t.Fatalf("hold reported lost while its own old session held the id: %v", err)
				case <-time.After(15 * time.Second):
					t.Fatal("the process did not try to take its id back")
				}
			}
			if got := nodeHolder(t, conn, schema, "node-o"); got != old {
				t.Fatalf("node-o held by session %d, want the old session %d still", got, old)
			}
			if tc.endSession {
				end()
			}
			select {
			case <-retaken:
				if tc.wantLost {
					t.Fatal("the process took its id back")
				}
			case err := <-lost:
				if !tc.wantLost {
					t.Fatalf("hold reported lost: %v", err)
				}
				if !errors.Is(err, store.ErrNodeHeld) {
					t.Errorf("OnNodeLost(%v), want ErrNodeHeld", err)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("the process neither took its id back nor stopped")
			}
			if got := nodeHolder(t, conn, schema, "node-o"); tc.endSession && (got == 0 || got == old) {
				t.Errorf("node-o held by session %d after the retake, want a new one (old %d)", got, old)
			}
		})
	}
}
