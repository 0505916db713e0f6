-- A deleted job's stored files are removed after its rows are: one row here,
-- written in the delete's own transaction, says which job's files are still
-- to go (keys: the blob keys its file records named, a JSON array; anything
-- else under the job's prefix goes too). The request or retention removes
-- them at once and clears the row; a crash in between leaves it for the
-- sweep, so a deleted job's files never outlive it for good.
CREATE TABLE job_file_removals (
    job_id     TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    keys       TEXT NOT NULL DEFAULT '[]',
    deleted    TEXT NOT NULL
) STRICT;

CREATE INDEX job_file_removals_deleted ON job_file_removals (deleted);
