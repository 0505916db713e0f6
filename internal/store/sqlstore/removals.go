package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/docjobs/docjobs/internal/store"
)

// recordFileRemoval notes, in the delete's transaction, that the stored
// files of job id are still to be removed: the blobs outlive the rows that
// named them, and without this a process that dies between the commit and
// the blob deletes leaves files nothing points at.
func (s *Store[TTx]) recordFileRemoval(ctx context.Context, q Querier, accountID, id string, keys []string) error {
	encoded, err := jsonText(keys)
	if err != nil {
		return fmt.Errorf("record file removal: %w", err)
	}
	// A job id is never reused, but a record left by an older delete of the
	// same id must not fail this one.
	if _, err := s.exec(ctx, q, `INSERT INTO job_file_removals (job_id, account_id, keys, deleted)
		VALUES (?, ?, ?, ?) ON CONFLICT (job_id) DO UPDATE SET keys = excluded.keys, deleted = excluded.deleted`,
		id, accountID, encoded, s.ts(s.nowUTC())); err != nil {
		return fmt.Errorf("record file removal: %w", err)
	}
	return nil
}

// PendingFileRemovals lists up to limit removals of jobs deleted before
// cutoff, oldest first.
func (s *Store[TTx]) PendingFileRemovals(ctx context.Context, cutoff time.Time, limit int) ([]store.FileRemoval, error) {
	rows, err := s.query(ctx, s.backend.DB(), `SELECT job_id, account_id, keys, deleted FROM job_file_removals
		WHERE deleted < ? ORDER BY deleted, job_id LIMIT ?`, s.ts(cutoff), limit)
	if err != nil {
		return nil, fmt.Errorf("pending file removals: %w", err)
	}
	defer rows.Close()
	var out []store.FileRemoval
	for rows.Next() {
		var r store.FileRemoval
		if err := rows.Scan(&r.JobID, &r.AccountID, jsonScan{&r.Keys}, timeScan{&r.Deleted}); err != nil {
			return nil, fmt.Errorf("pending file removals: %w", err)
		}
		r.Keys = emptyToNil(r.Keys)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("pending file removals: %w", err)
	}
	return out, nil
}

// FileRemovalDone clears the removal record of job jobID.
func (s *Store[TTx]) FileRemovalDone(ctx context.Context, jobID string) error {
	if _, err := s.exec(ctx, s.backend.DB(), `DELETE FROM job_file_removals WHERE job_id = ?`, jobID); err != nil {
		return fmt.Errorf("clear file removal of job %s: %w", jobID, err)
	}
	return nil
}
