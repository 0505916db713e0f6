-- A node id's generation: one more each time a process takes the id for
-- good (a start, a sibling sweep that reclaims its jobs), on the holding
-- session while it holds the id's advisory lock; a process whose session
-- dropped and that takes its id back only reads it. A generation other
-- than the one it set means that someone took the id meanwhile and may
-- have handed its running jobs to other processes: it stops instead of
-- working them a second time (docs/decisions.md, "A node id taken back
-- after a reclaim is refused").
CREATE TABLE node_generations (
    node_id    TEXT PRIMARY KEY,
    generation BIGINT NOT NULL
);
