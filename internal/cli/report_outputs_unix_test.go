//go:build unix

package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReportOutputsDistinct: two outputs of one command on one file (the
// same path, a symbolic link to the other, or standard output twice) are
// refused with exit 2 before anything is written.
func TestReportOutputsDistinct(t *testing.T) {
	dir := t.TempDir()
	in := writeReportResults(t, dir, "r.jsonl", reportCells("k", "naive", "none", 4, 1))
	same := filepath.Join(dir, "out.html")
	link := filepath.Join(dir, "link.html")
	if err := os.Symlink("out.html", link); err != nil {
		t.Fatal(err)
	}
	existing := writeFile(t, dir, "old.md", "old")
	oldLink := filepath.Join(dir, "old-link.md")
	if err := os.Symlink(existing, oldLink); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"report", in, "-o", same, "--html", same}, "--output and --html name the same file"},
		{[]string{"report", in, "-o", same, "--html", same, "--force"}, "--output and --html name the same file"},
		{[]string{"report", in, "-o", filepath.Join(dir, ".", "out.html"), "--html", same}, "the same file"},
		{[]string{"report", in, "-o", link, "--html", same}, "the same file"},
		{[]string{"report", in, "-o", existing, "--html", oldLink, "--force"}, "the same file"},
		{[]string{"report", in, "--html", "-"}, "standard output"},
		{[]string{"report", in, "-o", "-", "--html", "-"}, "standard output"},
	} {
		r := run(t, tt.args...)
		if r.code != ExitUsage || !strings.Contains(r.err, tt.want) || r.out != "" {
			t.Errorf("%v: exit %d, want 2 and %q:\n%s%s", tt.args, r.code, tt.want, r.out, r.err)
		}
	}
	if _, err := os.Lstat(same); err == nil {
		t.Error("a refused command wrote its output")
	}
	if b, _ := os.ReadFile(existing); string(b) != "old" {
		t.Errorf("a refused command replaced %s: %q", existing, b)
	}
	// --format html with the same --output and --html is one page.
	if r := run(t, "report", in, "--format", "html", "-o", same, "--html", same); r.code != 0 {
		t.Errorf("--format html: %+v", r)
	}
}

// TestReportOutputsNotSpecial: an output that exists and is not a regular
// file (a device like /dev/null, a FIFO, a symbolic link to one of them or
// to /proc/self/fd/1 when that is a pipe) is refused with exit 2, --force or
// not, by every command that writes one, and left as it was.
func TestReportOutputsNotSpecial(t *testing.T) {
	dir := t.TempDir()
	in := writeReportResults(t, dir, "r.jsonl", reportCells("k", "naive", "none", 4, 1))
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := func(name, target string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A device node of our own, never the system's /dev/null: a
	// regression running as root would replace that for every process.
	null := filepath.Join(dir, "null")
	if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		t.Logf("no device node (%v): a FIFO stands in", err)
		null = fifo
	}
	targets := []string{null, fifo, link("null.xml", null), link("fifo.html", fifo)}
	if info, err := os.Stat("/proc/self/fd/1"); err == nil && info.Mode()&(fs.ModeNamedPipe|fs.ModeSocket) != 0 {
		targets = append(targets, link("stdout.xml", "/proc/self/fd/1"))
	}
	var cases [][]string
	for _, out := range targets {
		cases = append(cases,
			[]string{"gate", in, "--max-asr", "0.5", "--junit", out},
			[]string{"report", in, "-o", out, "--force"},
			[]string{"report", in, "--html", out, "--force"},
		)
	}
	jsonlNull := link("null.jsonl", null)
	jsonNull := link("null.json", null)
	csvFifo := link("fifo.csv", fifo)
	cases = append(cases,
		[]string{"merge", in, "-o", jsonlNull, "--force"},
		[]string{"run", "--target", "mock", "-o", jsonNull, "--force"},
		[]string{"run", "--target", "mock", "-o", csvFifo, "--force"},
		[]string{"run", "--target", "mock", "-o", jsonlNull, "--force"},
	)
	for _, args := range cases {
		r := run(t, args...)
		if r.code != ExitUsage || !strings.Contains(r.err, "not a regular file") {
			t.Errorf("%v: exit %d, want 2 and \"not a regular file\":\n%s%s", args, r.code, r.out, r.err)
		}
	}
	if info, err := os.Lstat(null); err != nil || info.Mode().IsRegular() {
		t.Errorf("the device node was replaced: %v", err)
	}
	if info, err := os.Lstat(fifo); err != nil || info.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v", err)
	}
	for _, l := range []string{jsonlNull, jsonNull, csvFifo} {
		if info, err := os.Lstat(l); err != nil || info.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("%s was replaced: %v", l, err)
		}
	}
}

