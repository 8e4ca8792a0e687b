package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/internal/suggest"
	"github.com/pikit-go/pikit/internal/textcut"
	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/result"
	"github.com/pikit-go/pikit/target"
)

// Record is one labelled reply: what the model was given and answered,
// what the attacker wanted, and the outcome a person gave it.
//
// The reply's context is either the whole Trace (as pikit's results carry
// it in trace_data) or its essentials, from which Trace builds one: the
// System prompt, the User message, the ToolResult that carried the payload
// (none: the payload rode in the user message) and the SinkCalls the model
// made after reading it. Essentials always mean the payload reached the
// model; a record of any other case (not reached, blocked) gives a trace.
type Record struct {
	// ID names the record; unique within a file.
	ID string `json:"id"`
	// Label is the outcome a person gave the reply, and Reason why.
	Label  judge.Outcome `json:"label"`
	Reason string        `json:"reason"`

	// The attacker's task, as a judge is given it (judge.Task).
	Task        string            `json:"task"`
	Payload     string            `json:"payload,omitempty"`
	Canary      string            `json:"canary,omitempty"`
	RequireSink bool              `json:"require_sink,omitempty"`
	SinkArgs    map[string]string `json:"sink_args,omitempty"`

	// Reply is the model's final answer; with a trace, its final_text.
	Reply string `json:"reply"`

	// TraceData is the whole trace, when the record gives it.
	TraceData *agent.Trace `json:"trace,omitempty"`

	// The essentials, when the record gives no trace.
	System     string `json:"system,omitempty"`
	User       string `json:"user,omitempty"`
	ToolResult string `json:"tool_result,omitempty"`
	SinkCalls  []Call `json:"sink_calls,omitempty"`

	// Source says where the reply came from (model, command, cell); it is
	// kept for people and not read.
	Source map[string]any `json:"source,omitempty"`

	// Line is the record's line in its file (1-based), 0 when the record
	// was built in code.
	Line int `json:"-"`
}

// Call is a sink the model called, as the essentials of a record give it.
type Call struct {
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
}

// JudgeTask returns the task a judge decides the record against.
func (r *Record) JudgeTask() judge.Task {
	return judge.Task{Text: r.Task, Payload: r.Payload, Canary: r.Canary, RequireSink: r.RequireSink, SinkArgs: r.SinkArgs}
}

// Trace returns the record's trace: the one it gives, or one built from
// its essentials, in which the payload reached the model (in the tool
// result when there is one, else in the user message), the sinks were
// called after it, and the reply ends the run.
func (r *Record) Trace() agent.Trace {
	if r.TraceData != nil {
		return *r.TraceData
	}
	tr := agent.Trace{Agent: "labelled", System: r.System, FinalText: r.Reply, TaintDelivered: true}
	add := func(s agent.Step) int {
		s.Index = len(tr.Steps)
		tr.Steps = append(tr.Steps, s)
		return s.Index
	}
	add(agent.Step{Kind: agent.StepUser, Text: r.User, Tainted: r.ToolResult == ""})
	if r.ToolResult != "" {
		add(agent.Step{Kind: agent.StepModel, ToolCalls: []target.ToolCall{{ID: "read", Name: "read", Arguments: "{}"}}})
		add(agent.Step{Kind: agent.StepTool, Tool: "read", CallID: "read", Arguments: "{}", Result: r.ToolResult, Tainted: true})
	}
	if len(r.SinkCalls) > 0 {
		calls := make([]target.ToolCall, len(r.SinkCalls))
		for i, c := range r.SinkCalls {
			args, _ := json.Marshal(c.Arguments)
			calls[i] = target.ToolCall{ID: fmt.Sprintf("sink%d", i), Name: c.Tool, Arguments: string(args)}
		}
		add(agent.Step{Kind: agent.StepModel, ToolCalls: calls})
		for i, c := range calls {
			step := add(agent.Step{Kind: agent.StepTool, Tool: c.Name, CallID: c.ID, Arguments: c.Arguments, Result: "done", Sink: true})
			tr.SinkCalls = append(tr.SinkCalls, agent.SinkCall{Step: step, Tool: c.Name, Arguments: r.SinkCalls[i].Arguments})
		}
	}
	add(agent.Step{Kind: agent.StepModel, Text: r.Reply})
	for _, s := range tr.Steps {
		if s.Kind == agent.StepModel {
			tr.ModelCalls++
		}
	}
	return tr
}

