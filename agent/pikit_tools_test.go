package agent

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/target"
)

// pikitTools is, per scenario, every tool and sink the Python pikit offers
// under that name, with the parameters it marks required (issue 14). Ours
// may offer more tools and optional parameters, never fewer.
var pikitTools = map[string][]struct {
	name     string
	sink     bool
	required []string
}{
	"browser": {
		{"fetch_url", false, nil},
		{"search_web", false, []string{"query"}},
		{"post_form", true, []string{"url", "data"}},
		{"post_message", true, []string{"channel", "message"}},
		{"send_email", true, []string{"to", "body"}},
	},
	"coding": {
		{"load_skill", false, nil},
		{"read_code", false, []string{"path"}},
		{"read_file", false, []string{"path"}},
		{"list_directory", false, nil},
		{"search_files", false, []string{"pattern"}},
		{"delete_file", true, []string{"path"}},
		{"move_file", true, []string{"src", "dst"}},
		{"write_file", true, []string{"path", "content"}},
		{"run_command", true, []string{"command"}},
	},
	"email": {
		{"read_email", false, nil},
		{"get_attachment", false, []string{"attachment_id"}},
		{"send_email", true, []string{"to", "body"}},
		{"forward_email", true, []string{"email_id", "to"}},
		{"post_form", true, []string{"url", "data"}},
		{"post_message", true, []string{"channel", "message"}},
	},
	"rag": {
		{"search_kb", false, nil},
		{"post_form", true, []string{"url", "data"}},
		{"post_message", true, []string{"channel", "message"}},
		{"send_email", true, []string{"to", "body"}},
	},
	"tool": {
		{"fetch_url", false, nil},
		{"read_file", false, nil},
		{"post_form", true, []string{"url", "data"}},
		{"post_message", true, []string{"channel", "message"}},
		{"send_email", true, []string{"to", "body"}},
	},
}

// TestPikitToolsOffered: each scenario offers the Python pikit's tools
// under their names, sources as sources and sinks as sinks, with exactly
// the parameters it marks required marked required.
func TestPikitToolsOffered(t *testing.T) {
	for agent, tools := range pikitTools {
		sc := mustLookup(t, agent)
		for _, want := range tools {
			t.Run(agent+"/"+want.name, func(t *testing.T) {
				tool, ok := sc.Tool(want.name)
				if !ok {
					t.Fatalf("scenario %s does not offer %s", agent, want.name)
				}
				if tool.Sink != want.sink {
					t.Errorf("sink = %v, want %v", tool.Sink, want.sink)
				}
				var required []string
				for _, p := range tool.Params {
					if p.Required {
						required = append(required, p.Name)
					}
				}
				if !slices.Equal(required, want.required) {
					t.Errorf("required = %v, want %v", required, want.required)
				}
				// The definition the model is offered says the same.
				def := tool.Definition()
				got, _ := def.Parameters["required"].([]string)
				if len(got) != len(want.required) || (len(got) > 0 && !reflect.DeepEqual(got, want.required)) {
					t.Errorf("definition required = %v, want %v", got, want.required)
				}
			})
		}
	}
}

// TestPikitToolsRun calls each of the listed tools through the loop with
// its required arguments: sources answer non-empty clean text, sinks are
// recorded in SinkCalls with their arguments and answer a confirmation.
func TestPikitToolsRun(t *testing.T) {
	for agent, tools := range pikitTools {
		sc := mustLookup(t, agent)
		for _, want := range tools {
			t.Run(agent+"/"+want.name, func(t *testing.T) {
				tool, _ := sc.Tool(want.name)
				args := requiredArgs(tool)
				s := target.NewScripted(calls(call("c1", want.name, MarshalArgs(args))), final("done"))
				tr := mustRun(t, s, sc, Input{}, Hooks{})
				var step *Step
				for i := range tr.Steps {
					if tr.Steps[i].Kind == "tool" && tr.Steps[i].Tool == want.name {
						step = &tr.Steps[i]
					}
				}
				if step == nil {
					t.Fatalf("no tool step for %s in %+v", want.name, tr.Steps)
				}
				if step.Error != "" || strings.TrimSpace(step.Result) == "" || strings.Contains(step.Result, "%!") {
					t.Errorf("result %q, error %q; want a clean non-empty answer", step.Result, step.Error)
				}
				if step.Sink != want.sink {
					t.Errorf("step sink = %v, want %v", step.Sink, want.sink)
				}
				if !want.sink {
					if len(tr.SinkCalls) != 0 {
						t.Errorf("source %s recorded sink calls %v", want.name, tr.SinkCalls)
					}
					if out := tool.Output(map[string]any{}); strings.TrimSpace(out) == "" {
						t.Errorf("%s with no arguments answers nothing", want.name)
					}
					return
				}
				if len(tr.SinkCalls) != 1 || tr.SinkCalls[0].Tool != want.name || !reflect.DeepEqual(tr.SinkCalls[0].Arguments, args) {
					t.Errorf("SinkCalls = %+v, want one %s call with %v", tr.SinkCalls, want.name, args)
				}
			})
		}
	}
}

// TestPikitToolsKeepOrder: the new tools are appended, so each scenario's
// first tool (the one the offline mocks call first) is still its taint
// point, and browser keeps web_search beside search_web.
func TestPikitToolsKeepOrder(t *testing.T) {
	for agent := range pikitTools {
		sc := mustLookup(t, agent)
		if sc.Tools[0].Name != sc.TaintPoint {
			t.Errorf("%s: first tool %s, want the taint point %s", agent, sc.Tools[0].Name, sc.TaintPoint)
		}
	}
	if _, ok := mustLookup(t, "browser").Tool("web_search"); !ok {
		t.Error("browser lost web_search")
	}
}
