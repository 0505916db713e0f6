package sqlstore

import "context"

// RunTx exposes runTx to package sqlstore_test, whose tests reach
// PostgreSQL through package postgres (which imports this package, so
// package sqlstore's own tests cannot).
func (s *Store[TTx]) RunTx(ctx context.Context, fn func(tx TTx, q Querier) error) error {
	return s.runTx(ctx, fn)
}
