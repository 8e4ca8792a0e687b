package importer

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pikit-go/pikit/dataset"

	"go.yaml.in/yaml/v3"

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
		"bakery-user_task_3", "bakery-user_task_3-injection_task_0", "bakery-user_task_3-injection_task_1",
	}
	if got := caseIDs(d); !slices.Equal(got, want) {
		t.Errorf("case ids %v\nwant %v", got, want)
	}
	if len(d.Scenarios) != 4 || d.Benchmark != "agentdojo" {
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

	sc := map[string]dataset.Scenario{}
	for _, s := range d.Scenarios {
		sc[s.Name] = s
	}
	// Two candidates, in two tools: the first (in call order) is the
	// taint point, the other takes the payload too, as AgentDojo injects
	// every candidate of a task at once; each stands for its default in
	// clean runs.
	if tt := sc["agentdojo-bakery-user_task_3"].Taint; tt.Tool != "list_orders" || tt.Marker != "{injection_order_note}" ||
		!slices.Equal(tt.Also, []dataset.Spot{{Tool: "get_webpage", Marker: "{injection_supplier_page}", Clean: "Deliveries on Tuesdays."}}) {
		t.Errorf("user_task_3 taint %+v", tt)
	}
	// user_task_1 names no candidates: the vector is found in the output
	// of the tool its ground truth calls.
	if tt := sc["agentdojo-bakery-user_task_1"].Taint; tt.Tool != "get_emails" || tt.Marker != "{injection_invoice_email}" {
		t.Errorf("user_task_1 taint %+v", tt)
	}
	// The tainted vector is its marker, which the payload replaces and a
	// clean run shows as the vector's default (AgentDojo's attacks replace
	// the default); the other vectors are their defaults; no placeholder
	// is left.
	for _, tool := range sc["agentdojo-bakery-user_task_2"].Tools {
		if tool.Name == "get_webpage" && !strings.Contains(tool.Output, "spelt 2.60 per kg. {injection_supplier_page}") {
			t.Errorf("get_webpage output %q", tool.Output)
		}
	}
	// Where the export recorded what AgentDojo's tool returned, the model
	// sees that: a call without arguments answers it always; a call with
	// arguments answers it for those (by_arg), and the whole environment
	// part for others.
	for _, c := range []struct{ scenario, tool, output, byArg, key, data string }{
		{"agentdojo-bakery-user_task_3", "list_orders", "- id: '41'\n  status: open\n  note: {injection_order_note}", "", "", ""},
		{"agentdojo-bakery-user_task_2", "get_webpage", "", "url", "www.flour-supplier.example", "Spring prices: rye flour 2.10 per kg, spelt 2.60 per kg. {injection_supplier_page}"},
		{"agentdojo-bakery-user_task_3", "get_webpage", "", "", "", ""},
	} {
		i := slices.IndexFunc(sc[c.scenario].Tools, func(t dataset.Tool) bool { return t.Name == c.tool })
		if i < 0 {
			t.Fatalf("%s has no %s", c.scenario, c.tool)
		}
		tool := sc[c.scenario].Tools[i]
		if c.output != "" && tool.Output != c.output {
			t.Errorf("%s %s: output %q, want the recorded %q", c.scenario, c.tool, tool.Output, c.output)
		}
		if tool.ByArg != c.byArg || tool.Data[c.key] != c.data || (c.byArg == "") != (tool.Data == nil) {
			t.Errorf("%s %s: by_arg %q data %q; want %q and %q for %q", c.scenario, c.tool, tool.ByArg, tool.Data, c.byArg, c.data, c.key)
		}
	}
	if tt := sc["agentdojo-bakery-user_task_2"].Taint; tt.Clean != "Deliveries on Tuesdays." {
		t.Errorf("user_task_2 taint %+v: its clean text is not the vector's default", tt)
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
	byID := map[string]dataset.FileCase{}
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
	if len(by) != 12 {
		t.Fatalf("results for %d cases, want 12", len(by))
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
		{"goal missing", replace("tasks.yaml", "    goal: Cancel every", "    gaol: Cancel every"), "tasks.yaml:106: injection_tasks.1.goal", "missing: want the attacker's goal"},
		{"prompt not a string", replace("tasks.yaml", "prompt: How much", "prompt:\n      - How much"), "tasks.yaml:", "user_tasks.1.prompt: want the user's request (the task's PROMPT) as a string, got a list"},
		{"unknown ground-truth tool", replace("tasks.yaml", "function: list_orders", "function: list_order"), "tasks.yaml:", `user_tasks.0.ground_truth.0.function: "list_order" is no tool of this file's tools (did you mean list_orders?)`},
		{"unknown dependency", replace("tasks.yaml", "dependencies: [orders]\n  - name: get_webpage", "dependencies: [order]\n  - name: get_webpage"), "tasks.yaml:", `tools.1.dependencies.0: "order" is no part of environment.yaml (did you mean orders?)`},
		{"unknown candidate", replace("tasks.yaml", "[injection_order_note]", "[injection_order]"), "tasks.yaml:", "user_tasks.0.injection_candidates.0: injection_order is no vector"},
		{"schema not an object", replace("tasks.yaml", "      type: object\n      properties: {}\n    dependencies: [orders]", "      type: string\n    dependencies: [orders]"), "tasks.yaml:", "tools.1.parameters: want a JSON Schema object"},
		{"duplicate key", write("injection_vectors.yaml", "a:\n  default: x\na:\n  default: y\n"), "injection_vectors.yaml:3", `mapping key "a" already defined at line 1`},
		{"merge key", replace("environment.yaml", "  account: \"sam@crumbly.example\"", "  <<: {account: x}"), "environment.yaml:3", "merge keys (<<) are not supported"},
		{"several documents", write("injection_vectors.yaml", "a: {default: x}\n---\nb: {default: y}\n"), "injection_vectors.yaml:", "want one YAML document, got several"},
		{"tag on the wrong node", replace("environment.yaml", "web:\n", "web: !!seq\n"), "environment.yaml:", "YAML tag !!seq on a mapping"},
		{"tagged value that is not its tag", replace("environment.yaml", `id: "41"`, `id: !!int forty-one`), "environment.yaml:5", "cannot decode !!str `forty-one` as a !!int"},
		{"nested past the limit", replace("environment.yaml", `item: "rye loaf"`, "item: "+strings.Repeat("[", 300)+strings.Repeat("]", 300)), "environment.yaml:7", "nested deeper than 256 levels"},
		{"include too deep to parse", write("include/inbox.yaml", "emails:\n"+strings.Repeat("- ", 5000)+"x\n"), "include/inbox.yaml:2", "nested too deeply"},
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

// adLoadText loads YAML text as the importer loads a suite's file.
func adLoadText(t *testing.T, text string) (any, error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "file.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	v, _, err := (&adLoader{budget: MaxFileBytes}).load(file, nil, 0)
	return v, err
}

func TestAgentDojoYAMLValues(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       any
	}{
		// The shape of AgentDojo's banking environment that another parser
		// refused: literal tabs in a double-quoted string, another entry
		// after it.
		{"tabs in a quoted string", "a:\n  b:\n    \"x.txt\": \"one\ttwo\"\n    \"y.txt\": \"three\"\n",
			adMap{{"a", adMap{{"b", adMap{{"x.txt", "one\ttwo"}, {"y.txt", "three"}}}}}}},
		{"keys in the file's order", "zeta: 1\nalpha: 2\nmid: 3\n", adMap{{"zeta", int64(1)}, {"alpha", int64(2)}, {"mid", int64(3)}}},
		{"keys as written", "1.0: a\n0x10: b\n~: c\n\"q\": d\n", adMap{{"1.0", "a"}, {"0x10", "b"}, {"~", "c"}, {"q", "d"}}},
		{"integers", "[7, -3, 0x1F, 0o17, 1_000, 9223372036854775807]", []any{int64(7), int64(-3), int64(31), int64(15), int64(1000), int64(9223372036854775807)}},
		{"an integer past int64", "18446744073709551615", float64(18446744073709551615)},
		{"floats", "[2.5, 1e3, -0.25]", []any{2.5, 1000.0, -0.25}},
		{"infinity and NaN stay text", "[.inf, -.Inf, .nan]", []any{".inf", "-.Inf", ".nan"}},
		{"booleans", "[true, False, TRUE]", []any{true, false, true}},
		{"YAML 1.1 booleans are strings", "[yes, no, on, off]", []any{"yes", "no", "on", "off"}},
		{"nulls", "a:\nb: ~\nc: null\n", adMap{{"a", nil}, {"b", nil}, {"c", nil}}},
		{"quoted scalars are strings", `["41", '2.10', "true", "", "null"]`, []any{"41", "2.10", "true", "", "null"}},
		{"timestamps are text", "[2024-05-15, 2024-05-16T09:00:00Z]", []any{"2024-05-15", "2024-05-16T09:00:00Z"}},
		{"explicit core tags", "[!!str 12, !!str 1.50, !!float 3, !!int \"4\", !!bool true, !!null ~]", []any{"12", "1.50", 3.0, int64(4), true, nil}},
		{"block scalars", "lit: |\n  one\n  two\nfold: >-\n  one\n  two\n", adMap{{"lit", "one\ntwo\n"}, {"fold", "one two"}}},
		{"anchors are allowed", "a: &x 1\nb: 2\n", adMap{{"a", int64(1)}, {"b", int64(2)}}},
		{"an empty file", "", nil},
		{"comments only", "# nothing here\n", nil},
		{"an empty document", "---\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := adLoadText(t, tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestAgentDojoQuotedTabs(t *testing.T) {
	// The bakery fixture holds AgentDojo's failing shape: its filesystem
	// part has literal tabs in a double-quoted string, another entry after.
	s, err := adReadSuite(newSource("testdata/agentdojo", false), "testdata/agentdojo/suites/bakery")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := adGet(s.env, "filesystem").(adMap)
	docs, _ := adGet(files, "files").(adMap)
	want := adMap{{"price-list.txt", "Loaf\tPrice\nrye\t4.20\nspelt\t4.80"}, {"opening-hours.txt", "Tuesday to Sunday, 7 to 14."}}
	if !reflect.DeepEqual(docs, want) {
		t.Fatalf("filesystem.files %#v\nwant %#v", docs, want)
	}
	// A tool reading the part shows the same text, tabs and all.
	text, err := adPart(map[string]string{}, s.env, "filesystem")
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]map[string]string
	if err := yaml.Unmarshal([]byte(text), &back); err != nil {
		t.Fatalf("%v in\n%s", err, text)
	}
	if got := back["files"]["price-list.txt"]; got != "Loaf\tPrice\nrye\t4.20\nspelt\t4.80" {
		t.Errorf("the part's text gives %q:\n%s", got, text)
	}
}

func TestAgentDojoPartYAML(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"order kept, lists at their key's indentation", adMap{{"z", int64(1)}, {"a", []any{"x", adMap{{"k", true}, {"n", nil}}}}},
			"z: 1\na:\n- x\n- k: true\n  n: null"},
		{"multi-line strings in literal style", adMap{{"body", "Hello,\nsee you {injection_x}\nSam"}},
			"body: |-\n  Hello,\n  see you {injection_x}\n  Sam"},
		{"strings that cannot be plain in double quotes", adMap{{"note", "Pickup: 9. {injection_y}"}, {"todo", "Sam's list: bread"}, {"v", "{injection_z}"}},
			"note: \"Pickup: 9. {injection_y}\"\ntodo: \"Sam's list: bread\"\nv: \"{injection_z}\""},
		{"strings that read as other scalars quoted", adMap{{"41", "41"}, {"t", "true"}, {"d", "2024-05-15"}, {"e", ""}},
			"\"41\": \"41\"\nt: \"true\"\nd: \"2024-05-15\"\ne: \"\""},
		{"floats stay floats", adMap{{"rating", 5.0}, {"price", 2.5}, {"big", 1e21}},
			"rating: 5.0\nprice: 2.5\nbig: 1e+21"},
		{"a tab in one line", adMap{{"f", "one\ttwo"}}, "f: \"one\\ttwo\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := adYAML(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
			// The text reads back as the value.
			file := filepath.Join(t.TempDir(), "part.yaml")
			os.WriteFile(file, []byte(got), 0o644)
			back, _, err := (&adLoader{budget: MaxFileBytes}).load(file, nil, 0)
			if err != nil || !reflect.DeepEqual(back, tc.v) {
				t.Errorf("reads back as %#v (%v)", back, err)
			}
		})
	}
}

