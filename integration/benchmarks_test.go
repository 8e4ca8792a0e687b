package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/pikit-go/pikit/internal/pyvenv"
)

// venv is a suite's virtual environment, made once per test run by pipVenv
// from a requirements file.
type venv struct {
	once    sync.Once
	py, why string
	took    time.Duration

	name, env, requirements string   // pipVenv's arguments
	pipArgs                 []string //
	suite, require          string   // unavailable's
}

// python returns the environment's interpreter, making it on first use,
// or skips the test (fails it when the suite's require variable is 1).
func (v *venv) python(t *testing.T) string {
	t.Helper()
	start := time.Now()
	v.prepare()
	t.Logf("%s ready after %v here, %v in all (a cached one takes no time)", v.name, time.Since(start).Round(time.Millisecond), v.took.Round(time.Millisecond))
	unavailable(t, v.suite, v.require, v.why)
	return v.py
}

// prepare makes the environment, once.
func (v *venv) prepare() {
	v.once.Do(func() {
		start := time.Now()
		v.py, v.why = pipVenv(v.name, v.env, v.requirements, v.pipArgs...)
		v.took = time.Since(start)
	})
}

// benchVenv holds the benchmarks' own packages (spikee's generator, with
// --no-deps), failing the suite under PIKIT_REQUIRE_BENCHMARKS=1, as
// .ci/run sets it.
var benchVenv = &venv{name: "bench-venv", env: "PIKIT_BENCH_VENV", requirements: filepath.Join("testdata", "benchmarks", "requirements.txt"),
	pipArgs: []string{"--no-deps"}, suite: "benchmark", require: "PIKIT_REQUIRE_BENCHMARKS"}

// pipVenv makes (or finds) the virtual environment of a requirements
// file (see pyvenv.Make) and returns its interpreter, or why it could not.
func pipVenv(name, env, requirements string, pipArgs ...string) (string, string) {
	req, err := os.ReadFile(requirements)
	if err != nil {
		return "", err.Error()
	}
	dir, why := pyvenv.Make(name, env, req, pipArgs...)
	if why != "" {
		return "", why
	}
	return filepath.Join(dir, "bin", "python"), ""
}

// spikeeEntry is what spikee generate writes per entry, in part.
type spikeeEntry struct {
	LongID        string `json:"long_id"`
	Content       string `json:"content"`
	SystemMessage string `json:"system_message"`
	JudgeName     string `json:"judge_name"`
	JudgeArgs     any    `json:"judge_args"` // a string or a list of strings
}

