-- A node id's generation (PostgreSQL's migration 13 says how it is used).
-- Unused on SQLite, where a node id is a flock the kernel frees only when
-- its process ends, so no process ever takes its id back from under a
-- sweep; made here too so that both databases number their migrations
-- alike.
CREATE TABLE node_generations (
    node_id    TEXT PRIMARY KEY,
    generation INTEGER NOT NULL
) STRICT;
