package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// progressQuery reads a job's status and the counts of its rows in one
// statement: live progress polls it every few hundred milliseconds per open
// stream, so it must stay one round trip over the rows' primary keys. Each
// row table is aggregated for this one job before the join, so a job without
// rows of a kind gets NULLs (made 0) rather than vanishing.
const progressQuery = `SELECT j.status, j.error, j.updated,
	COALESCE(o.total, 0), COALESCE(o.done, 0), o.updated,
	COALESCE(l.total, 0), COALESCE(l.done, 0), l.updated
FROM jobs j
LEFT JOIN (SELECT job_id, COUNT(*) AS total,
		SUM(CASE WHEN status IN (?, ?, ?) THEN 1 ELSE 0 END) AS done, MAX(updated) AS updated
	FROM ocr_rows WHERE job_id = ? GROUP BY job_id) o ON o.job_id = j.id
LEFT JOIN (SELECT job_id, COUNT(*) AS total,
		SUM(CASE WHEN status IN (?, ?, ?) THEN 1 ELSE 0 END) AS done, MAX(updated) AS updated
	FROM llm_rows WHERE job_id = ? GROUP BY job_id) l ON l.job_id = j.id
WHERE j.id = ?`

// JobProgress returns the job's status and its counts of terminal rows; a
// row is done when it is DONE, FAILED or SKIPPED. accountID "" matches any
// account; see store.Store.
func (s *Store[TTx]) JobProgress(ctx context.Context, accountID, id string) (job.Progress, error) {
	terminal := []any{string(job.RowDone), string(job.RowFailed), string(job.RowSkipped)}
	args := make([]any, 0, 10)
	args = append(args, terminal...)
	args = append(args, id)
	args = append(args, terminal...)
	args = append(args, id, id)
	query := progressQuery
	if accountID != "" {
		query += ` AND j.account_id = ?`
		args = append(args, accountID)
	}

	var (
		p                     job.Progress
		status                string
		ocrUpdated, llmUpdate time.Time
	)
	err := s.queryRow(ctx, s.backend.DB(), query, args,
		&status, &p.Error, timeScan{&p.Updated},
		&p.OCRTotal, &p.OCRDone, timeScan{&ocrUpdated},
		&p.LLMTotal, &p.LLMDone, timeScan{&llmUpdate})
	if errors.Is(err, errNoRows) {
		return job.Progress{}, store.ErrNotFound
	}
	if err != nil {
		return job.Progress{}, fmt.Errorf("progress of job %s: %w", id, err)
	}
	p.Status = job.Status(status)
	for _, t := range []time.Time{ocrUpdated, llmUpdate} {
		if t.After(p.Updated) {
			p.Updated = t
		}
	}
	return p, nil
}
