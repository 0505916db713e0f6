-- The merged answers of a finished job (merge.enabled), as the JSON array of
-- result.merged, computed once by finalize; and the source text each chunk
-- repeats from the one before, which merge needs to tell overlap duplicates
-- from records that really occur twice.
ALTER TABLE jobs ADD COLUMN merged TEXT NOT NULL DEFAULT '';
ALTER TABLE llm_rows ADD COLUMN overlap TEXT NOT NULL DEFAULT '';