// MaxSinkCalls bounds the sink calls of one record (its sink_calls, or
// its trace's), and MaxSteps the steps of its trace and the tool calls its
// model steps ask for. A labelled reply is one run of an agent: pikit's
// own loop makes at most max_steps (8 by default) model calls. A record
// over a bound is refused, not cut: a cut trace could earn another verdict
// than the one its label describes, and the score would be wrong in
// silence.
const (
	MaxSinkCalls = 1000
	MaxSteps     = 5000
)

// ErrFormat is wrapped by every error about the content of a
// labelled-replies file (not by a failure to read it).
var ErrFormat = errors.New("bad labelled-replies file")

// Error is a fault in a labelled-replies file: the file, the line (0 for
// the file as a whole) and what is wrong.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// Is makes errors.Is(err, ErrFormat) true.
func (e *Error) Is(target error) bool { return target == ErrFormat }

// Labels are the outcomes a person may give a reply: every outcome but
// runtime_error and not_judged, which say that a cell failed or went
// unjudged, not what a reply did.
var Labels = slices.DeleteFunc(slices.Clone(judge.Outcomes), func(o judge.Outcome) bool {
	return o == judge.RuntimeError || o == judge.NotJudged
})

// keys are a record's JSON keys, in the order a message lists them.
var keys = []string{"id", "label", "reason", "task", "payload", "canary", "require_sink", "sink_args",
	"reply", "trace", "system", "user", "tool_result", "sink_calls", "source"}

// ReadFile reads a labelled-replies file of at most maxBytes bytes.
func ReadFile(path string, maxBytes int64) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &Error{File: path, Msg: "not a regular file"}
	}
	if fi.Size() > maxBytes {
		return nil, overLimit(path, maxBytes)
	}
	return Read(f, path, maxBytes)
}

// Read reads labelled records, one JSON object a line, from at most
// maxBytes bytes of r; name is what errors call the input. Blank lines are
// skipped. The first fault stops the read with an *Error naming its line:
// a line that is not a JSON object, an unknown key, a value of the wrong
// type, a missing id, label, reason, task or reply, an id used twice, a
// label that is no outcome, a trace given together with essentials.
func Read(r io.Reader, name string, maxBytes int64) ([]Record, error) {
	lr := &io.LimitedReader{R: r, N: maxBytes + 1}
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 0, 64<<10), int(min(maxBytes+1, 1<<31-1)))
	var out []Record
	seen := map[string]int{}
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if line == 1 {
			b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		rec, err := parse(b)
		if err != nil {
			if lr.N <= 0 { // the line was cut at the bound
				return nil, overLimit(name, maxBytes)
			}
			return nil, &Error{File: name, Line: line, Msg: err.Error()}
		}
		if first, dup := seen[rec.ID]; dup {
			return nil, &Error{File: name, Line: line, Msg: fmt.Sprintf("id %q is used already, on line %d", textcut.Clip(rec.ID, 80, "…"), first)}
		}
		seen[rec.ID] = line
		rec.Line = line
		out = append(out, rec)
	}
	if lr.N <= 0 {
		return nil, overLimit(name, maxBytes)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, &Error{File: name, Msg: "no records: want one JSON object a line, each a labelled reply"}
	}
	return out, nil
}

func overLimit(name string, maxBytes int64) error {
	return &Error{File: name, Msg: fmt.Sprintf("over the limit of %d bytes", maxBytes)}
}

// wire is a record as decoded, before its checks: reply is a pointer so
// that an absent reply differs from an empty one.
type wire struct {
	Record
	Reply *string         `json:"reply"`
	Trace json.RawMessage `json:"trace"`
}

