-- An account lists its uploads newest first (GET /v1/files), a page at a
-- time by keyset on (created, id): the index walks from the cursor and
-- stops after the page, where files_uploads_account (migration 9) would
-- have the query read and sort every upload of the account for each page.
-- Job copies are never listed and are not in it. Built in the migration's
-- transaction like migrations 8 and 9: it blocks writes to files (not
-- reads) while it is built, about a second per million uploads
-- (docs/decisions.md, "Uploads are listed").
CREATE INDEX files_uploads_account_created ON files (account_id, created DESC, id DESC) WHERE job_id IS NULL;
