package sqlstore_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/postgres"
	"github.com/docjobs/docjobs/internal/store/postgres/pgtest"
	"github.com/docjobs/docjobs/internal/store/sqlstore"
)

// A connection cut inside a transaction, before COMMIT, means nothing was
// committed: store.ErrUnavailable, "not served, retry". Cut once the body
// is done, the COMMIT fails with its outcome unknown (the server may have
// committed): not ErrUnavailable, so the API does not invite a retry that
// could make a second job.
func TestCutConnectionIsUnavailableOnlyBeforeCommit(t *testing.T) {
	cases := []struct {
		name            string
		cutBeforeSelect bool
		wantUnavailable bool
	}{
		{name: "cut before a statement in the transaction", cutBeforeSelect: true, wantUnavailable: true},
		{name: "cut after the body, during commit", cutBeforeSelect: false, wantUnavailable: false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw, schema := pgtest.Schema(t)
			proxied, cut := pgtest.BehindProxy(t, raw)
			s, err := postgres.Open(t.Context(), postgres.Config{URL: proxied, Schema: schema, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() { _ = s.Close() })
			err = s.RunTx(t.Context(), func(_ pgx.Tx, q sqlstore.Querier) error {
				if c.cutBeforeSelect {
					cut()
				}
				if _, err := q.Exec(context.Background(), `SELECT 1`); err != nil {
					return err
				}
				cut()
				return nil
			})
			if err == nil {
				t.Fatal("transaction over a cut connection succeeded")
			}
			if got := errors.Is(err, store.ErrUnavailable); got != c.wantUnavailable {
				t.Errorf("errors.Is(%v, store.ErrUnavailable) = %v, want %v", err, got, c.wantUnavailable)
			}
		})
	}
}
