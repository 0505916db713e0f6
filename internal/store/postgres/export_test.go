package postgres

import "context"

// EndListenerPID is the server process of s's connection listening for
// job ends, 0 while it has none.
func EndListenerPID(s *Store) uint32 { return s.ends.pid.Load() }

// GroupUpdatePlans sums, over s's idle connections, the plans PostgreSQL
// made for the prepared UPDATEs of two or more model rows (finishllm.go):
// generic (made once, reused) and custom (made again at a bind).
func GroupUpdatePlans(ctx context.Context, s *Store) (generic, custom int64, err error) {
	for _, c := range s.pool.AcquireAllIdle(ctx) {
		var g, cu int64
		err = c.QueryRow(ctx, `SELECT COALESCE(SUM(generic_plans), 0), COALESCE(SUM(custom_plans), 0)
			FROM pg_prepared_statements WHERE statement LIKE 'UPDATE llm_rows SET status = v.status%UNION ALL%'`).Scan(&g, &cu)
		c.Release()
		if err != nil {
			return 0, 0, err
		}
		generic, custom = generic+g, custom+cu
	}
	return generic, custom, nil
}

// NodeHooks stand in for a process paused at the wrong moment (see
// nodeHooks); set them before any Work of s.
type NodeHooks struct {
	// Check runs before each check of a held node id's connection.
	Check func()
	// Looked runs after s looked at node id id, to hold it or to see
	// whether it is free, saying whether it was.
	Looked func(id string, free bool)
	// Retaken runs after a hold whose connection dropped took its id again
	// and kept it.
	Retaken func(id string)
}

// SetNodeHooks sets s's node hooks.
func SetNodeHooks(s *Store, h NodeHooks) {
	s.backend.hooks = nodeHooks{check: h.Check, looked: h.Looked, retaken: h.Retaken}
}
