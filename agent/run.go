package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/pikit-go/pikit/defense"
	"github.com/pikit-go/pikit/target"
)

// DefaultMaxSteps bounds the model calls of one run when Input.MaxSteps is 0.
const DefaultMaxSteps = 8

// Input is what one run feeds the scenario.
type Input struct {
	// UserMessage is the user's request; "" means the scenario's default.
	UserMessage string
	// UserTainted marks the user message as carrying the payload (direct
	// injection).
	UserTainted bool
	// Instruction is the trusted task the defenses restate; "" means the
	// scenario's default user message.
	Instruction string
	// Taint maps a source tool's name to the tainted content it returns
	// instead of its clean output (indirect injection).
	Taint map[string]string
	// Turns are user turns said before UserMessage, each answered in
	// full before the next (a multi-turn attack); tainted like the user
	// message when UserTainted is set.
	Turns []string
	// Prefetch has the harness call the scenario's taint point once
	// before the model's first turn, as if the model had asked: the data
	// (and the payload) is in its context whether or not it can call
	// tools. For models and servers without tool calling.
	Prefetch bool
	// Protocol is how the model meets the tools: ProtocolNative (the
	// default, "" too) or ProtocolReAct (described in the prompt, called
	// in text).
	Protocol string
	MaxSteps int
	// Reruns is how many more times the conversation starts over, from
	// the first turn with fresh messages, when it used up MaxSteps without
	// a text answer: AgentDojo's harness runs such a task again, twice,
	// against the same environment. The trace keeps every attempt's steps,
	// each starting at its user step.
	Reruns      int
	Temperature *float64
	Seed        *int64
}

// NamedDetector is a detector with the name it was registered under.
type NamedDetector struct {
	Name string
	defense.Detector
}

// Hooks are the defenses applied at the three points where text reaches the
// model. A nil Defense leaves that point alone. Detectors screen the user
// message (direct injection) or source tool results: a flagged user message
// ends the run before the model sees it; a flagged tool result is withheld.
type Hooks struct {
	System     defense.Defense
	User       defense.Defense
	ToolResult defense.Defense
	Detectors  []NamedDetector
}

// Step kinds of a Trace.
const (
	StepUser  = "user"
	StepModel = "model"
	StepTool  = "tool"
)

// Step is one event of a run: the user message, a model reply, or a tool
// call with its result.
type Step struct {
	Index     int               `json:"index"`
	Kind      string            `json:"kind"`
	Text      string            `json:"text,omitempty"`       // user message or model text
	ToolCalls []target.ToolCall `json:"tool_calls,omitempty"` // model steps
	Tool      string            `json:"tool,omitempty"`       // tool steps
	CallID    string            `json:"call_id,omitempty"`
	Arguments string            `json:"arguments,omitempty"`
	Result    string            `json:"result,omitempty"` // what the model was given
	Tainted   bool              `json:"tainted,omitempty"`
	Sink      bool              `json:"sink,omitempty"`
	Blocked   bool              `json:"blocked,omitempty"`
	Error     string            `json:"error,omitempty"` // a bad tool call
	// Prefetched marks a tool step the harness called (Input.Prefetch),
	// not the model.
	Prefetched bool `json:"prefetched,omitempty"`
	// At is when a driver recorded the step, for putting the steps that
	// two drivers of one run recorded (a browser agent's model traffic
	// and its web traffic) in order; it is not part of a result.
	At time.Time `json:"-"`
}

// SinkCall records a sink the model called with valid arguments.
type SinkCall struct {
	Step      int            `json:"step"`
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
}

// Block records a detector stopping text before the model saw it.
type Block struct {
	Point    string  `json:"point"` // "user" or "tool_result"
	Detector string  `json:"detector"`
	Reason   string  `json:"reason"`
	Score    float64 `json:"score"`
	Step     int     `json:"step"`
}