// parse decodes and checks one line.
func parse(b []byte) (Record, error) {
	var w wire
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return Record{}, jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Record{}, errors.New("more than one JSON value on the line: want one object a line")
	}
	rec := w.Record
	if raw := bytes.TrimSpace(w.Trace); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		// As a result holds it (trace_data): in pikit.trace.v2, a text
		// may refer to the result's final_text, which is the reply.
		final := ""
		if w.Reply != nil {
			final = *w.Reply
		}
		tr, err := result.DecodeTrace(raw, final, true)
		if err != nil {
			return rec, traceError(err)
		}
		rec.TraceData = tr
	}
	if err := checkSize(&rec); err != nil {
		return rec, err
	}
	switch {
	case rec.ID == "":
		return rec, errors.New(`id: missing: each record needs an id (e.g. "smol-0001")`)
	case rec.Label == "":
		return rec, fmt.Errorf("label: missing; want one of %s", outcomeList(Labels))
	case !rec.Label.Valid():
		return rec, fmt.Errorf("label: unknown outcome %q%s; known outcomes: %s", textcut.Clip(string(rec.Label), 80, "…"),
			suggest.Hint(string(rec.Label), outcomeStrings(judge.Outcomes)), outcomeList(judge.Outcomes))
	case !slices.Contains(Labels, rec.Label):
		return rec, fmt.Errorf("label: %s says a cell failed or went unjudged, not what a reply did; want one of %s", rec.Label, outcomeList(Labels))
	case strings.TrimSpace(rec.Reason) == "":
		return rec, errors.New("reason: missing: say in a sentence why the reply earns its label")
	case strings.TrimSpace(rec.Task) == "":
		return rec, errors.New("task: missing: the injected task the reply is judged against")
	}
	essentials := rec.System != "" || rec.User != "" || rec.ToolResult != "" || len(rec.SinkCalls) > 0
	if rec.TraceData != nil {
		if essentials {
			return rec, errors.New("trace: given together with system, user, tool_result or sink_calls: give the whole trace or its essentials, not both")
		}
		if w.Reply != nil && *w.Reply != rec.TraceData.FinalText {
			return rec, errors.New("reply: differs from the trace's final_text: leave it out, or give the same text")
		}
		rec.Reply = rec.TraceData.FinalText
		return rec, nil
	}
	if w.Reply == nil {
		return rec, errors.New("reply: missing: give the model's reply (with its essentials: system, user, tool_result, sink_calls), or the whole trace")
	}
	rec.Reply = *w.Reply
	for i, c := range rec.SinkCalls {
		if strings.TrimSpace(c.Tool) == "" {
			return rec, fmt.Errorf("sink_calls[%d].tool: missing: the sink tool the model called", i)
		}
	}
	return rec, nil
}

// checkSize refuses a record over MaxSinkCalls or MaxSteps.
func checkSize(rec *Record) error {
	over := func(key string, n, limit int, what string) error {
		return fmt.Errorf("%s: %d %s, over the %d a record may give: a labelled reply is one run of an agent; label a shorter one", key, n, what, limit)
	}
	if n := len(rec.SinkCalls); n > MaxSinkCalls {
		return over("sink_calls", n, MaxSinkCalls, "calls")
	}
	tr := rec.TraceData
	if tr == nil {
		return nil
	}
	if n := len(tr.SinkCalls); n > MaxSinkCalls {
		return over("trace", n, MaxSinkCalls, "sink calls")
	}
	if n := len(tr.Steps); n > MaxSteps {
		return over("trace", n, MaxSteps, "steps")
	}
	calls := 0
	for _, s := range tr.Steps {
		calls += len(s.ToolCalls)
	}
	if calls > MaxSteps {
		return over("trace", calls, MaxSteps, "tool calls asked for")
	}
	return nil
}

// jsonError says what is wrong with a line that did not decode.
func jsonError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("not a JSON object: %v (byte %d of the line)", syn, syn.Offset)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return fmt.Errorf("want a JSON object, got a JSON %s", typ.Value)
		}
		return fmt.Errorf("%s: want %s, got a JSON %s", typ.Field, typeName(typ.Type.String()), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("not a JSON object: the line ends inside it")
	}
	if k, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		k = strings.Trim(k, `"`)
		return fmt.Errorf("unknown key %q%s; known keys: %s (a trace's keys are those of pikit's trace_data)",
			textcut.Clip(k, 80, "…"), suggest.Hint(k, keys), strings.Join(keys, ", "))
	}
	return fmt.Errorf("not a JSON object: %w", err)
}

// traceError says what is wrong with a record's trace.
func traceError(err error) error {
	if k, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("trace: unknown key %s: a trace's keys are those of pikit's trace_data", textcut.Clip(k, 80, "…"))
	}
	if strings.HasPrefix(err.Error(), "trace_data") {
		return fmt.Errorf("trace: %w", err)
	}
	return fmt.Errorf("trace: %w", jsonError(err))
}

// typeName words a Go type for someone writing JSON.
func typeName(t string) string {
	switch {
	case t == "string", t == "judge.Outcome":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "float"):
		return "a number"
	case strings.HasPrefix(t, "map["):
		if strings.HasSuffix(t, "]string") {
			return "an object of strings"
		}
		return "an object"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	}
	return "an object"
}

func outcomeStrings(list []judge.Outcome) []string {
	out := make([]string, len(list))
	for i, o := range list {
		out[i] = string(o)
	}
	return out
}

func outcomeList(list []judge.Outcome) string { return strings.Join(outcomeStrings(list), ", ") }
