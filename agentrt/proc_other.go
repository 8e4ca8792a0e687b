//go:build !unix

package agentrt

import (
	"fmt"
	"os"
)

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
