package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The Python pikit's run flags and keys (issue 14).
func TestRunPythonFlags(t *testing.T) {
	// --mode file writes a real carrier file; --mode text does not.
	r := run(t, "run", "--agent", "email", "--attack", "naive", "--channel", "document", "--mode", "file", "--json")
	if r.code != 0 || !strings.Contains(r.out, `"carrier_mode":"file"`) {
		t.Fatalf("--mode file: exit %d\n%s%s", r.code, r.out, r.err)
	}
	if r := run(t, "run", "--mode", "paper"); r.code != 2 || !strings.Contains(r.err, "--mode: want text or file") {
		t.Errorf("--mode paper: %+v", r)
	}
	// --data-sample taints the named clean carrier.
	r = run(t, "run", "--agent", "email", "--attack", "naive", "--channel", "document", "--data-sample", "webpage", "--full")
	if r.code != 0 || !strings.Contains(r.out, "<html") {
		t.Errorf("--data-sample webpage: the tool result is not the web page sample\n%s%s", r.out, r.err)
	}
	if r := run(t, "run", "--agent", "email", "--channel", "document", "--data-sample", "nope"); r.code != 2 || !strings.Contains(r.err, "nope") {
		t.Errorf("--data-sample nope: %+v", r)
	}
	// --defense-point system hardens the system prompt instead of the
	// tool result.
	r = run(t, "run", "--agent", "email", "--attack", "naive", "--channel", "document", "--defense", "sandwich", "--defense-point", "system", "--json")
	if r.code != 0 || !strings.Contains(r.out, `"system":"You are an email assistant.`) || strings.Count(r.out, "You are an email assistant") < 1 {
		t.Fatalf("--defense-point system: %+v", r)
	}
	sys, tool := defendedAt(t, r.out)
	plain, _ := defendedAt(t, run(t, "run", "--agent", "email", "--attack", "naive", "--channel", "document", "--json").out)
	if _, atTool := defendedAt(t, run(t, "run", "--agent", "email", "--attack", "naive", "--channel", "document", "--defense", "sandwich", "--json").out); !atTool {
		t.Fatal("by default sandwich should harden the tool result (the check of where it applied is broken)")
	}
	if sys == plain || tool {
		t.Errorf("--defense-point system: system prompt changed %v, tool result hardened %v", sys != plain, tool)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--defense-point", "assistant"}, `unknown defense point "assistant"; known: system, user, tool_result`},
		{[]string{"--defense", "pattern", "--defense-point", "system"}, "pattern is a detector"},
	} {
		r := run(t, append([]string{"run", "--agent", "email"}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.err, tc.want) {
			t.Errorf("%v: exit %d %q, want %q", tc.args, r.code, r.err, tc.want)
		}
	}
	// --model is --target, with a warning.
	r = run(t, "run", "--model", "mock:obedient", "--attack", "naive", "--json")
	if r.code != 0 || !strings.Contains(r.err, "--model is deprecated; use --target") || !strings.Contains(r.out, `"target":"mock:obedient"`) {
		t.Errorf("--model: %+v", r)
	}
}

// defendedAt reads a run's JSON line: its system prompt, and whether a
// tool result carries the sandwich defense's "[Reminder]".
func defendedAt(t *testing.T, out string) (system string, toolHardened bool) {
	t.Helper()
	i := strings.Index(out, `"system":"`)
	if i < 0 {
		t.Fatalf("no system prompt in %s", out)
	}
	rest := out[i+len(`"system":"`):]
	system = rest[:strings.Index(rest, `","steps"`)]
	return system, strings.Contains(out, `"kind":"tool"`) && strings.Contains(out[strings.Index(out, `"kind":"tool"`):], "[Reminder]")
}

func TestDefensePointConfigKey(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "exp.toml", "agents = [\"email\"]\ndefenses = [\"sandwich\"]\ndefense_point = \"tool\"\n")
	r := run(t, "matrix", "--config", cfg)
	if r.code != 2 || !strings.Contains(r.err, "exp.toml:3: defense_point: unknown defense point \"tool\"") {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	os.WriteFile(cfg, []byte("agents = [\"email\"]\ndefenses = [\"sandwich\"]\ndefense_point = \"system\"\n"), 0o644)
	if r := run(t, "matrix", "--config", cfg, "-q"); r.code != 0 {
		t.Fatalf("defense_point = system: exit %d: %s", r.code, r.err)
	}
}

func TestReportFormatHTMLOutput(t *testing.T) {
	dir := t.TempDir()
	res := filepath.Join(dir, "r.jsonl")
	if r := run(t, "dataset", "run", "direct_injection", "-q", "-o", res); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	page := filepath.Join(dir, "report.html")
	r := run(t, "report", res, "--format", "html", "--output", page)
	b, err := os.ReadFile(page)
	if r.code != 0 || err != nil || !strings.Contains(string(b), "<html") || r.out != "" {
		t.Fatalf("--format html --output: exit %d, %v, stdout %q", r.code, err, r.out)
	}
	md := filepath.Join(dir, "report.md")
	if r := run(t, "report", res, "--format", "markdown", "-o", md); r.code != 0 {
		t.Fatalf("markdown to a file: %+v", r)
	}
	if b, _ := os.ReadFile(md); !strings.Contains(string(b), "|") {
		t.Errorf("markdown file: %q", b)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--format", "html"}, "give --output FILE.html"},
		{[]string{"--format", "html", "--output", page}, "exists"},
		{[]string{"--format", "markdown", "-o", md}, "exists"},
		{[]string{"--format", "html", "--output", page, "--html", md, "--force"}, "name different files"},
	} {
		r := run(t, append([]string{"report", res}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.err, tc.want) {
			t.Errorf("%v: exit %d %q, want %q", tc.args, r.code, r.err, tc.want)
		}
	}
}

// Results carry the Python pikit's verdict fields and metadata keys.
func TestPythonResultFields(t *testing.T) {
	r := run(t, "run", "--target", "mock:obedient", "--attack", "naive", "--json")
	for _, want := range []string{`"model_complied":true`, `"runtime_blocked":false`, `"success_count":1`, `"total_runs":1`, `"schema_version":1`, `"pikit_version":"`} {
		if !strings.Contains(r.out, want) {
			t.Errorf("no %s in %s", want, r.out)
		}
	}
	r = run(t, "run", "--attack", "naive", "--defense", "pattern", "--json")
	for _, want := range []string{`"outcome":"policy_blocked"`, `"model_complied":false`, `"runtime_blocked":true`, `"success_count":0`} {
		if !strings.Contains(r.out, want) {
			t.Errorf("no %s in %s", want, r.out)
		}
	}
	dir := t.TempDir()
	cfg := writeFile(t, dir, "exp.toml", "[target]\nspec = \"mock\"\nprefix = \"ECHO: \"\n")
	if r := run(t, "run", "--config", cfg, "--json"); !strings.Contains(r.out, `"target_options":{"prefix":"ECHO: "}`) || !strings.Contains(r.out, `ECHO: `) {
		t.Errorf("target options: %s %s", r.out, r.err)
	}
}

// --judge rule:pikit reproduces the Python pikit's verdict on an echoed
// canary, where pikit's rule judge does not count it.
func TestJudgeRulePikit(t *testing.T) {
	r := run(t, "run", "--attack", "naive", "--json")
	p := run(t, "run", "--attack", "naive", "--judge", "rule:pikit", "--json")
	if !strings.Contains(r.out, `"outcome":"taint_delivered"`) || !strings.Contains(p.out, `"outcome":"full_success"`) || !strings.Contains(p.out, "canary_echoed") {
		t.Fatalf("rule: %s\nrule:pikit: %s", r.out, p.out)
	}
	if r := run(t, "run", "--judge", "rule:python"); r.code != 2 || !strings.Contains(r.err, "known: rule, rule:pikit, llm, none") {
		t.Errorf("%+v", r)
	}
}
