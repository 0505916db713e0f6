-- The file's own name (the upload's, or the download's), recorded with its
-- recognition for the user message of its model rows; never returned.
ALTER TABLE ocr_rows ADD COLUMN name TEXT NOT NULL DEFAULT '';
