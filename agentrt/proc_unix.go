//go:build unix

package agentrt

import (
	"fmt"
	"os"
	"syscall"
)

// openTrace opens a trace file for reading without following a symbolic
// link or blocking on a FIFO, and only if it is a regular file.
func openTrace(path string) (*os.File, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if err == syscall.ELOOP {
			return nil, fmt.Errorf("replaced by a symbolic link; pikit reads only the file it created")
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("not a regular file (%v); pikit reads only the file it created", fi.Mode().Type())
	}
	return f, nil
}
