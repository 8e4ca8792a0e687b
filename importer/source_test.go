package importer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchCopy copies a fixture directory to a new directory, the benchmark
// directory a test plants links in.
func benchCopy(t *testing.T, fixture string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "bench")
	if err := os.CopyFS(dst, os.DirFS(fixture)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// plant moves bench/rel out of the benchmark's directory and links it
// back in (a symbolic or a hard link): the name stays, the text is a
// file's outside.
func plant(t *testing.T, bench, rel string, hard bool) {
	t.Helper()
	inside := filepath.Join(bench, rel)
	outside := filepath.Join(t.TempDir(), filepath.Base(rel))
	if err := os.Rename(inside, outside); err != nil {
		t.Fatal(err)
	}
	link := os.Symlink
	if hard {
		link = os.Link
	}
	if err := link(outside, inside); err != nil {
		t.Skipf("cannot link: %v", err)
	}
}

// sourceCases are, for each importer, a file (or directory) it reads and
// the path a user names: a test plants a link there.
var sourceCases = []struct {
	name, fixture, named, planted string
	set                           []string
}{
	{"agentdojo", "testdata/agentdojo", "suites/bakery", "suites/bakery/environment.yaml", nil},
	{"agentdojo", "testdata/agentdojo", "suites/bakery", "system_messages.yaml", nil},
	{"agentdojo", "testdata/agentdojo", ".", "suites/bakery/tasks.yaml", nil},
	{"agentdojo", "testdata/agentdojo", ".", "suites/bakery/include/inbox.yaml", nil},
	{"bipia", "testdata/bipia", ".", "text_attack_test.json", nil},
	{"bipia", "testdata/bipia", "email/test.jsonl", "email/test.jsonl", nil},
	{"bipia", "testdata/bipia", ".", "email", nil},
	{"injecagent", "testdata/injecagent", ".", "tools.json", nil},
	{"injecagent", "testdata/injecagent", ".", "test_cases_dh_base.json", nil},
	{"injecagent", "testdata/injecagent", "test_cases_ds_base.json", "attacker_simulated_responses.json", nil},
	{"llmail", "testdata/llmail/data", ".", "scenarios.json", nil},
	{"llmail", "testdata/llmail/data", ".", "raw_submissions_phase1.jsonl", nil},
	{"llmail", "testdata/llmail/data", ".", "system_prompt.json", nil},
	{"mcptox", "testdata/mcptox", ".", "response_all.json", nil},
	{"mcptox", "testdata/mcptox", "response_all.json", "response_all.json", nil},
	{"spikee", "testdata/spikee/seeds-mini", ".", "jailbreaks.jsonl", nil},
	{"spikee", "testdata/spikee/seeds-mini", ".", "base_user_inputs.jsonl", nil},
	{"spikee", "testdata/spikee/seeds-mini", ".", "system_messages.toml", []string{"system_message=true"}},
}

// TestSourceRefusesLinksOut (issue 36, items 7 and 8): every importer,
// given its benchmark with one of the files it reads replaced by a
// symbolic link to a file outside the benchmark's directory (or a
// directory linked out, or a hard link), refuses the import, naming the
// file; with --trust-config (trust_links) it reads it.
func TestSourceRefusesLinksOut(t *testing.T) {
	for _, tc := range sourceCases {
		for _, hard := range []bool{false, true} {
			kind, want := "symlink", "symbolic link"
			if hard {
				kind, want = "hard link", "hard link"
			}
			t.Run(tc.name+"/"+tc.planted+"/"+kind, func(t *testing.T) {
				bench := benchCopy(t, tc.fixture)
				if fi, err := os.Stat(filepath.Join(bench, tc.planted)); err != nil || fi.IsDir() && hard {
					t.Skip("no hard link to a directory")
				}
				plant(t, bench, tc.planted, hard)
				imp, err := New(tc.name, tc.set)
				if err != nil {
					t.Fatal(err)
				}
				named := filepath.Join(bench, tc.named)
				d, err := imp(named)
				if err == nil {
					t.Fatalf("imported %d cases through the %s", len(d.Cases), kind)
				}
				if msg := err.Error(); !strings.Contains(msg, filepath.Base(tc.planted)) || !strings.Contains(msg, want) || !strings.Contains(msg, "--trust-config") {
					t.Errorf("error %q: want one naming %s, the %s and --trust-config", msg, tc.planted, want)
				}
				trusted, err := New(tc.name, append(tc.set, TrustOption+"=true"))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := trusted(named); err != nil {
					t.Errorf("trusted: %v", err)
				}
			})
		}
	}
}

// TestSourceUntouched: without links, every importer reads its fixture
// as before, from the directory or from the part a user may name.
func TestSourceUntouched(t *testing.T) {
	for _, tc := range sourceCases {
		imp, err := New(tc.name, tc.set)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := imp(filepath.Join(benchCopy(t, tc.fixture), tc.named)); err != nil {
			t.Errorf("%s %s: %v", tc.name, tc.named, err)
		}
	}
}
