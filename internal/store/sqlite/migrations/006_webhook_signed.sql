-- Whether a webhook secret was given at create. The secret is erased when
-- the delivery ends; this flag stays, so a delivery whose secret is missing
-- fails instead of going out unsigned.
ALTER TABLE jobs ADD COLUMN webhook_signed INTEGER NOT NULL DEFAULT 0;
UPDATE jobs SET webhook_signed = 1
    WHERE EXISTS (SELECT 1 FROM job_secrets WHERE job_secrets.job_id = jobs.id AND job_secrets.field = 'webhookSecret');
