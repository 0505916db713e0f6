package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

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
	var (
		end   *jobEnd
		woken []string
	)
	err := s.inTx(ctx, func(tx TTx, q Querier) error {
		end, woken = nil, nil
		for _, m := range group {
			m.applied = false // a retried transaction starts over
		}
		live, err := s.lockIfLive(ctx, q, first.JobID)
		if err != nil || !live {
			return err
		}
		if len(group) > 1 && s.dialect.GenericPlans != "" {
			if _, err := s.exec(ctx, q, s.dialect.GenericPlans); err != nil {
				return fmt.Errorf("finish model rows: %w", err)
			}
		}
		if err := s.updateLLMRows(ctx, q, group); err != nil {
			return err
		}
		// A repeat finish of a row already terminal must not fan in: the
		// finish that ended the row did, or will. The members, all of one
		// job, say the same of what follows the last row.
		i := slices.IndexFunc(group, func(m *llmFinish) bool { return m.applied })
		if i < 0 || (!group[i].done.EndWhenLast && len(group[i].done.EnqueueWhenLast) == 0) {
			return nil
		}
		pending, err := s.anyPending(ctx, q, first.JobID)
		if err != nil || pending {
			return err
		}
		j := &job.Job{ID: first.JobID}
		if group[i].done.EndWhenLast {
			// Ending the job needs the whole of it (its webhook, its
			// account); enqueueing only its id.
			if j, err = s.getJob(ctx, q, "", first.JobID, ""); err != nil { // locked above
				return err
			}
		}
		end, err = s.fanIn(ctx, tx, q, j, group[i].done.EndWhenLast, group[i].done.EnqueueWhenLast, &woken)
		return err
	})
	if err != nil {
		if len(group) == 1 {
			return fmt.Errorf("finish model row %d/%d of job %s: %w", first.FileIndex, first.ChunkIndex, first.JobID, err)
		}
		return fmt.Errorf("finish %d model rows of job %s: %w", len(group), first.JobID, err)
	}
	s.afterFanIn(ctx, end, woken)
	return nil
}

// llmUpdateBatch is how many rows one UPDATE writes: 15 values a row stay
// far below SQLite's and PostgreSQL's parameter limits.
const llmUpdateBatch = 32

// updateLLMRows writes each member's row over its PENDING row, a batch of
// rows per statement, and sets the member's applied: false when the row was
// no longer pending (a retry whose first attempt committed, or the same row
// twice in the group). One statement per row made a burst of answers on
// PostgreSQL a queue of round trips inside the group's transaction, 17 ms
// for a job's hundred answers (docs/benchmarks.md).
func (s *Store[TTx]) updateLLMRows(ctx context.Context, q Querier, group []*llmFinish) error {
	type key struct{ file, prompt, chunk int }
	byKey := make(map[key]*llmFinish, len(group))
	var batch []*llmFinish
	for _, m := range group {
		r := m.done.Row
		k := key{r.FileIndex, r.PromptIndex, r.ChunkIndex}
		m.applied = false
		if byKey[k] != nil {
			continue // the first of the two ends the row; the second changes nothing
		}
		byKey[k] = m
		batch = append(batch, m)
	}
	now := s.ts(s.nowUTC())
	for len(batch) > 0 {
		part := batch[:min(len(batch), llmUpdateBatch)]
		batch = batch[len(part):]
		selects := make([]string, len(part))
		args := make([]any, 0, 2+15*len(part))
		args = append(args, now)
		for i, m := range part {
			r := m.done.Row
			schemaErrors, err := jsonText(r.SchemaErrors)
			if err != nil {
				return err
			}
			selects[i] = llmUpdateRow
			args = append(args, r.FileIndex, r.PromptIndex, r.ChunkIndex, string(r.Status), r.Content, r.Model,
				r.Request, r.RawData, r.Error, int64(r.Duration), nullBool(r.SchemaValid), schemaErrors,
				nullJSON(r.Consensus), r.InputTokens, r.OutputTokens)
		}
		args = append(args, part[0].done.Row.JobID)
		rows, err := s.query(ctx, q, `UPDATE llm_rows SET status = v.status, content = v.content, model = v.model,
			request = v.request, raw_data = v.raw_data, error = v.error, duration_ns = v.duration_ns,
			schema_valid = v.schema_valid, schema_errors = v.schema_errors, consensus = v.consensus,
			input_tokens = v.input_tokens, output_tokens = v.output_tokens, updated = ?
			FROM (`+strings.Join(selects, " UNION ALL ")+`) AS v
			WHERE llm_rows.job_id = ? AND llm_rows.file_index = v.file_index
			AND llm_rows.prompt_index = v.prompt_index AND llm_rows.chunk_index = v.chunk_index
			AND llm_rows.`+isPending+`
			RETURNING llm_rows.file_index, llm_rows.prompt_index, llm_rows.chunk_index`, args...)
		if err != nil {
			return fmt.Errorf("update model rows: %w", err)
		}
		for rows.Next() {
			var k key
			if err := rows.Scan(&k.file, &k.prompt, &k.chunk); err != nil {
				rows.Close()
				return fmt.Errorf("update model rows: %w", err)
			}
			if m := byKey[k]; m != nil {
				m.applied = true
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("update model rows: %w", err)
		}
	}
	return nil
}

// llmUpdateRow is one row of updateLLMRows' values. The casts type the
// parameters where PostgreSQL cannot infer them from a bare SELECT (text is
// its default); SQLite takes them as affinities.
const llmUpdateRow = `SELECT CAST(? AS INTEGER) AS file_index, CAST(? AS INTEGER) AS prompt_index,
	CAST(? AS INTEGER) AS chunk_index, ? AS status, ? AS content, ? AS model, ? AS request,
	? AS raw_data, ? AS error, CAST(? AS BIGINT) AS duration_ns, CAST(? AS BOOLEAN) AS schema_valid,
	? AS schema_errors, ? AS consensus, CAST(? AS BIGINT) AS input_tokens, CAST(? AS BIGINT) AS output_tokens`
