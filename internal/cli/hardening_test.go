package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pikit-go/pikit/internal/termsafe"
)

// Tests for the hardening of issue 11: what a hostile dataset, config,
// model answer or .env file may not do, and flags that must not lie.

// TestFileBaseURLRefused (item 1): a dataset or config that names a base
// URL cannot send the user's API key there unless --trust-config says so;
// --dry-run and dataset show print where requests would go.
func TestFileBaseURLRefused(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-cli")
	t.Setenv("OPENAI_BASE_URL", "")
	evil, evilHits := openAIServer(t, func(string) string { return "ok" }, nil)
	mine, mineHits := openAIServer(t, func(string) string { return "ok" }, nil)
	dir := t.TempDir()
	ds := writeFile(t, dir, "shared.toml", `[meta]
name = "shared"

[[cases]]
id = "s-1"
description = "an innocent-looking case"
target_options = { base_url = "`+evil.URL+`/v1" }
`)
	cfg := writeFile(t, dir, "exp.toml", "attacks = [\"naive\"]\n\n[target]\nspec = \"openai:m\"\nbase_url = \""+evil.URL+"/v1\"\n")

	for _, args := range [][]string{
		{"dataset", "run", ds, "--target", "openai:m", "-o", filepath.Join(dir, "a.jsonl")},
		{"matrix", "-c", cfg, "-o", filepath.Join(dir, "b.jsonl")},
		{"run", "-c", cfg},
	} {
		r := run(t, args...)
		if r.code != ExitUsage || !strings.Contains(r.err, "--trust-config") || !strings.Contains(r.err, "OPENAI_API_KEY") {
			t.Errorf("%v: exit %d, want 2 naming --trust-config\n%s", args, r.code, r.err)
		}
		if n := evilHits.Load(); n != 0 {
			t.Fatalf("%v: the file's server got %d requests", args, n)
		}
	}
	if r := run(t, "dataset", "run", ds, "--target", "openai:m"); !strings.Contains(r.err, "shared.toml:7: case s-1: target_options.base_url") {
		t.Errorf("the refusal should name file:line and case:\n%s", r.err)
	}
	if r := run(t, "matrix", "-c", cfg); !strings.Contains(r.err, "exp.toml:5:") {
		t.Errorf("the refusal should name the [target] line:\n%s", r.err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.jsonl")); err == nil {
		t.Error("a refused run wrote its output")
	}

	// The user's own --base-url wins over the file's, and is trusted.
	if r := run(t, "dataset", "run", ds, "--target", "openai:m", "--base-url", mine.URL+"/v1"); r.code != 0 {
		t.Fatalf("with --base-url: %+v", r)
	}
	if evilHits.Load() != 0 || mineHits.Load() == 0 {
		t.Errorf("with --base-url: file's server %d requests, mine %d", evilHits.Load(), mineHits.Load())
	}
	// --trust-config lets the file choose.
	if r := run(t, "matrix", "-c", cfg, "--trust-config"); r.code != 0 || evilHits.Load() == 0 {
		t.Errorf("with --trust-config: exit %d, %d requests\n%s", r.code, evilHits.Load(), r.err)
	}

	// Every endpoint is shown before anything is sent.
	before := evilHits.Load()
	r := run(t, "dataset", "run", ds, "--target", "openai:m", "--dry-run", "--judge", "llm", "--judge-target", "openai:judge", "--judge-base-url", mine.URL+"/v1")
	if r.code != 0 || !strings.Contains(r.out, evil.URL+"/v1 (from "+ds+":7)") || !strings.Contains(r.out, "REFUSED without --trust-config") ||
		!strings.Contains(r.out, "judge openai:judge: "+mine.URL+"/v1 (from --judge-base-url)") {
		t.Errorf("dry run endpoints:\n%s", r.out)
	}
	r = run(t, "dataset", "show", ds)
	if r.code != 0 || !strings.Contains(r.out, "endpoints:") || !strings.Contains(r.out, "the file's base_url "+evil.URL) {
		t.Errorf("dataset show endpoints:\n%s", r.out)
	}
	if r := run(t, "dataset", "show", "direct_injection"); !strings.Contains(r.out, "mock: offline") {
		t.Errorf("built-in dataset endpoints:\n%s", r.out)
	}
	if evilHits.Load() != before {
		t.Error("--dry-run or dataset show sent a request")
	}

}

// TestDotEnvBaseURLReported (item 1): a .env that moves a provider's base
// URL is said on stderr.
func TestDotEnvBaseURLReported(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	t.Setenv("PIKIT_TEST_OTHER", "")
	path := writeFile(t, t.TempDir(), ".env", "OPENAI_BASE_URL=https://user:hunter22@proxy.example.test/v1\nPIKIT_TEST_OTHER=1\n")
	var errOut bytes.Buffer
	if _, err := loadDotEnv(path, &errOut); err != nil {
		t.Fatal(err)
	}
	got := errOut.String()
	if !strings.Contains(got, "sets OPENAI_BASE_URL=https://user:[REDACTED]@proxy.example.test/v1") || strings.Contains(got, "hunter22") || strings.Contains(got, "PIKIT_TEST_OTHER") {
		t.Errorf("stderr: %q", got)
	}
}

// hostile is model output that tries to drive the terminal: clear the
// screen, set the clipboard (OSC 52), an 8-bit CSI, a bidi override and a
// carriage return that hides what came before.
const hostile = "\x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07\u009b31mred\u202eevil\rgone"

func assertTerminalSafe(t *testing.T, what, s string) {
	t.Helper()
	for _, r := range s {
		if termsafe.Unsafe(r) && r != '\r' {
			t.Errorf("%s: raw %U reaches the terminal:\n%q", what, r, s)
			return
		}
	}
	if strings.ContainsAny(s, "\x1b\r\x07") {
		t.Errorf("%s: raw control characters reach the terminal:\n%q", what, s)
	}
}

// TestTerminalEscapesShownNotInterpreted (item 2): model output, dataset
// text and file names with escape sequences are shown escaped by every
// command that prints them; JSON stays valid with the same values.
func TestTerminalEscapesShownNotInterpreted(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-cli")
	srv, _ := openAIServer(t, func(string) string { return hostile }, nil)
	r := run(t, "run", "--target", "openai:m", "--base-url", srv.URL+"/v1")
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	assertTerminalSafe(t, "run trace", r.out)
	if !strings.Contains(r.out, `\x1b[2J\x1b]52;c;`) || !strings.Contains(r.out, `\u202e`) {
		t.Errorf("escapes should be visible:\n%s", r.out)
	}
	r = run(t, "run", "--target", "openai:m", "--base-url", srv.URL+"/v1", "--json")
	assertTerminalSafe(t, "run --json", r.out)
	var res struct {
		FinalText string `json:"final_text"`
	}
	if err := json.Unmarshal([]byte(r.out), &res); err != nil || res.FinalText != hostile {
		t.Errorf("run --json is not the same JSON: %v %q", err, res.FinalText)
	}

	dir := t.TempDir()
	q, _ := json.Marshal(hostile) // JSON's escapes are TOML's
	ds := writeFile(t, dir, "ds.toml", "[meta]\nname = \"x\"\ndescription = "+string(q)+"\n\n[[cases]]\nid = "+string(q)+"\ndescription = "+string(q)+"\n")
	r = run(t, "dataset", "show", ds)
	if r.code != 0 {
		t.Fatalf("%+v", r)
	}
	assertTerminalSafe(t, "dataset show", r.out)
	// Errors quote the file: an unknown attack named with escapes.
	cfg := writeFile(t, dir, "bad.toml", "attacks = ["+string(q)+"]\n")
	r = run(t, "matrix", "-c", cfg)
	if r.code != ExitUsage {
		t.Fatalf("%+v", r)
	}
	assertTerminalSafe(t, "error message", r.err)
}

// TestRunFlagsWork (item 5): the flags pikit run shows do what they say,
// and those of whole-plan runs are not shown.
func TestRunFlagsWork(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-cli")
	srv, hits := openAIServer(t, func(string) string { return "fine" }, nil)
	base := []string{"run", "--target", "openai:m", "--base-url", srv.URL + "/v1", "--repeats", "2"}
	dir := t.TempDir()

	r := run(t, append(base, "--dry-run")...)
	if r.code != 0 || hits.Load() != 0 || !strings.Contains(r.out, "cells:   2") {
		t.Fatalf("--dry-run sent %d requests: %+v", hits.Load(), r)
	}
	out := filepath.Join(dir, "one.jsonl")
	r = run(t, append(base, "-o", out)...)
	if r.code != 0 || len(keysOf(t, out)) != 2 || !strings.Contains(r.out, "verdict:") {
		t.Fatalf("-o: %+v", r)
	}
	if r := run(t, append(base, "-o", out)...); r.code != ExitUsage || !strings.Contains(r.err, "--force") {
		t.Errorf("-o over an existing file without --force: %+v", r)
	}
	if r := run(t, append(base, "-o", out, "--force")...); r.code != 0 {
		t.Errorf("--force: %+v", r)
	}
	cache := filepath.Join(dir, "cache")
	run(t, append(base, "--cache", cache)...)
	sent := hits.Load()
	r = run(t, append(base, "--cache", cache)...)
	if r.code != 0 || hits.Load() != sent || !strings.Contains(r.err, "misses") {
		t.Errorf("--cache: second run sent %d requests: %+v", hits.Load()-sent, r)
	}
	r = run(t, append(base, "--attacks", "naive,escape", "-j", "1")...)
	if r.code != 0 || strings.Count(r.out, "── chat · attack ") != 4 || !strings.Contains(r.out, "attack escape") {
		t.Errorf("--attacks: %+v", r)
	}
	sent = hits.Load()
	r = run(t, append(base, "--repeats", "6", "-j", "1", "--max-requests", "2")...)
	if r.code != ExitFailed || !strings.Contains(r.err, "budget") || hits.Load()-sent != 2 {
		t.Errorf("--max-requests 2: %d requests: %+v", hits.Load()-sent, r)
	}
	for _, flag := range []string{"--resume", "--shard=1/2", "--quiet"} {
		if r := run(t, "run", flag); r.code != ExitUsage || !strings.Contains(r.err, "unknown") {
			t.Errorf("run %s: %+v", flag, r)
		}
	}
}

// TestEveryRunFlagIsTested (item 5): a flag added to pikit run must come
// with a test that it works; this lists where each one is tested (on pikit
// run itself, or for a flag every run command shares through runOptions,
// on another of them).
func TestEveryRunFlagIsTested(t *testing.T) {
	tested := map[string]string{
		"target": "TestRunFlagsWork", "judge": "TestLLMJudgeWithJudgeTarget", "temperature": "TestFlagErrorsNameTheFlag",
		"repeats": "TestRunFlagsWork", "attacks": "TestRunFlagsWork", "output": "TestRunFlagsWork", "force": "TestRunFlagsWork",
		"concurrency": "TestRunFlagsWork", "dry-run": "TestRunFlagsWork", "max-requests": "TestRunFlagsWork", "max-output-tokens": "TestMaxOutputTokens", "prefetch": "TestPrefetch",
		"max-tokens": "TestBudget", "base-url": "TestRunFlagsWork", "max-retries": "TestTransient429sLoseNothing",
		"request-timeout": "TestFlagErrorsNameTheFlag", "rps": "TestFlagErrorsNameTheFlag", "judge-target": "TestLLMJudgeWithJudgeTarget",
		"judge-base-url": "TestFileBaseURLRefused", "cache": "TestRunFlagsWork", "trust-config": "TestFileBaseURLRefused",
		"max-cells": "TestGiantPlans", "yes": "TestGiantPlans", "config": "TestFileBaseURLRefused", "agent": "TestRunSingleCell",
		"attack": "TestRunSingleCell", "defense": "TestRunSingleCell", "channel": "TestRunSingleCell", "task": "TestRunSingleCell",
		"canary": "TestRunSingleCell", "user-message": "TestRunSingleCell", "sink-args": "TestRunSingleCell",
		"require-sink": "TestRunSingleCell", "full": "TestRunSingleCell", "json": "TestTerminalEscapesShownNotInterpreted",
		"csv-raw": "TestCSVRawFlag", "runtime": "TestRuntimeFlagsOnRun", "runtime-options": "TestRuntimeFlagsOnRun",
		"fixture": "TestRuntimeFlagsOnRun", "mode": "TestRunPythonFlags", "data-sample": "TestRunPythonFlags",
		"defense-point": "TestRunPythonFlags", "model": "TestRunPythonFlags",
		"attacker-target": "TestAttackerTargetFlags", "attacker-base-url": "TestAttackerTargetFlags",
		"defenses": "TestDatasetAdaptiveFlags", "adaptive-options": "TestDatasetAdaptiveFlags",
		"max-file-size": "TestFileSizeBound", "max-response-bytes": "TestMaxResponseBytes",
		"s3-endpoint": "TestS3ShardsEqualOneMachine", "s3-flush": "TestS3FlagErrors and integration's TestS3ShardsAsAJob (parts land while a shard runs)",
	}
	var cmd *cobra.Command
	for _, c := range NewRootCmd(IO{}).Commands() {
		if c.Name() == "run" {
			cmd = c
		}
	}
	if cmd == nil {
		t.Fatal("no run command")
	}
	n := 0
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		n++
		if tested[f.Name] == "" {
			t.Errorf("pikit run shows --%s, but no test is listed for it", f.Name)
		}
	})
	if n == 0 {
		t.Fatal("run has no flags: the check checks nothing")
	}
}

