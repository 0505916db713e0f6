//go:build unix

package sqlite

import (
	"errors"
	"os"
	"syscall"

	"github.com/docjobs/docjobs/internal/store"
)

// lockFile opens path and takes an exclusive flock on it without waiting;
// store.ErrNodeHeld when another open file holds it (flock locks belong to
// the open file, so this holds between two stores of one process too).
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, store.ErrNodeHeld
		}
		return nil, err
	}
	return f, nil
}

// waitLockFile opens path and takes an exclusive flock on it, waiting for
// whoever holds it; closing the file releases it.
func waitLockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}
