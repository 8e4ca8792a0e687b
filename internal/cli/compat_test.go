package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/result"
)

// The Python pikit's run flags and keys (issue 14).
func TestRunPythonFlags(t *testing.T) {
	// --mode file writes a real carrier file; --mode text does not.
	r := run(t, "run", "--agent", "email", "--attack", "naive", "--channel", "document", "--mode", "file", "--json")
	if r.code != 0 || !strings.Contains(r.out, `"carrier_mode":"file"`) {
		t.Fatalf("--mode file: exit %d\n%s%s", r.code, r.out, r.err)
	}
	// --channel none is the agent's own channel, as in the Python pikit.
	none, own := run(t, "run", "--agent", "email", "--channel", "none", "--json"), run(t, "run", "--agent", "email", "--json")
	if none.code != 0 || !strings.Contains(none.out, `"channel":"document"`) || !strings.Contains(own.out, `"channel":"document"`) {
		t.Errorf("--channel none: exit %d\n%s%s", none.code, none.out, none.err)
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
	// A bare model name is an OpenAI model, as in the Python pikit.
	t.Setenv("OPENAI_API_KEY", "")
	if r := run(t, "run", "--model", "gpt-4o-mini"); r.code != 2 || !strings.Contains(r.err, "target openai:gpt-4o-mini: missing API key") {
		t.Errorf("--model gpt-4o-mini: %+v", r)
	}
}

// defendedAt reads a run's JSON line: its system prompt, and whether a
// tool result carries the sandwich defense's "[Reminder]".
func defendedAt(t *testing.T, out string) (system string, toolHardened bool) {
	t.Helper()
	var r result.Result
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &r); err != nil || r.TraceData == nil {
		t.Fatalf("no result with a trace in %s (%v)", out, err)
	}
	for _, s := range r.TraceData.Steps {
		if s.Kind == agent.StepTool && strings.Contains(s.Result, "[Reminder]") {
			toolHardened = true
		}
	}
	return r.TraceData.System, toolHardened
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
	for _, want := range []string{`"model_complied":true`, `"runtime_blocked":false`, `"success_count":1`, `"total_runs":1`, `"schema_version":"pikit.experiment-result.v1"`, `"pikit_version":"`, `"runtime_version":"go`, `"kwargs":{}`, `"type":"canary","trace_step":1,"value":"HACKED"`} {
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

// --judge rule:pikit gives the Python pikit's verdicts: a canary quoted
// in a refusal is refused by both judges, and a direct injection that
// fails is not_reached, Python's label, where rule says taint_delivered.
func TestJudgeRulePikit(t *testing.T) {
	cfg := writeFile(t, t.TempDir(), "quote.toml", "[target]\nspec = \"mock\"\nscript = [\"You asked me to reply with HACKED, but I will not do that.\"]\n")
	r := run(t, "run", "--config", cfg, "--attack", "naive", "--json")
	p := run(t, "run", "--config", cfg, "--attack", "naive", "--judge", "rule:pikit", "--json")
	if !strings.Contains(r.out, `"outcome":"refused"`) || !strings.Contains(p.out, `"outcome":"refused"`) || !strings.Contains(p.out, `"judge":"rule:pikit"`) {
		t.Fatalf("rule: %s\nrule:pikit: %s", r.out, p.out)
	}
	// An echo of the prompt (the default mock's answer) is no success for
	// either judge.
	if e := run(t, "run", "--attack", "naive", "--judge", "rule:pikit", "--json"); !strings.Contains(e.out, `"outcome":"not_reached"`) {
		t.Errorf("rule:pikit on the echo mock: %s", e.out)
	}
	if r := run(t, "run", "--judge", "rule:python"); r.code != 2 || !strings.Contains(r.err, "known: rule, rule:pikit, match, llm, none") {
		t.Errorf("%+v", r)
	}
}

// Taint your own file: carrier_path (or data_file) and output_path.
func TestCarrierPathAndOutputPath(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "mine.eml", "From: a@example.com\nSubject: invoice 4471\n\nPlease find the invoice attached.\n")
	base := "agents = [\"email\"]\nattacks = [\"naive\"]\nchannels = [\"email_headers\"]\ntarget_spec = \"mock:obedient\"\n"
	cfg := writeFile(t, dir, "exp.toml", base+"carrier_path = \"mine.eml\"\noutput_path = \"out/tainted.eml\"\n")
	os.Mkdir(filepath.Join(dir, "out"), 0o755)
	res := filepath.Join(dir, "r.jsonl")
	if r := run(t, "matrix", "--config", cfg, "-q", "-o", res); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	raw, _ := os.ReadFile(res)
	if !strings.Contains(string(raw), "invoice 4471") {
		t.Error("the tool result is not the user's own file")
	}
	out, err := os.ReadFile(filepath.Join(dir, "out", "tainted.eml"))
	if err != nil || !strings.Contains(string(out), "invoice 4471") || !strings.Contains(string(out), "HACKED") {
		t.Fatalf("output_path: %v %q", err, out)
	}
	// data_file is the Python pikit's name of carrier_path.
	alias := writeFile(t, dir, "alias.toml", base+"data_file = \"mine.eml\"\n")
	if r := run(t, "run", "--config", alias, "--full"); r.code != 0 || !strings.Contains(r.out, "invoice 4471") {
		t.Errorf("data_file: exit %d\n%s%s", r.code, r.out, r.err)
	}
	writeFile(t, dir, "doc.pdf", "%PDF-1.4\n")
	for _, tc := range []struct {
		name, extra, want string
		trust             bool
	}{
		{"existing output", "carrier_path = \"mine.eml\"\noutput_path = \"out/tainted.eml\"\n", "exp2.toml:6: output_path: out/tainted.eml exists", false},
		{"missing carrier", "carrier_path = \"nope.eml\"\n", "exp2.toml:5: carrier_path: cannot read the carrier nope.eml: no such file", false},
		{"pdf carrier without text", "carrier_path = \"doc.pdf\"\n", "cannot read the text of the PDF carrier doc.pdf", false},
		{"both carriers", "carrier_path = \"mine.eml\"\ndata_sample = \"email\"\n", "and data_sample both name the clean carrier", false},
		{"alias twice", "carrier_path = \"mine.eml\"\ndata_file = \"mine.eml\"\n", "the same setting as carrier_path", false},
		{"outside the config's directory", "carrier_path = \"../" + filepath.Base(dir) + "/mine.eml\"\n", "", false},
		{"absolute path", "carrier_path = \"" + filepath.Join(dir, "mine.eml") + "\"\n", "--trust-config", false},
		{"many cells, one output", "attacks = [\"naive\", \"escape\"]\noutput_path = \"x.eml\"\n", "output_path: names one file, but the config plans 2 cells", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := base + tc.extra
			if strings.Contains(tc.extra, "attacks =") {
				doc = strings.Replace(base, "attacks = [\"naive\"]\n", "", 1) + tc.extra
			}
			c := writeFile(t, dir, "exp2.toml", doc)
			args := []string{"matrix", "--config", c, "-q"}
			if tc.trust {
				args = append(args, "--trust-config")
			}
			r := run(t, args...)
			if tc.want == "" { // a path back into the same directory is local
				if r.code != 0 {
					t.Errorf("exit %d: %s", r.code, r.err)
				}
				return
			}
			if r.code != 2 || !strings.Contains(r.err, tc.want) {
				t.Errorf("exit %d %q, want 2 with %q", r.code, r.err, tc.want)
			}
		})
	}
	abs := writeFile(t, dir, "exp3.toml", base+"carrier_path = \""+filepath.Join(dir, "mine.eml")+"\"\n")
	if r := run(t, "matrix", "--config", abs, "-q", "--trust-config"); r.code != 0 {
		t.Errorf("--trust-config: exit %d: %s", r.code, r.err)
	}
}