// Trace records everything one run did.
type Trace struct {
	Agent          string     `json:"agent"`
	System         string     `json:"system"`
	Steps          []Step     `json:"steps"`
	FinalText      string     `json:"final_text"`
	SinkCalls      []SinkCall `json:"sink_calls,omitempty"`
	TaintDelivered bool       `json:"taint_delivered"`
	Blocked        *Block     `json:"blocked,omitempty"`
	MaxStepsHit    bool       `json:"max_steps_hit,omitempty"`
	// Reruns counts the times the conversation started over
	// (Input.Reruns); its steps are those of every attempt.
	Reruns     int          `json:"reruns,omitempty"`
	ModelCalls int          `json:"model_calls"`
	Usage      target.Usage `json:"usage"`
	// Rounds are the attempts of an adaptive attack, in the order they
	// ran; the trace's steps are those of the winning round (or of the
	// last, when none won).
	Rounds []Round `json:"rounds,omitempty"`
	// Meta is what an external agent's driver knows about the run beyond
	// its steps (the fixture a runtime handed the payload to, the APIs a
	// proxied agent used); the runner puts it in the result's metadata.
	Meta map[string]any `json:"-"`
}

// TaintedSteps returns the indexes of the steps that carried the payload.
func (tr *Trace) TaintedSteps() []int {
	var out []int
	for _, s := range tr.Steps {
		if s.Tainted {
			out = append(out, s.Index)
		}
	}
	return out
}

func (tr *Trace) add(s Step) int {
	s.Index = len(tr.Steps)
	tr.Steps = append(tr.Steps, s)
	return s.Index
}

// Run drives one conversation of scenario sc against t: the earlier turns
// of in.Turns, if any, then the user message, each answered in full (tool
// calls included) before the next. It returns the trace so far together
// with any error (a failed model call, a cancelled context), so a caller
// can keep what happened before the failure.
func Run(ctx context.Context, t target.Target, sc *Scenario, in Input, h Hooks) (Trace, error) {
	user := in.UserMessage
	if user == "" {
		user = sc.UserMessage
	}
	var tr Trace
	for attempt := 0; ; attempt++ {
		c := Start(t, sc, in, h)
		if attempt > 0 {
			c.tr, c.tr.MaxStepsHit, c.tr.Reruns = tr, false, attempt
		}
		for _, turn := range append(in.Turns[:len(in.Turns):len(in.Turns)], user) {
			if err := c.Say(ctx, turn, in.UserTainted); err != nil {
				return c.tr, err
			}
			if c.Ended() {
				break
			}
		}
		tr = c.tr
		if attempt >= in.Reruns || !tr.MaxStepsHit || tr.Blocked != nil || tr.FinalText != "" {
			return tr, nil
		}
	}
}

// Conversation is a run that goes on turn by turn: each Say sends one user
// message and lets the model answer it, calling tools as it likes. A
// multi-turn attack (crescendo) talks to the target through it, and can
// take back a turn the model refused with Rewind.
type Conversation struct {
	t           target.Target
	sc          *Scenario
	in          Input
	h           Hooks
	tools       []target.Tool
	instruction string
	msgs        []target.Message
	tr          Trace
	taintCalls  int // calls of the taint point so far
	prefetched  bool
	react       bool // ProtocolReAct: tools in the prompt, calls in text
}

// Start begins a conversation of scenario sc against t; nothing is sent
// until the first Say. in.UserMessage and in.Turns are not used: the
// caller says each turn.
func Start(t target.Target, sc *Scenario, in Input, h Hooks) *Conversation {
	tools := sc.definitions()
	// Room for the usual run: the user message and a reply, and with tools
	// a call and its result before the reply.
	size := 2
	if len(tools) > 0 {
		size = 4
	}
	c := &Conversation{t: t, sc: sc, in: in, h: h, tools: tools, instruction: in.Instruction}
	c.tr = Trace{Agent: sc.Name, Steps: make([]Step, 0, size)}
	c.msgs = make([]target.Message, 0, size)
	if c.instruction == "" {
		c.instruction = sc.UserMessage
	}
	c.tr.System = sc.System
	if h.System != nil {
		c.tr.System = h.System.Apply(sc.System, "")
	}
	if in.Protocol == ProtocolReAct && len(tools) > 0 {
		// The tools are in the prompt, not offered through the API.
		c.tr.System, c.react, c.tools = reactPrompt(c.tr.System, tools), true, nil
	}
	return c
}