// TestOutputMayNotBeAnInput (item 7): no output overwrites the config or
// dataset the run reads, --force or not, through a symbolic link too; a
// directory or a missing directory is a clear usage error.
func TestOutputMayNotBeAnInput(t *testing.T) {
	dir := t.TempDir()
	cfgJSONL := writeFile(t, dir, "exp.jsonl", "attacks = [\"naive\"]\n")
	ds := writeFile(t, dir, "cases.json", "[[cases]]\nid = \"a\"\n")
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(cfgJSONL, link); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"matrix", "-c", cfgJSONL, "-o", cfgJSONL, "--force"},
		{"matrix", "-c", cfgJSONL, "-o", link, "--force"},
		{"run", "-c", cfgJSONL, "-o", link, "--force"},
		{"dataset", "run", ds, "-o", ds, "--force"},
		{"merge", cfgJSONL, "-o", link, "--force"},
	} {
		r := run(t, args...)
		if r.code != ExitUsage || !strings.Contains(r.err, "is also an input") {
			t.Errorf("%v: %+v", args, r)
		}
	}
	if b, _ := os.ReadFile(cfgJSONL); string(b) != "attacks = [\"naive\"]\n" {
		t.Errorf("the config was overwritten: %q", b)
	}
	if r := run(t, "dataset", "run", "direct_injection", "-o", dir+"/sub.jsonl/"); r.code != ExitUsage {
		t.Errorf("output ending in a slash: %+v", r)
	}
	os.Mkdir(filepath.Join(dir, "d.jsonl"), 0o755)
	if r := run(t, "dataset", "run", "direct_injection", "-o", filepath.Join(dir, "d.jsonl")); r.code != ExitUsage || !strings.Contains(r.err, "is a directory") {
		t.Errorf("output is a directory: %+v", r)
	}
	if r := run(t, "dataset", "run", "direct_injection", "-o", filepath.Join(dir, "nope", "r.jsonl")); r.code != ExitUsage || !strings.Contains(r.err, "does not exist") {
		t.Errorf("output in a missing directory: %+v", r)
	}
}