func TestAgentDojoScanNesting(t *testing.T) {
	lines := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(f(i) + "\n")
		}
		return b.String()
	}
	deep := strings.Repeat("[", 20)
	for _, tc := range []struct {
		name, text string
		line       int // where the bound passes 10; 0 for never
	}{
		{"brackets in a double-quoted string", `a: "` + deep + `\" ` + deep + `"` + "\nb: 1\n", 0},
		{"brackets in a single-quoted string", "a: '" + deep + " it''s " + deep + "'\n", 0},
		{"a quoted string over lines", "a: \"x\n  " + deep + "\n  y\"\nb: [1]\n", 0},
		{"brackets in comments", "# " + deep + "\na: 1 # " + deep + "\n", 0},
		{"brackets in a plain string", "a: see " + deep + " here\n", 0},
		{"brackets in quotes in a flow list", "a: [\"" + deep + "\", '" + deep + "', x]\n", 0},
		{"JSON", `{"a":"` + deep + `","b":["` + deep + `"]}` + "\n", 0},
		{"a block scalar indented ever deeper", "a: |\n" + lines(30, func(i int) string { return strings.Repeat(" ", i+2) + "- x:" }) + "b: 1\n", 0},
		{"a plain string going on ever deeper", "a: b\n" + lines(30, func(i int) string { return strings.Repeat(" ", i+1) + "- c:" }), 0},
		{"lists at their key's indentation", lines(4, func(i int) string { return strings.Repeat(" ", 2*i) + "- k:" }), 0},
		{"documents", lines(20, func(i int) string { return "---\n- - - x" }), 0},
		{"flow", strings.Repeat("[", 11) + strings.Repeat("]", 11), 1},
		{"flow mappings over lines", "a:\n" + lines(12, func(int) string { return "  {b:" }), 8},
		{"block lists on one line", "x: 1\n" + strings.Repeat("- ", 5) + "x\n", 2},
		{"block mappings by indentation", lines(8, func(i int) string { return strings.Repeat(" ", i) + "k:" }), 6},
		{"block lists by indentation", lines(8, func(i int) string { return strings.Repeat(" ", 2*i) + "-" }), 6},
		{"deep after a block scalar", "a: |\n  text\n" + lines(8, func(i int) string { return strings.Repeat(" ", i) + "k:" }), 8},
		{"deep after a quoted key", `"a": ` + "\n" + lines(8, func(i int) string { return strings.Repeat(" ", i+1) + `"k":` }), 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := adScanNesting([]byte(tc.text), 10); got != tc.line {
				t.Errorf("line %d, want %d, for\n%s", got, tc.line, tc.text)
			}
		})
	}
}

