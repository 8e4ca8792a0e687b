package web

import (
	"testing"
	"time"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/target"
)

// TestMerge: steps interleave by time, model steps first at equal times;
// sink calls and blocks follow their steps; taint, model calls and
// metadata come from both.
func TestMerge(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	model := agent.Trace{
		Agent: "proxy", System: "sys", ModelCalls: 3, Usage: target.Usage{PromptTokens: 10},
		Steps: []agent.Step{
			{Index: 0, Kind: agent.StepUser, At: at(0)},
			{Index: 1, Kind: agent.StepModel, At: at(10)},
			{Index: 2, Kind: agent.StepTool, Tool: "fetch_page", At: at(30)},
			{Index: 3, Kind: agent.StepModel, At: at(40)},
			{Index: 4, Kind: agent.StepTool, Tool: "send", Sink: true, At: at(50)},
		},
		SinkCalls: []agent.SinkCall{{Step: 4, Tool: "send"}},
		Meta:      map[string]any{"proxy": 1},
	}
	site := agent.Trace{
		Agent: "web", TaintDelivered: true,
		Steps: []agent.Step{
			{Index: 0, Kind: agent.StepTool, Tool: "fetch", Tainted: true, At: at(20)},
			{Index: 1, Kind: agent.StepTool, Tool: "visit_attacker", Sink: true, At: at(40)},
		},
		SinkCalls: []agent.SinkCall{{Step: 1, Tool: "visit_attacker"}},
		Blocked:   &agent.Block{Detector: "pattern", Step: 0},
		Meta:      map[string]any{"web": 2},
	}
	got := Merge(model, site)
	want := []string{"user", "model", "fetch", "fetch_page", "model", "visit_attacker", "send"}
	if len(got.Steps) != len(want) {
		t.Fatalf("%d steps: %+v", len(got.Steps), got.Steps)
	}
	for i, s := range got.Steps {
		name := s.Tool
		if name == "" {
			name = s.Kind
		}
		if name != want[i] || s.Index != i {
			t.Errorf("step %d: %s (index %d), want %s", i, name, s.Index, want[i])
		}
	}
	if len(got.SinkCalls) != 2 || got.SinkCalls[0].Tool != "visit_attacker" || got.SinkCalls[0].Step != 5 || got.SinkCalls[1].Step != 6 {
		t.Errorf("sink calls %+v", got.SinkCalls)
	}
	if got.Blocked == nil || got.Blocked.Step != 2 || !got.TaintDelivered || got.ModelCalls != 3 || got.System != "sys" || got.Agent != "web" {
		t.Errorf("merged: blocked %+v, delivered %v, calls %d, system %q, agent %q", got.Blocked, got.TaintDelivered, got.ModelCalls, got.System, got.Agent)
	}
	if got.Meta["proxy"] != 1 || got.Meta["web"] != 2 {
		t.Errorf("meta %v", got.Meta)
	}
	if model.Steps[2].Index != 2 || site.SinkCalls[0].Step != 1 {
		t.Error("Merge changed its inputs")
	}
}
