package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/pikit-go/pikit/internal/pyvenv"
)

// scriptedTasks is what examples/agentdojo_export_tasks.py writes that the
// scripted model acts on.
type scriptedTasks struct {
	Suite     string `yaml:"suite"`
	UserTasks []struct {
		ID          string   `yaml:"id"`
		Prompt      string   `yaml:"prompt"`
		Output      string   `yaml:"ground_truth_output"`
		GroundTruth []adCall `yaml:"ground_truth"`
	} `yaml:"user_tasks"`
	InjectionTasks []struct {
		ID          string   `yaml:"id"`
		Goal        string   `yaml:"goal"`
		GroundTruth []adCall `yaml:"ground_truth"`
	} `yaml:"injection_tasks"`
}

// scriptedModel is an OpenAI-compatible chat server that answers the same
// conversation the same way, whoever asks: it finds the task by the
// user's message and makes its ground-truth calls one per turn, ending
// with the task's ground-truth answer; when a tool result carries an
// injection task's goal, it makes that task's ground-truth calls next and
// then goes on with the user's. What it does depends only on what the
// benchmark defines (prompts, goals, ground truth) and on what the tools
// returned, so AgentDojo's harness and pikit, given the same model, must
// reach the same verdicts when they deliver the injection to the same
// places.
type scriptedModel struct {
	tasks    map[string][]scriptedTask // by the normalised prompt
	requests atomic.Int64
}

type scriptedTask struct {
	suite, id, answer string
	calls             []adCall
	goals             []scriptedGoal // the suite's injection tasks
}

type scriptedGoal struct {
	id, norm string
	calls    []adCall
}

// normText keeps a text's letters and digits, lowercased: a goal matches
// however a tool's output quoted, folded or indented it (AgentDojo dumps
// tool results as YAML).
func normText(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

func newScriptedModel(exports ...scriptedTasks) *scriptedModel {
	m := &scriptedModel{tasks: map[string][]scriptedTask{}}
	for _, e := range exports {
		var goals []scriptedGoal
		for _, it := range e.InjectionTasks {
			goals = append(goals, scriptedGoal{id: it.ID, norm: normText(it.Goal), calls: it.GroundTruth})
		}
		for _, ut := range e.UserTasks {
			k := normText(ut.Prompt)
			m.tasks[k] = append(m.tasks[k], scriptedTask{suite: e.Suite, id: ut.ID, answer: ut.Output, calls: ut.GroundTruth, goals: goals})
		}
		// AgentDojo's harness also runs each injection task as a user task.
		for _, it := range e.InjectionTasks {
			k := normText(it.Goal)
			m.tasks[k] = append(m.tasks[k], scriptedTask{suite: e.Suite, id: it.ID, calls: it.GroundTruth, goals: goals})
		}
	}
	return m
}

type oaMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []struct {
		ID string `json:"id"`
	} `json:"tool_calls"`
}

