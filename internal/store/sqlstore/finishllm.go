package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// A job's model rows finish in bursts: every chunk was asked at about the
// same time, so the answers arrive together, and each finish locks the job
// row to decide whether it was the last. One transaction per row made the
// burst a queue on that lock (130 ms for 100 rows on PostgreSQL, see
// docs/benchmarks.md). So FinishLLM commits in groups: the first caller for
// a job runs its transaction at once, and the callers that arrive meanwhile
// go together in the next one. A lone row pays nothing extra; a burst pays
// one lock, one pending count and one commit per group.

// llmFinish is one FinishLLM call waiting for its group.
type llmFinish struct {
	ctx      context.Context
	riverJob *rivertype.JobRow
	done     store.LLMDone

	ready   chan struct{} // closed when applied/err are set, or lead is
	lead    bool          // this call runs the next group
	applied bool
	err     error
}

// llmGroups holds, per job, the calls waiting and whether a group is in
// flight.
type llmGroups struct {
	mu   sync.Mutex
	jobs map[string]*llmQueue
}

type llmQueue struct {
	waiting []*llmFinish
	busy    bool
}

// FinishLLM writes a terminal model row if it is still PENDING and, when no
// row of the job is left pending, inserts d.EnqueueWhenLast; riverJob is
// completed in the same transaction either way.
func (s *Store[TTx]) FinishLLM(ctx context.Context, riverJob *rivertype.JobRow, d store.LLMDone) (bool, error) {
	r := d.Row
	if !r.Status.Terminal() {
		return false, fmt.Errorf("finish model row of job %s: status %q is not terminal", r.JobID, r.Status)
	}
	f := &llmFinish{ctx: ctx, riverJob: riverJob, done: d, ready: make(chan struct{})}
	g := &s.llmGroups
	g.mu.Lock()
	if g.jobs == nil {
		g.jobs = make(map[string]*llmQueue)
	}
	q := g.jobs[r.JobID]
	if q == nil {
		q = &llmQueue{}
		g.jobs[r.JobID] = q
	}
	q.waiting = append(q.waiting, f)
	lead := !q.busy
	q.busy = true
	g.mu.Unlock()

	if !lead {
		// The result comes whatever happens to ctx: the group may already
		// be committing this row.
		<-f.ready
		if !f.lead {
			return f.applied, f.err
		}
	}

	g.mu.Lock()
	group := q.waiting
	q.waiting = nil
	g.mu.Unlock()

	finished := false
	defer func() {
		// Even if the transaction panicked: the group's callers get an
		// error (their River jobs retry) and the next group its leader.
		if !finished {
			for _, m := range group {
				m.applied, m.err = false, errors.New("finish model rows: the group's transaction panicked")
			}
		}
		g.mu.Lock()
		if len(q.waiting) > 0 {
			next := q.waiting[0]
			next.lead = true
			close(next.ready)
		} else {
			q.busy = false
			delete(g.jobs, r.JobID)
		}
		g.mu.Unlock()
		for _, m := range group {
			if m != f {
				close(m.ready)
			}
		}
	}()
	s.finishLLMGroup(group)
	finished = true
	return f.applied, f.err
}

// finishLLMGroup commits group in one transaction. If that fails, each
// member is tried alone, so that one row the database refuses does not
// fail the rows that came with it.
func (s *Store[TTx]) finishLLMGroup(group []*llmFinish) {
	err := s.finishLLMTx(group)
	if err == nil || len(group) == 1 {
		for _, m := range group {
			m.err = err
		}
		return
	}
	for _, m := range group {
		m.err = s.finishLLMTx([]*llmFinish{m})
	}
}

