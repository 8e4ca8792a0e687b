//go:build unix

package procgroup

import (
	"os/exec"
	"syscall"
)

// Set makes cmd, when started, the leader of a new process group.
func Set(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// Term asks the group of a started cmd to end (SIGTERM).
func Term(cmd *exec.Cmd) { signal(cmd, syscall.SIGTERM) }

// Kill ends the group of a started cmd (SIGKILL): the command and every
// process it left in its group.
func Kill(cmd *exec.Cmd) { signal(cmd, syscall.SIGKILL) }

func signal(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, sig)
	}
}
