package office

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup puts the command in its own process group and makes
// cancellation kill the group: soffice is a launcher that starts
// soffice.bin, which outlives a kill of the launcher alone. Pdeathsig
// kills the launcher when docjobs dies (kill -9 included), so that it does
// not go on writing into a conversion folder the next start empties. The
// kernel sends it to the direct child only: a soffice.bin the launcher
// started is left to notice its parent gone (see decisions.md).
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
