-- How many times a cancel or the deadline sweep began merging a job's
-- answers in the transaction that ends it. It is counted in a transaction
-- of its own, committed before that merge, so that it outlives a merge that
-- takes its process down (and rolls the ending back): the sweep runs at
-- every start and would otherwise hit the same job first at each one. Past
-- a bound the job ends without its answers merged. Never shown by the API.
ALTER TABLE jobs ADD COLUMN end_merges INTEGER NOT NULL DEFAULT 0;
