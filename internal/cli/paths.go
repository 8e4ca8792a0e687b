package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pikit-go/pikit/report"
)

// checkOutput checks a file a command is about to write, before anything
// runs: when it exists it must be a regular file (or a symbolic link to
// one: not a directory, a device such as /dev/null, a FIFO or a socket,
// which pikit would otherwise replace with a regular file), its directory
// must exist, and it must not be any of the command's inputs (a config, a
// dataset, a results file being read), whatever --force says: writing it
// would destroy what the run reads. flag names the option in messages
// ("--output", "--html"). "-" is standard output. Inputs that are not
// files (a built-in dataset's name, "-") are ignored.
func checkOutput(flag, out string, inputs ...string) error {
	if out == "" || out == "-" {
		return nil
	}
	info, err := os.Stat(out)
	switch {
	case err == nil && info.IsDir():
		return usage(fmt.Errorf("%s %s: is a directory; give a file name inside it", flag, out))
	case err == nil:
		if err := report.CheckOutputFile(out); err != nil {
			return usage(fmt.Errorf("%s %w", flag, err))
		}
	case errors.Is(err, fs.ErrNotExist):
		dir := filepath.Dir(out)
		d, derr := os.Stat(dir)
		if derr != nil {
			return usage(fmt.Errorf("%s %s: directory %s does not exist", flag, out, dir))
		}
		if !d.IsDir() {
			return usage(fmt.Errorf("%s %s: %s is not a directory", flag, out, dir))
		}
	case err != nil:
		return usage(fmt.Errorf("%s %s: %w", flag, out, err))
	}
	for _, in := range inputs {
		if in == "" || in == "-" {
			continue
		}
		if sameFile(out, in) {
			return usage(fmt.Errorf("%s %s is also an input of this command (%s): choose another file; --force does not allow this", flag, out, in))
		}
	}
	return nil
}

// outName names an output in messages: "standard output" for "-".
func outName(path string) string {
	if path == "-" {
		return "standard output"
	}
	return path
}

// output is one file a command writes: its flag and its path ("-" for
// standard output).
type output struct{ flag, path string }

// checkDistinct refuses two outputs of one command that name one file (the
// same path, or a link to the other: one would overwrite the other) or
// both standard output, before anything is written. Outputs with no path
// are not written and are ignored.
func checkDistinct(outs ...output) error {
	for i, a := range outs {
		for _, b := range outs[i+1:] {
			switch {
			case a.path == "" || b.path == "":
			case a.path == "-" && b.path == "-":
				return usage(fmt.Errorf("%s and %s both write to standard output; give one of them a file", a.flag, b.flag))
			case a.path != "-" && b.path != "-" && sameFile(a.path, b.path):
				return usage(fmt.Errorf("%s and %s name the same file (%s): one would overwrite the other; give two files", a.flag, b.flag, a.path))
			}
		}
	}
	return nil
}

// sameFile reports whether two paths name one file: the same inode when
// both exist (so symbolic and hard links count), else the same absolute
// path once symbolic links in their directories are resolved.
func sameFile(a, b string) bool {
	ia, erra := os.Stat(a)
	ib, errb := os.Stat(b)
	if erra == nil && errb == nil {
		return os.SameFile(ia, ib)
	}
	return resolved(a) == resolved(b)
}

// resolved is the absolute path a write to p lands on: a symbolic link at
// p is followed (to a file not there yet, too), as are links among its
// directories.
func resolved(p string) string {
	if target, err := report.OutputPath(p); err == nil {
		p = target
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}
