package sqlite

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivertype"
)

func openStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.Context(), Config{Path: filepath.Join(t.TempDir(), "docjobs.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// River's completer sets the state of every job a worker returned from.
// A job the store already completed in its own transaction must not be
// written again; a job still running is completed as River would.
func TestRiverCompletionSkipsJobsAlreadyCompleted(t *testing.T) {
	s := openStore(t)
	ctx := t.Context()
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE river_job_writes (id INTEGER);
		CREATE TRIGGER river_job_written AFTER UPDATE ON river_job
		BEGIN INSERT INTO river_job_writes (id) VALUES (NEW.id); END`); err != nil {
		t.Fatal(err)
	}
	exec := pollOnlyDriver{Driver: riversqlite.New(s.db), read: s.read}.GetExecutor()
	now := time.Now().UTC()
	insert := func(state rivertype.JobState, metadata string) int64 {
		t.Helper()
		p := &riverdriver.JobInsertFullParams{Kind: "k", Queue: "q", EncodedArgs: []byte(`{}`), MaxAttempts: 3, Priority: 1,
			Attempt: 1, State: state, Metadata: []byte(metadata), CreatedAt: &now, ScheduledAt: &now}
		if state == rivertype.JobStateCompleted {
			p.FinalizedAt = &now
		}
		row, err := exec.JobInsertFull(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return row.ID
	}
	running := insert(rivertype.JobStateRunning, `{}`)
	done := insert(rivertype.JobStateCompleted, `{}`)
	doneWithOutput := insert(rivertype.JobStateCompleted, `{}`)

	params := &riverdriver.JobSetStateIfRunningManyParams{}
	for _, c := range []struct {
		id       int64
		metadata string
	}{{running, ""}, {done, ""}, {doneWithOutput, `{"output":1}`}} {
		appendJobState(params, riverdriver.JobSetStateCompleted(c.id, now, []byte(c.metadata)))
	}
	rows, err := exec.JobSetStateIfRunningMany(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	var returned []int64
	for _, r := range rows {
		returned = append(returned, r.ID)
		if r.ID == running && r.State != rivertype.JobStateCompleted {
			t.Errorf("running job %d is %s after completion, want completed", r.ID, r.State)
		}
	}
	var written []int64
	got, err := s.db.QueryContext(ctx, `SELECT id FROM river_job_writes ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	for got.Next() {
		var id int64
		if err := got.Scan(&id); err != nil {
			t.Fatal(err)
		}
		written = append(written, id)
	}
	if want := []int64{running, doneWithOutput}; !slices.Equal(written, want) {
		t.Errorf("river_job rows written %v, want %v (the running job, and the finished one with metadata to merge)", written, want)
	}
	if want := []int64{running, doneWithOutput}; !slices.Equal(returned, want) {
		t.Errorf("rows returned %v, want %v", returned, want)
	}
}

func TestStatementsOutsideTransactionsGoToTheRightPool(t *testing.T) {
	s := openStore(t)
	ctx := t.Context()
	b := &backend{db: s.db, read: s.read}
	q := b.DB()
	if _, err := q.Exec(ctx, `CREATE TABLE pools (v TEXT)`); err != nil {
		t.Fatalf("a write outside a transaction: %v", err)
	}
	if _, err := q.Exec(ctx, `INSERT INTO pools (v) VALUES ('written')`); err != nil {
		t.Fatal(err)
	}
	// Read right after the write, on the read pool: the commit is visible.
	rows, err := q.Query(ctx, `  select v FROM pools`)
	if err != nil {
		t.Fatal(err)
	}
	var v string
	if !rows.Next() || rows.Scan(&v) != nil || v != "written" {
		t.Errorf("read after write gave %q (%v)", v, rows.Err())
	}
	rows.Close()
	// UPDATE … RETURNING is a query that writes: it must reach the writer.
	rows, err = q.Query(ctx, `UPDATE pools SET v = 'updated' RETURNING v`)
	if err != nil {
		t.Fatalf("UPDATE … RETURNING: %v", err)
	}
	if !rows.Next() || rows.Scan(&v) != nil || v != "updated" {
		t.Errorf("UPDATE … RETURNING gave %q (%v)", v, rows.Err())
	}
	rows.Close()
	// A SELECT does not wait for the writer: it runs while a transaction
	// holds the one writer connection.
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	quick, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rows, err = q.Query(quick, `SELECT v FROM pools`)
	if err != nil {
		t.Fatalf("a SELECT while the writer is held: %v (it queued behind the writer)", err)
	}
	rows.Close()
	// And the read pool itself refuses writes.
	if _, err := s.read.ExecContext(ctx, `INSERT INTO pools (v) VALUES ('x')`); err == nil {
		t.Error("the read pool accepted an INSERT")
	}
}

// appendJobState adds one River job's state change to a batch, the form
// River's completer hands the driver.
func appendJobState(p *riverdriver.JobSetStateIfRunningManyParams, c *riverdriver.JobSetStateIfRunningParams) {
	p.ID = append(p.ID, c.ID)
	p.Attempt = append(p.Attempt, c.Attempt)
	p.ErrData = append(p.ErrData, c.ErrData)
	p.FinalizedAt = append(p.FinalizedAt, c.FinalizedAt)
	p.MetadataDoMerge = append(p.MetadataDoMerge, c.MetadataDoMerge)
	p.MetadataUpdates = append(p.MetadataUpdates, c.MetadataUpdates)
	p.ScheduledAt = append(p.ScheduledAt, c.ScheduledAt)
	p.State = append(p.State, c.State)
}
