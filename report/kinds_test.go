package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
)

// Trace steps of kinds pikit's own loop does not write (the Python
// pikit's, a runtime's fixture and runtime steps) are read and shown as
// they are.
func TestHTMLShowsEveryStepKind(t *testing.T) {
	tr := &agent.Trace{Steps: []agent.Step{
		{Index: 0, Kind: "fixture", Text: "fixture email · native", Result: "From: a@example.com"},
		{Index: 1, Kind: "tool_call", Tool: "send_email", Arguments: `{"to":"x"}`},
		{Index: 2, Kind: "policy_block", Text: "blocked by the runtime"},
	}}
	r := matrix.Result{Key: "k1", Attack: "naive", Agent: "runtime:command", Outcome: judge.FullSuccess, Success: true, TraceData: tr}
	var jsonl bytes.Buffer
	jsonl.Write(r.AppendJSON(nil))
	jsonl.WriteByte('\n')
	page := NewHTMLReport(HTMLOptions{Title: "t", MaxTraces: -1})
	if err := Scan(&jsonl, "r.jsonl", ".jsonl", page.Add); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := page.Write(&out); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"fixture", "tool_call", "policy_block", "blocked by the runtime", "send_email"} {
		if !strings.Contains(out.String(), kind) {
			t.Errorf("the page lacks %q", kind)
		}
	}
}
