package sqlite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/docjobs/docjobs/internal/store"
	"github.com/docjobs/docjobs/internal/store/sqlstore"
)

// nodeLockPath is the lock file of node id id for the database at dbPath.
// It sits beside the database, not in DOCJOBS_DATA_DIR: the processes that
// share a queue are those that share the database file, whatever data
// directories they were given. The id is kept readable where it is a safe
// file name, and hashed where it is not.
func nodeLockPath(dbPath, id string) string {
	safe := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, id)
	if safe != id || len(safe) > 64 {
		sum := sha256.Sum256([]byte(id))
		safe = safe[:min(len(safe), 64)] + "-" + hex.EncodeToString(sum[:4])
	}
	return dbPath + ".node-" + safe + ".lock"
}

// fileHold holds a node id by an exclusive flock on its lock file. The
// kernel drops the lock when the process ends, however it ends, so a
// killed process frees its id at once; it cannot be lost while the
// process lives.
type fileHold struct{ f *os.File }

func (b *backend) HoldNode(_ context.Context, id string) (sqlstore.NodeHold, error) {
	path := nodeLockPath(b.path, id)
	f, err := store.LockFile(path)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// The holder's pid, for an operator wondering who holds the id; the
	// file itself is left in place on release, since removing a lock file
	// races with a process that has just opened it.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return fileHold{f: f}, nil
}

// NodeFree takes id's lock file and lets it go at once. The window is 0:
// a flock is never lost while its process lives, so a free id is a dead
// process's and a sweep may take it at its first look.
func (b *backend) NodeFree(_ context.Context, id string) (time.Duration, error) {
	path := nodeLockPath(b.path, id)
	f, err := store.LockFile(path)
	if err != nil {
		return 0, fmt.Errorf("lock %s: %w", path, err)
	}
	return 0, f.Close()
}

func (fileHold) Lost() <-chan struct{} { return nil }

// Settle is 0: the kernel frees a flock only when its process ends.
func (fileHold) Settle() time.Duration { return 0 }

func (h fileHold) Release(context.Context) error {
	return h.f.Close() // closing the only descriptor drops the flock
}
