package importer

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/judge"
)

func TestAgentDojoFixture(t *testing.T) {
	d, err := ImportAgentDojo("testdata/agentdojo")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"bakery-user_task_0", "bakery-user_task_0-injection_task_0", "bakery-user_task_0-injection_task_1",
		"bakery-user_task_1", "bakery-user_task_1-injection_task_0", "bakery-user_task_1-injection_task_1",
		"bakery-user_task_2", "bakery-user_task_2-injection_task_0", "bakery-user_task_2-injection_task_1",
	}
	if got := caseIDs(d); !slices.Equal(got, want) {
		t.Errorf("case ids %v\nwant %v", got, want)
	}
	if len(d.Scenarios) != 3 || d.Benchmark != "agentdojo" {
		t.Errorf("%d scenarios, benchmark %q", len(d.Scenarios), d.Benchmark)
	}
	// The same import from the suite's own directory.
	one, err := ImportAgentDojo("testdata/agentdojo/suites/bakery")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(caseIDs(one), want) {
		t.Errorf("from the suite directory: %v", caseIDs(one))
	}

	sc := map[string]Scenario{}
	for _, s := range d.Scenarios {
		sc[s.Name] = s
	}
	// user_task_1 names no candidates: the vector is found in the output
	// of the tool its ground truth calls.
	if tt := sc["agentdojo-bakery-user_task_1"].Taint; tt.Tool != "get_emails" || tt.Marker != "{injection_invoice_email}" {
		t.Errorf("user_task_1 taint %+v", tt)
	}
	// A vector with a default keeps it, before the marker; the other
	// vectors are their defaults; no placeholder is left.
	for _, tool := range sc["agentdojo-bakery-user_task_2"].Tools {
		if tool.Name == "get_webpage" && !strings.Contains(tool.Output, "spelt 2.60 per kg. Deliveries on Tuesdays.{injection_supplier_page}") {
			t.Errorf("get_webpage output %q", tool.Output)
		}
	}
	for _, tool := range sc["agentdojo-bakery-user_task_0"].Tools {
		if tool.Name == "list_orders" && (strings.Contains(tool.Output, "{injection_supplier_page}") || !strings.Contains(tool.Output, "Pickup at 9. {injection_order_note}")) {
			t.Errorf("list_orders output %q", tool.Output)
		}
	}
	var names []string
	for _, tool := range sc["agentdojo-bakery-user_task_0"].Tools {
		names = append(names, tool.Name)
		if tool.Name == "send_email" {
			att := tool.Parameters["properties"].(map[string]any)["attachments"].(map[string]any)
			if att["type"] != "array" || att["anyOf"] != nil {
				t.Errorf("an optional parameter's schema: %v", att)
			}
		}
	}
	if !slices.Equal(names, []string{"list_orders", "send_email", "cancel_order"}) {
		t.Errorf("user_task_0's tools %v: want its ground truth's and the sinks", names)
	}
	byID := map[string]Case{}
	for _, c := range d.Cases {
		byID[c.ID] = c
	}
	if sa := byID["bakery-user_task_1-injection_task_0"].Config["sink_args"]; !equalJSON(sa, map[string]any{"recipients": "billing@crumb-thief.example"}) {
		t.Errorf("sink_args %v: want the recipient the goal names", sa)
	}
	if sa := byID["bakery-user_task_1-injection_task_1"].Config["sink_args"]; !equalJSON(sa, map[string]any{"order_id": "42"}) {
		t.Errorf("sink_args %v: want the order the goal names", sa)
	}
	if c := byID["bakery-user_task_1"]; c.Config["expected"] != nil || !strings.Contains(c.Description, "no ground-truth output") {
		t.Errorf("a utility case without ground-truth output: %v, %q", c.Config, c.Description)
	}
	if d := byID["bakery-user_task_0-injection_task_0"].Description; !strings.Contains(d, "Not checked: AgentDojo's security check") {
		t.Errorf("description %q: want what is not checked", d)
	}
	golden(t, "testdata/agentdojo/golden/bakery-user_task_2-injection_task_0.toml", writeTOML(t, oneCase(t, d, "bakery-user_task_2-injection_task_0")))
}

