package sqlstore

import (
	"context"
	"fmt"
)

// finishedRiverStates are the states River never moves a row out of: its
// job cleaner deletes such rows after its retention (a day; a week when
// discarded), and nothing works them again.
const finishedRiverStates = `('completed', 'cancelled', 'discarded')`

// dropRiverRows deletes, in the transaction that deletes job jobID, the
// rows River has finished of it: their args name the job and its files,
// and a failed download's errors name the source's host and path, which a
// user who deleted the job expects gone with it. Rows River has not
// finished (a file job running or waiting for a retry, a webhook not yet
// sent) are left to end: each finds the job gone and does nothing but
// remove what an earlier attempt stored late. The job is recorded in
// job_river_leftovers for them, and the removal sweep deletes them once
// they are finished (ClearRiverLeftovers). Deleting them here would go
// past River's API (JobDeleteTx refuses a running row) and skip that
// last removal.
//
// Every row of a job is inserted in a transaction that holds the job's
// row, so none is added after this delete commits.
func (s *Store[TTx]) dropRiverRows(ctx context.Context, q Querier, jobID string) error {
	left, err := s.deleteFinishedRiverRows(ctx, q, jobID)
	if err != nil {
		return err
	}
	if left == 0 {
		return nil
	}
	if _, err := s.exec(ctx, q, `INSERT INTO job_river_leftovers (job_id, checked) VALUES (?, ?)
		ON CONFLICT (job_id) DO NOTHING`, jobID, s.ts(s.nowUTC())); err != nil {
		return fmt.Errorf("record river rows left: %w", err)
	}
	return nil
}

// deleteFinishedRiverRows deletes the finished River rows of job jobID and
// counts those left. Left are counted whatever their state: a row River
// finished between the two statements is still to go.
func (s *Store[TTx]) deleteFinishedRiverRows(ctx context.Context, q Querier, jobID string) (int, error) {
	cond, arg := s.dialect.RiverJobsOf(jobID)
	if _, err := s.exec(ctx, q, `DELETE FROM river_job WHERE state IN `+finishedRiverStates+` AND `+cond, arg); err != nil {
		return 0, fmt.Errorf("delete river rows: %w", err)
	}
	var left int
	if err := s.queryRow(ctx, q, `SELECT COUNT(*) FROM river_job WHERE `+cond, []any{arg}, &left); err != nil {
		return 0, fmt.Errorf("count river rows left: %w", err)
	}
	return left, nil
}

// ClearRiverLeftovers deletes the River rows, finished since, of up to
// limit deleted jobs that still had unfinished ones when they were
// deleted, least recently checked first, and forgets each job none is
// left of. It returns how many jobs it forgot.
func (s *Store[TTx]) ClearRiverLeftovers(ctx context.Context, limit int) (int, error) {
	rows, err := s.query(ctx, s.backend.DB(), `SELECT job_id FROM job_river_leftovers ORDER BY checked, job_id LIMIT ?`, limit)
	if err != nil {
		return 0, fmt.Errorf("river rows of deleted jobs: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("river rows of deleted jobs: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("river rows of deleted jobs: %w", err)
	}
	forgot := 0
	for _, id := range ids {
		gone := false
		err := s.inTx(ctx, func(_ TTx, q Querier) error {
			left, err := s.deleteFinishedRiverRows(ctx, q, id)
			if err != nil {
				return err
			}
			gone = left == 0
			if gone {
				_, err = s.exec(ctx, q, `DELETE FROM job_river_leftovers WHERE job_id = ?`, id)
			} else {
				// To the back of the list: rows waiting hours for a retry
				// do not keep the others from their turn.
				_, err = s.exec(ctx, q, `UPDATE job_river_leftovers SET checked = ? WHERE job_id = ?`, s.ts(s.nowUTC()), id)
			}
			return err
		})
		if err != nil {
			return forgot, fmt.Errorf("river rows of deleted job %s: %w", id, err)
		}
		if gone {
			forgot++
		}
	}
	return forgot, nil
}
