//go:build unix

package cli

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/docjobs/docjobs/internal/store"
)

// flockFile opens path and takes an exclusive flock on it without waiting;
// store.ErrNodeHeld when another open file holds it (flock locks belong to
// the open file, so two serves of one test process exclude each other too).
func flockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("conversion folder lock: %w", err)
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
		return nil, fmt.Errorf("conversion folder lock: %w", err)
	}
	return f, nil
}
