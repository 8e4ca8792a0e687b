package judge

import (
	"testing"
	"time"

	"github.com/pikit-go/pikit/agent"
)

// ownSinksTrace is an email run whose model called send_email n times
// before it read the tainted email: each call is the model's own, and the
// rule judge reports each (sink_before_payload), as a results line that
// pikit judge rescore reads may hold.
func ownSinksTrace(n int) agent.Trace {
	tr := floodTrace(n)
	tr.Steps[2].Tainted = false
	tainted := agent.Step{Index: len(tr.Steps), Kind: agent.StepTool, Tool: "read_email", Result: taintedEmail, Tainted: true}
	tr.Steps = append(tr.Steps, tainted)
	return tr
}

// TestAnnotateManyCalls: the evidence of a trace with 300,000 sink calls
// before the payload (one item each) is annotated in time linear in them,
// not their square (about 20 s when each item scanned the calls).
func TestAnnotateManyCalls(t *testing.T) {
	tr := ownSinksTrace(300_000)
	v := judgeWithin(t, Rule{}, tr, sinkArgsTask, 20*time.Second)
	if len(v.Evidence) < len(tr.SinkCalls) {
		t.Fatalf("%d evidence items for %d calls before the payload", len(v.Evidence), len(tr.SinkCalls))
	}
	done := make(chan []Evidence, 1)
	go func() { done <- Annotate(v.Evidence, tr, sinkArgsTask) }()
	select {
	case evs := <-done:
		for _, e := range evs {
			if e.Type == "sink_before_payload" && (e.Tool != "send_email" || e.Args["to"] != attacker) {
				t.Fatalf("evidence %+v not annotated with its call", e)
			}
		}
	case <-time.After(8 * time.Second):
		t.Fatalf("annotating %d evidence items took over 8s", len(v.Evidence))
	}
}

// TestAnnotateAsTheScan finds, for each sink evidence item, the call a
// scan of the calls in order finds (the first at or after its step), on
// calls out of step order.
func TestAnnotateAsTheScan(t *testing.T) {
	steps := []int{4, 2, 9, 9, 1, 12, 3}
	var tr agent.Trace
	for i, s := range steps {
		tr.SinkCalls = append(tr.SinkCalls, agent.SinkCall{Step: s, Tool: "t", Arguments: map[string]any{"i": i}})
	}
	for step := -1; step <= 14; step++ {
		evs := Annotate([]Evidence{{Signal: "sink_fired", Step: step}}, tr, Task{})
		want := -1
		for i, s := range steps {
			if s >= step {
				want = i
				break
			}
		}
		got := -1
		if evs[0].Args != nil {
			got = evs[0].Args["i"].(int)
		}
		if got != want {
			t.Errorf("evidence at step %d annotated with call %d, want %d", step, got, want)
		}
	}
}