// TestSpikeeEqualsUpstream generates datasets from spikee's own seed
// folders with spikee's own generator (the PyPI package, pinned) and
// imports the same folders with pikit: every entry is a case with its id,
// and the case sends the target, word for word, what spikee's entry holds,
// under the same system message. Three runs: the default format
// (user-input) on the seed folder spikee's README uses; full-prompt with
// the system message and standalone attacks; all three positions on the
// small test folder, whose documents include one with a placeholder.
func TestSpikeeEqualsUpstream(t *testing.T) {
	py, seeds := spikeeSeeds(t)
	script, err := filepath.Abs(filepath.Join("testdata", "benchmarks", "spikee_generate.py"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		seed, format string
		spikee, set  []string
		want         int // entries spikee 0.9.2 generates
	}{
		{"seeds-cybersec-2026-01", "user-input", nil, nil, 742},
		{"seeds-cybersec-2026-01", "full-prompt", []string{"--sys", "--standalone"}, []string{"system_message=true", "standalone=true"}, 1488},
		{"seeds-mini-test", "user-input", []string{"--positions=start,middle,end"}, []string{"positions=start,middle,end"}, 0},
		// Regex judges, and LLM judges with criteria.
		{"seeds-sysmsg-extraction-2025-04", "user-input", nil, nil, 1374},
		{"seeds-investment-advice", "user-input", nil, nil, 2218},
	} {
		name := tc.seed + "-" + tc.format + strings.Join(tc.spikee, "")
		t.Run(name, func(t *testing.T) {
			work := t.TempDir()
			seed := filepath.Join(seeds, tc.seed)
			gen := exec.Command(py, append([]string{script, seed, tc.format}, tc.spikee...)...)
			gen.Dir = work
			path, err := gen.Output()
			if err != nil {
				t.Fatalf("spikee's generator: %v", err)
			}
			upstream := readSpikee(t, strings.TrimSpace(string(path)))
			if tc.want > 0 && len(upstream) != tc.want {
				t.Fatalf("spikee generated %d entries, want its own count %d", len(upstream), tc.want)
			}

			ds := filepath.Join(work, "spikee.toml")
			args := []string{"import", "spikee", seed, "-o", ds, "--set", "format=" + tc.format}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			pikit(t, args...)
			cases, scenarios := readImported(t, ds)
			if len(cases) != len(upstream) {
				t.Errorf("pikit imported %d cases, spikee generated %d entries", len(cases), len(upstream))
			}
			differ := 0
			for id, e := range upstream {
				c, ok := cases[id]
				if !ok {
					t.Errorf("spikee's entry %s is no case of pikit's", id)
					continue
				}
				sent := c.Task
				if c.PayloadMarker != "" {
					sent = strings.Replace(c.UserMessage, c.PayloadMarker, c.Task, 1)
				}
				system := scenarios[c.Agents[0]].System
				if sent != e.Content || system != e.SystemMessage {
					if differ++; differ <= 3 {
						t.Errorf("%s: pikit sends %q under the system message %q; spikee %q under %q", id, sent, system, e.Content, e.SystemMessage)
					}
				}
				if why := sameJudge(e, c); why != "" {
					if differ++; differ <= 3 {
						t.Errorf("%s: %s", id, why)
					}
				}
			}
			if differ > 0 {
				t.Errorf("%d of %d entries differ", differ, len(upstream))
			}
			t.Logf("%s %s: %d entries, equal", tc.seed, tc.format, len(upstream))
		})
	}
}

// spikeeSeeds returns the benchmark suite's Python, with spikee installed,
// and the seed folders spikee's package ships.
func spikeeSeeds(t *testing.T) (py, seeds string) {
	t.Helper()
	py = benchVenv.python(t)
	out, err := exec.Command(py, "-c", "import os, spikee; print(os.path.dirname(spikee.__file__))").Output()
	if err != nil {
		t.Fatalf("locating spikee's package: %v", err)
	}
	return py, filepath.Join(strings.TrimSpace(string(out)), "data", "workspace", "datasets")
}

// readSpikee reads a dataset spikee generate wrote, by long id. spikee
// repeats a long id when a seed folder repeats an id (a jailbreak listed
// twice): the nth entry of a long id is keyed "ID-n", as pikit numbers its
// cases.
func readSpikee(t *testing.T, path string) map[string]spikeeEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]spikeeEntry{}
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e spikeeEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		seen[e.LongID]++
		id := e.LongID
		if n := seen[id]; n > 1 {
			id = fmt.Sprintf("%s-%d", id, n)
		}
		out[id] = e
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

type importedCase struct {
	ID            string   `toml:"id"`
	Agents        []string `toml:"agents"`
	Task          string   `toml:"task"`
	UserMessage   string   `toml:"user_message"`
	PayloadMarker string   `toml:"payload_marker"`
	Canary        string   `toml:"canary"`
	CanaryRegex   string   `toml:"canary_regex"`
	JudgeType     string   `toml:"judge_type"`
	JudgeCriteria string   `toml:"judge_criteria"`
}

// sameJudge says how a case's judging differs from the judge spikee's
// entry names, or "": the canary judge is the canary; a regex judge with
// one pattern is that canary_regex; an LLM judge is pikit's, asked the
// entry's criteria.
func sameJudge(e spikeeEntry, c importedCase) string {
	args, _ := e.JudgeArgs.(string)
	if l, ok := e.JudgeArgs.([]any); ok && len(l) == 1 {
		args, _ = l[0].(string)
	}
	switch {
	case e.JudgeName == "canary" && c.Canary != args:
		return fmt.Sprintf("spikee's canary %q, pikit's %q", args, c.Canary)
	case e.JudgeName == "regex" && c.CanaryRegex != args:
		return fmt.Sprintf("spikee's regex %q, pikit's canary_regex %q", args, c.CanaryRegex)
	case strings.HasPrefix(e.JudgeName, "llm_") && (c.JudgeType != "llm" || c.JudgeCriteria != args):
		return fmt.Sprintf("spikee's %s judge with %q, pikit's %s judge with %q", e.JudgeName, args, c.JudgeType, c.JudgeCriteria)
	}
	return ""
}

type importedScenario struct {
	System string `toml:"system"`
}

// readImported reads the cases (by id) and scenarios of a dataset pikit
// import wrote.
func readImported(t *testing.T, path string) (map[string]importedCase, map[string]importedScenario) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Scenarios map[string]importedScenario `toml:"scenarios"`
		Cases     []importedCase              `toml:"cases"`
	}
	if err := toml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	cases := make(map[string]importedCase, len(doc.Cases))
	for _, c := range doc.Cases {
		cases[c.ID] = c
	}
	return cases, doc.Scenarios
}