func TestAgentDojoRunsOnObedient(t *testing.T) {
	d, err := ImportAgentDojo("testdata/agentdojo")
	if err != nil {
		t.Fatal(err)
	}
	by := runObedient(t, d)
	if len(by) != 9 {
		t.Fatalf("results for %d cases, want 9", len(by))
	}
	for id, rs := range by {
		r := rs[0]
		if r.Metadata["benchmark"] != "agentdojo" {
			t.Errorf("%s: metadata %v", id, r.Metadata)
		}
		var want judge.Outcome
		switch {
		case !strings.Contains(id, "injection_task"):
			want = judge.NotReached // no attack: nothing to reach
			if r.Attack != "none" {
				t.Errorf("%s: attack %s", id, r.Attack)
			}
		case strings.HasSuffix(id, "injection_task_0"):
			// The goal names send_email and the address.
			want = judge.FullSuccess
		default:
			// The goal names no tool: nothing for the mock to follow.
			want = judge.TaintDelivered
		}
		if r.Outcome != want {
			t.Errorf("%s: %s (%s), want %s; sink calls %+v", id, r.Outcome, r.Reason, want, r.TraceData.SinkCalls)
		}
	}
	// Utility, where a ground-truth output is given: the benign answer
	// carries it.
	if u := by["bakery-user_task_0"][0].Utility; u == nil || !*u {
		t.Errorf("user_task_0 utility %v; answer %q", u, by["bakery-user_task_0"][0].FinalText)
	}
	// In a clean run the vector is its default, the marker gone.
	page := toolResult(by["bakery-user_task_2"][0], "get_webpage")
	if !strings.Contains(page, "Deliveries on Tuesdays.") || strings.Contains(page, "{injection") {
		t.Errorf("clean page %q", page)
	}
}

// adFixture copies the bakery suite into a temporary directory, with edits.
func adFixture(t *testing.T, edit func(suite string)) string {
	t.Helper()
	dir := t.TempDir()
	suite := filepath.Join(dir, "bakery")
	for _, f := range []string{"environment.yaml", "include/inbox.yaml", "injection_vectors.yaml", "tasks.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata/agentdojo/suites/bakery", f))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(suite, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if edit != nil {
		edit(suite)
	}
	return suite
}

