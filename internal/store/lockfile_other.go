//go:build !unix

package store

import "os"

// LockFile opens path without a lock: there is no flock here, so what it
// would keep apart (two processes given one node id) is not.
func LockFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
}
