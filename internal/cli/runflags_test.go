package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/report"
)

const bigConfig = `attacks = ["naive", "escape", "combined", "context_ignoring"]
defenses = ["none", "sandwich", "spotlighting"]
agents = ["chat", "email"]
repeats = 5
`

func keysOf(t *testing.T, path string) map[string]int {
	t.Helper()
	res, err := report.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range res {
		out[r.Key]++
	}
	return out
}

func TestDryRun(t *testing.T) {
	cfg := writeFile(t, t.TempDir(), "exp.toml", bigConfig)
	r := run(t, "matrix", "-c", cfg, "--dry-run")
	for _, w := range []string{"agent:   chat 60, email 60", "attack:  naive 30", "cells:   120", "at most 960", "nothing was sent"} {
		if !strings.Contains(r.out, w) {
			t.Errorf("dry run lacks %q:\n%s", w, r.out)
		}
	}
}

func TestResume(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "exp.toml", bigConfig)
	out := filepath.Join(dir, "res.jsonl")
	if r := run(t, "matrix", "-c", cfg, "-o", out); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	full, _ := os.ReadFile(out)
	lines := bytes.SplitAfter(full, []byte("\n"))
	// Simulate a run killed midway: 50 complete lines, one half-written,
	// and one result that failed.
	var cut bytes.Buffer
	for _, l := range lines[:50] {
		cut.Write(l)
	}
	var failed matrix.Result
	if err := json.Unmarshal(lines[50], &failed); err != nil {
		t.Fatal(err)
	}
	failed.Outcome, failed.Error = judge.RuntimeError, "provider said 503"
	b, _ := json.Marshal(failed)
	cut.Write(append(b, '\n'))
	cut.Write(lines[51][:len(lines[51])/2])
	os.WriteFile(out, cut.Bytes(), 0o644)

	r := run(t, "matrix", "-c", cfg, "-o", out)
	if r.code != ExitUsage || !strings.Contains(r.err, "--resume") {
		t.Fatalf("an existing output without --resume: %+v", r)
	}
	r = run(t, "matrix", "-c", cfg, "-o", out, "--resume")
	if r.code != 0 || !strings.Contains(r.err, "50 cells done, 70 to run") {
		t.Fatalf("%+v", r)
	}
	keys := keysOf(t, out)
	if len(keys) != 120 {
		t.Errorf("%d keys after resume, want 120", len(keys))
	}
	for k, n := range keys {
		if n != 1 {
			t.Errorf("key %s appears %d times", k, n)
		}
	}
	// Nothing left: a second resume runs nothing.
	if r := run(t, "matrix", "-c", cfg, "-o", out, "--resume"); r.code != 0 || !strings.Contains(r.err, "120 cells done, 0 to run") {
		t.Errorf("%+v", r)
	}
	// A different config's keys are refused.
	other := writeFile(t, dir, "other.toml", "attacks = [\"naive\"]\ntask = \"Something else entirely.\"\n")
	if r := run(t, "matrix", "-c", other, "-o", out, "--resume"); r.code != ExitUsage || !strings.Contains(r.err, "different config") {
		t.Errorf("foreign keys: %+v", r)
	}
	if r := run(t, "matrix", "-c", cfg, "-o", filepath.Join(dir, "x.csv"), "--resume"); r.code != ExitUsage {
		t.Errorf("resume needs jsonl: %+v", r)
	}
}

