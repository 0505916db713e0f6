-- The chunk a model row answers (read by its River job, never returned) and
-- the provider's token usage.
ALTER TABLE llm_rows ADD COLUMN input TEXT NOT NULL DEFAULT '';
ALTER TABLE llm_rows ADD COLUMN input_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE llm_rows ADD COLUMN output_tokens BIGINT NOT NULL DEFAULT 0;
