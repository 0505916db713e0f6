//go:build unix

package store

import (
	"errors"
	"os"
	"syscall"
)

// LockFile opens path and takes an exclusive flock on it without waiting;
// ErrNodeHeld when another open file holds it (flock locks belong to the
// open file, so this holds between two holders in one process too). The
// lock lasts until the file is closed.
func LockFile(path string) (*os.File, error) {
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
			return nil, ErrNodeHeld
		}
		return nil, err
	}
	return f, nil
}
