package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/docjobs/docjobs/internal/logtest"
	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/postgres"
	"github.com/docjobs/docjobs/internal/store/postgres/pgtest"
	"github.com/docjobs/docjobs/internal/store/sqlite"
)

// nodeDatabase is a database a test's processes share: env points serve at
// it, and open opens it as another process would.
type nodeDatabase struct {
	env  map[string]string
	open func(t *testing.T) store.Store
	// url and schema: PostgreSQL's, for a test's own connection.
	url, schema string
}

func sqliteNodeDatabase(t *testing.T) nodeDatabase {
	dir := t.TempDir()
	return nodeDatabase{
		env: map[string]string{"DOCJOBS_DATA_DIR": dir},
		open: func(t *testing.T) store.Store {
			s, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(dir, "docjobs.db"), Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
}

// postgresNodeDatabase is a fresh schema of DOCJOBS_TEST_POSTGRES_URL, which
// serve reaches through the URL's search_path.
func postgresNodeDatabase(t *testing.T) nodeDatabase {
	url, schema := pgtest.Schema(t)
	open := func(t *testing.T) store.Store {
		s, err := postgres.Open(t.Context(), postgres.Config{URL: url, Schema: schema, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return nodeDatabase{
		env:  map[string]string{"DOCJOBS_DATA_DIR": t.TempDir(), "DOCJOBS_DATABASE_URL": url + sep + "search_path=" + schema},
		open: open,
		url:  url, schema: schema,
	}
}

// quiet keeps the test stores' info logs out of test output.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type noopArgs struct{}

func (noopArgs) Kind() string { return "cli_test_noop" }

type noopWorker struct{ river.WorkerDefaults[noopArgs] }

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

// workAs starts a River client on s as node id, on a queue nothing is sent to.
func workAs(t *testing.T, s store.Store, id string) (func(context.Context) error, error) {
	t.Helper()
	workers := river.NewWorkers()
	river.AddWorker(workers, noopWorker{})
	return s.Work(t.Context(), store.WorkConfig{ClientID: id, Workers: workers,
		Queues: map[string]river.QueueConfig{"cli_test_idle": {MaxWorkers: 1}}})
}

// holdNode makes another live process: a store on db working as id.
func holdNode(t *testing.T, db nodeDatabase, id string) (release func()) {
	t.Helper()
	s := db.open(t)
	stop, err := workAs(t, s, id)
	if err != nil {
		t.Fatalf("Work as %s: %v", id, err)
	}
	return func() {
		if err := stop(context.Background()); err != nil {
			t.Errorf("stop %s: %v", id, err)
		}
		_ = s.Close()
	}
}

// serveFor runs serve --role=worker with env until it returns or, once its
// workers have started, runs while (if set) and stops it. It returns the
// exit code and stderr.
func serveFor(t *testing.T, env map[string]string, while func()) (int, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errb logtest.Buffer
	code := make(chan int, 1)
	go func() {
		code <- Run(ctx, []string{"serve", "--role=worker"}, &out, &errb, func(k string) string { return env[k] })
	}()
	for {
		select {
		case c := <-code:
			return c, errb.String()
		case <-time.After(10 * time.Millisecond):
		}
		if strings.Contains(errb.String(), "workers started") {
			if while != nil {
				while()
			}
			cancel()
			return <-code, errb.String()
		}
	}
}

// heldBy reports whether a live process holds id on db: another process
// cannot work as it.
func heldBy(t *testing.T, db nodeDatabase, id string) bool {
	t.Helper()
	s := db.open(t)
	defer s.Close()
	stop, err := workAs(t, s, id)
	if err == nil {
		_ = stop(context.Background())
		return false
	}
	if !errors.Is(err, store.ErrNodeHeld) {
		t.Fatalf("Work as %s: %v", id, err)
	}
	return true
}

func TestAConfiguredNodeIDHeldByALiveProcessIsRefused(t *testing.T) {
	for _, tt := range []struct {
		name string
		db   func(t *testing.T) nodeDatabase
	}{
		{"sqlite", sqliteNodeDatabase},
		{"postgres", postgresNodeDatabase},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := tt.db(t)
			db.env["DOCJOBS_NODE_ID"] = "w3"
			release := holdNode(t, db, "w3")
			code, stderr := serveFor(t, db.env, nil)
			want := "DOCJOBS_NODE_ID w3 is held by another running process; give each process its own"
			if code != ExitError || !strings.Contains(stderr, want) {
				t.Fatalf("serve as a held w3: exit %d, stderr %q; want %d and %q", code, stderr, ExitError, want)
			}

			// Once the first process has gone, the id is free again.
			release()
			held := false
			code, stderr = serveFor(t, db.env, func() { held = heldBy(t, db, "w3") })
			if code != ExitOK || !held {
				t.Fatalf("serve as w3 after the holder left: exit %d, held %v (%s); want it to run holding w3", code, held, stderr)
			}
		})
	}
}

// A start refused for a held node id says nothing on stdout: it printed
// "docjobs at URL", or made and printed the first key (shown once) that
// the refused process then took with it, before exiting 1 (hunt-small).
func TestARefusedNodeIDAnnouncesNoAddressAndMakesNoKey(t *testing.T) {
	db := sqliteNodeDatabase(t)
	defer holdNode(t, db, "w3")()
	env := map[string]string{"DOCJOBS_DATA_DIR": db.env["DOCJOBS_DATA_DIR"], "DOCJOBS_NODE_ID": "w3", "DOCJOBS_ADDR": "127.0.0.1:0"}
	for _, attempt := range []string{"no key yet", "a key made"} {
		code, stdout, stderr := run(t, env, "serve")
		if code != ExitError || !strings.Contains(stderr, "DOCJOBS_NODE_ID w3 is held by another running process") {
			t.Fatalf("%s: exit %d, stderr %q; want %d refusing w3", attempt, code, stderr, ExitError)
		}
		if stdout != "" {
			t.Errorf("%s: a refused start printed %q", attempt, stdout)
		}
		if attempt == "no key yet" {
			if c, out, errs := run(t, env, "apikey", "create", "--account", "ops"); c != ExitOK {
				t.Fatalf("apikey create: exit %d %s %s", c, out, errs)
			}
		}
	}
	s := db.open(t)
	defer s.Close()
	if keys, err := s.ListAPIKeys(t.Context(), ""); err != nil || len(keys) != 1 {
		t.Errorf("keys after the refusals: %v, %v; want only the one made by apikey create", keys, err)
	}
}

// The host name is nobody's choice: a second process on the host works
// as host-2 rather than being refused.
func TestASecondProcessWithTheHostNameWorksUnderADerivedID(t *testing.T) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		t.Skip("no host name")
	}
	db := sqliteNodeDatabase(t)
	defer holdNode(t, db, host)()
	held := false
	code, stderr := serveFor(t, db.env, func() { held = heldBy(t, db, host+"-2") })
	if code != ExitOK || !held {
		t.Fatalf("serve beside a live %s: exit %d, %s-2 held %v; want it to run as %s-2", host, code, host, held, host)
	}
	// The start line names the id in use, not the host name it came from.
	if want := `"msg":"workers started","node":"` + host + `-2"`; !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %s:\n%s", want, stderr)
	}
}

