//go:build !unix

package sqlite

import "os"

// lockFile opens path without a lock: there is no flock here, so the node
// id is not exclusive (two processes must be given distinct ids).
func lockFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
}

// waitLockFile opens path without a lock: there is no flock here, so
// processes started together on a new file may collide migrating it.
func waitLockFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
}
