package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/target"
)

// TestReportToolErrorWarning: when judged cells' tool calls all errored
// (the model never saw a tool's answer), report, gate and compare say how
// many, in every format that has room; runs without such cells print as
// before.
func TestReportToolErrorWarning(t *testing.T) {
	dir := t.TempDir()
	res := reportCells("k", "naive", "none", 4, 0)
	for i := range res[:3] {
		res[i].Outcome = judge.NotReached
		res[i].TraceData = &agent.Trace{Agent: "chat", Steps: []agent.Step{
			{Index: 0, Kind: agent.StepUser, Text: "read my mail"},
			{Index: 1, Kind: agent.StepModel, ToolCalls: []target.ToolCall{{ID: "c1", Name: "read_email", Arguments: "{}"}}},
			{Index: 2, Kind: agent.StepTool, Tool: "read_email", CallID: "c1", Arguments: "{}", Result: "error: invalid arguments", Error: `missing required argument "email_id"`},
			{Index: 3, Kind: agent.StepModel, Text: "I could not read it."},
		}}
	}
	broken := writeReportResults(t, dir, "broken.jsonl", res)
	clean := writeReportResults(t, dir, "clean.jsonl", reportCells("k", "naive", "none", 4, 0))
	const warn = "3 of the 4 judged cells had tool calls that all errored; their failures may not measure the model"
	for _, tt := range []struct {
		args []string
		in   string // where the warning shows: out or err
	}{
		{[]string{"report", broken}, "out"},
		{[]string{"report", broken, "--by", "attack", "--format", "markdown"}, "out"},
		{[]string{"gate", broken, "--max-asr", "0.5"}, "err"},
		{[]string{"compare", clean, broken}, "out"},
	} {
		r := run(t, tt.args...)
		got := r.out
		if tt.in == "err" {
			got = r.err
		}
		if r.code != 0 || !strings.Contains(got, warn) {
			t.Errorf("%v: exit %d, want the warning on std%s:\n%s%s", tt.args, r.code, tt.in, r.out, r.err)
		}
	}
	r := run(t, "report", broken, "--format", "json")
	var s struct {
		ToolErrorCells int `json:"tool_error_cells"`
	}
	if err := json.Unmarshal([]byte(r.out), &s); err != nil || s.ToolErrorCells != 3 {
		t.Errorf("json: %d, %v\n%s", s.ToolErrorCells, err, r.out)
	}
	for _, args := range [][]string{{"report", clean}, {"gate", clean, "--max-asr", "0.5"}, {"compare", clean, clean}, {"report", clean, "--format", "json"}} {
		if r := run(t, args...); strings.Contains(r.out+r.err, "tool") {
			t.Errorf("%v: a warning without tool errors:\n%s%s", args, r.out, r.err)
		}
	}
}
