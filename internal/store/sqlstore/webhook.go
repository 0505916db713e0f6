package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/docjobs/docjobs/internal/job"
	"github.com/docjobs/docjobs/internal/store"
)

// onTerminal runs in every transaction that makes j terminal: it announces
// the end to other processes (notifyEnd), enqueues the webhook delivery
// when j has a webhook URL, and otherwise erases the webhook secret, which
// nothing will need. erased reports a deletion.
func (s *Store[TTx]) onTerminal(ctx context.Context, tx TTx, q Querier, j *job.Job, woken *[]string) (erased bool, err error) {
	if err := s.notifyEnd(ctx, q, j.ID); err != nil {
		return false, err
	}
	if j.WebhookURL == "" {
		n, err := s.exec(ctx, q, `DELETE FROM job_secrets WHERE job_id = ? AND field = ?`, j.ID, job.SecretWebhookSecret)
		if err != nil {
			return false, fmt.Errorf("erase webhook secret: %w", err)
		}
		return n > 0, nil
	}
	return false, s.insertRiverJobs(ctx, tx, []river.InsertManyParams{{Args: store.WebhookArgs{JobID: j.ID}}}, woken)
}

// RecordWebhookAttempt records one delivery attempt and the delivery's new
// state; a final state (delivered, failed) erases the webhook secret in the
// same transaction. It returns the delivery summary after the attempt.
// An attempt is known by its time (a.At): recording the last one again
// changes nothing, so a caller may retry a record whose outcome it did not
// learn.
func (s *Store[TTx]) RecordWebhookAttempt(ctx context.Context, a store.WebhookAttempt) (job.WebhookDelivery, error) {
	var (
		d      job.WebhookDelivery
		erased bool
	)
	err := s.inTx(ctx, func(_ TTx, q Querier) error {
		erased = false
		j, err := s.getJob(ctx, q, "", a.JobID, s.dialect.ForUpdate)
		if err != nil {
			return err
		}
		d = j.Webhook
		if !d.LastAttemptAt.IsZero() && d.LastAttemptAt.Equal(truncate(a.At)) {
			// This attempt is recorded already: an earlier call committed
			// but its answer was lost, and the worker tried again.
			return nil
		}
		d.Attempts++
		d.State, d.LastStatus, d.LastError, d.LastAttemptAt = a.State, a.Status, a.Error, truncate(a.At)
		if a.State == job.WebhookDelivered {
			d.DeliveredAt = truncate(a.At)
		}
		if _, err := s.exec(ctx, q, `INSERT INTO webhook_attempts (job_id, attempt, status, error, duration_ns, at)
			VALUES (?, ?, ?, ?, ?, ?)`, a.JobID, d.Attempts, a.Status, a.Error, int64(a.Duration), s.ts(a.At)); err != nil {
			return fmt.Errorf("insert webhook attempt: %w", err)
		}
		if _, err := s.exec(ctx, q, `UPDATE jobs SET webhook_state = ?, webhook_attempts = ?, webhook_last_status = ?,
			webhook_last_error = ?, webhook_last_attempt_at = ?, webhook_delivered_at = ? WHERE id = ?`,
			d.State, d.Attempts, d.LastStatus, d.LastError, s.tsOrNull(d.LastAttemptAt), s.tsOrNull(d.DeliveredAt), a.JobID); err != nil {
			return fmt.Errorf("update webhook summary: %w", err)
		}
		if d.State != job.WebhookPending {
			n, err := s.exec(ctx, q, `DELETE FROM job_secrets WHERE job_id = ? AND field = ?`, a.JobID, job.SecretWebhookSecret)
			if err != nil {
				return fmt.Errorf("erase webhook secret: %w", err)
			}
			erased = n > 0
		}
		return nil
	})
	if err != nil {
		return d, fmt.Errorf("record webhook attempt of job %s: %w", a.JobID, err)
	}
	if erased {
		s.afterErase(ctx, a.JobID)
	}
	return d, nil
}

// ExpiredJobs lists up to limit terminal jobs last changed before cutoff
// whose webhook is not still being delivered: retention deletes them.
func (s *Store[TTx]) ExpiredJobs(ctx context.Context, cutoff time.Time, limit int) ([]string, error) {
	rows, err := s.query(ctx, s.backend.DB(), `SELECT id FROM jobs WHERE updated < ? AND status IN (?, ?, ?)
		AND webhook_state <> ? ORDER BY updated LIMIT ?`, s.ts(cutoff), string(job.StatusComplete),
		string(job.StatusFailed), string(job.StatusCancelled), job.WebhookPending, limit)
	if err != nil {
		return nil, fmt.Errorf("expired jobs: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("expired jobs: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