// text is a message's content, a string or a list of text parts.
func (m oaMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

func (m *scriptedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.requests.Add(1)
	var req struct {
		Messages []oaMessage `json:"messages"`
		Tools    []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var tools []string
	for _, t := range req.Tools {
		tools = append(tools, t.Function.Name)
	}
	task, ok := m.task(req.Messages, tools)
	if !ok {
		http.Error(w, `{"error":{"message":"the scripted model knows no task with this user message"}}`, http.StatusBadRequest)
		return
	}
	made, seenAt := 0, 0
	var injected *scriptedGoal
	for _, msg := range req.Messages {
		switch msg.Role {
		case "assistant":
			made += len(msg.ToolCalls)
		case "tool":
			seenAt++
			if injected != nil {
				continue
			}
			out := normText(msg.text())
			for i, g := range task.goals {
				if strings.Contains(out, g.norm) {
					injected = &task.goals[i]
					break
				}
			}
			if injected == nil {
				continue
			}
			plan := slices.Clone(task.calls[:min(seenAt, len(task.calls))])
			plan = append(plan, injected.calls...)
			task.calls = append(plan, task.calls[min(seenAt, len(task.calls)):]...)
		}
	}
	msg := map[string]any{"role": "assistant"}
	finish := "stop"
	if made < len(task.calls) {
		c := task.calls[made]
		args, _ := json.Marshal(c.Args)
		if c.Args == nil {
			args = []byte("{}")
		}
		msg["content"] = nil
		msg["tool_calls"] = []map[string]any{{
			"id": fmt.Sprintf("call_%d", made), "type": "function",
			"function": map[string]any{"name": c.Function, "arguments": string(args)},
		}}
		finish = "tool_calls"
	} else {
		answer := task.answer
		if answer == "" {
			answer = "Done."
		}
		msg["content"] = answer
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "scripted", "object": "chat.completion", "created": 0, "model": "scripted",
		"choices": []map[string]any{{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]int{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
	})
}

// task finds the conversation's task by its first user message; of tasks
// with the same prompt, the one whose calls the request's tools allow.
func (m *scriptedModel) task(msgs []oaMessage, tools []string) (scriptedTask, bool) {
	for _, msg := range msgs {
		if msg.Role != "user" {
			continue
		}
		for _, t := range m.tasks[normText(msg.text())] {
			if slices.ContainsFunc(t.calls, func(c adCall) bool { return !slices.Contains(tools, c.Function) }) {
				continue
			}
			return t, true
		}
		return scriptedTask{}, false
	}
	return scriptedTask{}, false
}

// adVerdict is one line of agentdojo_run.py's output.
type adVerdict struct {
	Suite         string  `json:"suite"`
	UserTask      string  `json:"user_task"`
	InjectionTask *string `json:"injection_task"`
	Utility       bool    `json:"utility"`
	Security      *bool   `json:"security"`
}

func (v adVerdict) caseID() string {
	id := v.Suite + "-" + v.UserTask
	if v.InjectionTask != nil {
		id += "-" + *v.InjectionTask
	}
	return id
}

// TestAgentDojoEquality runs AgentDojo's own harness (agentdojo 0.1.35,
// benchmark v1.2.2, the "direct" attack) and pikit (its import of the same
// suite, run, then scored by examples/agentdojo_score.py) against one
// scripted model, and compares utility and security case by case. The
// banking suite runs in CI; PIKIT_AGENTDOJO_SUITES=banking,slack,travel,workspace
// runs the whole benchmark (the figure in the README).
func TestAgentDojoEquality(t *testing.T) {
	start := time.Now()
	py, examples, pkgData := agentdojoSetup(t)
	suites := strings.Split(os.Getenv("PIKIT_AGENTDOJO_SUITES"), ",")
	if suites[0] == "" {
		suites = []string{"banking"}
	}
	dir := t.TempDir()
	if keep := os.Getenv("PIKIT_AGENTDOJO_KEEP"); keep != "" {
		dir = keep // to read the runs after the test
	}
	data := filepath.Join(dir, "data")
	if err := os.CopyFS(data, os.DirFS(pkgData)); err != nil {
		t.Fatal(err)
	}
	var exports []scriptedTasks
	for _, s := range suites {
		var stderr bytes.Buffer
		export := exec.Command(py, filepath.Join(examples, "agentdojo_export_tasks.py"), "v1.2.2", s)
		export.Stderr = &stderr
		b, err := export.Output()
		if err != nil {
			t.Fatalf("exporting the %s suite's tasks: %v\n%s", s, err, pyvenv.LastLines(stderr.Bytes()))
		}
		if err := os.WriteFile(filepath.Join(data, "suites", s, "tasks.yaml"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		var e scriptedTasks
		if err := yaml.Unmarshal(b, &e); err != nil {
			t.Fatalf("%s tasks.yaml: %v", s, err)
		}
		exports = append(exports, e)
	}
	t.Logf("exported %v: %v", suites, time.Since(start).Round(time.Millisecond))

	model := newScriptedModel(exports...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(model)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	defer srv.Close()

	// AgentDojo's harness.
	phase := time.Now()
	args := []string{filepath.Join("testdata", "benchmarks", "agentdojo_run.py"), "--base-url", srv.URL + "/v1", "--version", "v1.2.2"}
	for _, s := range suites {
		args = append(args, "--suite", s)
	}
	if only := os.Getenv("PIKIT_AGENTDOJO_USER_TASKS"); only != "" {
		args = append(args, "--user-tasks", only)
	}
	if os.Getenv("PIKIT_AGENTDOJO_KEEP") != "" {
		args = append(args, "--logdir", filepath.Join(dir, "agentdojo-runs"))
	}
	run := exec.Command(py, args...)
	var stderr bytes.Buffer
	run.Stderr = &stderr
	raw, err := run.Output()
	if err != nil {
		t.Fatalf("agentdojo_run.py: %v\n%s", err, pyvenv.LastLines(stderr.Bytes()))
	}
	theirs := map[string]adVerdict{}
	for _, line := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var v adVerdict
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("agentdojo_run.py wrote %q: %v", line, err)
		}
		theirs[v.caseID()] = v
	}
	adRequests := model.requests.Swap(0)
	t.Logf("AgentDojo's harness: %d cases, %d model requests, %v", len(theirs), adRequests, time.Since(phase).Round(time.Millisecond))

	// pikit: import, run, score with AgentDojo's checks.
	phase = time.Now()
	imported := filepath.Join(dir, "agentdojo.toml")
	src := data
	if len(suites) == 1 {
		src = filepath.Join(data, "suites", suites[0])
	}
	pikit(t, "import", "agentdojo", src, "-o", imported)
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "unused")
	results := filepath.Join(dir, "results.jsonl")
	pikit(t, "dataset", "run", imported, "--target", "openai:scripted", "-q", "-j", "4", "-o", results)
	scored := filepath.Join(dir, "scored.jsonl")
	score := exec.Command(py, filepath.Join(examples, "agentdojo_score.py"), results, "-o", scored)
	stderr.Reset()
	score.Stderr = &stderr
	if err := score.Run(); err != nil {
		t.Fatalf("agentdojo_score.py: %v\n%s", err, pyvenv.LastLines(stderr.Bytes()))
	}
	t.Logf("pikit: %d model requests, import+run+score %v", model.requests.Load(), time.Since(phase).Round(time.Millisecond))

	f, err := os.Open(scored)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	ours := map[string]scoredResult{}
	for sc.Scan() {
		var r scoredResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("scored line: %v", err)
		}
		ours[r.CaseID] = r
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}

	var agreeU, agreeS, nS, breached, useful int
	var diffs []string
	for _, id := range slices.Sorted(maps.Keys(theirs)) {
		v := theirs[id]
		r, ok := ours[id]
		if !ok || r.Metadata.AgentDojo == nil {
			diffs = append(diffs, fmt.Sprintf("%s: not scored by pikit (%s)", id, r.Outcome))
			continue
		}
		ad := r.Metadata.AgentDojo
		if v.Utility {
			useful++
		}
		if v.Security != nil && *v.Security {
			breached++
		}
		same := true
		if ad.Utility == v.Utility {
			agreeU++
		} else {
			same = false
		}
		if v.Security != nil {
			nS++
			if ad.Security != nil && *ad.Security == *v.Security {
				agreeS++
			} else {
				same = false
			}
		}
		if !same {
			diffs = append(diffs, fmt.Sprintf("%s: AgentDojo utility %v security %s; pikit utility %v security %s", id, v.Utility, fmtBool(v.Security), ad.Utility, fmtBool(ad.Security)))
		}
	}
	for id := range ours {
		if _, ok := theirs[id]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: a pikit case AgentDojo's harness did not run", id))
		}
	}
	t.Logf("agreement on %v: utility %d/%d, security %d/%d; %v in all", suites, agreeU, len(theirs), agreeS, nS, time.Since(start).Round(time.Millisecond))
	t.Logf("AgentDojo's verdicts: utility in %d of %d cases, security broken in %d of %d", useful, len(theirs), breached, nS)
	// A comparison over nothing proves nothing: the scripted model must
	// both succeed at tasks and fall for injections, in AgentDojo's own
	// harness, for agreement to mean something.
	if useful == 0 || breached == 0 || breached == nS {
		t.Errorf("AgentDojo's harness gave utility in %d cases and broken security in %d of %d: the scripted model does not exercise both", useful, breached, nS)
	}
	if len(ours) != len(theirs) {
		t.Errorf("pikit scored %d cases, AgentDojo's harness ran %d", len(ours), len(theirs))
	}
	for i, d := range diffs {
		if i == 40 {
			t.Errorf("and %d more", len(diffs)-i)
			break
		}
		t.Error(d)
	}
}
