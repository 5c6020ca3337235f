package integration

import (
	"os/exec"
	"syscall"
)

// dieWithTest has the kernel kill cmd's process when the test process
// dies (a panic, a timeout) without its cleanups, which would leave
// daemons behind. 'ip netns exec' runs the daemon in its own process,
// which keeps the setting.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