// A serve whose node id another process took while its connection was
// down exits at once (audit-ops3 F3): whoever holds the id may have handed
// its running jobs back to the queue, and a graceful stop made River write
// them available again (their attempt undone) over their new run. It says
// why on stderr and exits 1, as the graceful path did.
func TestAServeWhoseNodeIDIsTakenExitsAtOnce(t *testing.T) {
	db := postgresNodeDatabase(t)
	_ = db.open(t).Close() // migrated, as `docjobs migrate` leaves it
	url, schema := db.url, db.schema
	db.env["DOCJOBS_NODE_ID"] = "w-lost"
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errb logtest.Buffer
	exits := make(chan int, 1)
	env := &environment{stdin: strings.NewReader(""), stdout: &out, stderr: &errb,
		getenv: func(k string) string { return db.env[k] }, exit: func(code int) { exits <- code }}
	done := make(chan struct{})
	code := 0
	go func() {
		defer close(done)
		code = runIn(ctx, env, []string{"serve", "--role=worker"})
	}()
	defer func() {
		cancel()
		<-done
	}()
	for !strings.Contains(errb.String(), "workers started") {
		select {
		case <-done:
			t.Fatalf("serve exited %d before its workers started: %s", code, errb.String())
		case <-time.After(10 * time.Millisecond):
		}
	}

	// The test's session spins on the lock from the moment it ends the
	// process's, so it holds the id before the process's next check.
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	key := fmt.Sprintf(`hashtextextended('docjobs_node.%s.w-lost', 0)`, schema)
	var holder int32
	if err := conn.QueryRow(t.Context(), `SELECT coalesce(max(pid), 0) FROM pg_locks
		WHERE locktype = 'advisory' AND objsubid = 1 AND granted
		AND ((classid::bigint << 32) | objid::bigint) = `+key).Scan(&holder); err != nil || holder == 0 {
		t.Fatalf("the session holding w-lost: %d, %v", holder, err)
	}
	if _, err := conn.Exec(t.Context(), fmt.Sprintf(`DO $$ BEGIN
		PERFORM pg_terminate_backend(%d);
		LOOP EXIT WHEN pg_try_advisory_lock(%s); END LOOP;
	END $$`, holder, key)); err != nil {
		t.Fatalf("taking w-lost from session %d: %v", holder, err)
	}
	var exitCode int
	select {
	case exitCode = <-exits:
	case <-done:
		// exit is called before serve returns: a test that comes to the
		// select above late (a loaded machine) finds both ready, and
		// select picks either.
		select {
		case exitCode = <-exits:
		default:
			t.Fatalf("serve stopped gracefully (exit %d) instead of exiting at once: %s", code, errb.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not exit after its node id was taken")
	}
	if exitCode != ExitError {
		t.Errorf("exit(%d), want %d", exitCode, ExitError)
	}
	if want := "docjobs: node id w-lost: node id is held by another running process\n"; !strings.Contains(errb.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, errb.String())
	}
}
