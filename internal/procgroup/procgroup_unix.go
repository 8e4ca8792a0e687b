//go:build unix

package procgroup

import (
	"os"
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

// Term asks the group of a started cmd to end (SIGTERM). It returns
// os.ErrProcessDone when no process of the group is left, as
// exec.Cmd.Cancel expects; nil before cmd has started.
func Term(cmd *exec.Cmd) error { return signal(cmd, syscall.SIGTERM) }

// Kill ends the group of a started cmd (SIGKILL): the command and every
// process it left in its group. Its error is Term's.
func Kill(cmd *exec.Cmd) error { return signal(cmd, syscall.SIGKILL) }

func signal(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, sig)
	if err == syscall.ESRCH {
		return os.ErrProcessDone
	}
	return err
}
