package report

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A resumed results file is rewritten as any results file is written: the
// mode a new file gets (0644 less the umask, not a temporary file's 0600),
// through a symbolic link to the file it leads to, which stays a link.
func TestResumeRewriteKeepsTheRule(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	real := filepath.Join(dir, "real.jsonl")
	line := `{"key":"a","attack":"naive","outcome":"refused","success":false}`
	broken := `{"key":"b","attack":"naive","outcome":"runtime_error","success":false}`
	if err := os.WriteFile(real, []byte(line+"\n"+broken+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "results.jsonl")
	if err := os.Symlink("real.jsonl", link); err != nil {
		t.Skipf("no symbolic links: %v", err)
	}
	done, dropped, err := Resume(link)
	if err != nil || !done["a"] || dropped != 1 {
		t.Fatalf("Resume: %v %v %d", err, done, dropped)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
	fi, err := os.Stat(real)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v; want 0644", fi.Mode().Perm(), err)
	}
	b, _ := os.ReadFile(real)
	if strings.TrimSpace(string(b)) != line {
		t.Errorf("rewritten as %q", b)
	}
}
