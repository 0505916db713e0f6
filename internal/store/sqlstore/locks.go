package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/docjobs/docjobs/internal/job"
)

// The lock order of the transactions that touch a job's rows: each takes
// the job row first, before it reads, inserts, updates or deletes any row
// of the job, at the strength its later statements need, or at a weaker
// one that it strengthens in the one way PostgreSQL lets a holder
// strengthen without queueing behind waiters (from a KEY SHARE it holds to
// NO KEY UPDATE). SQLite runs one write transaction at a time, so there
// the order only matters on PostgreSQL.
//
//	transaction             first lock            then
//	FinishOCR               KEY SHARE             inserts the file's rows (in parallel
//	                                              with the job's other files), then
//	                                              NO KEY UPDATE to update it and fan in
//	FinishLLM, FinishJob,   NO KEY UPDATE         updates and inserts under it
//	RecordWebhookAttempt
//	CancelJob, ExpireJob    FOR UPDATE            fail the pending rows, insert the
//	                                              ocr_failed rows of files still being
//	                                              recognized
//	DeleteJob               FOR UPDATE            delete the rows, then the job
//
// Why each, from the deadlocks PostgreSQL reported before (an audit of a
// scale-out cluster, docs/decisions.md):
//
//   - Inserting a row that references the job takes KEY SHARE on the job row
//     (the foreign key's check). FinishOCR took it that way, implicitly, in
//     the middle of its transaction. DeleteJob locked NO KEY UPDATE, which
//     lets KEY SHARE through, and then needed FOR UPDATE to delete the job
//     row: it waited for the FinishOCR, which waited for DeleteJob's lock.
//     Now DeleteJob takes FOR UPDATE first: a FinishOCR that began first
//     finishes first; one that begins later waits and then finds no job.
//   - CancelJob and ExpireJob insert an ocr_failed row for each file still
//     being recognized, with the key a FinishOCR inserting that file's
//     first chunk uses: under NO KEY UPDATE they waited on its uncommitted
//     row while it waited for the job lock. FOR UPDATE makes them wait for
//     that FinishOCR to commit, and then they see its rows.
//   - FinishOCR takes KEY SHARE explicitly, in the statement that reads
//     whether its file is still pending (no round trip added), so that the
//     job row is its first lock too and a job cancelled or deleted while it
//     waited is seen (its status is read from the row it locked) before any
//     insert. Several FinishOCR of one job hold KEY SHARE together and
//     strengthen it one after the other; PostgreSQL (12 and later) lets a
//     holder strengthen its lock without queueing behind a FOR UPDATE that
//     waits for it, which is what keeps them from deadlocking with it.
//   - FinishLLM, FinishJob and the webhook's record change no key and insert
//     no row of a file still being recognized: NO KEY UPDATE, which waits
//     only for its own kind and for FOR UPDATE.
//
// Should another path deadlock all the same, inTx runs the transaction
// again (Dialect.Retryable).

// lockFileToFinish takes the job row's KEY SHARE lock for FinishOCR and
// reports whether file fileIndex of the job is still to be finished: the
// job exists, has not ended, and the file's OCR row is PENDING.
func (s *Store[TTx]) lockFileToFinish(ctx context.Context, q Querier, jobID string, fileIndex int) (bool, error) {
	var (
		status  string
		pending int
	)
	// After waiting for the lock, PostgreSQL returns the row as the
	// transaction that held it left it: the status it ended the job with,
	// or no row when it deleted the job. The subquery reads the OCR row as
	// the statement began, which only a FOR UPDATE holder could have
	// changed since, and then the status says so.
	err := s.queryRow(ctx, q, `SELECT status, (SELECT COUNT(*) FROM ocr_rows
		WHERE job_id = ? AND file_index = ? AND `+isPending+`) FROM jobs WHERE id = ?`+s.dialect.ForKeyShare,
		[]any{jobID, fileIndex, jobID}, &status, &pending)
	if errors.Is(err, errNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("lock job %s for file %d: %w", jobID, fileIndex, err)
	}
	return pending > 0 && !job.Status(status).Terminal(), nil
}
