// Package safefile writes outputs whose names others can choose or
// compute (a file per cell, named by its key, in a directory the user
// named) without following a link planted there, and says how many
// names a file has, so a reader can refuse a hard link to something
// outside its directory.
package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrExists is returned by Dir.Create for a name already taken by
// something Create will not replace.
var ErrExists = errors.New("already exists")

// Dir is a directory that per-cell outputs are written into. Every file
// is created new, exclusively, inside the directory (os.Root): a symbolic
// link planted under a cell's name is never followed, and a name never
// leads out of the directory.
type Dir struct {
	root    *os.Root
	path    string
	replace bool
}

// Open makes the directory at path when it is missing and opens it for
// writing. With replace (a resumed run rewriting its own files), Create
// replaces a regular file with one name (not a link of either kind);
// without it, Create refuses any name already taken.
func Open(path string, replace bool) (*Dir, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	return &Dir{root: root, path: path, replace: replace}, nil
}

// Path is the directory's path as given to Open.
func (d *Dir) Path() string { return d.path }

// Close releases the directory.
func (d *Dir) Close() error { return d.root.Close() }

// Create creates name (one path element) in the directory for writing,
// with mode perm less the umask. A name already taken is refused with
// ErrExists, unless the directory was opened to replace and what is
// there is a regular file with no other name, which is removed first.
func (d *Dir) Create(name string, perm fs.FileMode) (*os.File, error) {
	if name == "" || name != filepath.Base(name) || name == "." || name == ".." {
		return nil, fmt.Errorf("%s: %q is not a file name in it", d.path, name)
	}
	const flags = os.O_WRONLY | os.O_CREATE | os.O_EXCL
	f, err := d.root.OpenFile(name, flags, perm)
	if err == nil || !errors.Is(err, fs.ErrExist) {
		return f, err
	}
	at := filepath.Join(d.path, name)
	fi, lerr := d.root.Lstat(name)
	switch {
	case lerr != nil:
		return nil, err
	case !d.replace:
		return nil, fmt.Errorf("%s: %w (pikit writes only new files there)", at, ErrExists)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s: %w and is not a regular file (%s): not replaced", at, ErrExists, fi.Mode().Type())
	}
	if n, ok := Links(fi); ok && n > 1 {
		return nil, fmt.Errorf("%s: %w with %d names (a hard link): not replaced", at, ErrExists, n)
	}
	if err := d.root.Remove(name); err != nil {
		return nil, err
	}
	return d.root.OpenFile(name, flags, perm)
}

// WriteFile writes data to name in the directory, as Create does.
func (d *Dir) WriteFile(name string, data []byte, perm fs.FileMode) error {
	f, err := d.Create(name, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