// TestReportOutputsStdout: "-" names standard output: report -o - and
// --format html -o - print there, gate --junit - prints the XML there (and
// its checks on stderr); no file named "-" appears.
func TestReportOutputsStdout(t *testing.T) {
	dir := t.TempDir()
	in := writeReportResults(t, dir, "r.jsonl", reportCells("k", "naive", "none", 4, 1))
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	if r := run(t, "report", in, "-o", "-", "--format", "markdown"); r.code != 0 || !strings.Contains(r.out, "| cells |") {
		t.Errorf("report -o -: %+v", r)
	}
	if r := run(t, "report", in, "--format", "html", "-o", "-"); r.code != 0 || !strings.HasPrefix(r.out, "<!DOCTYPE html>") {
		t.Errorf("report --format html -o -: %.200q", r.out)
	}
	if r := run(t, "report", in, "-o", filepath.Join(dir, "s.md"), "--html", "-"); r.code != 0 || !strings.HasPrefix(r.out, "<!DOCTYPE html>") {
		t.Errorf("report --html -: %.200q %s", r.out, r.err)
	}
	r := run(t, "gate", in, "--max-asr", "0.5", "--junit", "-")
	if r.code != 0 || !strings.HasPrefix(r.out, "<?xml") || strings.Contains(r.out, "ok   all cells") || !strings.Contains(r.err, "ok   all cells") {
		t.Errorf("gate --junit -: %+v", r)
	}
	if _, err := os.Lstat(filepath.Join(dir, "-")); err == nil {
		t.Error(`a file named "-" was written`)
	}
}

// TestReportOutputModes: every results and report file the commands write
// is 0644 less the umask.
func TestReportOutputModes(t *testing.T) {
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
	for _, umask := range []int{0o022, 0o027} {
		syscall.Umask(umask)
		dir := t.TempDir()
		in := writeReportResults(t, dir, "in.jsonl", reportCells("k", "naive", "none", 4, 1))
		want := fs.FileMode(0o644 &^ umask)
		out := func(name string) string { return filepath.Join(dir, name) }
		for _, args := range [][]string{
			{"report", in, "-o", out("s.md"), "--format", "markdown", "--html", out("r.html")},
			{"report", in, "-o", out("s.csv"), "--format", "csv"},
			{"gate", in, "--max-asr", "0.5", "--junit", out("g.xml")},
			{"merge", in, "-o", out("m.jsonl")},
			{"run", "--target", "mock", "-o", out("r.jsonl")},
			{"run", "--target", "mock", "-o", out("r.json")},
			{"run", "--target", "mock", "-o", out("r.csv")},
			{"run", "--target", "mock", "-o", out("r.json"), "--force"},
		} {
			if r := run(t, args...); r.code != 0 {
				t.Fatalf("%v: %+v", args, r)
			}
		}
		for _, name := range []string{"s.md", "r.html", "s.csv", "g.xml", "m.jsonl", "r.jsonl", "r.json", "r.csv"} {
			if info, err := os.Stat(out(name)); err != nil || info.Mode().Perm() != want {
				t.Errorf("umask %03o: %s: mode %v, want %v (%v)", umask, name, info.Mode().Perm(), want, err)
			}
		}
	}
}