// Trace returns the conversation so far. Its slices are shared with the
// conversation: copy them before saying more if they are kept.
func (c *Conversation) Trace() Trace { return c.tr }

// Ended reports whether the conversation can take no more turns: a
// detector blocked a turn, or a turn used up its model calls.
func (c *Conversation) Ended() bool { return c.tr.Blocked != nil || c.tr.MaxStepsHit }

// Say sends one user turn (tainted: the attacker wrote it) and runs the
// model until it answers in text, at most Input.MaxSteps model calls. A
// detector that flags a tainted turn ends the conversation before the
// model sees it. Say after the conversation ended does nothing.
func (c *Conversation) Say(ctx context.Context, user string, tainted bool) error {
	if c.Ended() {
		return nil
	}
	tr, h := &c.tr, c.h
	if tainted {
		if b := h.Screen(user); b != nil {
			b.Point = "user"
			b.Step = tr.add(Step{Kind: StepUser, Text: user, Tainted: true, Blocked: true})
			tr.Blocked = b
			return nil
		}
	}
	if h.User != nil {
		user = h.User.Apply(user, c.instruction)
	}
	tr.add(Step{Kind: StepUser, Text: user, Tainted: tainted})
	tr.TaintDelivered = tr.TaintDelivered || tainted
	c.msgs = append(c.msgs, target.Message{Role: target.RoleUser, Content: user})
	c.prefetch()

	maxSteps := c.in.MaxSteps
	if maxSteps <= 0 {
		maxSteps = DefaultMaxSteps
	}
	for calls := 0; ; calls++ {
		if calls >= maxSteps {
			tr.MaxStepsHit = true
			return nil
		}
		resp, err := c.t.Chat(ctx, target.Request{
			System:      tr.System,
			Messages:    c.msgs,
			Tools:       c.tools,
			Temperature: c.in.Temperature,
			Seed:        c.in.Seed,
		})
		if err != nil {
			return err
		}
		tr.ModelCalls++
		tr.Usage = tr.Usage.Add(resp.Usage)
		if c.react {
			if c.reactTurn(resp.Text, calls) {
				continue
			}
			return nil
		}
		tr.add(Step{Kind: StepModel, Text: resp.Text, ToolCalls: resp.ToolCalls})
		tr.FinalText = resp.Text
		c.msgs = append(c.msgs, target.Message{Role: target.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls})
		if len(resp.ToolCalls) == 0 {
			return nil
		}
		for _, call := range resp.ToolCalls {
			if call.Name == c.sc.TaintPoint {
				c.taintCalls++
			}
			result := tr.callTool(c.sc, call, c.in, h, c.instruction, c.taintCalls)
			c.msgs = append(c.msgs, target.Message{Role: target.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: result})
		}
	}
}

// prefetch calls the taint point for the model, once, before its first
// turn (Input.Prefetch): the call goes in the messages as an assistant's
// tool call, and its result as the tool's answer, so the model reads the
// data as it would have had it asked. A required parameter gets a plain
// value of its type.
func (c *Conversation) prefetch() {
	if !c.in.Prefetch || c.prefetched || c.sc.TaintPoint == "" {
		return
	}
	tool, ok := c.sc.Tool(c.sc.TaintPoint)
	if !ok {
		return
	}
	c.prefetched = true
	args := c.sc.TaintArgs
	if args == nil {
		args = placeholderArgs(tool)
	}
	call := target.ToolCall{ID: "pikit_prefetch", Name: tool.Name, Arguments: MarshalArgs(args)}
	if c.react {
		c.msgs = append(c.msgs, target.Message{Role: target.RoleAssistant, Content: reactAction(call)})
	} else {
		c.msgs = append(c.msgs, target.Message{Role: target.RoleAssistant, ToolCalls: []target.ToolCall{call}})
	}
	c.taintCalls++
	n := len(c.tr.Steps)
	result := c.tr.callTool(c.sc, call, c.in, c.h, c.instruction, c.taintCalls)
	if len(c.tr.Steps) > n {
		c.tr.Steps[n].Prefetched = true
	}
	if c.react {
		c.msgs = append(c.msgs, target.Message{Role: target.RoleUser, Content: reactObservation(result)})
		return
	}
	c.msgs = append(c.msgs, target.Message{Role: target.RoleTool, ToolCallID: call.ID, Name: call.Name, Content: result})
}

