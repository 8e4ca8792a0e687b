package proxy

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	goldenfile "github.com/pikit-go/pikit/internal/golden"
	"github.com/pikit-go/pikit/matrix"
)

func parseConfig(t *testing.T, doc string) matrix.Config {
	t.Helper()
	cfg, err := matrix.Parse("exp.toml", []byte(doc))
	if err != nil {
		t.Fatalf("matrix.Parse: %v", err)
	}
	return cfg
}

func TestParseRules(t *testing.T) {
	cases := []struct {
		name string
		doc  string
		want Rules
	}{
		{"no [proxy]", `attacks = ["naive"]`, DefaultRules()},
		{"sinks only", "[proxy]\nsinks = [\"send_*\", \"post_message\"]\n",
			Rules{Taint: DefaultRules().Taint, Sinks: []string{"send_*", "post_message"}, dflt: true}},
		{"the issue's example", "[proxy]\ntaint = [{ tool = \"read_*\", mode = \"append\" }]\nsinks = [\"send_*\"]\n",
			Rules{Taint: []Rule{{Tool: "read_*", Mode: ModeAppend}}, Sinks: []string{"send_*"}}},
		{"defaults of a rule", "[proxy]\ntaint = [{}]\n", Rules{Taint: []Rule{{Tool: "*", Mode: ModeAppend}}}},
		{"one rule as a table", "[proxy]\ntaint = { tool = \"fetch\", mode = \"replace\", nth = 2 }\n",
			Rules{Taint: []Rule{{Tool: "fetch", Mode: ModeReplace, Nth: 2}}}},
		{"every key", `[proxy]
taint = [
  { tool = "read_file", args = { path = "*.eml", limit = 10 }, nth = 1, mode = "insert", marker = "<!--x-->" },
  { tool = "*", mode = "carrier" },
]
`, Rules{Taint: []Rule{
			{Tool: "read_file", Args: map[string]string{"path": "*.eml", "limit": "10"}, Nth: 1, Mode: ModeInsert, Marker: "<!--x-->"},
			{Tool: "*", Mode: ModeCarrier},
		}}},
		{"array of tables", `[[proxy.taint]]
tool = "read_*"
mode = "prepend"

[[proxy.taint]]
tool = "search"
nth = 0
`, Rules{Taint: []Rule{{Tool: "read_*", Mode: ModePrepend}, {Tool: "search", Mode: ModeAppend}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := parseConfig(t, tc.doc)
			got, err := ParseRules(&cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestParseRulesErrors: every error names the file, the line and the key,
// and says what would be valid. The whole messages are in
// testdata/rules_errors.golden (go test -update rewrites it).
func TestParseRulesErrors(t *testing.T) {
	cases := []struct {
		name string
		doc  string
		want []string // each error, from its start
	}{
		{"unknown key", "attacks = [\"naive\"]\n[proxy]\nsink = [\"send_*\"]\n",
			[]string{`exp.toml:3: proxy.sink: unknown key in [proxy] (did you mean sinks?); valid keys: taint, sinks`}},
		{"unknown rule key", "[proxy]\ntaint = [{ tool = \"read_*\", mod = \"append\" }]\n",
			[]string{`exp.toml:2: proxy.taint[0].mod: unknown key in a taint rule (did you mean mode?); valid keys: tool, args, nth, mode, marker`}},
		{"bad mode", "[proxy]\ntaint = [\n  { tool = \"a\" },\n  { tool = \"read_*\", mode = \"apend\" },\n]\n",
			[]string{`exp.toml:4: proxy.taint[1].mode: unknown mode: the string "apend" (did you mean append?); known: append, prepend, replace, insert, carrier`}},
		{"mode not a string", "[proxy]\ntaint = [{ mode = 3 }]\n",
			[]string{`exp.toml:2: proxy.taint[0].mode: unknown mode: the integer 3; known: append`}},
		{"insert without marker", "[proxy]\n\ntaint = [{ tool = \"read_*\", mode = \"insert\" }]\n",
			[]string{`exp.toml:3: proxy.taint[0]: mode insert needs a marker`}},
		{"marker without insert", "[proxy]\ntaint = [{ tool = \"read_*\", marker = \"<!--x-->\" }]\n",
			[]string{`exp.toml:2: proxy.taint[0].marker: a marker is used only with mode = "insert"`}},
		{"empty marker", "[proxy]\ntaint = [{ mode = \"insert\", marker = \"\" }]\n",
			[]string{`exp.toml:2: proxy.taint[0].marker: want the text to put the payload after, got`, `exp.toml:2: proxy.taint[0]: mode insert needs a marker`}},
		{"negative nth", "[proxy]\ntaint = [{ nth = -1 }]\n",
			[]string{`exp.toml:2: proxy.taint[0].nth: want a whole number, 0 (every call) or more, got the integer -1`}},
		{"nth not a number", "[proxy]\ntaint = [{ nth = \"2\" }]\n",
			[]string{`exp.toml:2: proxy.taint[0].nth: want a whole number, 0 (every call) or more, got the string "2"`}},
		{"fractional nth", "[proxy]\ntaint = [{ nth = 1.5 }]\n",
			[]string{`exp.toml:2: proxy.taint[0].nth: want a whole number, 0 (every call) or more, got`}},
		{"bad tool glob", "[proxy]\ntaint = [{ tool = \"read_[\" }]\n",
			[]string{`exp.toml:2: proxy.taint[0].tool: want a tool name or glob, got the string "read_["`}},
		{"empty tool", "[proxy]\ntaint = [{ tool = \"\" }]\n",
			[]string{`exp.toml:2: proxy.taint[0].tool: want a tool name or glob, got`}},
		{"bad args glob", "[proxy]\ntaint = [{ args = { path = \"[\" } }]\n",
			[]string{`exp.toml:2: proxy.taint[0].args.path: "[" is not a glob: syntax error in pattern`}},
		{"args not a table", "[proxy]\ntaint = [{ args = \"*.eml\" }]\n",
			[]string{`exp.toml:2: proxy.taint[0].args: want a table of argument globs such as { path = "*.eml" }, got the string "*.eml"`}},
		{"bad sink glob", "[proxy]\nsinks = [\"send_*\", \"post_[\"]\n",
			[]string{`exp.toml:2: proxy.sinks[1]: "post_[" is not a tool name or glob`}},
		{"empty sink", "[proxy]\nsinks = [\"\"]\n",
			[]string{`exp.toml:2: proxy.sinks[0]: "" is not a tool name or glob`}},
		{"sinks not a list", "[proxy]\nsinks = \"send_*\"\n",
			[]string{`exp.toml:2: proxy.sinks: want a list of tool names or globs, got the string "send_*"`}},
		{"sinks not strings", "[proxy]\nsinks = [1, 2]\n",
			[]string{`exp.toml:2: proxy.sinks: want a list of tool names or globs, got`}},
		{"taint not a list", "[proxy]\ntaint = \"read_*\"\n",
			[]string{`exp.toml:2: proxy.taint: want a list of rules such as [{ tool = "read_*", mode = "append" }], got the string "read_*"`}},
		{"taint rule not a table", "[proxy]\ntaint = [\"read_*\"]\n",
			[]string{`exp.toml:2: proxy.taint[0]: want a rule such as { tool = "read_*", mode = "append" }, got the string "read_*"`}},
		{"array of tables", "[[proxy.taint]]\ntool = \"read_*\"\n\n[[proxy.taint]]\ntool = \"search\"\nmode = \"insrt\"\n",
			[]string{`exp.toml:6: proxy.taint[1].mode: unknown mode: the string "insrt" (did you mean insert?)`}},
		{"every error at once", "[proxy]\nsink = []\ntaint = [\n  { mode = \"x\" },\n  { nth = -2 },\n]\nsinks = 3\n",
			[]string{
				`exp.toml:2: proxy.sink: unknown key in [proxy]`,
				`exp.toml:7: proxy.sinks: want a list`,
				`exp.toml:4: proxy.taint[0].mode: unknown mode: the string "x"`,
				`exp.toml:5: proxy.taint[1].nth: want a whole number`,
			}},
	}
	var golden strings.Builder
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := parseConfig(t, tc.doc)
			_, err := ParseRules(&cfg)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, matrix.ErrConfig) {
				t.Errorf("%v is not a matrix.ErrConfig", err)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("%d errors, want %d:\n%v", len(lines), len(tc.want), err)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("error %d:\n got %s\nwant %s…", i+1, lines[i], w)
				}
			}
			fmt.Fprintf(&golden, "## %s\n%s\n%v\n\n", tc.name, tc.doc, err)
		})
	}
	goldenfile.Check(t, filepath.Join("testdata", "rules_errors.golden"), []byte(golden.String()))
}

func TestIsSink(t *testing.T) {
	r := Rules{Sinks: []string{"send_*", "delete_file"}}
	for tool, want := range map[string]bool{"send_email": true, "send_": true, "delete_file": true, "read_inbox": false, "resend_email": false, "": false} {
		if got := r.IsSink(tool); got != want {
			t.Errorf("IsSink(%q) = %v, want %v", tool, got, want)
		}
	}
}
