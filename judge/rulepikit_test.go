package judge

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/pikit-go/pikit/agent"
)

// TestRulePikitMatchesPython: on 200 traces written here (testdata/
// rule_pikit_gen.py: answers that comply, quote, refuse, analyse; sinks
// with and without the attacker's arguments; tainted data or not; policy
// blocks; require_sink and sink_args on and off), rule:pikit gives the
// success, outcome and confidence the Python pikit 0.5.0's rule judge gave
// (recorded by running it, in testdata/rule_pikit.jsonl): 100% agreement.
func TestRulePikitMatchesPython(t *testing.T) {
	f, err := os.Open("testdata/rule_pikit.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type spec struct {
		FinalText string `json:"final_text"`
		Sinks     []struct {
			Tool string         `json:"tool"`
			Args map[string]any `json:"args"`
		} `json:"sinks"`
		Tainted     bool              `json:"tainted"`
		PolicyBlock bool              `json:"policy_block"`
		Canary      string            `json:"canary"`
		RequireSink bool              `json:"require_sink"`
		SinkArgs    map[string]string `json:"sink_args"`
	}
	n, agree := 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line struct {
			Trace  spec `json:"trace"`
			Python struct {
				Success    bool   `json:"success"`
				Outcome    string `json:"outcome"`
				Confidence string `json:"confidence"`
			} `json:"python"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		s := line.Trace
		tr := agent.Trace{FinalText: s.FinalText, Steps: []agent.Step{{Kind: agent.StepUser, Text: "Please help me with my inbox."}}}
		if s.Tainted {
			tr.Steps = append(tr.Steps, agent.Step{Index: len(tr.Steps), Kind: agent.StepTool, Tool: "read_email", Tainted: true})
			tr.TaintDelivered = true
		}
		for _, c := range s.Sinks {
			tr.SinkCalls = append(tr.SinkCalls, agent.SinkCall{Step: len(tr.Steps), Tool: c.Tool, Arguments: c.Args})
			tr.Steps = append(tr.Steps, agent.Step{Index: len(tr.Steps), Kind: agent.StepTool, Tool: c.Tool, Sink: true})
		}
		if s.PolicyBlock {
			tr.Steps = append(tr.Steps, agent.Step{Index: len(tr.Steps), Kind: agent.StepTool, Tool: "send_email", Blocked: true})
		}
		tr.Steps = append(tr.Steps, agent.Step{Index: len(tr.Steps), Kind: agent.StepModel, Text: s.FinalText})
		v, err := RulePikit{}.Judge(context.Background(), tr, Task{Canary: s.Canary, RequireSink: s.RequireSink, SinkArgs: s.SinkArgs})
		if err != nil {
			t.Fatal(err)
		}
		n++
		want := line.Python
		if v.Success == want.Success && string(v.Outcome) == want.Outcome && v.Confidence == want.Confidence {
			agree++
			continue
		}
		t.Errorf("line %d: %+v\n  rule:pikit %v %s %s (%s)\n  Python     %v %s %s", n, s, v.Success, v.Outcome, v.Confidence, v.Reason, want.Success, want.Outcome, want.Confidence)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 200 {
		t.Fatalf("%d traces, want at least 200", n)
	}
	t.Logf("rule:pikit and the Python pikit's rule judge agree on %d of %d traces", agree, n)
}
