//go:build !unix

package mcpserve

import "os/exec"

// setProcessGroup does nothing where there are no process groups.
func setProcessGroup(*exec.Cmd) {}

// termGroup kills the command: there is no gentler signal here.
func termGroup(cmd *exec.Cmd) { killGroup(cmd) }

// killGroup kills the command.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