// reactTurn handles one ReAct reply and reports whether the run goes on:
// the reply's action, if it has one, is run, and its result comes back as
// an observation; a reply with none (a final answer, plain text) ends the
// turn. The model step records the action as a tool call, so judges and
// reports read ReAct runs as they read tool-calling ones.
func (c *Conversation) reactTurn(reply string, n int) bool {
	tr := &c.tr
	call, final := parseReAct(reply, fmt.Sprintf("react_%d", n))
	step := Step{Kind: StepModel, Text: reply}
	if call == nil {
		tr.add(step)
		tr.FinalText = final
		c.msgs = append(c.msgs, target.Message{Role: target.RoleAssistant, Content: reply})
		return false
	}
	step.ToolCalls = []target.ToolCall{*call}
	tr.add(step)
	tr.FinalText = reply
	// What the model wrote after its action (an observation of its own
	// making) did not happen: the history keeps the reply up to it.
	c.msgs = append(c.msgs, target.Message{Role: target.RoleAssistant, Content: reactUpToObservation(reply)})
	if call.Name == c.sc.TaintPoint {
		c.taintCalls++
	}
	result := tr.callTool(c.sc, *call, c.in, c.h, c.instruction, c.taintCalls)
	c.msgs = append(c.msgs, target.Message{Role: target.RoleUser, Content: reactObservation(result)})
	return true
}

// placeholderArgs gives each required parameter of a tool a placeholder
// value of its type: the arguments of a prefetched call that its scenario
// does not give.
func placeholderArgs(tool Tool) map[string]any {
	args := map[string]any{}
	for _, p := range tool.Params {
		if !p.Required {
			continue
		}
		switch p.Type {
		case "integer", "number":
			args[p.Name] = 1
		case "boolean":
			args[p.Name] = true
		default:
			args[p.Name] = "latest"
		}
	}
	return args
}

// Mark is a point of a conversation that Rewind goes back to.
type Mark struct {
	steps, msgs, sinks, taintCalls int
	finalText                      string
	taintDelivered, prefetched     bool
}

// Mark returns the conversation's present point.
func (c *Conversation) Mark() Mark {
	return Mark{len(c.tr.Steps), len(c.msgs), len(c.tr.SinkCalls), c.taintCalls, c.tr.FinalText, c.tr.TaintDelivered, c.prefetched}
}

// Rewind takes back every turn said since m: the model no longer sees them
// and the trace no longer holds them (a caller that wants them on record
// copies them first). The model calls and tokens they cost stay counted.
func (c *Conversation) Rewind(m Mark) {
	c.tr.Steps = c.tr.Steps[:m.steps:m.steps]
	c.msgs = c.msgs[:m.msgs:m.msgs]
	c.tr.SinkCalls = c.tr.SinkCalls[:m.sinks:m.sinks]
	c.taintCalls, c.tr.FinalText, c.tr.TaintDelivered, c.prefetched = m.taintCalls, m.finalText, m.taintDelivered, m.prefetched
	c.tr.Blocked, c.tr.MaxStepsHit = nil, false
}

