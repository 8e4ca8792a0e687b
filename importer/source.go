package importer

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pikit-go/pikit/internal/safefile"
	"github.com/pikit-go/pikit/method"
)

// A benchmark's files are someone else's: a file in the directory the
// user named may be a symbolic link to a file elsewhere (a key, the
// environment of a process), or a hard link to one, and its text would
// land in the dataset. Every file an importer reads is opened through a
// source: inside the benchmark's directory through os.Root, which refuses
// any path (a link swapped in since it was listed included) that leads
// out of it, and refused when it has more than one name, unless the user
// trusts the benchmark (pikit import --trust-config).

// TrustOption is the option of every importer that lets it read through
// links: pikit import --trust-config sets it.
const TrustOption = "trust_links"

// sourceOptions are the options every importer takes about where it may
// read.
var sourceOptions = []method.Option{
	{Name: TrustOption, Default: false, Help: "read files through symbolic links that leave the benchmark's directory, and files with other names (hard links); pikit import --trust-config sets it"},
}

// source is a benchmark's directory: the one the user named, or the one
// the benchmark's layout puts the named file or part in (a BIPIA task
// file's benchmark directory, an AgentDojo suite's data directory).
type source struct {
	dir   string
	trust bool // read paths as they are, links and all
}

// newSource returns the source of a benchmark in dir.
func newSource(dir string, trust bool) source {
	return source{dir: filepath.Clean(dir), trust: trust}
}

// at is s, or for a zero source (no directory) the directory of file.
func (s source) at(file string) source {
	if s.dir == "" {
		s.dir = filepath.Dir(file)
	}
	return s
}

// rel returns file's path inside the directory, or an error when it is
// not under it.
func (s source) rel(file string) (string, error) {
	dir, err := filepath.Abs(s.dir)
	if err != nil {
		return "", &Error{File: file, Msg: err.Error()}
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", &Error{File: file, Msg: err.Error()}
	}
	rel, err := filepath.Rel(dir, abs)
	if err != nil || !filepath.IsLocal(rel) {
		return "", &Error{File: file, Msg: fmt.Sprintf("outside the benchmark's directory %s: an import reads only the benchmark's own files", s.dir)}
	}
	return rel, nil
}

// refused words the error of a path os.Root would not follow: a
// symbolic link out of the directory, or any other failure.
func (s source) refused(file string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return &Error{File: file, Msg: fmt.Sprintf("cannot read it: %v", errUnwrap(err))}
	}
	real, rerr := filepath.EvalSymlinks(file)
	dir, derr := filepath.EvalSymlinks(s.dir)
	if rerr == nil && derr == nil {
		if _, out := (source{dir: dir}).rel(real); out != nil {
			return &Error{File: file, Msg: fmt.Sprintf("a symbolic link to %s, outside the benchmark's directory %s: refused, as a benchmark's files may not make pikit read elsewhere; copy the file in, or give --trust-config", real, s.dir)}
		}
	}
	return &Error{File: file, Msg: fmt.Sprintf("cannot read it: %v", errUnwrap(err))}
}

// open opens a regular file of the benchmark for reading, with its
// information; a file with more than one name is refused unless trusted.
func (s source) open(file string) (*os.File, fs.FileInfo, error) {
	f, err := s.openAny(file)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
		f.Close()
		return nil, nil, &Error{File: file, Msg: fmt.Sprintf("cannot read it: %v", errUnwrap(err))}
	case !fi.Mode().IsRegular():
		f.Close()
		return nil, nil, &Error{File: file, Msg: "not a regular file"}
	}
	if n, ok := safefile.Links(fi); ok && n > 1 && !s.trust {
		f.Close()
		return nil, nil, &Error{File: file, Msg: fmt.Sprintf("the file has %d names (a hard link), so its text may be a file's from outside the benchmark's directory: refused; copy it in (cp, not ln), or give --trust-config", n)}
	}
	return f, fi, nil
}

// openAny opens file in the directory, or as it is when trusted.
func (s source) openAny(file string) (*os.File, error) {
	s = s.at(file)
	if s.trust {
		f, err := os.Open(file)
		if err != nil {
			return nil, &Error{File: file, Msg: fmt.Sprintf("cannot read it: %v", errUnwrap(err))}
		}
		return f, nil
	}
	rel, err := s.rel(file)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(s.dir)
	if err != nil {
		return nil, &Error{File: s.dir, Msg: fmt.Sprintf("cannot read it: %v", errUnwrap(err))}
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return nil, s.refused(file, err)
	}
	return f, nil
}

// readFile reads a file of the benchmark of at most MaxFileBytes.
func (s source) readFile(file string) ([]byte, error) {
	f, fi, err := s.open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > MaxFileBytes {
		return nil, &Error{File: file, Msg: fmt.Sprintf("%d bytes, over the %d a benchmark file may have", fi.Size(), MaxFileBytes)}
	}
	// The size a file reports is no bound (/proc files say 0): read one
	// byte past the limit to know.
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, &Error{File: file, Msg: fmt.Sprintf("cannot read it: %v", errUnwrap(err))}
	}
	if len(b) > MaxFileBytes {
		return nil, &Error{File: file, Msg: fmt.Sprintf("over the %d bytes a benchmark file may have", MaxFileBytes)}
	}
	return b, nil
}

// exists reports whether file is there, a link included: anything but
// a missing file counts, so that a link out of the directory (or through
// a directory linked out) is refused when it is read, not taken for a
// file the benchmark lacks.
func (s source) exists(file string) bool {
	s = s.at(file)
	var err error
	if s.trust {
		_, err = os.Lstat(file)
	} else {
		err = s.lstat(file)
	}
	return !errors.Is(err, fs.ErrNotExist)
}

// lstat looks file up in the directory, not following a last link.
func (s source) lstat(file string) error {
	rel, err := s.rel(file)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(s.dir)
	if err != nil {
		return err
	}
	defer root.Close()
	_, err = root.Lstat(rel)
	return err
}

// readDir lists a directory of the benchmark.
func (s source) readDir(dir string) ([]fs.DirEntry, error) {
	if s.dir == "" {
		s.dir = dir
	}
	if s.trust {
		return os.ReadDir(dir)
	}
	rel, err := s.rel(dir)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(s.dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return nil, s.refused(dir, err)
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, &Error{File: dir, Msg: fmt.Sprintf("cannot list it: %v", errUnwrap(err))}
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, nil
}
