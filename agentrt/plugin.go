package agentrt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/pikit-go/pikit/internal/safefile"
)

// ProfileError is a profile pikit refuses to write into: what is at Path
// is not what pikit puts there (a file pikit's plugin does not have, a
// symbolic link, a hard link). Nothing was written and nothing was run.
type ProfileError struct {
	Path string // the file or directory refused
	Msg  string // what it is, and what to do
}

func (e *ProfileError) Error() string { return e.Path + ": " + e.Msg }

// pluginLayout is where a runtime's fixture plugin comes from (in
// plugins) and goes (in a profile, slash-separated), and the names at the
// top of its folder that its build or its runtime makes: pikit removes
// them when it writes the plugin, and they are remade from pikit's files.
type pluginLayout struct {
	src, dst  string
	generated []string
}

var pluginLayouts = map[string]pluginLayout{
	"hermes":   {src: "plugins/hermes/pikit_fixture", dst: hermesPlugin, generated: []string{"__pycache__"}},
	"openclaw": {src: "plugins/openclaw/pikit-openclaw-fixture", dst: openclawPlugin, generated: []string{"node_modules", "dist"}},
}

// writePlugin writes the fixture plugin of l fresh into the profile at
// root (its path at): pikit's own files replace what is under their
// names, and what its build or its runtime made (l.generated, where a
// planted script or a stale bytecode file could hide) is removed. A
// folder that holds anything else, a symbolic link in pikit's place, or
// a plugin folder (or a folder above it) that is a link is refused with
// a *ProfileError before anything is written. Every write stays inside
// the profile (os.Root) and is never made through a link.
func writePlugin(root *os.Root, at string, l pluginLayout) error {
	if err := realDirs(root, at, l.dst); err != nil {
		return err
	}
	dir, err := root.OpenRoot(filepath.FromSlash(l.dst))
	if err != nil {
		return err
	}
	defer dir.Close()
	src, err := fs.Sub(plugins, l.src)
	if err != nil {
		return err
	}
	where := filepath.Join(at, filepath.FromSlash(l.dst))
	if err := checkPlugin(dir, where, src, l.generated); err != nil {
		return err
	}
	for _, g := range l.generated {
		if err := dir.RemoveAll(g); err != nil {
			return fmt.Errorf("removing %s: %w", filepath.Join(where, g), err)
		}
	}
	return fs.WalkDir(src, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		name := filepath.FromSlash(p)
		if d.IsDir() {
			if err := dir.Mkdir(name, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			return nil
		}
		b, err := fs.ReadFile(src, p)
		if err != nil {
			return err
		}
		return replaceFile(dir, name, b)
	})
}

// replaceFile writes b as name in dir, a new file in place of whatever
// was there (checkPlugin saw a regular file, or nothing): removing the
// name first, a hard link's other name is left as it is.
func replaceFile(dir *os.Root, name string, b []byte) error {
	if err := dir.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := dir.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// realDirs makes the directories of rel (slash-separated) in root, each
// one a directory of its own: one that is a symbolic link (to elsewhere
// in the profile or out of it) is refused.
func realDirs(root *os.Root, at, rel string) error {
	p := ""
	for _, part := range strings.Split(rel, "/") {
		p = path.Join(p, part)
		name := filepath.FromSlash(p)
		fi, err := root.Lstat(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := root.Mkdir(name, 0o755); err != nil {
				return err
			}
		case err != nil:
			return err
		case !fi.IsDir():
			return &ProfileError{Path: filepath.Join(at, name), Msg: fmt.Sprintf("is %s, not a directory: pikit writes its fixture plugin only into a directory of its own in the profile; move it away, or choose a new profile directory", kind(fi.Mode()))}
		}
	}
	return nil
}

// checkPlugin says why the plugin folder dir (at where) is not pikit's
// to write over: something in it that pikit's plugin (src) does not
// have, or that is not the same kind of file (a symbolic link where
// pikit has a file or a directory). Names in generated, at the top, are
// not looked into: pikit removes them.
func checkPlugin(dir *os.Root, where string, src fs.FS, generated []string) error {
	return fs.WalkDir(dir.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		at := filepath.Join(where, filepath.FromSlash(p))
		if isGenerated(p, generated) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		want, err := fs.Stat(src, p)
		if errors.Is(err, fs.ErrNotExist) {
			return &ProfileError{Path: at, Msg: fmt.Sprintf("is not a file of pikit's fixture plugin: pikit writes its plugin only over a folder that holds its own files (and %s, which it remakes); move it away, or choose a new profile directory", strings.Join(generated, ", "))}
		}
		if err != nil {
			return err
		}
		if d.Type() != want.Mode().Type() {
			return &ProfileError{Path: at, Msg: fmt.Sprintf("is %s where pikit's fixture plugin has %s: pikit does not write through it; move it away, or choose a new profile directory", kind(d.Type()), kind(want.Mode()))}
		}
		return nil
	})
}

// isGenerated reports whether the slash path p is, or is under, one of
// the top-level names in generated.
func isGenerated(p string, generated []string) bool {
	top, _, _ := strings.Cut(p, "/")
	for _, g := range generated {
		if top == g {
			return true
		}
	}
	return false
}

// checkConfig says why the file name in root (at path at) may not be a
// profile's configuration, which the runtime rewrites: it is not a
// regular file, or it has other names (a hard link). A missing one is
// fine: Init writes it.
func checkConfig(root *os.Root, at, name string) error {
	fi, err := root.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return &ProfileError{Path: at, Msg: fmt.Sprintf("is %s: the runtime rewrites its configuration, and pikit does not let it write through a link; put a file in its place, or choose a new profile directory", kind(fi.Mode()))}
	}
	if n, ok := safefile.Links(fi); ok && n > 1 {
		return &ProfileError{Path: at, Msg: fmt.Sprintf("has %d names (a hard link): the runtime rewrites its configuration, and pikit does not let it write to a file elsewhere; put a copy in its place, or choose a new profile directory", n)}
	}
	return nil
}

// kind names a file's type in a phrase.
func kind(m fs.FileMode) string {
	switch t := m.Type(); {
	case t == 0:
		return "a regular file"
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	case t&fs.ModeDir != 0:
		return "a directory"
	default:
		return "a special file (" + t.String() + ")"
	}
}
