//go:build unix && !linux

package office

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup puts the command in its own process group and makes
// cancellation kill the group: soffice is a launcher that starts
// soffice.bin, which outlives a kill of the launcher alone.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
