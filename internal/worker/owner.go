package worker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/docjobs/docjobs/internal/store"
)

// StorageOwnerKey is the object, at the top of the storage, that names the
// database whose file records say what the storage holds. The removal sweep
// deletes uploads no record names (a crash between an upload's bytes and
// its record leaves them), which is right only when every upload in the
// storage was recorded in this database: two deployments with databases
// of their own writing to one storage (two serve commands sharing the
// default ./data with different DOCJOBS_DATABASE_URLs) would delete each
// other's uploads.
const StorageOwnerKey = "docjobs-storage-owner"

// storageOwnerName is the service key holding this database's owner id. It
// is a random name, not a secret: it is stored as is, and in the storage.
const storageOwnerName = "storage_owner"

// storageClaimedName is the service key a database stores once a
// storage's marker names it, after the marker is written: from then on
// the database owns a storage, and a storage with no marker is not its
// to claim (ErrOwnsAnotherStorage). Its value is the owner id.
const storageClaimedName = "storage_claimed"

// ErrOwnsAnotherStorage is returned by ClaimStorage, and GuardStorage,
// for a storage that names no owner when this database has claimed a
// storage before: a process given another DOCJOBS_STORAGE_URL than the
// rest of its deployment (a prefix typo, another bucket) would otherwise
// claim a second storage, and its uploads, job copies and deletions go
// where the others never look. Retention then drops records whose bytes
// stay in the real storage, for ever.
var ErrOwnsAnotherStorage = errors.New("this database already owns another storage")

// ErrStorageOwned is returned by ClaimStorage for a storage that names
// another database as its owner.
var ErrStorageOwned = errors.New("the storage belongs to another docjobs database")

// OwnerKeys is the part of the store that keeps the service's own keys.
type OwnerKeys interface {
	ServiceKey(ctx context.Context, name string, sealed []byte) ([]byte, error)
	StoredServiceKey(ctx context.Context, name string) ([]byte, error)
}

// ClaimStorage makes this database the storage's owner if it has none, and
// returns since when it owns it: the removal sweep deletes an unrecorded
// upload only if it was written after that, so that what a storage held
// before a database claimed it (another deployment's uploads, in a storage
// shared before this check existed) is never taken for a crash's leftover.
// A storage owned by another database is ErrStorageOwned, and one with no
// owner, when this database owns a storage already, ErrOwnsAnotherStorage:
// serve refuses to start on either, and the sweep judges neither.
func ClaimStorage(ctx context.Context, keys OwnerKeys, bucket *blob.Bucket) (time.Time, error) {
	ours, err := ownerID(ctx, keys)
	if err != nil {
		return time.Time{}, err
	}
	return claim(ctx, keys, bucket, ours, false)
}

// ownerID is this database's owner id, made and stored at its first use.
func ownerID(ctx context.Context, keys OwnerKeys) ([]byte, error) {
	fresh := make([]byte, 16)
	_, _ = rand.Read(fresh) // crypto/rand.Read never fails on supported platforms
	ours, err := keys.ServiceKey(ctx, storageOwnerName, []byte(hex.EncodeToString(fresh)))
	if err != nil {
		return nil, fmt.Errorf("storage owner: %w", err)
	}
	return ours, nil
}

// claim writes ours as the storage's owner if it names none, and returns
// since when ours owns it, or ErrStorageOwned. A storage naming no owner
// is claimed only by a database that owns none yet, or, again, by a
// process that checked at its start that the storage was its database's
// (again: StorageGuard writing back a deleted marker); otherwise it is
// ErrOwnsAnotherStorage.
func claim(ctx context.Context, keys OwnerKeys, bucket *blob.Bucket, ours []byte, again bool) (time.Time, error) {
	marker, err := bucket.ReadAll(ctx, StorageOwnerKey)
	if gcerrors.Code(err) == gcerrors.NotFound && !again {
		switch _, kerr := keys.StoredServiceKey(ctx, storageClaimedName); {
		case kerr == nil:
			// The database owns a storage: this one, if another of its
			// processes, starting with this one on a new database, wrote
			// the marker since the read above (the key is stored only
			// once the marker is), else another.
			marker, err = bucket.ReadAll(ctx, StorageOwnerKey)
			if gcerrors.Code(err) == gcerrors.NotFound {
				return time.Time{}, fmt.Errorf("%w (no %s here; this database's id is %s)", ErrOwnsAnotherStorage, StorageOwnerKey, ours)
			}
		case !errors.Is(kerr, store.ErrNotFound):
			return time.Time{}, fmt.Errorf("storage owner: %w", kerr)
		}
	}
	if gcerrors.Code(err) == gcerrors.NotFound {
		// Written only if still absent: of two databases claiming a new
		// storage at once, one wins and the other is refused.
		werr := bucket.WriteAll(ctx, StorageOwnerKey, ours, &blob.WriterOptions{ContentType: "text/plain", IfNotExist: true})
		if werr != nil && gcerrors.Code(werr) != gcerrors.FailedPrecondition {
			return time.Time{}, fmt.Errorf("storage owner: write %s: %w", StorageOwnerKey, werr)
		}
		marker, err = bucket.ReadAll(ctx, StorageOwnerKey)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("storage owner: read %s: %w", StorageOwnerKey, err)
	}
	if err := namesOwner(marker, ours); err != nil {
		return time.Time{}, err
	}
	if _, err := keys.ServiceKey(ctx, storageClaimedName, ours); err != nil {
		return time.Time{}, fmt.Errorf("storage owner: %w", err)
	}
	attrs, err := bucket.Attributes(ctx, StorageOwnerKey)
	if err != nil {
		return time.Time{}, fmt.Errorf("storage owner: %w", err)
	}
	return attrs.ModTime, nil
}