// TestAgentDojoNestingLimitExact: the scan lets through every shape at the
// conversion's limit, which takes adMaxNesting levels and refuses a few more.
func TestAgentDojoNestingLimitExact(t *testing.T) {
	shapes := map[string]func(n int) string{
		"flow":        func(n int) string { return strings.Repeat("[", n) + "x" + strings.Repeat("]", n) },
		"block lists": func(n int) string { return strings.Repeat("- ", n) + "x" },
		"block mappings": func(n int) string {
			var b strings.Builder
			for i := range n {
				b.WriteString(strings.Repeat(" ", i) + "k:\n")
			}
			return b.String() + strings.Repeat(" ", n) + "x"
		},
		"lists at their key's indentation": func(n int) string {
			var b strings.Builder
			for i := range n / 2 {
				b.WriteString(strings.Repeat(" ", 2*i) + "- k:\n")
			}
			return b.String() + strings.Repeat(" ", n+1) + "x"
		},
	}
	for name, shape := range shapes {
		t.Run(name, func(t *testing.T) {
			if _, err := adLoadText(t, shape(adMaxNesting)); err != nil {
				t.Errorf("%d levels: %v", adMaxNesting, err)
			}
			_, err := adLoadText(t, shape(adMaxNesting+2))
			if err == nil || !strings.Contains(err.Error(), "nested deeper than 256 levels") {
				t.Errorf("%d levels: %v, want the conversion's refusal", adMaxNesting+2, err)
			}
		})
	}
}

