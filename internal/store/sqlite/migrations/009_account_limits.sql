-- An account's upload quota sums the sizes of its uploads at every upload;
-- the index holds all the query reads (job_id too, or SQLite goes to the
-- table to check it), so the sum never reads the table. Job copies go with
-- their job and do not count. The limit of active jobs counts from
-- jobs_account_status_created (migration 1).
CREATE INDEX files_uploads_account ON files (account_id, job_id, size) WHERE job_id IS NULL;
