-- A deleted job's River rows go with it: its delete removes those River has
-- finished, in its own transaction, and records here a job that still had
-- others (a file job running or waiting for a retry, a webhook not yet
-- sent): they find the job gone and finish, and the removal sweep then
-- removes them and this row. River's rows of a job are found through
-- River's own GIN index on args (args @> '{"job_id": …}'), so no index is
-- added to River's table here.
CREATE TABLE job_river_leftovers (
    job_id  TEXT PRIMARY KEY,
    checked TIMESTAMPTZ NOT NULL
);

CREATE INDEX job_river_leftovers_checked ON job_river_leftovers (checked);
