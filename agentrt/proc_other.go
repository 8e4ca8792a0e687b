//go:build !unix

package agentrt

import (
	"fmt"
	"os"
	"os/exec"
)

type signal int

const (
	sigTerm signal = iota
	sigKill
)

// setGroup does nothing where there are no process groups: a timeout
// ends the agent's own process only.
func setGroup(*exec.Cmd) {}

// signalGroup kills the agent's process.
func signalGroup(cmd *exec.Cmd, _ signal) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}

// openTrace opens a trace file for reading only if it is a regular file,
// not a link the agent put in its place.
func openTrace(path string) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%v); pikit reads only the file it created", fi.Mode().Type())
	}
	return os.Open(path)
}