// finishLLMTx writes the group's rows and completes their River jobs in one
// transaction, setting each member's applied, and wakes the queues it
// enqueued to once committed. All members belong to one job.
func (s *Store[TTx]) finishLLMTx(group []*llmFinish) error {
	first := group[0].done.Row
	// The members' contexts end with their River jobs; the rows are paid for.
	ctx := context.WithoutCancel(group[0].ctx)
	var woken []string
	err := s.inTx(ctx, func(tx TTx, q Querier) error {
		woken = nil
		for _, m := range group {
			m.applied = false // a retried transaction starts over
		}
		j, err := s.lockJobIfLive(ctx, q, first.JobID)
		if err != nil {
			return err
		}
		var (
			whenLast  []river.InsertManyParams
			riverJobs = make([]*rivertype.JobRow, len(group))
		)
		for i, m := range group {
			riverJobs[i] = m.riverJob
			if j == nil {
				continue
			}
			if m.applied, err = s.updateLLMRow(ctx, q, m.done.Row); err != nil {
				return err
			}
			if len(whenLast) == 0 {
				whenLast = m.done.EnqueueWhenLast
			}
		}
		if err := s.completeRiverJobs(ctx, tx, riverJobs); err != nil {
			return err
		}
		if j == nil || len(whenLast) == 0 {
			return nil
		}
		pending, err := s.anyPending(ctx, q, first.JobID)
		if err != nil || pending {
			return err
		}
		return s.insertRiverJobs(ctx, tx, whenLast, &woken)
	})
	if err != nil {
		if len(group) == 1 {
			return fmt.Errorf("finish model row %d/%d of job %s: %w", first.FileIndex, first.ChunkIndex, first.JobID, err)
		}
		return fmt.Errorf("finish %d model rows of job %s: %w", len(group), first.JobID, err)
	}
	s.wake(ctx, woken)
	return nil
}

// updateLLMRow writes r over its PENDING row; false when the row was no
// longer pending (a retry of a River job whose first attempt committed).
func (s *Store[TTx]) updateLLMRow(ctx context.Context, q Querier, r job.LLMRow) (bool, error) {
	schemaErrors, err := jsonText(r.SchemaErrors)
	if err != nil {
		return false, err
	}
	n, err := s.exec(ctx, q, `UPDATE llm_rows SET status = ?, content = ?, model = ?, request = ?, raw_data = ?,
		error = ?, duration_ns = ?, schema_valid = ?, schema_errors = ?, consensus = ?, input_tokens = ?,
		output_tokens = ?, updated = ?
		WHERE job_id = ? AND file_index = ? AND prompt_index = ? AND chunk_index = ? AND `+isPending,
		string(r.Status), r.Content, r.Model, r.Request, r.RawData, r.Error, int64(r.Duration),
		nullBool(r.SchemaValid), schemaErrors, nullJSON(r.Consensus), r.InputTokens, r.OutputTokens,
		s.ts(s.nowUTC()), r.JobID, r.FileIndex, r.PromptIndex, r.ChunkIndex)
	if err != nil {
		return false, fmt.Errorf("update model row: %w", err)
	}
	return n > 0, nil
}

// completeRiverJobs marks running River jobs completed inside tx in one
// statement: what river.JobCompleteTx does for one job, through the same
// driver call River's own completer batches with. One JobCompleteTx per
// member cost a round trip each while the group held the job row's lock.
func (s *Store[TTx]) completeRiverJobs(ctx context.Context, tx TTx, rows []*rivertype.JobRow) error {
	if len(rows) == 1 {
		return s.backend.CompleteRiverJob(ctx, tx, rows[0])
	}
	now := s.nowUTC()
	p := &riverdriver.JobSetStateIfRunningManyParams{Schema: s.schema}
	for _, r := range rows {
		if r.State != rivertype.JobStateRunning {
			return fmt.Errorf("complete river job %d: job must be running", r.ID)
		}
		AppendJobState(p, riverdriver.JobSetStateCompleted(r.ID, now, nil))
	}
	done, err := s.driver.UnwrapExecutor(tx).JobSetStateIfRunningMany(ctx, p)
	if err != nil {
		return fmt.Errorf("complete %d river jobs: %w", len(rows), err)
	}
	if len(done) != len(rows) {
		return fmt.Errorf("complete %d river jobs: %d found: %w", len(rows), len(done), rivertype.ErrNotFound)
	}
	return nil
}

// AppendJobState adds one River job's state change to a batch of them, the
// form River's drivers take.
func AppendJobState(p *riverdriver.JobSetStateIfRunningManyParams, c *riverdriver.JobSetStateIfRunningParams) {
	p.ID = append(p.ID, c.ID)
	p.Attempt = append(p.Attempt, c.Attempt)
	p.ErrData = append(p.ErrData, c.ErrData)
	p.FinalizedAt = append(p.FinalizedAt, c.FinalizedAt)
	p.MetadataDoMerge = append(p.MetadataDoMerge, c.MetadataDoMerge)
	p.MetadataUpdates = append(p.MetadataUpdates, c.MetadataUpdates)
	p.ScheduledAt = append(p.ScheduledAt, c.ScheduledAt)
	p.State = append(p.State, c.State)
}
