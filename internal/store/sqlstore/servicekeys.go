package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/docjobs/docjobs/internal/store"
)

// ServiceKey stores sealed under name unless a key is stored there already,
// and returns the stored one; see store.Store.
func (s *Store[TTx]) ServiceKey(ctx context.Context, name string, sealed []byte) ([]byte, error) {
	var stored []byte
	err := s.inTx(ctx, func(_ TTx, q Querier) error {
		stored = nil // a retried transaction starts over
		if _, err := s.exec(ctx, q, `INSERT INTO service_keys (name, sealed) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`, name, sealed); err != nil {
			return err
		}
		return s.queryRow(ctx, q, `SELECT sealed FROM service_keys WHERE name = ?`, []any{name}, &stored)
	})
	if err != nil {
		return nil, fmt.Errorf("service key %s: %w", name, err)
	}
	return stored, nil
}

// StoredServiceKey returns the key stored under name, or store.ErrNotFound
// (wrapped) when none is; see store.Store.
func (s *Store[TTx]) StoredServiceKey(ctx context.Context, name string) ([]byte, error) {
	var stored []byte
	err := s.queryRow(ctx, s.backend.DB(), `SELECT sealed FROM service_keys WHERE name = ?`, []any{name}, &stored)
	if errors.Is(err, errNoRows) {
		return nil, fmt.Errorf("service key %s: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("service key %s: %w", name, err)
	}
	return stored, nil
}
