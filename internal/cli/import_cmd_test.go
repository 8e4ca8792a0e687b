package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportLinkedFileNeedsTrust (issue 36, items 7 and 8): a benchmark
// directory whose tools.json is a symbolic link to a file outside it, or
// a hard link to one, is refused (exit 2, naming the file) and nothing
// is written; with --trust-config the user lets the import read it.
func TestImportLinkedFileNeedsTrust(t *testing.T) {
	fixture := filepath.Join("..", "..", "importer", "testdata", "injecagent")
	for _, tc := range []struct {
		name string
		link func(oldname, newname string) error
		want string
	}{
		{"symbolic link", os.Symlink, "symbolic link"},
		{"hard link", os.Link, "hard link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bench, outside := t.TempDir(), t.TempDir()
			for _, f := range []string{"tools.json", "test_cases_dh_base.json"} {
				b, err := os.ReadFile(filepath.Join(fixture, f))
				if err != nil {
					t.Fatal(err)
				}
				dir := bench
				if f == "tools.json" {
					dir = outside
				}
				writeFile(t, dir, f, string(b))
			}
			if err := tc.link(filepath.Join(outside, "tools.json"), filepath.Join(bench, "tools.json")); err != nil {
				t.Skipf("cannot link: %v", err)
			}
			out := filepath.Join(t.TempDir(), "ia.toml")
			r := run(t, "import", "injecagent", bench, "-o", out)
			if r.code != ExitUsage || !strings.Contains(r.err, "tools.json") || !strings.Contains(r.err, tc.want) || !strings.Contains(r.err, "--trust-config") {
				t.Errorf("exit %d, want 2 naming tools.json, the %s and --trust-config:\n%s", r.code, tc.want, r.err)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("a refused import wrote its dataset")
			}
			if r := run(t, "import", "injecagent", bench, "-o", out, "--trust-config"); r.code != ExitOK {
				t.Errorf("--trust-config: exit %d\n%s", r.code, r.err)
			}
		})
	}
}
