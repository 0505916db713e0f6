-- Uploads (files with no job) are deleted by retention in order of age;
-- job copies go with their job and are not in the index.
CREATE INDEX files_uploads_created ON files (created) WHERE job_id IS NULL;
