//go:build unix

package sqlite

import (
	"errors"
	"os"
	"syscall"
)

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