func TestAgentDojoRefusesDeepNestingFast(t *testing.T) {
	const n = 100_000
	var stairs strings.Builder
	stairs.WriteString("web:\n")
	for i := range 3000 {
		stairs.WriteString(strings.Repeat(" ", i+1) + "k:\n")
	}
	for _, tc := range []struct {
		name, text string
		line       int
	}{
		{"flow lists", "web: " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n", 1},
		{"flow mappings", "web: " + strings.Repeat("{a: ", n) + "x" + strings.Repeat("}", n) + "\n", 1},
		{"block lists", "web:\n" + strings.Repeat("- ", n) + "x\n", 2},
		{"block mappings by indentation", stairs.String(), 1 + adMaxScanNesting/2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			suite := adFixture(t, func(suite string) {
				os.WriteFile(filepath.Join(suite, "environment.yaml"), []byte(tc.text), 0o644)
			})
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := ImportAgentDojo(suite)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			var ie *Error
			if !errors.As(err, &ie) || ie.File != filepath.Join(suite, "environment.yaml") || ie.Line != tc.line || !strings.Contains(ie.Msg, "nested too deeply") {
				t.Fatalf("error %v, want environment.yaml:%d refused as nested too deeply", err, tc.line)
			}
			if took > 2*time.Second {
				t.Errorf("refused in %v, want well under a second", took)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
				t.Errorf("allocated %d bytes for a %d-byte file", alloc, len(tc.text))
			}
		})
	}
}