// TestMergeAcrossFileSystems (item 7): merge writes its temporary file
// beside the destination, so a destination on another file system works.
func TestMergeAcrossFileSystems(t *testing.T) {
	other, err := os.MkdirTemp("/dev/shm", "pikit-merge-")
	if err != nil {
		t.Skipf("no tmpfs at /dev/shm: %v", err)
	}
	defer os.RemoveAll(other)
	dir := t.TempDir()
	t.Chdir(dir)
	in := filepath.Join(dir, "r.jsonl")
	if r := run(t, "dataset", "run", "direct_injection", "-o", in); r.code != 0 {
		t.Fatal(r)
	}
	out := filepath.Join(other, "all.jsonl")
	if r := run(t, "merge", in, "-o", out, "--dataset", "direct_injection"); r.code != 0 {
		t.Fatalf("merge to another file system: %+v", r)
	}
	if len(keysOf(t, out)) != len(keysOf(t, in)) {
		t.Error("merged results differ")
	}
	if info, err := os.Stat(out); err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("merged file mode %v, want 0644 like the other outputs", info.Mode())
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestEmptyConfigAndRepeats (item 8): an empty config and --repeats 0 are
// refused, saying why; a BOM is fine; UTF-16 is named.
func TestEmptyConfigAndRepeats(t *testing.T) {
	dir := t.TempDir()
	empty := writeFile(t, dir, "empty.toml", "# to do\n")
	for _, args := range [][]string{{"matrix", "-c", empty}, {"run", "-c", empty}} {
		if r := run(t, args...); r.code != ExitUsage || !strings.Contains(r.err, "sets nothing") {
			t.Errorf("%v: %+v", args, r)
		}
	}
	if r := run(t, "dataset", "run", "direct_injection", "--repeats", "0"); r.code != ExitUsage || !strings.Contains(r.err, "--repeats: must be at least 1") {
		t.Errorf("--repeats 0: %+v", r)
	}
	bom := writeFile(t, dir, "bom.toml", "\ufeffattacks = [\"escape\"]\n")
	if r := run(t, "matrix", "-c", bom); r.code != 0 {
		t.Errorf("BOM: %+v", r)
	}
	var u16 []byte
	for _, c := range "\ufeffattacks = [\"escape\"]\n" {
		u16 = append(u16, byte(c), byte(c>>8))
	}
	p := filepath.Join(dir, "u16.toml")
	os.WriteFile(p, u16, 0o644)
	if r := run(t, "matrix", "-c", p); r.code != ExitUsage || !strings.Contains(r.err, "not UTF-8") || !strings.Contains(r.err, "UTF-16") {
		t.Errorf("UTF-16: %+v", r)
	}
}

// TestFlagErrorsNameTheFlag (item 8).
func TestFlagErrorsNameTheFlag(t *testing.T) {
	for flag, vals := range map[string][]string{
		"--temperature":     {"NaN", "-1", "3", "+Inf"},
		"--rps":             {"NaN", "-1", "Inf"},
		"--request-timeout": {"0s", "-1s"},
		"--max-retries":     {"-1"},
		"--max-cells":       {"-5"},
	} {
		for _, v := range vals {
			r := run(t, "dataset", "run", "direct_injection", flag+"="+v)
			if r.code != ExitUsage || !strings.Contains(r.err, "pikit: "+flag+":") {
				t.Errorf("%s=%s: %+v", flag, v, r)
			}
		}
	}
}

// TestGiantPlans (item 9): a billion repeats are planned and counted at
// once; running a plan over --max-cells needs --yes and is refused, with
// nothing written, when stdin is not a terminal.
func TestGiantPlans(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "big.toml", "attacks = [\"*\"]\ndefenses = [\"*\"]\nagents = [\"chat\", \"email\"]\n")
	for _, args := range [][]string{
		{"matrix", "-c", cfg, "--dry-run", "--repeats", "1000000000"},
		{"dataset", "run", "indirect_injection", "--dry-run", "--repeats", "1000000000"},
		{"dataset", "run", "indirect_injection", "--dry-run", "--repeats", "1000000000", "--shard", "2/8"},
		{"run", "--dry-run", "--repeats", "1000000000"},
	} {
		start := time.Now()
		r := run(t, args...)
		if took := time.Since(start); r.code != 0 || took > 2*time.Second || !strings.Contains(r.out, "000000000") {
			t.Errorf("%v: exit %d after %v\n%s%s", args, r.code, took, r.out, r.err)
		}
	}
	out := filepath.Join(dir, "r.jsonl")
	r := run(t, "matrix", "-c", cfg, "--repeats", "3000000", "-o", out)
	if r.code != ExitUsage || !strings.Contains(r.err, "--yes") {
		t.Errorf("over --max-cells: %+v", r)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused plan wrote its output")
	}
	r = run(t, "matrix", "-c", cfg, "--max-cells", "10", "-o", out)
	if r.code != ExitUsage || !strings.Contains(r.err, "over --max-cells 10") {
		t.Errorf("--max-cells 10: %+v", r)
	}
	if r := run(t, "matrix", "-c", cfg, "--max-cells", "10", "--yes", "-o", out); r.code != 0 || len(keysOf(t, out)) <= 10 {
		t.Errorf("--yes: %+v", r)
	}
}

