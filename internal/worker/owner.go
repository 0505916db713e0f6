package worker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
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

// ErrStorageOwned is returned by ClaimStorage for a storage that names
// another database as its owner.
var ErrStorageOwned = errors.New("the storage belongs to another docjobs database")

// OwnerKeys is the part of the store that keeps the service's own keys.
type OwnerKeys interface {
	ServiceKey(ctx context.Context, name string, sealed []byte) ([]byte, error)
}

// ClaimStorage makes this database the storage's owner if it has none, and
// returns since when it owns it: the removal sweep deletes an unrecorded
// upload only if it was written after that, so that what a storage held
// before a database claimed it (another deployment's uploads, in a storage
// shared before this check existed) is never taken for a crash's leftover.
// A storage owned by another database is ErrStorageOwned: serve refuses to
// start on it.
func ClaimStorage(ctx context.Context, keys OwnerKeys, bucket *blob.Bucket) (time.Time, error) {
	fresh := make([]byte, 16)
	_, _ = rand.Read(fresh) // crypto/rand.Read never fails on supported platforms
	ours, err := keys.ServiceKey(ctx, storageOwnerName, []byte(hex.EncodeToString(fresh)))
	if err != nil {
		return time.Time{}, fmt.Errorf("storage owner: %w", err)
	}
	marker, err := bucket.ReadAll(ctx, StorageOwnerKey)
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
	if !bytes.Equal(bytes.TrimSpace(marker), ours) {
		return time.Time{}, fmt.Errorf("%w: %s names %q, this database is %q", ErrStorageOwned, StorageOwnerKey, bytes.TrimSpace(marker), ours)
	}
	attrs, err := bucket.Attributes(ctx, StorageOwnerKey)
	if err != nil {
		return time.Time{}, fmt.Errorf("storage owner: %w", err)
	}
	return attrs.ModTime, nil
}
