//go:build !unix

package sqlite

import "os"

// waitLockFile opens path without a lock: there is no flock here, so
// processes started together on a new file may collide migrating it.
func waitLockFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
}
