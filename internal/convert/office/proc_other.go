//go:build !unix

package office

import "os/exec"

// killProcessGroup leaves the default: cancellation kills the process.
func killProcessGroup(cmd *exec.Cmd) {}
