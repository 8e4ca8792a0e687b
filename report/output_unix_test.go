//go:build unix

package report

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
)

// privateNull makes a character device node like /dev/null (1, 3) in dir
// and returns its path, or "" when the process may not make one (not
// root). Tests aim at it, never at the system's /dev/null: a regression
// running as root would replace that for every process on the machine.
func privateNull(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "null")
	if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Logf("no device node: %v", err)
		return ""
	}
	return p
}

// specialFiles makes, in dir, one of each thing an output path may name
// that is not a regular file, and symbolic links to some of them; a device
// node only when the test may make one (see privateNull).
func specialFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{"fifo": fifo, "socket": sock, "directory": sub}
	targets := map[string]string{"fifo-link": fifo}
	if null := privateNull(t, dir); null != "" {
		out["device"], targets["null-link"] = null, null
	}
	// /proc/self/fd/1 only when it leads to a pipe or a socket: were it
	// the system's /dev/null, a regression would replace that.
	if info, err := os.Stat("/proc/self/fd/1"); err == nil && info.Mode()&(fs.ModeNamedPipe|fs.ModeSocket) != 0 {
		targets["fd1-link"] = "/proc/self/fd/1"
	}
	for name, target := range targets {
		p := filepath.Join(dir, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		out[name] = p
	}
	return out
}

// TestOutputsRefuseNonRegular: an output path that exists and is not a
// regular file (a device, a FIFO, a socket, a directory, or a symbolic
// link to one) is refused before anything is written, --force or not, and
// is left as it was: /dev/null stays a device.
func TestOutputsRefuseNonRegular(t *testing.T) {
	dir := t.TempDir()
	for name, path := range specialFiles(t, dir) {
		before, _ := os.Lstat(path)
		if err := CheckOutputFile(path); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: CheckOutputFile: %v", name, err)
		}
		for _, ext := range []string{".jsonl", ".json", ".csv"} {
			// The extension picks the format; the path is the special
			// file (through a symlink named with the extension).
			p := filepath.Join(dir, name+ext)
			if err := os.Symlink(path, p); err != nil {
				t.Fatal(err)
			}
			w, err := Create(p, true)
			if err == nil {
				w.Close()
			}
			if !errors.Is(err, ErrNotRegular) {
				t.Errorf("%s%s: Create with force: %v, want ErrNotRegular", name, ext, err)
			}
		}
		err := WriteFileAtomic(path, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err })
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("%s: WriteFileAtomic: %v, want ErrNotRegular", name, err)
		}
		after, err := os.Lstat(path)
		if err != nil || after.Mode() != before.Mode() {
			t.Errorf("%s: changed from %v to %v (%v)", name, before.Mode(), after.Mode(), err)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

// TestOutputsFollowSymlinks: a symbolic link to a regular file is written
// through: the file it points to gets the new content, the link stays.
func TestOutputsFollowSymlinks(t *testing.T) {
	dir := t.TempDir()
	res := []matrix.Result{{Key: "k", Attack: "naive", Agent: "chat", Outcome: judge.Refused}}
	for _, name := range []string{"r.jsonl", "r.json", "r.csv", "page.html"} {
		real := filepath.Join(dir, "real-"+name)
		if err := os.WriteFile(real, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, name)
		if err := os.Symlink("real-"+name, link); err != nil {
			t.Fatal(err)
		}
		if filepath.Ext(name) == ".html" {
			if err := WriteFileAtomic(link, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
				t.Fatal(err)
			}
		} else {
			w, err := Create(link, true)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				w.Write(r)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if info, err := os.Lstat(link); err != nil || info.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("%s: the link was replaced: %v %v", name, info.Mode(), err)
		}
		if b, _ := os.ReadFile(real); string(b) == "old" {
			t.Errorf("%s: the file the link points to was not written", name)
		}
	}
}

// TestOutputModes: every results and report file pikit writes is 0644
// less the umask, whatever the format, new or replaced with force.
func TestOutputModes(t *testing.T) {
	res := []matrix.Result{{Key: "k", Attack: "naive", Agent: "chat", Outcome: judge.Refused}}
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
	for _, umask := range []int{0o022, 0o027, 0o077} {
		syscall.Umask(umask)
		dir := t.TempDir()
		want := fs.FileMode(0o644 &^ umask)
		for _, name := range []string{"r.jsonl", "r.json", "r.csv"} {
			p := filepath.Join(dir, name)
			for _, force := range []bool{false, true} {
				if force {
					os.Chmod(p, 0o600) // replaced files do not keep their mode either
				}
				w, err := Create(p, force)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range res {
					w.Write(r)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				if info, err := os.Stat(p); err != nil || info.Mode().Perm() != want {
					t.Errorf("umask %03o: %s (force %v): mode %v, want %v", umask, name, force, info.Mode().Perm(), want)
				}
			}
		}
		p := filepath.Join(dir, "page.html")
		for range 2 {
			if err := WriteFileAtomic(p, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }); err != nil {
				t.Fatal(err)
			}
			if info, err := os.Stat(p); err != nil || info.Mode().Perm() != want {
				t.Errorf("umask %03o: WriteFileAtomic: mode %v, want %v", umask, info.Mode().Perm(), want)
			}
			os.Chmod(p, 0o600)
		}
	}
}
