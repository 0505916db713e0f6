//go:build !unix

package office

import "os/exec"

// ownProcessGroup leaves the default: cancellation kills the process.
func ownProcessGroup(cmd *exec.Cmd) {}
