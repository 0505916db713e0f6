package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/docjobs/docjobs/internal/store"
)

// testServiceKey: whichever process stores a service key first, every
// process gets that one, also when they all store at once.
func testServiceKey(t *testing.T, s Store) {
	ctx := context.Background()
	got, err := s.ServiceKey(ctx, "alpha", []byte("first"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, []byte("first")) {
		t.Fatalf("first store returned %q, want what it stored", got)
	}
	if got, err = s.ServiceKey(ctx, "alpha", []byte("second")); err != nil || !bytes.Equal(got, []byte("first")) {
		t.Fatalf("second store returned %q, %v; want the first key", got, err)
	}

	const racers = 12
	keys := make([][]byte, racers)
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() { keys[i], errs[i] = s.ServiceKey(ctx, "beta", fmt.Appendf(nil, "racer-%d", i)) })
	}
	wg.Wait()
	for i := range racers {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("racer %d got %q, racer 0 %q: one key for all", i, keys[i], keys[0])
		}
	}
	if got, err := s.ServiceKey(ctx, "alpha", []byte("third")); err != nil || !bytes.Equal(got, []byte("first")) {
		t.Errorf("after keys of other names, alpha is %q, %v; want the first key", got, err)
	}
}

// testStoredServiceKey: a look-up tells a key stored from none, and stores
// nothing (the storage owner's claim asks whether this database claimed a
// storage before, without claiming one).
func testStoredServiceKey(t *testing.T, s Store) {
	ctx := context.Background()
	if got, err := s.StoredServiceKey(ctx, "gamma"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("look-up of a key never stored = %q, %v; want ErrNotFound", got, err)
	}
	if got, err := s.StoredServiceKey(ctx, "gamma"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second look-up = %q, %v; want ErrNotFound still (a look-up stores nothing)", got, err)
	}
	if _, err := s.ServiceKey(ctx, "gamma", []byte("stored")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.StoredServiceKey(ctx, "gamma"); err != nil || !bytes.Equal(got, []byte("stored")) {
		t.Errorf("look-up of a stored key = %q, %v; want %q", got, err, "stored")
	}
}
