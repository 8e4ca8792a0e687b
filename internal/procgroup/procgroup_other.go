//go:build !unix

package procgroup

import "os/exec"

// Set does nothing where there are no process groups.
func Set(*exec.Cmd) {}

// Term ends the process of a started cmd.
func Term(cmd *exec.Cmd) error { return Kill(cmd) }

// Kill ends the process of a started cmd.
func Kill(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}
