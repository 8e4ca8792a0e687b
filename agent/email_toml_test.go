package agent_test

import (
	"slices"
	"testing"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/matrix"
)

// TestEmailTOMLMatchesBuiltin: examples/scenarios/email.toml declares the
// built-in email scenario's tools, in its order, each a sink or a source as
// the built-in's, with the same parameters and the same required ones.
func TestEmailTOMLMatchesBuiltin(t *testing.T) {
	cfg, err := matrix.LoadFile("../examples/scenarios/email.toml")
	if err != nil {
		t.Fatal(err)
	}
	decl, err := cfg.Scenario("email_toml")
	if err != nil {
		t.Fatal(err)
	}
	builtin, err := agent.Lookup("email")
	if err != nil {
		t.Fatal(err)
	}
	names := func(sc *agent.Scenario) []string {
		var out []string
		for _, tool := range sc.Tools {
			out = append(out, tool.Name)
		}
		return out
	}
	if got, want := names(decl), names(builtin); !slices.Equal(got, want) {
		t.Fatalf("email.toml tools %v, built-in email's %v", got, want)
	}
	if decl.TaintPoint != builtin.TaintPoint || decl.Channel != builtin.Channel {
		t.Errorf("email.toml taint %s channel %s, built-in %s %s", decl.TaintPoint, decl.Channel, builtin.TaintPoint, builtin.Channel)
	}
	params := func(tool agent.Tool) (all, required []string) {
		for _, p := range tool.Params {
			all = append(all, p.Name+":"+p.Type)
			if p.Required {
				required = append(required, p.Name)
			}
		}
		slices.Sort(all)
		slices.Sort(required)
		return all, required
	}
	for i, want := range builtin.Tools {
		got := decl.Tools[i]
		if got.Sink != want.Sink || got.Description != want.Description {
			t.Errorf("%s: sink %v description %q; built-in sink %v description %q", want.Name, got.Sink, got.Description, want.Sink, want.Description)
		}
		gotAll, gotReq := params(got)
		wantAll, wantReq := params(want)
		if !slices.Equal(gotAll, wantAll) || !slices.Equal(gotReq, wantReq) {
			t.Errorf("%s: params %v required %v; built-in %v required %v", want.Name, gotAll, gotReq, wantAll, wantReq)
		}
	}
}