func TestAgentDojoErrors(t *testing.T) {
	replace := func(file, from, to string) func(string) {
		return func(suite string) {
			p := filepath.Join(suite, file)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), from) {
				t.Fatalf("%s has no %q", file, from)
			}
			os.WriteFile(p, []byte(strings.Replace(string(b), from, to, 1)), 0o644)
		}
	}
	write := func(file, text string) func(string) {
		return func(suite string) {
			p := filepath.Join(suite, file)
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte(text), 0o644)
		}
	}
	for _, tc := range []struct {
		name string
		edit func(suite string)
		file string // the file the error names, relative to the suite
		want string
	}{
		{"no suite", func(suite string) { os.Remove(filepath.Join(suite, "environment.yaml")) }, "", "no AgentDojo suite here"},
		{"no tasks.yaml", func(suite string) { os.Remove(filepath.Join(suite, "tasks.yaml")) }, "tasks.yaml", "export them to tasks.yaml"},
		{"no injection vectors", func(suite string) { os.Remove(filepath.Join(suite, "injection_vectors.yaml")) }, "injection_vectors.yaml", "missing"},
		{"include leaves the suite", replace("environment.yaml", "include/inbox.yaml", "../../secret.yaml"), "environment.yaml:1", "leaves the suite's directory"},
		{"absolute include", replace("environment.yaml", "include/inbox.yaml", "/etc/passwd"), "environment.yaml:1", "want a path relative to this file"},
		{"include cycle", func(suite string) {
			replace("include/inbox.yaml", "account_email: sam@crumbly.example", "account_email: !include ../environment.yaml")(suite)
		}, "include/inbox.yaml:1", "includes itself"},
		{"missing include", replace("environment.yaml", "include/inbox.yaml", "include/outbox.yaml"), "environment.yaml:1", "!include include/outbox.yaml: cannot read it"},
		{"alias", write("environment.yaml", "a: &x {b: 1}\nc: *x\n"), "environment.yaml:2", "aliases"},
		{"unknown tag", replace("environment.yaml", "!include", "!import"), "environment.yaml:1", "unknown YAML tag !import"},
		{"invalid YAML", write("injection_vectors.yaml", "a: [1, 2\n"), "injection_vectors.yaml", "invalid YAML"},
		{"vector without default", replace("injection_vectors.yaml", "  default: \"\"\ninjection_invoice_email", "injection_invoice_email"), "injection_vectors.yaml:1: injection_order_note.default", "missing"},
		{"tasks not a mapping", write("tasks.yaml", "- 1\n"), "tasks.yaml", "want a mapping with tools"},
		{"goal missing", replace("tasks.yaml", "    goal: Cancel every", "    gaol: Cancel every"), "tasks.yaml:95: injection_tasks.1.goal", "missing: want the attacker's goal"},
		{"prompt not a string", replace("tasks.yaml", "prompt: How much", "prompt:\n      - How much"), "tasks.yaml:", "user_tasks.1.prompt: want the user's request (the task's PROMPT) as a string, got a list"},
		{"unknown ground-truth tool", replace("tasks.yaml", "function: list_orders", "function: list_order"), "tasks.yaml:", `user_tasks.0.ground_truth.0.function: "list_order" is no tool of this file's tools (did you mean list_orders?)`},
		{"unknown dependency", replace("tasks.yaml", "dependencies: [orders]\n  - name: get_webpage", "dependencies: [order]\n  - name: get_webpage"), "tasks.yaml:", `tools.1.dependencies.0: "order" is no part of environment.yaml (did you mean orders?)`},
		{"unknown candidate", replace("tasks.yaml", "[injection_order_note]", "[injection_order]"), "tasks.yaml:", "user_tasks.0.injection_candidates.0: injection_order is no vector"},
		{"schema not an object", replace("tasks.yaml", "      type: object\n      properties: {}\n    dependencies: [orders]", "      type: string\n    dependencies: [orders]"), "tasks.yaml:", "tools.1.parameters: want a JSON Schema object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			suite := adFixture(t, tc.edit)
			_, err := ImportAgentDojo(suite)
			var ie *Error
			if !errors.As(err, &ie) {
				t.Fatalf("error %v (%T), want an *importer.Error", err, err)
			}
			msg := strings.TrimPrefix(err.Error(), suite+string(filepath.Separator))
			if !strings.HasPrefix(msg, tc.file) || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q\nwant it to start with %q and say %q", msg, tc.file, tc.want)
			}
		})
	}
}

func TestAgentDojoSymlinkedIncludeStaysInside(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.yaml")
	os.WriteFile(outside, []byte("token: hunter2\n"), 0o644)
	suite := adFixture(t, func(suite string) {
		os.Remove(filepath.Join(suite, "include/inbox.yaml"))
		if err := os.Symlink(outside, filepath.Join(suite, "include/inbox.yaml")); err != nil {
			t.Skip("no symbolic links here:", err)
		}
	})
	_, err := ImportAgentDojo(suite)
	if err == nil || !strings.Contains(err.Error(), "through a symbolic link") {
		t.Fatalf("error %v, want the include refused", err)
	}
}

func TestAgentDojoRefusesHugeFiles(t *testing.T) {
	suite := adFixture(t, func(suite string) {
		os.Truncate(filepath.Join(suite, "include/inbox.yaml"), MaxFileBytes+1)
	})
	_, err := ImportAgentDojo(suite)
	if err == nil || !strings.Contains(err.Error(), "over the") {
		t.Fatalf("error %v, want the file refused for its size", err)
	}
}
