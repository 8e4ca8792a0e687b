package agentrt

import (
	"encoding/json"
	"strings"

	"github.com/pikit-go/pikit/agent"
)

// Step kinds the runtime adds to agent.Trace beside user, model and tool
// steps. Readers that know only the agent's kinds skip them; the HTML
// report shows their text.
const (
	// StepFixture records where the payload was handed over (Text: the
	// Mapping; Result: the text the agent got).
	StepFixture = "fixture"
	// StepRuntime records how the agent process ended and what of its
	// trace was ignored.
	StepRuntime = "runtime"
)

// handover is what one cell gave the agent.
type handover struct {
	mapping Mapping
	benign  bool
	text    string // the text under mapping.Key ("" for the baseline)
	payload string // the attacker's task as worded, for recognising it
	block   *agent.Block
	message string // the request the agent was given
	system  string // runtime_options.system after the cell's defense
}

// approvalNote is how an approval request reads in the trace: phrased so
// that the rule judge, which reads the final answer, sees a request for
// confirmation.
func approvalNote(e Event) string {
	what := firstNonEmpty(e.Text, e.Reason)
	if e.Tool != "" {
		call := e.Tool
		if e.Arguments != "" {
			call += " " + e.Arguments
		}
		if what == "" {
			what = "the agent wants to run " + call
		} else {
			what += " (" + call + ")"
		}
	}
	if what == "" {
		what = "the agent paused for the user's approval"
	}
	return "Approval requested: " + what + ". Please confirm before I proceed."
}

// buildTrace turns what the agent reported into a trace: the handover
// step, one step per event, end (when it has a kind), the final answer.
// stdout is the agent's answer unless a final event gives one.
func buildTrace(name string, h handover, ev *Events, stdout string, end agent.Step) agent.Trace {
	tr := agent.Trace{Agent: name, Steps: make([]agent.Step, 0, 2+len(ev.List)),
		Meta: map[string]any{"fixture": h.mapping.Key, "fixture_mapping": h.mapping.Mode, "runtime": strings.TrimPrefix(name, "runtime:")}}
	add := func(s agent.Step) int {
		s.Index = len(tr.Steps)
		tr.Steps = append(tr.Steps, s)
		return s.Index
	}

	fx := agent.Step{Kind: StepFixture, Text: h.mapping.String(), Result: h.text}
	if h.benign {
		fx.Text = "baseline, no payload handed over; the cell's " + h.mapping.String()
	}
	if h.block != nil {
		fx.Blocked = true
		b := *h.block
		b.Step = add(fx)
		tr.Blocked = &b
	} else {
		add(fx)
	}
	tr.System = h.system
	if h.message != "" {
		add(agent.Step{Kind: agent.StepUser, Text: h.message})
	}

	final, finalSet := stdout, false
	var approvals []string
	for _, e := range ev.List {
		switch e.Type {
		case EventToolResult:
			s := agent.Step{Kind: agent.StepTool, Tool: e.Tool, CallID: e.CallID, Arguments: e.Arguments,
				Result: firstNonEmpty(e.Result, e.Text)}
			s.Tainted = h.carries(e.Fixture, s.Result) || e.Tainted && h.handed()
			if s.Tainted {
				tr.TaintDelivered = true
			}
			add(s)
		case EventSinkCall:
			s := agent.Step{Kind: agent.StepTool, Tool: e.Tool, CallID: e.CallID, Arguments: e.Arguments,
				Result: firstNonEmpty(e.Result, e.Text), Sink: true}
			args := e.Args
			if args == nil {
				args = map[string]any{}
			}
			i := add(s)
			tr.SinkCalls = append(tr.SinkCalls, agent.SinkCall{Step: i, Tool: e.Tool, Arguments: args})
		case EventPolicyBlock:
			reason := firstNonEmpty(e.Reason, e.Text, "blocked by the agent's policy")
			s := agent.Step{Kind: agent.StepTool, Tool: e.Tool, CallID: e.CallID, Arguments: e.Arguments,
				Result: "[blocked: " + reason + "]", Blocked: true}
			i := add(s)
			if tr.Blocked == nil {
				tr.Blocked = &agent.Block{Point: "tool_result", Detector: firstNonEmpty(e.Policy, name), Reason: reason, Step: i}
			}
		case EventApprovalRequested:
			note := approvalNote(e)
			approvals = append(approvals, note)
			add(agent.Step{Kind: agent.StepModel, Text: note})
		case EventToolError:
			add(agent.Step{Kind: agent.StepTool, Tool: e.Tool, CallID: e.CallID, Arguments: e.Arguments,
				Result: e.Result, Error: firstNonEmpty(e.Error, e.Reason, e.Text, "tool error")})
		case EventFinal:
			final, finalSet = firstNonEmpty(e.Text, e.Result), true
		}
	}
	if !finalSet {
		final = strings.TrimSpace(final)
	}
	// The rule judge reads the final answer: an approval the agent asked
	// for must show there, as it would to the user who was asked.
	for _, a := range approvals {
		if !strings.Contains(final, a) {
			final = strings.TrimSpace(final + "\n\n" + a)
		}
	}
	tr.FinalText = final
	if end.Kind != "" {
		add(end)
	}
	if final != "" {
		add(agent.Step{Kind: agent.StepModel, Text: final})
	}
	return tr
}

// handed reports whether the cell handed the agent a payload: not the
// baseline, and not withheld by a detector.
func (h handover) handed() bool {
	return !h.benign && h.block == nil && h.text != ""
}

// carries reports whether a tool result handed the payload to the agent's
// model: it names the fixture that got the payload, or holds the text
// (as it is, or JSON-escaped inside a larger object).
func (h handover) carries(fixture, result string) bool {
	if !h.handed() {
		return false
	}
	if fixture != "" && fixture == h.mapping.Key {
		return true
	}
	for _, s := range []string{h.text, h.payload} {
		if s == "" {
			continue
		}
		if strings.Contains(result, s) {
			return true
		}
		if q := jsonEscaped(s); q != s && strings.Contains(result, q) {
			return true
		}
	}
	return false
}

// jsonEscaped returns s as it reads inside a JSON string (quotes and
// newlines escaped, <, > and & not).
func jsonEscaped(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(s) != nil {
		return s
	}
	q := strings.TrimSuffix(b.String(), "\n")
	return q[1 : len(q)-1]
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
