package report

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// The one rule for every file pikit writes as a result or a report: it is
// a regular file, mode 0644 less the umask; a symbolic link is written
// through (the file it points to is replaced, the link stays); and a path
// that names something else (a device such as /dev/null, a FIFO, a
// socket, a directory, or a link to one) is refused, never replaced.

// ErrNotRegular is wrapped by the error about an output path that exists
// and is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// fileMode is the mode of the files pikit writes, less the umask.
const fileMode = 0o644

// CheckOutputFile reports whether a results or report file may be written
// at path: nil when nothing is there or it is a regular file (or a
// symbolic link to one), else an error wrapping ErrNotRegular that names
// the path and what it is.
func CheckOutputFile(path string) error {
	_, err := OutputPath(path)
	return err
}

// OutputPath returns the file a write to path creates or replaces: path
// itself, or the file a symbolic link at path leads to, whether or not
// that file exists yet (as opening the link for writing would create it).
// It is an error wrapping ErrNotRegular when path exists and is not a
// regular file (see CheckOutputFile).
func OutputPath(path string) (string, error) {
	info, err := os.Stat(path)
	switch {
	case err == nil && !info.Mode().IsRegular():
		return "", notRegular(path, info.Mode())
	case err == nil:
		return filepath.EvalSymlinks(path)
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	// Nothing there, or a link (or a chain of them) to nothing yet.
	p := path
	for range 40 {
		info, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return p, nil
		case err != nil:
			return "", err
		case info.Mode()&fs.ModeSymlink == 0:
			return "", fmt.Errorf("%s: changed while it was looked at", path)
		}
		dest, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(p), dest)
		}
		p = dest
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}

// notRegular is the error about an output path of a mode other than a
// regular file's.
func notRegular(path string, mode fs.FileMode) error {
	what := "not a regular file"
	switch {
	case mode.IsDir():
		what = "a directory"
	case mode&fs.ModeCharDevice != 0:
		what = "a character device"
	case mode&fs.ModeDevice != 0:
		what = "a block device"
	case mode&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	}
	return fmt.Errorf("%s: is %s, %w: pikit writes results and reports only to regular files (\"-\" writes to standard output)", path, what, ErrNotRegular)
}

// createTemp creates a new file for writing in dir, named prefix and a
// random suffix, with mode 0644 less the umask (os.CreateTemp's files are
// 0600).
func createTemp(dir, prefix string) (*os.File, error) {
	for range 10000 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("%s: no free name for a temporary file", dir)
}

// atomicFile is a file written under a temporary name beside its target
// and renamed over it when complete.
type atomicFile struct {
	*os.File
	target string
}

// createAtomic starts a file that replaces path whole (see WriteFileAtomic).
func createAtomic(path string) (*atomicFile, error) {
	target, err := OutputPath(path)
	if err != nil {
		return nil, err
	}
	f, err := createTemp(filepath.Dir(target), "."+filepath.Base(target)+".tmp-")
	if err != nil {
		return nil, err
	}
	return &atomicFile{File: f, target: target}, nil
}

// commit closes the file and, when err is nil, renames it over its target,
// unless the target has meanwhile become something other than a regular
// file. The temporary file never outlives it.
func (a *atomicFile) commit(err error) error {
	if cerr := a.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if info, lerr := os.Lstat(a.target); lerr == nil && !info.Mode().IsRegular() {
			err = notRegular(a.target, info.Mode())
		}
	}
	if err == nil {
		err = os.Rename(a.Name(), a.target)
	}
	if err != nil {
		os.Remove(a.Name())
	}
	return err
}

// WriteFileAtomic writes a results or report file whole, through a
// temporary file beside it renamed over it when write is done: a crash
// leaves the old file or none, never half a file. The file's mode is 0644
// less the umask. A symbolic link is written through; a path that names
// anything but a regular file is refused with an error wrapping
// ErrNotRegular, and never replaced.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	a, err := createAtomic(path)
	if err != nil {
		return err
	}
	err = a.commit(write(a))
	if err != nil && !errors.Is(err, ErrNotRegular) {
		return fmt.Errorf("%s: %w", path, err)
	}
	return err
}

// createInPlace creates a file that is written where it is (JSONL, flushed
// a line at a time), replacing what path holds when replace is set. A
// replaced file is removed first, so the new one has the mode a new file
// gets rather than the old file's.
func createInPlace(path string, replace bool) (*os.File, error) {
	target, err := OutputPath(path)
	if err != nil {
		return nil, err
	}
	if replace {
		if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
}
