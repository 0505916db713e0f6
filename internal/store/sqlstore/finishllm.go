package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/riverqueue/river"

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
	ctx  context.Context
	done store.LLMDone

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

// FinishLLM writes a terminal model row if it is still PENDING and the job
// is live and, when no row of the job is left pending, inserts
// d.EnqueueWhenLast.
func (s *Store[TTx]) FinishLLM(ctx context.Context, d store.LLMDone) (bool, error) {
	r := d.Row
	if !r.Status.Terminal() {
		return false, fmt.Errorf("finish model row of job %s: status %q is not terminal", r.JobID, r.Status)
	}
	f := &llmFinish{ctx: ctx, done: d, ready: make(chan struct{})}
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

// finishLLMTx writes the group's rows in one transaction, setting each
// member's applied, and wakes the queues it enqueued to once committed. All
// members belong to one job.
func (s *Store[TTx]) finishLLMTx(group []*llmFinish) error {
	first := group[0].done.Row
	// The members' contexts may end with their River job; the rows are paid for.
	ctx := context.WithoutCancel(group[0].ctx)
	var woken []string
	err := s.inTx(ctx, func(tx TTx, q Querier) error {
		woken = nil
		for _, m := range group {
			m.applied = false // a retried transaction starts over
		}
		live, err := s.lockIfLive(ctx, q, first.JobID)
		if err != nil || !live {
			return err
		}
		var whenLast []river.InsertManyParams
		for _, m := range group {
			if m.applied, err = s.updateLLMRow(ctx, q, m.done.Row); err != nil {
				return err
			}
			// A repeat finish of a row already terminal must not fan in:
			// the finish that ended the row did, or will.
			if m.applied && len(whenLast) == 0 {
				whenLast = m.done.EnqueueWhenLast
			}
		}
		if len(whenLast) == 0 {
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
