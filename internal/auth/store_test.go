package auth

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/docjobs/docjobs/internal/store/postgres"
	"github.com/docjobs/docjobs/internal/store/postgres/pgtest"
	"github.com/docjobs/docjobs/internal/store/sqlite"
)

var quiet = slog.New(slog.DiscardHandler)

// keyStore is the part of a real store these tests use.
type keyStore interface {
	KeyLookup
	PutAPIKey(ctx context.Context, accountID string, keyHash []byte) error
}

// A key store that cannot be read says nothing of the key: a good key then
// gets ErrUnavailable (the service answers UNAVAILABLE, which clients
// retry), never ErrUnauthenticated (401, which they take as final); an
// unknown key is still ErrUnauthenticated while the store answers.
func TestAKeyStoreThatCannotBeReadIsUnavailableNotUnauthenticated(t *testing.T) {
	tests := []struct {
		name string
		// open returns the store and a func that makes it unreachable.
		open func(t *testing.T) (keyStore, func())
	}{
		{"sqlite, store closed", openClosableSQLite},
		{"postgres, server gone from its port", openPostgresBehindProxy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, cutOff := tt.open(t)
			key := NewKey()
			if err := st.PutAPIKey(t.Context(), "acme", HashKey(key)); err != nil {
				t.Fatal(err)
			}
			a := NewAuthenticator(st)
			if got, err := a.Authenticate(t.Context(), "Bearer "+key); err != nil || got != "acme" {
				t.Fatalf("store up, stored key: %q, %v; want acme", got, err)
			}
			if got, err := a.Authenticate(t.Context(), "Bearer "+NewKey()); !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("store up, unknown key: %q, %v; want ErrUnauthenticated", got, err)
			}
			cutOff()
			got, err := a.Authenticate(t.Context(), "Bearer "+key)
			if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("store down, stored key: %q, %v; want ErrUnavailable", got, err)
			}
			if strings.Contains(err.Error(), key) {
				t.Fatalf("the error carries the key: %v", err)
			}
		})
	}
}

func openClosableSQLite(t *testing.T) (keyStore, func()) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "docjobs.db"), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	closeStore := func() {
		once.Do(func() {
			if err := st.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
	t.Cleanup(closeStore)
	return st, closeStore
}

// openPostgresBehindProxy opens a store that reaches PostgreSQL through a
// TCP proxy; cutting off closes the proxy's port and every connection
// through it, as a database server that went away.
func openPostgresBehindProxy(t *testing.T) (keyStore, func()) {
	t.Helper()
	raw, schema := pgtest.Schema(t)
	proxied, cut := pgtest.BehindProxy(t, raw)
	st, err := postgres.Open(t.Context(), postgres.Config{URL: proxied, Schema: schema, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st, cut
}
