package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"
)

// Finalize and webhook workers complete their River job themselves, with
// JobCompleteTx in the transaction that records their result (DESIGN §1).
// River's completer still sets the state once more after Work returns; on
// SQLite that runs, per job, an UPDATE that finds the job no longer running
// and then a second UPDATE that rewrites its metadata with nothing new, on
// the one writer connection (32 ms per 100 jobs in docjobs bench when each
// model row had its own River job, docs/benchmarks.md).
//
// skipFinishedExecutor drops from such a batch the jobs that are no longer
// running and carry no metadata to merge, so nothing is written for them.
// Jobs with metadata (a snooze count, recorded output) go through River's
// path unchanged. River emits no completion event for a dropped job; docjobs
// subscribes to none.
type skipFinishedExecutor struct {
	riverdriver.Executor
	read *sql.DB
}

func (e skipFinishedExecutor) JobSetStateIfRunningMany(ctx context.Context, p *riverdriver.JobSetStateIfRunningManyParams) ([]*rivertype.JobRow, error) {
	var candidates []int64
	for i, id := range p.ID {
		if !p.MetadataDoMerge[i] {
			candidates = append(candidates, id)
		}
	}
	if len(candidates) == 0 {
		return e.Executor.JobSetStateIfRunningMany(ctx, p)
	}
	finished, err := e.notRunning(ctx, p.Schema, candidates)
	if err != nil {
		return nil, err
	}
	if len(finished) == 0 {
		return e.Executor.JobSetStateIfRunningMany(ctx, p)
	}
	kept := &riverdriver.JobSetStateIfRunningManyParams{Now: p.Now, Schema: p.Schema}
	for i, id := range p.ID {
		if _, skip := finished[id]; skip && !p.MetadataDoMerge[i] {
			continue
		}
		kept.ID = append(kept.ID, id)
		kept.Attempt = append(kept.Attempt, p.Attempt[i])
		kept.ErrData = append(kept.ErrData, p.ErrData[i])
		kept.FinalizedAt = append(kept.FinalizedAt, p.FinalizedAt[i])
		kept.MetadataDoMerge = append(kept.MetadataDoMerge, p.MetadataDoMerge[i])
		kept.MetadataUpdates = append(kept.MetadataUpdates, p.MetadataUpdates[i])
		kept.ScheduledAt = append(kept.ScheduledAt, p.ScheduledAt[i])
		kept.State = append(kept.State, p.State[i])
	}
	if len(kept.ID) == 0 {
		return nil, nil
	}
	return e.Executor.JobSetStateIfRunningMany(ctx, kept)
}

// notRunning returns which of ids are in a state other than running. It
// reads from the read pool: a job leaves running for good within the
// attempt being completed, so a snapshot can only call a finished job
// running (and let River's path handle it), never the reverse.
func (e skipFinishedExecutor) notRunning(ctx context.Context, schema string, ids []int64) (map[int64]struct{}, error) {
	table := "river_job"
	if schema != "" {
		table = schema + ".river_job"
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := e.read.QueryContext(ctx, `SELECT id FROM `+table+
		` WHERE state <> 'running' AND id IN (SELECT value FROM json_each(?))`, string(list))
	if err != nil {
		return nil, fmt.Errorf("sqlite: find finished river jobs: %w", err)
	}
	defer rows.Close()
	out := make(map[int64]struct{})
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("sqlite: find finished river jobs: %w", err)
		}
		out[id] = struct{}{}
	}
	return out, rows.Err()
}