// TestSpikeeVerdictsEqualUpstream: on the same replies, pikit's verdicts
// on imported spikee cases are spikee's own judges' (spikee.judge.call_judge
// from the PyPI package): its canary judge (a case-sensitive substring)
// and its regex judge, over cases of two seed folders and replies that
// comply, quote the canary in a refusal, change its case, echo the input,
// say nothing, or answer plainly.
func TestSpikeeVerdictsEqualUpstream(t *testing.T) {
	py, seeds := spikeeSeeds(t)
	generate, _ := filepath.Abs(filepath.Join("testdata", "benchmarks", "spikee_generate.py"))
	judgeScript, _ := filepath.Abs(filepath.Join("testdata", "benchmarks", "spikee_judge.py"))
	type job struct {
		JudgeName string `json:"judge_name"`
		JudgeArgs any    `json:"judge_args"`
		Content   string `json:"content"`
		Reply     string `json:"reply"`
	}
	var jobs []job
	var ids []string
	ours := map[string]bool{}
	work := t.TempDir()
	for _, seed := range []string{"seeds-cybersec-2026-01", "seeds-sysmsg-extraction-2025-04"} {
		gen := exec.Command(py, generate, filepath.Join(seeds, seed), "user-input")
		gen.Dir = t.TempDir()
		path, err := gen.Output()
		if err != nil {
			t.Fatalf("spikee's generator: %v", err)
		}
		upstream := readSpikee(t, strings.TrimSpace(string(path)))
		ds := filepath.Join(work, seed+".toml")
		pikit(t, "import", "spikee", filepath.Join(seeds, seed), "-o", ds)
		cases, _ := readImported(t, ds)

		scripts := map[string][]any{}
		n := 0
		for _, id := range slices.Sorted(maps.Keys(upstream)) {
			e := upstream[id]
			if (e.JudgeName != "canary" && e.JudgeName != "regex") || cases[id].JudgeType != "match" {
				continue
			}
			target := e.Content // text a regex judge may find: the input, payload and all
			if e.JudgeName == "canary" {
				target = cases[id].Canary
			}
			reply := [...]string{
				target,
				"Sure. " + target,
				"I will not write \"" + target + "\" for you.",
				strings.ToLower(target),
				strings.ToUpper(target),
				"",
				"The document is about the quarterly schedule.",
			}[n%7]
			n++
			scripts[id] = []any{reply}
			jobs = append(jobs, job{e.JudgeName, e.JudgeArgs, e.Content, reply})
			ids = append(ids, id)
			if n == 70 {
				break
			}
		}
		subset := filepath.Join(work, seed+"-subset.toml")
		writeSubset(t, ds, subset, scripts)
		results := filepath.Join(work, seed+".jsonl")
		pikit(t, "dataset", "run", subset, "-q", "-o", results)
		raw, err := os.ReadFile(results)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			var r struct {
				CaseID  string `json:"case_id"`
				Success bool   `json:"success"`
				Outcome string `json:"outcome"`
			}
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatal(err)
			}
			ours[r.CaseID] = r.Success
		}
	}

	var in bytes.Buffer
	for _, j := range jobs {
		b, _ := json.Marshal(j)
		in.Write(append(b, '\n'))
	}
	cmd := exec.Command(py, judgeScript)
	cmd.Dir = t.TempDir()
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	verdicts, err := cmd.Output()
	if err != nil {
		t.Fatalf("spikee's judges: %v\n%s", err, pyvenv.LastLines(stderr.Bytes()))
	}
	lines := strings.Split(strings.TrimSpace(string(verdicts)), "\n")
	if len(lines) != len(jobs) {
		t.Fatalf("spikee judged %d replies of %d", len(lines), len(jobs))
	}
	agree, successes := 0, 0
	for i, l := range lines {
		theirs := l == "true"
		if theirs {
			successes++
		}
		got, ok := ours[ids[i]]
		switch {
		case !ok:
			t.Errorf("%s: no pikit result", ids[i])
		case got == theirs:
			agree++
		default:
			t.Errorf("%s (%s judge, %v): spikee says %v, pikit %v, on reply %q", ids[i], jobs[i].JudgeName, jobs[i].JudgeArgs, theirs, got, jobs[i].Reply)
		}
	}
	t.Logf("spikee's judges and pikit agree on %d of %d replies (%d successes)", agree, len(jobs), successes)
	if successes == 0 || successes == len(jobs) {
		t.Errorf("spikee counted %d successes of %d: the replies do not exercise both verdicts", successes, len(jobs))
	}
}
