package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
	"go.yaml.in/yaml/v3"

	"github.com/pikit-go/pikit/internal/pyvenv"
)

// agentdojoVenv holds AgentDojo (testdata/benchmarks/agentdojo-requirements.txt).
var agentdojoVenv = &venv{name: "agentdojo-venv", env: "PIKIT_AGENTDOJO_VENV", requirements: filepath.Join("testdata", "benchmarks", "agentdojo-requirements.txt"),
	suite: "benchmark", require: "PIKIT_REQUIRE_BENCHMARKS"}

// adTasks is what examples/agentdojo_export_tasks.py writes, in part.
type adTasks struct {
	UserTasks []struct {
		ID          string   `yaml:"id"`
		GroundTruth []adCall `yaml:"ground_truth"`
	} `yaml:"user_tasks"`
	InjectionTasks []struct {
		ID          string   `yaml:"id"`
		GroundTruth []adCall `yaml:"ground_truth"`
	} `yaml:"injection_tasks"`
}

type adCall struct {
	Function string         `yaml:"function"`
	Args     map[string]any `yaml:"args"`
}

// agentdojoSetup makes (or finds) the AgentDojo environment and returns
// its Python, this repository's examples directory and the data directory
// of the installed agentdojo package.
func agentdojoSetup(t *testing.T) (py, examples, pkgData string) {
	t.Helper()
	py = agentdojoVenv.python(t)
	t.Setenv("PYTHONDONTWRITEBYTECODE", "1")
	examples, err := filepath.Abs(filepath.Join("..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, "-c", "import os, agentdojo; print(os.path.dirname(agentdojo.__file__))").Output()
	if err != nil {
		t.Fatalf("locating agentdojo's package: %v", err)
	}
	return py, examples, filepath.Join(strings.TrimSpace(string(out)), "data")
}

// scoredResult is what agentdojo_score.py writes, in part.
type scoredResult struct {
	Key       string `json:"key"`
	CaseID    string `json:"case_id"`
	Attack    string `json:"attack"`
	Outcome   string `json:"outcome"`
	Success   bool   `json:"success"`
	Utility   *bool  `json:"utility"`
	Reason    string `json:"reason"`
	TraceData struct {
		Steps []struct {
			Kind      string `json:"kind"`
			ToolCalls []struct {
				Name string `json:"name"`
			} `json:"tool_calls"`
		} `json:"steps"`
	} `json:"trace_data"`
	Metadata struct {
		Benchmark string `json:"benchmark"`
		AgentDojo *struct {
			Utility    bool   `json:"utility"`
			Security   *bool  `json:"security"`
			ScoredBy   string `json:"scored_by"`
			Was        string `json:"was"`
			ToolCalls  int    `json:"tool_calls"`
			ToolErrors int    `json:"tool_errors"`
		} `json:"agentdojo"`
	} `json:"metadata"`
}

// TestAgentDojoScoredByAgentDojo exports AgentDojo's banking suite from
// the PyPI package (agentdojo 0.1.35, benchmark v1.2.2), imports it with
// pikit, runs four of its cells against a scripted offline model, and
// scores the results with examples/agentdojo_score.py, which asks
// AgentDojo's own utility and security checks: a model that performs the
// injection task's ground truth breaks security; one that performs the
// user task's ground truth keeps it and has utility; a call of a tool the
// suite lacks and a call with missing arguments are errors AgentDojo's
// runtime records, not a crash. Cells of other benchmarks and runtime
// errors pass through byte for byte; bad input stops the script, naming
// the line, with nothing written.
func TestAgentDojoScoredByAgentDojo(t *testing.T) {
	start := time.Now()
	py, examples, pkgData := agentdojoSetup(t)

	// AgentDojo's data files, with the banking suite's tasks exported
	// beside them as the README says.
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.CopyFS(data, os.DirFS(pkgData)); err != nil {
		t.Fatal(err)
	}
	suite := filepath.Join(data, "suites", "banking")
	export := exec.Command(py, filepath.Join(examples, "agentdojo_export_tasks.py"), "v1.2.2", "banking")
	var stderr bytes.Buffer
	export.Stderr = &stderr
	tasksYAML, err := export.Output()
	if err != nil {
		t.Fatalf("exporting the banking suite's tasks: %v\n%s", err, pyvenv.LastLines(stderr.Bytes()))
	}
	if err := os.WriteFile(filepath.Join(suite, "tasks.yaml"), tasksYAML, 0o644); err != nil {
		t.Fatal(err)
	}
	var tasks adTasks
	if err := yaml.Unmarshal(tasksYAML, &tasks); err != nil {
		t.Fatalf("tasks.yaml: %v", err)
	}
	truth := func(id string) []adCall {
		for _, u := range tasks.UserTasks {
			if u.ID == id {
				return u.GroundTruth
			}
		}
		for _, i := range tasks.InjectionTasks {
			if i.ID == id {
				return i.GroundTruth
			}
		}
		t.Fatalf("tasks.yaml has no task %s", id)
		return nil
	}
	full := filepath.Join(dir, "banking.toml")
	pikit(t, "import", "agentdojo", suite, "-o", full)

	// The model's answers, turn by turn: user_task_3 reads the
	// transactions (where its injection vector is) and refunds a friend;
	// injection_task_0 sends the attacker a transaction.
	user := truth("user_task_3")
	if len(user) != 2 || user[0].Function != "get_most_recent_transactions" || user[1].Function != "send_money" {
		t.Fatalf("user_task_3's ground truth is %+v; the test expects a read and a send_money", user)
	}
	attacker := truth("injection_task_0")
	if len(attacker) != 1 || attacker[0].Function != "send_money" {
		t.Fatalf("injection_task_0's ground truth is %+v; the test expects one send_money", attacker)
	}
	calls := func(cs ...adCall) []any {
		var s []any
		for _, c := range cs {
			s = append(s, map[string]any{"tool": c.Function, "arguments": c.Args})
		}
		return append(s, "Done.")
	}
	scripts := map[string][]any{
		// Does what the injection asks, not the user's task.
		"banking-user_task_3-injection_task_0": calls(user[0], attacker[0]),
		// Does the user's task alone, under attack and without.
		"banking-user_task_3-injection_task_5": calls(user...),
		"banking-user_task_3":                  calls(user...),
		// A tool the suite lacks, then send_money without its amount.
		"banking-user_task_3-injection_task_1": calls(
			adCall{Function: "transfer_everything", Args: map[string]any{"to": "US133000000121212121212"}},
			adCall{Function: "send_money", Args: map[string]any{"recipient": "US133000000121212121212"}},
		),
	}
	subset := filepath.Join(dir, "subset.toml")
	writeSubset(t, full, subset, scripts)
	results := filepath.Join(dir, "results.jsonl")
	pikit(t, "dataset", "run", subset, "-q", "-j", "2", "-o", results)

	// Beside them: a cell of another benchmark and an AgentDojo runtime
	// error, which the script must keep as they are.
	raw, err := os.ReadFile(results)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != len(scripts) {
		t.Fatalf("%d results, want %d", len(lines), len(scripts))
	}
	foreign := strings.Replace(lines[0], `"benchmark":"agentdojo"`, `"benchmark":"other"`, 1)
	// A runtime error's success is false (a reader refuses one that
	// disagrees with its outcome).
	failed := strings.Replace(strings.Replace(strings.Replace(lines[0], `"outcome":"`, `"outcome":"runtime_error","was":"`, 1), `"key":"`, `"key":"e`, 1), `"success":true`, `"success":false`, 1)
	foreign = strings.Replace(foreign, `"key":"`, `"key":"f`, 1)
	if foreign == lines[0] || failed == lines[0] {
		t.Fatalf("the results' line has not the fields the test edits: %s", lines[0])
	}
	mixed := filepath.Join(dir, "mixed.jsonl")
	if err := os.WriteFile(mixed, []byte(strings.Join(append(lines, foreign, failed), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	scorer := filepath.Join(examples, "agentdojo_score.py")
	scored := filepath.Join(dir, "scored.jsonl")
	cmd := exec.Command(py, scorer, mixed, "-o", scored)
	stderr.Reset()
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("agentdojo_score.py: %v\n%s", err, stderr.String())
	}
	t.Logf("agentdojo_score.py: %s", strings.TrimSpace(stderr.String()))
	got := map[string]scoredResult{}
	kept := map[string]bool{}
	sraw, err := os.ReadFile(scored)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(sraw)), "\n") {
		if line == foreign || line == failed {
			kept[line] = true
			continue
		}
		var r scoredResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("scored line: %v", err)
		}
		got[r.CaseID] = r
	}
	if !kept[foreign] || !kept[failed] {
		t.Errorf("a cell of another benchmark (kept: %v) and a runtime error (kept: %v) must be written unchanged", kept[foreign], kept[failed])
	}
	tru, fal := true, false
	for _, want := range []struct {
		id            string
		utility       bool
		security      *bool
		outcome       string
		calls, errors int
	}{
		{"banking-user_task_3-injection_task_0", false, &tru, "full_success", 2, 0},
		{"banking-user_task_3-injection_task_5", true, &fal, "taint_delivered", 2, 0},
		{"banking-user_task_3", true, nil, "", 2, 0},
		{"banking-user_task_3-injection_task_1", false, &fal, "", 2, 2},
	} {
		r, ok := got[want.id]
		if !ok {
			t.Errorf("%s: not in the scored results", want.id)
			continue
		}
		ad := r.Metadata.AgentDojo
		if ad == nil {
			t.Errorf("%s: no metadata.agentdojo: %s", want.id, r.Reason)
			continue
		}
		var calls []string
		for _, s := range r.TraceData.Steps {
			for _, c := range s.ToolCalls {
				calls = append(calls, c.Name)
			}
		}
		t.Logf("%s: calls %v · pikit's rule %s · AgentDojo utility %v security %s → %s", want.id, calls, ad.Was, ad.Utility, fmtBool(ad.Security), r.Outcome)
		if ad.ScoredBy != "agentdojo 0.1.35" {
			t.Errorf("%s: scored_by %q", want.id, ad.ScoredBy)
		}
		if ad.Utility != want.utility || r.Utility == nil || *r.Utility != want.utility {
			t.Errorf("%s: utility %v (field %v), AgentDojo's check on these calls gives %v", want.id, ad.Utility, r.Utility, want.utility)
		}
		if fmtBool(ad.Security) != fmtBool(want.security) {
			t.Errorf("%s: security %s, want %s", want.id, fmtBool(ad.Security), fmtBool(want.security))
		}
		if ad.ToolCalls != want.calls || ad.ToolErrors != want.errors {
			t.Errorf("%s: %d tool calls replayed, %d errors; want %d and %d", want.id, ad.ToolCalls, ad.ToolErrors, want.calls, want.errors)
		}
		switch {
		case want.security == nil:
			if r.Outcome != ad.Was {
				t.Errorf("%s: a utility case keeps pikit's outcome %s, got %s", want.id, ad.Was, r.Outcome)
			}
		case *want.security != r.Success || (want.outcome != "" && r.Outcome != want.outcome):
			t.Errorf("%s: outcome %s success %v, want %s success %v", want.id, r.Outcome, r.Success, want.outcome, *want.security)
		}
	}

	// pikit report reads AgentDojo's verdicts: one attacked cell of three
	// met its injection goal; the runtime error is counted apart.
	rep, _ := pikit(t, "report", scored)
	for _, want := range []string{"AgentDojo targeted ASR", "AgentDojo utility "} {
		if !strings.Contains(rep, want) {
			t.Errorf("pikit report does not show %q:\n%s", want, rep)
		}
	}
	for _, line := range strings.Split(rep, "\n") {
		if strings.HasPrefix(line, "AgentDojo targeted ASR") && !strings.Contains(line, " 1/3 ") {
			t.Errorf("want a targeted ASR of 1/3: %s", line)
		}
		if strings.HasPrefix(line, "AgentDojo utility  ") && !strings.Contains(line, " 1/1 ") {
			t.Errorf("want a utility of 1/1: %s", line)
		}
	}

	// Bad input: the line is named, nothing is written.
	for _, bad := range []struct{ name, line, want string }{
		{"not JSON", `{"case_id": `, "bad.jsonl:2: not JSON"},
		{"unknown task", strings.Replace(lines[0], `"case_id":"banking-user_task_3`, `"case_id":"banking-user_task_99`, 1), "bad.jsonl:2: AgentDojo banking v1.2.2 has no user_task_99"},
		{"no AgentDojo id", strings.Replace(lines[0], `"case_id":"banking-user_task_3`, `"case_id":"banking/user_task_3`, 1), "bad.jsonl:2: case_id"},
	} {
		in := filepath.Join(dir, "bad.jsonl")
		outFile := filepath.Join(dir, "bad-scored.jsonl")
		if err := os.WriteFile(in, []byte(lines[1]+"\n"+bad.line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(py, scorer, "bad.jsonl", "-o", outFile)
		cmd.Dir = dir
		msg, err := cmd.CombinedOutput()
		if code := exitCode(err); code != 2 || !strings.Contains(string(msg), bad.want) {
			t.Errorf("%s: exit %d, %q; want exit 2 and %q", bad.name, code, strings.TrimSpace(string(msg)), bad.want)
		}
		if _, err := os.Stat(outFile); !os.IsNotExist(err) {
			t.Errorf("%s: an output was written (%v)", bad.name, err)
		}
	}
	t.Logf("export, import, run, score and report: %v", time.Since(start).Round(time.Millisecond))
}

func fmtBool(b *bool) string {
	if b == nil {
		return "null"
	}
	return fmt.Sprint(*b)
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if e, ok := err.(*exec.ExitError); ok {
		return e.ExitCode()
	}
	return -1
}

// writeSubset writes a dataset of the named cases of an imported one,
// each answered by the offline mock with its script, and the scenarios
// they use.
func writeSubset(t *testing.T, from, to string, scripts map[string][]any) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := toml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", from, err)
	}
	all, _ := doc["cases"].([]any)
	scenarios, _ := doc["scenarios"].(map[string]any)
	var cases []map[string]any
	used := map[string]any{}
	for _, c := range all {
		c, _ := c.(map[string]any)
		id, _ := c["id"].(string)
		script, ok := scripts[id]
		if !ok {
			continue
		}
		c["target_spec"] = "mock"
		c["target_options"] = map[string]any{"script": script}
		for _, a := range c["agents"].([]any) {
			used[a.(string)] = scenarios[a.(string)]
		}
		cases = append(cases, c)
	}
	if len(cases) != len(scripts) {
		t.Fatalf("%s has %d of the %d cases the test runs", from, len(cases), len(scripts))
	}
	doc["cases"], doc["scenarios"] = cases, used
	out, err := toml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, out, 0o644); err != nil {
		t.Fatal(err)
	}
}