// TestCSVRawFlag (item 3): results CSV neutralises formulas by default;
// --csv-raw writes cells as they are, and needs a CSV output.
func TestCSVRawFlag(t *testing.T) {
	dir := t.TempDir()
	task := "=HYPERLINK(\"http://evil.test\",\"x\") and reply HACKED"
	safe, raw := filepath.Join(dir, "safe.csv"), filepath.Join(dir, "raw.csv")
	if r := run(t, "run", "--task", task, "-o", safe); r.code != 0 {
		t.Fatal(r)
	}
	if r := run(t, "run", "--task", task, "-o", raw, "--csv-raw"); r.code != 0 {
		t.Fatal(r)
	}
	s, _ := os.ReadFile(safe)
	w, _ := os.ReadFile(raw)
	if !strings.Contains(string(s), "'=HYPERLINK") || strings.Contains(string(w), "'=HYPERLINK") || !strings.Contains(string(w), "=HYPERLINK") {
		t.Errorf("safe:\n%s\nraw:\n%s", s, w)
	}
	if r := run(t, "run", "--csv-raw", "-o", filepath.Join(dir, "x.jsonl")); r.code != ExitUsage || !strings.Contains(r.err, "--csv-raw") {
		t.Errorf("--csv-raw with JSONL: %+v", r)
	}
}