// TestAgentDojoGroundOutputs: which argument keys a tool's recorded
// outputs, and when none can.
func TestAgentDojoGroundOutputs(t *testing.T) {
	call := func(fn string, args map[string]any, out string) adCall {
		return adCall{function: fn, args: args, output: out, hasOutput: true}
	}
	for _, c := range []struct {
		name  string
		calls []adCall
		fixed string
		by    string
		data  map[string]string
		ok    bool
	}{
		{"no recorded output", []adCall{{function: "read", args: map[string]any{"id": "1"}}}, "", "", nil, false},
		{"no arguments: the first answer", []adCall{call("read", nil, "one"), call("read", nil, "two")}, "one", "", nil, true},
		{"one argument", []adCall{call("read", map[string]any{"city": "London"}, "L"), call("read", map[string]any{"city": "Paris"}, "P")}, "", "city", map[string]string{"London": "L", "Paris": "P"}, true},
		{"a list argument, as JSON", []adCall{call("read", map[string]any{"names": []any{"a", "b"}}, "AB")}, "", "names", map[string]string{`["a","b"]`: "AB"}, true},
		{"the same call again keeps its first answer", []adCall{call("read", map[string]any{"id": "1"}, "x"), call("read", map[string]any{"id": "1"}, "y")}, "", "id", map[string]string{"1": "x"}, true},
		{"the first argument that tells calls apart", []adCall{
			call("read", map[string]any{"a": "same", "b": "1"}, "one"),
			call("read", map[string]any{"a": "same", "b": "2"}, "two"),
		}, "", "b", map[string]string{"1": "one", "2": "two"}, true},
		{"no argument tells them apart", []adCall{
			call("read", map[string]any{"a": "1", "b": "1"}, "one"),
			call("read", map[string]any{"a": "1", "b": "2"}, "two"),
			call("read", map[string]any{"a": "2", "b": "1"}, "three"),
		}, "", "", nil, false},
		{"other tools' calls do not count", []adCall{call("other", nil, "o"), call("read", map[string]any{"id": "1"}, "r")}, "", "id", map[string]string{"1": "r"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			fixed, by, data, ok := adGroundOutputs(c.calls, "read")
			if fixed != c.fixed || by != c.by || !maps.Equal(data, c.data) || ok != c.ok {
				t.Errorf("got %q, %q, %v, %v; want %q, %q, %v, %v", fixed, by, data, ok, c.fixed, c.by, c.data, c.ok)
			}
		})
	}
}