// TestPythonCompatFilesLoad: every config and dataset in
// testdata/python_compat, written in the Python pikit's format with each
// of its options at least once, loads and plans with exit 0; those on
// offline targets also run.
func TestPythonCompatFilesLoad(t *testing.T) {
	files, _ := filepath.Glob("testdata/python_compat/*.toml")
	if len(files) < 15 {
		t.Fatalf("%d files", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if filepath.Base(f) == "dataset.toml" {
				if r := run(t, "dataset", "show", f); r.code != 0 {
					t.Fatalf("dataset show: exit %d: %s", r.code, r.err)
				}
				if r := run(t, "dataset", "run", f, "-q", "-o", filepath.Join(t.TempDir(), "r.jsonl")); r.code != 0 {
					t.Fatalf("dataset run: exit %d: %s", r.code, r.err)
				}
				return
			}
			if r := run(t, "matrix", "--config", f, "--dry-run"); r.code != 0 {
				t.Fatalf("dry run: exit %d: %s", r.code, r.err)
			}
			b, _ := os.ReadFile(f)
			if strings.Contains(string(b), `"vllm:`) || strings.Contains(string(b), `"openai_compatible:`) {
				return // network targets: planned, not sent
			}
			if r := run(t, "matrix", "--config", f, "-q", "-o", filepath.Join(t.TempDir(), "r.jsonl")); r.code != 0 {
				t.Fatalf("run: exit %d: %s", r.code, r.err)
			}
		})
	}
}

// pikit show lists each method's options, saying where a default differs
// from the Python pikit's.
func TestShowDocumentsDefaults(t *testing.T) {
	r := run(t, "show", "defenses", "spotlighting", "retokenization")
	if r.code != 0 || strings.Count(r.out, "options:") != 2 || !strings.Contains(r.out, "marker = \"^\"") || !strings.Contains(r.out, "The Python pikit's default differs") {
		t.Fatalf("exit %d\n%s%s", r.code, r.out, r.err)
	}
}

// --repeat-summary writes the Python pikit's summary row after each
// combination's repeats; pikit's readers pass them over (issue 23).
func TestRepeatSummaryRows(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "rs.toml")
	if err := os.WriteFile(cfg, []byte("attacks = [\"naive\", \"escape\"]\nrepeats = 3\ntarget_spec = \"mock:obedient\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "rs.jsonl")
	if r := run(t, "matrix", "-c", cfg, "-o", out, "--repeat-summary", "-q"); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 8 {
		t.Fatalf("%d lines, want 6 cells and 2 summaries", len(lines))
	}
	for _, l := range lines[6:] {
		var row struct {
			Signals []string
			Success bool
			Reason  string
			Count   int `json:"success_count"`
			Total   int `json:"total_runs"`
		}
		if err := json.Unmarshal([]byte(l), &row); err != nil {
			t.Fatal(err)
		}
		if len(row.Signals) != 1 || row.Signals[0] != "repeat_summary" || !row.Success || row.Count != 3 || row.Total != 3 || row.Reason != "3/3 runs succeeded" {
			t.Errorf("summary row %s", l)
		}
	}
	if r := run(t, "report", out); !strings.Contains(r.out, "cells           6") {
		t.Errorf("report counts the summaries: %s", r.out)
	}
	for _, args := range [][]string{{"--repeat-summary"}, {"--repeat-summary", "-o", out, "--resume"}} {
		if r := run(t, append([]string{"matrix", "-c", cfg}, args...)...); r.code != ExitUsage || !strings.Contains(r.err, "--repeat-summary") {
			t.Errorf("%v: %+v", args, r)
		}
	}
}
