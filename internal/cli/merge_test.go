package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMergeToStdout: merge -o - writes the merged JSONL to standard
// output, never a file named "-"; what it says goes to stderr.
func TestMergeToStdout(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	a := writeReportResults(t, dir, "a.jsonl", reportCells("a", "naive", "none", 3, 1))
	r := run(t, "merge", a, a, "-o", "-")
	if r.code != 0 || len(stdoutKeys(t, r.out)) != 3 || !strings.Contains(r.err, "3 duplicates dropped") || !strings.Contains(r.err, "→ standard output") {
		t.Errorf("%+v", r)
	}
	if _, err := os.Lstat(filepath.Join(dir, "-")); err == nil {
		t.Errorf("a file named - was written")
	}
}