// namesOwner is ErrStorageOwned unless the marker's content names ours.
func namesOwner(marker, ours []byte) error {
	if !bytes.Equal(bytes.TrimSpace(marker), ours) {
		return fmt.Errorf("%w: %s names %q, this database is %q", ErrStorageOwned, StorageOwnerKey, bytes.TrimSpace(marker), ours)
	}
	return nil
}

// StorageCheckEvery is how often a process looks whether its database
// still owns the storage (StorageGuard.Run): a process that goes on
// writing to a storage another database has claimed loses what it writes
// to that database's sweep an hour on, so it must find out well within
// the hour; one GET of the marker a minute is cheap.
const StorageCheckEvery = time.Minute

// StorageGuardConfig configures a StorageGuard.
type StorageGuardConfig struct {
	Keys   OwnerKeys
	Bucket *blob.Bucket
	// Every is how often Run checks; zero is StorageCheckEvery.
	Every time.Duration
	// Lost is called, once, when the storage names another database
	// (an ErrStorageOwned): the process must stop writing there.
	Lost   func(error)
	Logger *slog.Logger
}

// StorageGuard keeps a process off a storage its database no longer owns.
// Ownership is otherwise checked only when a process starts and by the
// hourly sweep: an operator who deletes the marker to start another
// deployment on the storage (as the refusal allows) left the running one
// writing uploads that the newcomer's sweep, finding no record of them in
// its database, deletes an hour on.
type StorageGuard struct {
	cfg  StorageGuardConfig
	ours []byte
}

// GuardStorage claims the storage for cfg.Keys' database (ClaimStorage)
// and returns the guard that watches it stays so. A storage another
// database owns is ErrStorageOwned, one naming no owner when this
// database owns another ErrOwnsAnotherStorage; any other error means the
// claim could not be made or checked.
func GuardStorage(ctx context.Context, cfg StorageGuardConfig) (*StorageGuard, error) {
	if cfg.Every <= 0 {
		cfg.Every = StorageCheckEvery
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ours, err := ownerID(ctx, cfg.Keys)
	if err != nil {
		return nil, err
	}
	if _, err := claim(ctx, cfg.Keys, cfg.Bucket, ours, false); err != nil {
		return nil, err
	}
	return &StorageGuard{cfg: cfg, ours: ours}, nil
}

// Check reads the marker once and is ErrStorageOwned if it names another
// database. A marker someone deleted is written again (claim): whoever
// deleted it to give the storage to another deployment learns, from that
// one's refusal, that this one still writes there. Any other error is
// the storage's, not a loss of ownership.
func (g *StorageGuard) Check(ctx context.Context) error {
	marker, err := g.cfg.Bucket.ReadAll(ctx, StorageOwnerKey)
	if gcerrors.Code(err) == gcerrors.NotFound {
		if _, err := claim(ctx, g.cfg.Keys, g.cfg.Bucket, g.ours, true); err != nil {
			return err
		}
		g.cfg.Logger.Warn("the storage's owner marker was gone; this database claimed the storage again", "key", StorageOwnerKey)
		return nil
	}
	if err != nil {
		return fmt.Errorf("storage owner: read %s: %w", StorageOwnerKey, err)
	}
	return namesOwner(marker, g.ours)
}

// Run checks every cfg.Every until ctx ends or the storage names another
// database, when it calls cfg.Lost and returns. A check that cannot reach
// the storage is logged and made again at the next tick.
func (g *StorageGuard) Run(ctx context.Context) {
	tick := time.NewTicker(g.cfg.Every)
	defer tick.Stop()
	// A check may take a minute however often checks are made: a deadline
	// of Every (tens of milliseconds, in tests) cut off every read of a
	// slow storage, and the guard never learnt it was lost. Checks do not
	// overlap: the ticker drops the ticks a slow one spans.
	timeout := max(g.cfg.Every, StorageCheckEvery)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		err := g.Check(cctx)
		cancel()
		switch {
		case errors.Is(err, ErrStorageOwned):
			g.cfg.Lost(err)
			return
		case err != nil && ctx.Err() == nil:
			g.cfg.Logger.Warn("the storage's owner could not be checked; checked again in a while", "err", err, "every", g.cfg.Every.String())
		}
	}
}
