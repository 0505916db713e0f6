package postgres_test

import (
	"context"
	"errors"
	"fmt"
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
// its jobs (the new holder reclaims them): its running jobs are cancelled
// and OnNodeLost says why.
func TestANodeWhoseIDIsTakenWhileItsConnectionIsDownStopsWorking(t *testing.T) {
	url := pgtest.URL(t)
	s, schema := openNamedSchema(t)
	s.Close()
	s = openConfig(t, postgres.Config{URL: url, Schema: schema, NodeCheck: 500 * time.Millisecond})
	defer s.Close()
	conn := connect(t)
	w := &blockWorker{started: make(chan struct{}), cancelled: make(chan struct{})}
	lost := make(chan error, 1)
	stop, err := work(t, s, "node-q", w, func(err error) { lost <- err })
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
	select {
	case <-w.cancelled:
	default:
		t.Error("the running job was not cancelled before OnNodeLost")
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
