package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/defense"
	"github.com/pikit-go/pikit/target"
)

// calls builds a model reply that calls tools.
func calls(cs ...target.ToolCall) target.Response {
	return target.Response{ToolCalls: cs, StopReason: "tool_use"}
}

// call builds one tool call.
func call(id, name, args string) target.ToolCall {
	return target.ToolCall{ID: id, Name: name, Arguments: args}
}

// final builds a model reply with a final text.
func final(text string) target.Response {
	return target.Response{Text: text, StopReason: "end"}
}

func mustLookup(t *testing.T, name string) *Scenario {
	t.Helper()
	sc, err := Lookup(name)
	if err != nil {
		t.Fatalf("Lookup(%q): %v", name, err)
	}
	return sc
}

func mustRun(t *testing.T, tg target.Target, sc *Scenario, in Input, h Hooks) Trace {
	t.Helper()
	tr, err := Run(context.Background(), tg, sc, in, h)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return tr
}

// toolMessages returns the tool messages of a request, in order.
func toolMessages(req target.Request) []target.Message {
	var out []target.Message
	for _, m := range req.Messages {
		if m.Role == target.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

// requiredArgs returns string values for every required parameter of tool.
func requiredArgs(tool Tool) map[string]any {
	args := map[string]any{}
	for _, p := range tool.Params {
		if p.Required {
			args[p.Name] = "val-" + p.Name
		}
	}
	return args
}

// subDetector flags text containing sub (case-insensitively).
type subDetector struct{ sub string }

func (d subDetector) Detect(text string) defense.Detection {
	if strings.Contains(strings.ToLower(text), strings.ToLower(d.sub)) {
		return defense.Detection{Flagged: true, Score: 0.9, Reason: "contains " + d.sub}
	}
	return defense.Detection{Score: 0.1}
}

// countingDetector records every text it is shown and never flags.
type countingDetector struct{ seen *[]string }

func (d countingDetector) Detect(text string) defense.Detection {
	*d.seen = append(*d.seen, text)
	return defense.Detection{}
}

var errBoom = errors.New("provider exploded")

// failingTarget answers from a script, then fails from call failAt (0-based)
// on.
type failingTarget struct {
	script *target.Scripted
	failAt int
	n      int
}

func (f *failingTarget) Chat(ctx context.Context, req target.Request) (target.Response, error) {
	defer func() { f.n++ }()
	if f.n >= f.failAt {
		return target.Response{}, errBoom
	}
	return f.script.Chat(ctx, req)
}
