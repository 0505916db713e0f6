package worker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/postgres/pgtest"
	"github.com/docjobs/docjobs/internal/store/sqlite"
)

// A process whose DOCJOBS_STORAGE_URL differs from the rest of its
// deployment's (a prefix typo, here) must not claim a second storage for
// their database: its uploads, job copies and deletions would go where
// the others never look, and retention would drop records whose bytes
// stay. The storage it was given is left as it was; the deployment's own
// storage is still its, and another database may claim the unused one.
func TestAProcessOfAnOwningDatabaseRefusesAnotherStorage(t *testing.T) {
	forEachStoreAndBucket(t, func(t *testing.T, st store.Store, bucket *blob.Bucket, _ string) {
		ctx := context.Background()
		ours, typo := blob.PrefixedBucket(bucket, "dep-e/"), blob.PrefixedBucket(bucket, "dep-e-typo/")
		if _, err := GuardStorage(ctx, StorageGuardConfig{Keys: st, Bucket: ours}); err != nil {
			t.Fatalf("the deployment's storage: %v", err)
		}
		for name, claimOther := range map[string]func() error{
			"ClaimStorage": func() error { _, err := ClaimStorage(ctx, st, typo); return err },
			"GuardStorage": func() error { _, err := GuardStorage(ctx, StorageGuardConfig{Keys: st, Bucket: typo}); return err },
		} {
			err := claimOther()
			if !errors.Is(err, ErrOwnsAnotherStorage) || !strings.Contains(err.Error(), StorageOwnerKey) {
				t.Errorf("%s of another storage = %v, want ErrOwnsAnotherStorage naming %s", name, err, StorageOwnerKey)
			}
			if _, err := typo.ReadAll(ctx, StorageOwnerKey); gcerrors.Code(err) != gcerrors.NotFound {
				t.Errorf("after %s, the other storage's marker: %v, want none written", name, err)
			}
		}
		if _, err := ClaimStorage(ctx, st, ours); err != nil {
			t.Errorf("the deployment's storage again: %v", err)
		}
		if _, err := ClaimStorage(ctx, openStore(t), typo); err != nil {
			t.Errorf("another database on the unused storage: %v", err)
		}
	})
}

// The first start of a new database often is several processes at once
// (an api and two workers): each must be accepted on the one storage,
// whichever of them stores the owner id and writes the marker, and
// whatever the others see of that meanwhile.
func TestEveryProcessOfANewDatabaseClaimsItsStorage(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		t.Run("three at once", func(t *testing.T) {
			bucket, _ := fileBucket(t)
			errs := make([]error, 3)
			var wg sync.WaitGroup
			for i := range errs {
				wg.Go(func() {
					_, errs[i] = GuardStorage(ctx, StorageGuardConfig{Keys: st, Bucket: blob.PrefixedBucket(bucket, "racers/")})
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("process %d: %v", i, err)
				}
			}
		})
		// The interleaving three at once may miss: a process finds no
		// marker, then another process marks the storage and stores the
		// claim before this one asks the database whether it claimed one.
		t.Run("marked between the read and the look-up", func(t *testing.T) {
			bucket, _ := fileBucket(t)
			fresh := openStoreLike(t, st)
			keys := &racingKeys{OwnerKeys: fresh, before: func() {
				if _, err := ClaimStorage(ctx, fresh, bucket); err != nil {
					t.Errorf("the first process: %v", err)
				}
			}}
			if _, err := ClaimStorage(ctx, keys, bucket); err != nil {
				t.Errorf("the second process: %v", err)
			}
			if !keys.ran {
				t.Error("the second process never looked the claim up: the interleaving was not tested")
			}
		})
		// A first process that stopped between storing the owner id and
		// writing the marker claimed nothing: the next one claims.
		t.Run("the first stopped before its marker", func(t *testing.T) {
			bucket, _ := fileBucket(t)
			fresh := openStoreLike(t, st)
			if _, err := ownerID(ctx, fresh); err != nil {
				t.Fatal(err)
			}
			if _, err := ClaimStorage(ctx, fresh, bucket); err != nil {
				t.Errorf("the next process: %v", err)
			}
		})
	})
}

// openStoreLike opens a new, empty database of st's kind.
func openStoreLike(t *testing.T, st store.Store) store.Store {
	t.Helper()
	if _, ok := st.(*sqlite.Store); ok {
		return openStore(t)
	}
	url, schema := pgtest.Schema(t)
	return openPostgresSchema(t, url, schema)
}

// racingKeys runs before once, as another process would, when the claim
// first asks whether this database claimed a storage.
type racingKeys struct {
	OwnerKeys
	before func()
	ran    bool
}

func (k *racingKeys) StoredServiceKey(ctx context.Context, name string) ([]byte, error) {
	if !k.ran {
		k.ran = true
		k.before()
	}
	return k.OwnerKeys.StoredServiceKey(ctx, name)
}

// forEachStoreAndBucket runs test on each database with each storage, a
// new pair each time: a database owns one storage.
func forEachStoreAndBucket(t *testing.T, test func(t *testing.T, st store.Store, bucket *blob.Bucket, dir string)) {
	t.Helper()
	forEachStore(t, func(t *testing.T, st store.Store) {
		first := true
		forEachBucket(t, func(t *testing.T, bucket *blob.Bucket, dir string) {
			if !first {
				st = openStoreLike(t, st)
			}
			first = false
			test(t, st, bucket, dir)
		})
	})
}
