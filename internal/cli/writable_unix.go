//go:build unix

package cli

import "golang.org/x/sys/unix"

// writable asks the kernel whether this process may create files in dir
// (write and search permission), without creating one: /readyz asks it
// at every probe.
func writable(dir string) error {
	return unix.Access(dir, unix.W_OK|unix.X_OK)
}
