package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// checkOutput checks a file a command is about to write, before anything
// runs: it must not be a directory, its directory must exist, and it must
// not be any of the command's inputs (a config, a dataset, a results file
// being read), whatever --force says: writing it would destroy what the run
// reads. flag names the option in messages ("--output", "--html"). Inputs
// that are not files (a built-in dataset's name, "-") are ignored.
func checkOutput(flag, out string, inputs ...string) error {
	if out == "" || out == "-" {
		return nil
	}
	info, err := os.Stat(out)
	switch {
	case err == nil && info.IsDir():
		return usage(fmt.Errorf("%s %s: is a directory; give a file name inside it", flag, out))
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

func resolved(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}
