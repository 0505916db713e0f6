-- Consensus runs a stop or a job's end cut off before any answer were kept
-- in ocr_pages as unusable outcomes, and every later attempt voted on them
-- (rows FAILED "no votable run", or DONE from fewer runs). Such a run has
-- no outcome: the worker keeps none now, and these go, so that the next
-- attempt asks the run. They are told by the reason the worker wrote for
-- them (a JSON object written by encoding/json, whose "unusable" key
-- cannot appear unescaped inside a string value); nothing else writes
-- those two reasons.
DELETE FROM ocr_pages
WHERE key LIKE 'model/%/run/%'
  AND (CAST(value AS TEXT) LIKE '%"unusable":"provider call abandoned: %'
    OR CAST(value AS TEXT) LIKE '%"unusable":"waiting for a free % slot: %');
