-- docjobs schema, SQLite. Timestamps are TEXT in sqlstore.TimeLayout (UTC,
-- microseconds, fixed width so they sort as strings); JSON documents are TEXT.

CREATE TABLE accounts (
    id              TEXT PRIMARY KEY,
    extraction_mode TEXT NOT NULL DEFAULT '',
    created         TEXT NOT NULL
) STRICT;

CREATE TABLE api_keys (
    hash       BLOB PRIMARY KEY, -- SHA-256 of the key; the key itself is never stored
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    created    TEXT NOT NULL
) STRICT;

CREATE INDEX api_keys_account_id ON api_keys (account_id);

CREATE TABLE jobs (
    id                         TEXT PRIMARY KEY,
    account_id                 TEXT NOT NULL,
    title                      TEXT NOT NULL DEFAULT '',
    metadata                   TEXT NOT NULL DEFAULT '{}',
    status                     TEXT NOT NULL,
    error                      TEXT NOT NULL DEFAULT '',
    source_urls                TEXT NOT NULL DEFAULT '[]',
    files                      TEXT NOT NULL DEFAULT '[]',
    prompts                    TEXT NOT NULL DEFAULT '[]',
    neural_type                TEXT NOT NULL DEFAULT '',
    neural_model               TEXT NOT NULL DEFAULT '',
    neural_chunk_budget_tokens INTEGER NOT NULL DEFAULT 0,
    ocr_provider               TEXT NOT NULL DEFAULT '',
    ocr_model                  TEXT NOT NULL DEFAULT '',
    extraction_mode            TEXT NOT NULL DEFAULT '',
    response_schema            TEXT NOT NULL DEFAULT '',
    consensus_mode             TEXT NOT NULL DEFAULT '',
    merge_enabled              INTEGER NOT NULL DEFAULT 0,
    merge_scope                TEXT NOT NULL DEFAULT '',
    merge_conflict_policy      TEXT NOT NULL DEFAULT '',
    merge_dedupe_by            TEXT NOT NULL DEFAULT '[]',
    merge_format               TEXT NOT NULL DEFAULT '',
    webhook_url                TEXT NOT NULL DEFAULT '',
    idempotency_key            TEXT NOT NULL DEFAULT '',
    request_hash               TEXT NOT NULL DEFAULT '',
    created                    TEXT NOT NULL,
    updated                    TEXT NOT NULL
) STRICT;

-- Concurrent creates with one key: the index decides which one wins.
CREATE UNIQUE INDEX jobs_account_idempotency_key ON jobs (account_id, idempotency_key)
    WHERE idempotency_key <> '';
-- Listing, newest first, with and without a status filter (keyset pagination).
CREATE INDEX jobs_account_created ON jobs (account_id, created DESC, id DESC);
CREATE INDEX jobs_account_status_created ON jobs (account_id, status, created DESC, id DESC);
CREATE INDEX jobs_status ON jobs (status);

CREATE TABLE job_secrets (
    job_id     TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    field      TEXT NOT NULL,
    ciphertext BLOB NOT NULL, -- AEAD-sealed; never plaintext
    PRIMARY KEY (job_id, field)
) STRICT;

CREATE TABLE ocr_rows (
    job_id        TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    file_index    INTEGER NOT NULL,
    file          TEXT NOT NULL DEFAULT '',
    status        TEXT NOT NULL,
    content       TEXT NOT NULL DEFAULT '',
    output_format TEXT NOT NULL DEFAULT '',
    model         TEXT NOT NULL DEFAULT '',
    request       TEXT NOT NULL DEFAULT '',
    raw_data      TEXT NOT NULL DEFAULT '',
    error         TEXT NOT NULL DEFAULT '',
    duration_ns   INTEGER NOT NULL DEFAULT 0,
    created       TEXT NOT NULL,
    updated       TEXT NOT NULL,
    PRIMARY KEY (job_id, file_index)
) STRICT;

CREATE INDEX ocr_rows_pending ON ocr_rows (job_id) WHERE status = 'PENDING';

CREATE TABLE llm_rows (
    job_id        TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    file_index    INTEGER NOT NULL,
    prompt_index  INTEGER NOT NULL,
    chunk_index   INTEGER NOT NULL,
    chunk_total   INTEGER NOT NULL,
    file          TEXT NOT NULL DEFAULT '',
    status        TEXT NOT NULL,
    skip_reason   TEXT NOT NULL DEFAULT '',
    content       TEXT NOT NULL DEFAULT '',
    model         TEXT NOT NULL DEFAULT '',
    request       TEXT NOT NULL DEFAULT '',
    raw_data      TEXT NOT NULL DEFAULT '',
    error         TEXT NOT NULL DEFAULT '',
    duration_ns   INTEGER NOT NULL DEFAULT 0,
    schema_valid  INTEGER,           -- NULL when no schema applies
    schema_errors TEXT NOT NULL DEFAULT '[]',
    consensus     TEXT,              -- JSON; NULL when no consensus ran
    created       TEXT NOT NULL,
    updated       TEXT NOT NULL,
    PRIMARY KEY (job_id, file_index, prompt_index, chunk_index)
) STRICT;

CREATE INDEX llm_rows_pending ON llm_rows (job_id) WHERE status = 'PENDING';

CREATE TABLE files (
    id           TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL,
    job_id       TEXT,               -- NULL for uploads; job copies go with the job
    name         TEXT NOT NULL DEFAULT '',
    size         INTEGER NOT NULL DEFAULT 0,
    content_type TEXT NOT NULL DEFAULT '',
    key          TEXT NOT NULL,      -- blob key in storage
    created      TEXT NOT NULL
) STRICT;

CREATE INDEX files_job_id ON files (job_id) WHERE job_id IS NOT NULL;
