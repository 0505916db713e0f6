//go:build unix

package office

import (
	"os/exec"
	"syscall"
)

// killProcessGroup puts the command in its own process group and makes
// cancellation kill the group: soffice is a launcher that starts
// soffice.bin, which outlives a kill of the launcher alone.
func killProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
