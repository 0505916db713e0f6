package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// OverdueJobs returns up to limit jobs still not terminal that were created
// before cutoff, oldest first.
func (s *Store[TTx]) OverdueJobs(ctx context.Context, cutoff time.Time, limit int) ([]string, error) {
	rows, err := s.query(ctx, s.backend.DB(), `SELECT id FROM jobs WHERE status IN (?, ?) AND created < ?
		ORDER BY created LIMIT ?`, string(job.StatusNew), string(job.StatusRunning), s.ts(cutoff.UTC()), limit)
	if err != nil {
		return nil, fmt.Errorf("overdue jobs: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("overdue jobs: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// ExpireJob ends a job that ran past its deadline: its pending rows FAIL
// with rowError and the job ends by the usual rule (COMPLETE when a file
// was recognized, else FAILED with jobError), with the merged answers of
// what its rows hold (mergeEnded), or without them once endMergeCrashes
// tries at that merge ended with their process (countEndMerge).
// applied=false when the job had ended (or was deleted) meanwhile.
func (s *Store[TTx]) ExpireJob(ctx context.Context, jobID, rowError, jobError string) (bool, error) {
	var (
		applied, erased bool
		woken           []string
	)
	// Counted before the merge: a merge that takes the process down leaves
	// the job overdue, and this sweep runs at every start (countEndMerge).
	try, err := s.countEndMerge(ctx, "", jobID)
	if err != nil {
		return false, fmt.Errorf("expire job %s: %w", jobID, err)
	}
	// Merged before the transaction, as CancelJob does (mergeBefore).
	// One ending of a merging job at a time merges in this process (lockEnd).
	unlock := func() {}
	if try.merges {
		if unlock, err = s.lockEnd(ctx, jobID); err != nil {
			s.giveBack(ctx, try, jobID)
			return false, fmt.Errorf("expire job %s: %w", jobID, err)
		}
	}
	for outside := 1; ; outside++ {
		var pre *endMerge
		if pre, err = s.mergeBefore(ctx, "", jobID, try); err != nil {
			break
		}
		err = s.inTx(ctx, func(tx TTx, q Querier) error {
			applied, erased, woken = false, false, nil
			// FOR UPDATE, as CancelJob: failPendingRows may insert the first
			// row of a file a FinishOCR is inserting (the lock order, locks.go).
			j, err := s.getJob(ctx, q, "", jobID, s.dialect.ForDelete)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			if j.Status.Terminal() {
				return nil
			}
			merged, ready, err := s.endMerged(ctx, q, j, pre, outside >= endMergeOutside)
			if err != nil {
				return err
			}
			now := s.nowUTC()
			if err := s.failPendingRows(ctx, q, j, rowError, now); err != nil {
				return err
			}
			ocr, err := s.ocrRows(ctx, q, jobID, ocrColumnsLean)
			if err != nil {
				return err
			}
			status, reason := job.FinalStatus(ocr)
			if status == job.StatusFailed {
				reason = jobError
			}
			if !ready {
				if merged, err = s.mergeEnded(ctx, q, j, try.unmerged); err != nil {
					return err
				}
			}
			if try.unmerged && j.Merge.Enabled {
				reason = unmergedReason(reason, try.tries)
			}
			if _, err := s.exec(ctx, q, `UPDATE jobs SET status = ?, error = ?, merged = ?, updated = ? WHERE id = ?`,
				string(status), reason, string(merged), s.ts(now), jobID); err != nil {
				return fmt.Errorf("update job: %w", err)
			}
			if erased, err = s.eraseProviderKeys(ctx, q, jobID); err != nil {
				return err
			}
			webhookErased, err := s.onTerminal(ctx, tx, q, j, &woken)
			if err != nil {
				return err
			}
			erased = erased || webhookErased
			applied = true
			return nil
		})
		if !errors.Is(err, errRowsMoved) {
			break
		}
	}
	unlock()
	if err != nil {
		s.giveBack(ctx, try, jobID)
		return false, fmt.Errorf("expire job %s: %w", jobID, err)
	}
	s.wake(ctx, woken)
	if applied {
		s.ends.ended(jobID)
		s.logUnmerged(ctx, try, jobID, "the deadline")
	}
	if erased {
		s.afterErase(ctx, jobID)
	}
	return applied, nil
}
