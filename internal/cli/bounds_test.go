package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFileSizeBound (item 14): a config or dataset file over the bound is
// refused before it is parsed, naming the file and the flag that raises
// the bound; the flag does.
func TestFileSizeBound(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("[meta]\nname = \"big\"\n")
	for i := 0; b.Len() < 40<<10; i++ {
		fmt.Fprintf(&b, "\n[[cases]]\nid = \"c%d\"\nattacks = [\"naive\"]\ntask = \"Reply with HACKED %d.\"\n", i, i)
	}
	ds := writeFile(t, dir, "big.toml", b.String())
	cfg := writeFile(t, dir, "big-config.toml", "attacks = [\"naive\"]\n# "+strings.Repeat("padding ", 5<<10)+"\n")
	for _, args := range [][]string{
		{"dataset", "show", ds, "--max-file-size", "32KiB"},
		{"dataset", "run", ds, "--max-file-size", "32KiB", "--dry-run"},
		{"matrix", "-c", cfg, "--max-file-size", "32KiB", "--dry-run"},
		{"run", "-c", cfg, "--max-file-size", "32KiB"},
	} {
		r := run(t, args...)
		if r.code != ExitUsage || !strings.Contains(r.err, "over the 32 KiB a config or dataset file may have") || !strings.Contains(r.err, "--max-file-size") || !strings.Contains(r.err, dir) {
			t.Errorf("%v: exit %d, want 2 naming the file and --max-file-size:\n%s", args[:2], r.code, r.err)
		}
		for i, a := range args {
			if a == "32KiB" {
				args[i] = "1MiB"
			}
		}
		if r := run(t, args...); r.code != 0 {
			t.Errorf("%v with 1MiB: exit %d\n%s", args[:2], r.code, r.err)
		}
	}
	if r := run(t, "matrix", "-c", cfg, "--max-file-size", "lots"); r.code != ExitUsage || !strings.Contains(r.err, "16MiB") {
		t.Errorf("a bad size: exit %d\n%s", r.code, r.err)
	}
}

// A file with a mistake in every one of thousands of cases says the first
// twenty and how many more, and quotes a long bad value only in part.
func TestManyErrorsBounded(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("[meta]\nname = \"bad\"\n")
	long := strings.Repeat("x", 5000)
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&b, "\n[[cases]]\nid = \"c%d\"\nattacks = [\"%s\"]\n", i, long)
	}
	ds := writeFile(t, dir, "bad.toml", b.String())
	r := run(t, "dataset", "show", ds)
	if r.code != ExitUsage || !strings.Contains(r.err, "and 2980 more errors") || len(r.err) > 64<<10 {
		t.Errorf("exit %d, %d bytes of errors:\n%.2000s", r.code, len(r.err), r.err)
	}
	if strings.Contains(r.err, strings.Repeat("x", 200)) {
		t.Error("a long unknown name is quoted whole")
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.toml")); err != nil {
		t.Fatal(err)
	}
}
