-- A deleted job's River rows go with it: its delete removes those River has
-- finished, in its own transaction, and records here a job that still had
-- others (a file job running or waiting for a retry, a webhook not yet
-- sent): they find the job gone and finish, and the removal sweep then
-- removes them and this row.
CREATE TABLE job_river_leftovers (
    job_id  TEXT PRIMARY KEY,
    checked TEXT NOT NULL
) STRICT;

CREATE INDEX job_river_leftovers_checked ON job_river_leftovers (checked);

-- River's SQLite schema has no index on args (PostgreSQL's has a GIN one):
-- finding a job's rows scanned the table, 210 ms at 200,000 rows, inside
-- the delete's write transaction (24 µs with this index).
CREATE INDEX IF NOT EXISTS docjobs_river_job_job_id ON river_job (args ->> 'job_id');
