package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/target"
)

// toolTrace is a trace whose model called the named tools, errs saying
// which calls failed (a bad call: arguments the tool refused).
func toolTrace(tools []string, errs []bool) *agent.Trace {
	tr := &agent.Trace{Agent: "decl", Steps: []agent.Step{{Index: 0, Kind: agent.StepUser, Text: "hi"}}}
	for i, name := range tools {
		id := "c" + string(rune('0'+i))
		tr.Steps = append(tr.Steps, agent.Step{Index: len(tr.Steps), Kind: agent.StepModel, ToolCalls: []target.ToolCall{{ID: id, Name: name, Arguments: "{}"}}})
		s := agent.Step{Index: len(tr.Steps), Kind: agent.StepTool, Tool: name, CallID: id, Arguments: "{}", Result: "ok"}
		if errs[i] {
			s.Error, s.Result = `missing required argument "id"`, "error: invalid arguments"
		}
		tr.Steps = append(tr.Steps, s)
	}
	tr.Steps = append(tr.Steps, agent.Step{Index: len(tr.Steps), Kind: agent.StepModel, Text: "done"})
	return tr
}

// toolErrorResults: 3 judged cells of agent decl whose every tool call
// errored, and cells that do not count as such: a call that worked beside
// one that failed, no tool calls, a runtime error and a benign baseline
// (neither in the rate), a cell of another agent without errors.
func toolErrorResults() []matrix.Result {
	cell := func(key, agentName, attack string, o judge.Outcome, tr *agent.Trace) matrix.Result {
		return matrix.Result{Key: key, Attack: attack, Defense: "none", Agent: agentName, Target: "mock", Outcome: o, Success: o.Success(), TraceData: tr}
	}
	return []matrix.Result{
		cell("a1", "decl", "naive", judge.NotReached, toolTrace([]string{"read"}, []bool{true})),
		cell("a2", "decl", "naive", judge.NotReached, toolTrace([]string{"read", "read"}, []bool{true, true})),
		cell("a3", "decl", "combined", judge.TaintDelivered, toolTrace([]string{"read", "list"}, []bool{true, true})),
		cell("b1", "decl", "naive", judge.TaintDelivered, toolTrace([]string{"read", "list"}, []bool{true, false})),
		cell("b2", "decl", "naive", judge.NotReached, toolTrace(nil, nil)),
		cell("b3", "decl", "naive", judge.RuntimeError, toolTrace([]string{"read"}, []bool{true})),
		cell("b4", "decl", "none", judge.NotReached, toolTrace([]string{"read"}, []bool{true})),
		cell("c1", "email", "naive", judge.FullSuccess, toolTrace([]string{"read"}, []bool{false})),
		cell("c2", "email", "naive", judge.Refused, nil),
	}
}

// TestToolErrorCells: the summary counts the judged cells whose every tool
// call errored, overall and per group, in memory and read from a file, and
// says so in text, Markdown, JSON and HTML; results without such cells
// report as before (the goldens).
func TestToolErrorCells(t *testing.T) {
	res := toolErrorResults()
	var records []Record
	if err := Scan(bytes.NewReader(jsonlOf(t, res)), "r.jsonl", ".jsonl", func(r *Record) error {
		c := *r
		c.raw, c.full, c.MetadataText = nil, nil, nil
		records = append(records, c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wantFailed := []bool{true, true, true, false, false, true, true, false, false}
	for i := range res {
		mem := RecordOf(&res[i])
		if mem.ToolCallsFailed != wantFailed[i] || records[i].ToolCallsFailed != wantFailed[i] {
			t.Errorf("%s: ToolCallsFailed %v in memory, %v read; want %v", res[i].Key, mem.ToolCallsFailed, records[i].ToolCallsFailed, wantFailed[i])
		}
	}
	a := NewAggregator("agent")
	for i := range records {
		a.AddRecord(&records[i])
	}
	for _, s := range []Summary{Summarize(res, "agent"), a.Summary()} {
		if s.ToolErrorCells != 3 {
			t.Errorf("ToolErrorCells %d, want 3 (the runtime error and the baseline are not in the rate)", s.ToolErrorCells)
		}
		if len(s.Groups) != 2 || s.Groups[0].ToolErrorCells != 3 || s.Groups[1].ToolErrorCells != 0 {
			t.Errorf("groups: %+v", s.Groups)
		}
	}
	s := Summarize(res, "agent")
	const warn = "3 of the 7 judged cells had tool calls that all errored; their failures may not measure the model"
	var txt, md, js bytes.Buffer
	s.WriteText(&txt)
	s.WriteMarkdown(&md)
	s.WriteJSON(&js)
	for name, out := range map[string]string{"text": txt.String(), "markdown": md.String()} {
		if !strings.Contains(out, warn) {
			t.Errorf("%s lacks the warning:\n%s", name, out)
		}
		if !strings.Contains(strings.ToLower(out), "tool errors") {
			t.Errorf("%s lacks the tool errors column:\n%s", name, out)
		}
	}
	var back struct {
		ToolErrorCells int `json:"tool_error_cells"`
		Groups         []struct {
			ToolErrorCells int `json:"tool_error_cells"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.ToolErrorCells != 3 || back.Groups[0].ToolErrorCells != 3 {
		t.Errorf("JSON: %+v %v\n%s", back, err, js.String())
	}
	if page := renderHTML(t, res, HTMLOptions{}); !bytes.Contains(page, []byte(warn)) {
		t.Error("the HTML page lacks the warning")
	}
	// No such cells: no warning, no column.
	plain := Summarize(res[7:], "agent")
	txt.Reset()
	plain.WriteText(&txt)
	if strings.Contains(txt.String(), "tool") {
		t.Errorf("a warning without tool errors:\n%s", txt.String())
	}
}

// TestToolCallsFailedShapes: the trace reader finds tool steps whatever
// the order of their fields and the spacing, and is not misled by the word
// "error" in texts or by errors of steps that are not tool calls.
func TestToolCallsFailedShapes(t *testing.T) {
	tests := []struct {
		trace string
		want  bool
	}{
		{`{"steps":[{"kind":"tool","error":"bad"}]}`, true},
		{`{"steps": [ {"error" : "bad", "index": 1, "kind" : "tool"} , {"kind":"model","text":"x"} ] }`, true},
		{`{"agent":"a","steps":[{"kind":"tool","error":"bad"},{"kind":"tool","result":"ok"}]}`, false},
		{`{"steps":[{"kind":"tool","result":"\"error\": nope"}]}`, false},
		{`{"steps":[{"kind":"model","error":"bad"}]}`, false},
		{`{"steps":[{"kind":"tool","error":""}]}`, false},
		{`{"steps":[{"kind":"tool","error":null}]}`, false},
		{`{"steps":[]}`, false},
		{`{"steps":null,"error":"x"}`, false},
		{`null`, false},
		{`{"steps":[{"kind":"tool","error":"bad","nested":{"kind":"model"}}],"final_text":"error"}`, true},
	}
	for _, tt := range tests {
		line := `{"key":"k","attack":"naive","outcome":"refused","success":false,"trace_data":` + tt.trace + `}`
		recs, err := scanAll(t, "f", ".jsonl", line)
		if err != nil {
			t.Fatalf("%s: %v", tt.trace, err)
		}
		if recs[0].ToolCallsFailed != tt.want {
			t.Errorf("%s: %v, want %v", tt.trace, recs[0].ToolCallsFailed, tt.want)
		}
	}
}
