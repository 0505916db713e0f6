-- Provider answers per page, kept as they arrive so that a retried or
-- restarted recognition never pays the provider twice for the same page.
CREATE TABLE ocr_pages (
    job_id     TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    file_index INTEGER NOT NULL,
    key        TEXT NOT NULL,   -- page number and a hash of what was sent
    value      BLOB NOT NULL,   -- the provider's recognition, JSON
    created    TEXT NOT NULL,
    PRIMARY KEY (job_id, file_index, key)
) STRICT;