// callTool runs one tool call, records it, and returns what the model is
// given back. n counts the calls of the taint point so far, this one
// included.
func (tr *Trace) callTool(sc *Scenario, call target.ToolCall, in Input, h Hooks, instruction string, n int) string {
	step := Step{Kind: StepTool, Tool: call.Name, CallID: call.ID, Arguments: call.Arguments}
	tool, ok := sc.Tool(call.Name)
	if !ok {
		names := make([]string, len(sc.Tools))
		for i, t := range sc.Tools {
			names[i] = t.Name
		}
		step.Error = fmt.Sprintf("no tool named %q", call.Name)
		step.Result = fmt.Sprintf("error: there is no tool named %q; available tools: %s", call.Name, strings.Join(names, ", "))
		tr.add(step)
		return step.Result
	}
	args, err := callArgs(call)
	if err == nil {
		err = tool.Check(args)
	}
	if err != nil {
		step.Error = err.Error()
		step.Result = fmt.Sprintf("error: invalid arguments for %s: %v", call.Name, err)
		step.Sink = tool.Sink
		tr.add(step)
		return step.Result
	}
	if tool.Sink {
		step.Sink = true
		step.Result = tool.Output(args)
		i := tr.add(step)
		tr.SinkCalls = append(tr.SinkCalls, SinkCall{Step: i, Tool: call.Name, Arguments: args})
		return step.Result
	}
	result := tool.Output(args)
	if tainted, ok := in.Taint[call.Name]; ok && (call.Name != sc.TaintPoint || sc.TaintCall == 0 || n == sc.TaintCall) {
		result, step.Tainted = sc.place(result, tainted)
	} else if call.Name == sc.TaintPoint && sc.TaintMarker != "" {
		result = strings.ReplaceAll(result, sc.TaintMarker, sc.TaintClean)
	}
	payload, attacked := in.Taint[sc.TaintPoint]
	for _, sp := range sc.TaintAlso {
		if sp.Tool != call.Name || !strings.Contains(result, sp.Marker) {
			continue
		}
		if attacked {
			result = strings.ReplaceAll(result, sp.Marker, payload)
			step.Tainted = true
		} else {
			result = strings.ReplaceAll(result, sp.Marker, sp.Clean)
		}
	}
	if b := h.Screen(result); b != nil {
		b.Point = "tool_result"
		step.Blocked = true
		step.Result = Withheld(b.Detector, "tool result")
		b.Step = tr.add(step)
		if tr.Blocked == nil {
			tr.Blocked = b
		}
		return step.Result
	}
	if h.ToolResult != nil {
		result = h.ToolResult.Apply(result, instruction)
	}
	step.Result = result
	if step.Tainted {
		tr.TaintDelivered = true
	}
	tr.add(step)
	return result
}

// place puts the crafted text in a taint point's output, as the
// scenario's taint mode says, and says whether it did. An insert's marker
// is a place in the tool's data: an output that does not show that place
// (a source answering by argument, as an imported benchmark's tool does)
// carries no payload, as the benchmark's tool would not.
func (s *Scenario) place(output, tainted string) (string, bool) {
	switch s.TaintMode {
	case TaintInsert:
		i := strings.Index(output, s.TaintMarker)
		if i < 0 {
			return output, false
		}
		// The first marker takes the payload; any other is what it is in
		// a clean run.
		rest := strings.ReplaceAll(output[i+len(s.TaintMarker):], s.TaintMarker, s.TaintClean)
		return output[:i] + tainted + rest, true
	case TaintAppend:
		if output == "" {
			return tainted, true
		}
		return output + "\n\n" + tainted, true
	}
	return tainted, true
}

// callArgs decodes a call's arguments; the empty object, which models send
// for a tool without parameters, is read without the JSON decoder.
func callArgs(call target.ToolCall) (map[string]any, error) {
	if call.Arguments == "{}" {
		return map[string]any{}, nil
	}
	return call.Args()
}

// Screen runs the detectors on text: the first that flags it gives the
// Block (its Point and Step for the caller to fill), nil when none does.
// pikit's loop and every driver of a user's agent screen text with it.
func (h Hooks) Screen(text string) *Block {
	for _, d := range h.Detectors {
		if r := d.Detect(text); r.Flagged {
			return &Block{Detector: d.Name, Reason: r.Reason, Score: r.Score}
		}
	}
	return nil
}

// Withheld is what the model is given instead of text a detector flagged:
// what names the text ("tool result").
func Withheld(detector, what string) string {
	return fmt.Sprintf("[content withheld: the %s detector flagged this %s as a possible prompt injection]", detector, what)
}

// MarshalArgs encodes tool arguments the way models send them, for tests
// and scripted targets.
func MarshalArgs(args map[string]any) string {
	b, err := json.Marshal(args)
	if err != nil {
		return "{}"
	}
	return string(b)
}