func TestShardAndMerge(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "exp.toml", bigConfig)
	var files []string
	total := 0
	for k := 1; k <= 3; k++ {
		out := filepath.Join(dir, "shard"+string(rune('0'+k))+".jsonl")
		r := run(t, "matrix", "-c", cfg, "-o", out, "--shard", string(rune('0'+k))+"/3")
		if r.code != 0 {
			t.Fatalf("%+v", r)
		}
		n := len(keysOf(t, out))
		if n == 0 || n == 120 {
			t.Errorf("shard %d has %d cells", k, n)
		}
		total += n
		files = append(files, out)
	}
	if total != 120 {
		t.Errorf("shards hold %d cells, want 120", total)
	}
	all := filepath.Join(dir, "all.jsonl")
	// A file listed twice is deduplicated.
	r := run(t, append([]string{"merge", "--output", all, "--config", cfg}, append(files, files[0])...)...)
	if r.code != 0 || !strings.Contains(r.err, "coverage: 120 of 120") {
		t.Fatalf("%+v", r)
	}
	if len(keysOf(t, all)) != 120 {
		t.Error("merged file lacks cells")
	}
	r = run(t, "merge", "--output", filepath.Join(dir, "part.jsonl"), "--config", cfg, files[0])
	if r.code != ExitFailed || !strings.Contains(r.err, "missing") {
		t.Errorf("incomplete coverage must fail: %+v", r)
	}
	t.Setenv("JOB_COMPLETION_INDEX", "1")
	r = run(t, "matrix", "-c", cfg, "--shard", "auto/3", "--dry-run")
	if r.code != 0 || !strings.Contains(r.err, "shard 2/3") {
		t.Errorf("auto shard: %+v", r)
	}
	for _, bad := range []string{"0/3", "4/3", "x", "1/0"} {
		if r := run(t, "matrix", "-c", cfg, "--shard", bad, "--dry-run"); r.code != ExitUsage {
			t.Errorf("--shard %s: %+v", bad, r)
		}
	}
}

func TestBudget(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "exp.toml", bigConfig)
	out := filepath.Join(dir, "res.jsonl")
	r := run(t, "matrix", "-c", cfg, "-o", out, "--max-requests", "10", "-j", "2")
	if r.code != ExitFailed || !strings.Contains(r.err, "budget reached") || !strings.Contains(r.err, "--resume") {
		t.Fatalf("%+v", r)
	}
	n := len(keysOf(t, out))
	if n < 5 || n >= 120 {
		t.Errorf("%d cells ran under a 10-request budget", n)
	}
	if r := run(t, "matrix", "-c", cfg, "-o", out, "--resume"); r.code != 0 || len(keysOf(t, out)) != 120 {
		t.Errorf("resume after budget: %+v", r)
	}
}

func TestCache(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "exp.toml", "attacks = [\"naive\", \"escape\"]\nagents = [\"chat\", \"email\"]\nrepeats = 2\n")
	cache := filepath.Join(dir, "cache")
	out := filepath.Join(dir, "a.jsonl")
	// Concurrency 1 makes the first run's hits exact: naive and escape
	// word an indirect payload alike, so those requests repeat.
	r := run(t, "matrix", "-c", cfg, "-o", out, "--cache", cache, "-j", "1")
	if r.code != 0 || !strings.Contains(r.err, "4 hits, 8 misses") {
		t.Fatalf("first run: %+v", r)
	}
	r = run(t, "matrix", "-c", cfg, "-o", out, "--cache", cache, "--force")
	if r.code != 0 || !strings.Contains(r.err, "12 hits, 0 misses") {
		t.Fatalf("second run should be served from the cache: %+v", r)
	}
	res, err := report.ReadFile(out)
	if err != nil || len(res) != 8 || res[0].Metadata["cached"] != true {
		t.Errorf("results should say they were cached: %v %+v", err, res[0].Metadata)
	}
}

// merge refuses an input cut mid-line (exit 2), writing nothing.
func TestMergeRefusesAHalfWrittenFile(t *testing.T) {
	dir := t.TempDir()
	cut := writeFile(t, dir, "cut.jsonl", `{"key":"00000000000000aa","attack":"naive","outcome":"refused"}`+"\n"+`{"key":"00000000000000ab","att`)
	out := filepath.Join(dir, "all.jsonl")
	r := run(t, "merge", cut, "-o", out)
	if r.code != ExitUsage || !strings.Contains(r.err, "cut.jsonl: the last line is incomplete (an interrupted run?); finish it with --resume first") {
		t.Errorf("%+v", r)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("merge wrote its output from a half-written input")
	}
}
