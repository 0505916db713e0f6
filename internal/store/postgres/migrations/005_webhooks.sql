-- Webhook delivery: a summary on the job (returned by GET) and every attempt.
ALTER TABLE jobs ADD COLUMN webhook_state TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN webhook_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN webhook_last_status INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN webhook_last_error TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN webhook_last_attempt_at TIMESTAMPTZ;
ALTER TABLE jobs ADD COLUMN webhook_delivered_at TIMESTAMPTZ;

CREATE TABLE webhook_attempts (
    job_id      TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    attempt     INTEGER NOT NULL,
    status      INTEGER NOT NULL,
    error       TEXT NOT NULL,
    duration_ns BIGINT NOT NULL,
    at          TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (job_id, attempt)
);

-- Retention finds terminal jobs by their last change.
CREATE INDEX jobs_updated ON jobs (updated);
