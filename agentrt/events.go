package agentrt

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Event types of the fixture protocol's trace. "final" is ours: an agent
// that prints more than its answer on stdout gives the answer with it.
const (
	EventToolResult        = "tool_result"
	EventSinkCall          = "sink_call"
	EventPolicyBlock       = "policy_block"
	EventApprovalRequested = "approval_requested"
	EventToolError         = "tool_error"
	EventFinal             = "final"
)

var knownEvents = []string{EventToolResult, EventSinkCall, EventPolicyBlock, EventApprovalRequested, EventToolError, EventFinal}

// Event is one line of an agent's trace file, decoded. Text fields that
// the agent wrote as other JSON values (an object as a tool's result) hold
// their JSON text.
type Event struct {
	Line int    // 1-based line in the trace file
	Type string // one of the Event* constants
	Tool string // tool (or name)
	// CallID is call_id (or id), when the agent gives one.
	CallID string
	// Arguments is the call's arguments as JSON text (arguments or args:
	// an object, or a string holding one); Args is that object decoded,
	// nil when it is not one.
	Arguments string
	Args      map[string]any
	Result    string // content (the Python pikit's fixtures), else result, output
	Fixture   string // the fixture key the result came from
	// Tainted is the event's tainted flag: the fixture says its result
	// carries what pikit handed over (counted only in a cell that handed
	// a payload over).
	Tainted bool
	Reason  string
	Text    string
	Error   string // error (tool_error)
	Policy  string // policy (or detector): who blocked (policy_block)
}

// Limits bound what pikit reads of a trace file. The file is written by
// the agent under test, whose tools return attacker-controlled text: it
// is parsed as data, never executed, and no path in it is opened.
type Limits struct {
	MaxLine   int   // bytes in one line
	MaxEvents int   // lines that hold an event
	MaxBytes  int64 // bytes in the whole file
}

// DefaultLimits are the bounds the driver reads trace files with.
var DefaultLimits = Limits{MaxLine: 1 << 20, MaxEvents: 10_000, MaxBytes: 32 << 20}

// maxUnknownNames bounds how many distinct unknown event types are
// counted by name; the rest count under "…".
const maxUnknownNames = 16

// Events is a parsed trace file.
type Events struct {
	List []Event
	// Unknown counts the lines whose type pikit does not know, by type:
	// they are ignored, so a newer agent's events do not fail a run.
	Unknown map[string]int
}

// UnknownTotal returns how many lines were ignored for their type.
func (e *Events) UnknownTotal() int {
	n := 0
	for _, c := range e.Unknown {
		n += c
	}
	return n
}

// unknownSummary describes the ignored types ("tool_call×2, usage×1").
func (e *Events) unknownSummary() string {
	names := make([]string, 0, len(e.Unknown))
	for n := range e.Unknown {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%q×%d", n, e.Unknown[n])
	}
	return strings.Join(parts, ", ")
}

// TraceError is a problem in a trace file, at a line when known.
type TraceError struct {
	File string
	Line int
	Msg  string
}

func (e *TraceError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("trace %s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("trace %s: %s", e.File, e.Msg)
}

// rawEvent is a trace line as JSON. Every field is kept raw so that a
// value of an unexpected type is named in the error, not silently lost.
type rawEvent struct {
	Type      json.RawMessage `json:"type"`
	Event     json.RawMessage `json:"event"`
	Tool      json.RawMessage `json:"tool"`
	Name      json.RawMessage `json:"name"`
	CallID    json.RawMessage `json:"call_id"`
	ID        json.RawMessage `json:"id"`
	Arguments json.RawMessage `json:"arguments"`
	Args      json.RawMessage `json:"args"`
	Content   json.RawMessage `json:"content"`
	Result    json.RawMessage `json:"result"`
	Output    json.RawMessage `json:"output"`
	Fixture   json.RawMessage `json:"fixture"`
	Reason    json.RawMessage `json:"reason"`
	Text      json.RawMessage `json:"text"`
	Error     json.RawMessage `json:"error"`
	Policy    json.RawMessage `json:"policy"`
	Detector  json.RawMessage `json:"detector"`
	Tainted   json.RawMessage `json:"tainted"`
}

// ParseEvents reads a trace: one JSON object per line, blank lines
// skipped. name is the file named in errors. A line that is not a JSON
// object, has no string type (or event), or is over lim.MaxLine, is an
// error naming the file and line, as is a file over lim.MaxBytes or with
// more than lim.MaxEvents events; a line of an unknown type is counted
// and ignored.
func ParseEvents(r io.Reader, name string, lim Limits) (*Events, error) {
	if lim == (Limits{}) {
		lim = DefaultLimits
	}
	lr := &io.LimitedReader{R: r, N: lim.MaxBytes + 1}
	br := bufio.NewReaderSize(lr, 64<<10)
	ev := &Events{}
	n := 0
	for line := 1; ; line++ {
		text, long, err := readLine(br, lim.MaxLine)
		if lr.N <= 0 {
			return ev, &TraceError{File: name, Msg: fmt.Sprintf("over %d bytes; pikit reads at most that much of a trace", lim.MaxBytes)}
		}
		if long {
			return ev, &TraceError{File: name, Line: line, Msg: fmt.Sprintf("line over %d bytes", lim.MaxLine)}
		}
		if len(bytes.TrimSpace(text)) > 0 {
			e, known, perr := parseLine(text)
			if perr != nil {
				return ev, &TraceError{File: name, Line: line, Msg: perr.Error()}
			}
			if n++; n > lim.MaxEvents {
				return ev, &TraceError{File: name, Line: line, Msg: fmt.Sprintf("more than %d events", lim.MaxEvents)}
			}
			if known {
				e.Line = line
				ev.List = append(ev.List, e)
			} else {
				ev.countUnknown(e.Type)
			}
		}
		if err == io.EOF {
			return ev, nil
		}
		if err != nil {
			return ev, &TraceError{File: name, Line: line, Msg: err.Error()}
		}
	}
}

func (e *Events) countUnknown(typ string) {
	if e.Unknown == nil {
		e.Unknown = map[string]int{}
	}
	if _, ok := e.Unknown[typ]; !ok && len(e.Unknown) >= maxUnknownNames {
		typ = "…"
	}
	e.Unknown[typ]++
}

// readLine returns the next line without its line ending. A line over
// max bytes is consumed without being held, and reported as long.
func readLine(br *bufio.Reader, max int) (line []byte, long bool, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			if len(buf)+len(chunk) > max+2 { // room for "\r\n"
				long, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if !long {
			buf = bytes.TrimSuffix(bytes.TrimSuffix(buf, []byte("\n")), []byte("\r"))
			long = len(buf) > max
		}
		if long {
			return nil, true, err
		}
		return buf, false, err
	}
}

// parseLine decodes one event; known is false for an unknown type.
func parseLine(line []byte) (e Event, known bool, err error) {
	line = bytes.TrimSpace(line)
	if line[0] != '{' {
		return e, false, errors.New("want a JSON object ({\"type\": ...}), one per line")
	}
	var raw rawEvent
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&raw); err != nil {
		return e, false, fmt.Errorf("not valid JSON: %v", err)
	}
	if dec.More() {
		return e, false, errors.New("more than one JSON value on the line")
	}
	str := func(field string, vs ...json.RawMessage) (string, error) {
		for _, v := range vs {
			if s, ok, err := stringField(v); err != nil {
				return "", fmt.Errorf("%s: %v", field, err)
			} else if ok {
				return s, nil
			}
		}
		return "", nil
	}
	var typ string
	for _, v := range []json.RawMessage{raw.Type, raw.Event} {
		if typ == "" && !isAbsent(v) && json.Unmarshal(v, &typ) != nil {
			return e, false, fmt.Errorf(`"type" must be a string, got %s`, v)
		}
	}
	if typ == "" {
		return e, false, errors.New(`no "type" (or "event"); want one of ` + strings.Join(knownEvents, ", "))
	}
	e.Type = typ
	known = false
	for _, k := range knownEvents {
		if typ == k {
			known = true
		}
	}
	if !known {
		return e, false, nil
	}
	for _, f := range []struct {
		dst  *string
		name string
		vs   []json.RawMessage
	}{
		{&e.Tool, "tool", []json.RawMessage{raw.Tool, raw.Name}},
		{&e.CallID, "call_id", []json.RawMessage{raw.CallID, raw.ID}},
		{&e.Result, "content", []json.RawMessage{raw.Content, raw.Result, raw.Output}},
		{&e.Fixture, "fixture", []json.RawMessage{raw.Fixture}},
		{&e.Reason, "reason", []json.RawMessage{raw.Reason}},
		{&e.Text, "text", []json.RawMessage{raw.Text}},
		{&e.Error, "error", []json.RawMessage{raw.Error}},
		{&e.Policy, "policy", []json.RawMessage{raw.Policy, raw.Detector}},
	} {
		if *f.dst, err = str(f.name, f.vs...); err != nil {
			return e, true, err
		}
	}
	if !isAbsent(raw.Tainted) && json.Unmarshal(raw.Tainted, &e.Tainted) != nil {
		return e, true, fmt.Errorf(`"tainted" must be true or false, got %s`, raw.Tainted)
	}
	args := raw.Arguments
	if isAbsent(args) {
		args = raw.Args
	}
	e.Arguments, e.Args = arguments(args)
	return e, true, nil
}

// isAbsent reports whether a field was left out or null.
func isAbsent(v json.RawMessage) bool {
	return len(v) == 0 || string(v) == "null"
}

// stringField reads a text field: a string as it is, any other JSON value
// as its JSON text; ok is false when the field is absent or null.
func stringField(v json.RawMessage) (s string, ok bool, err error) {
	if isAbsent(v) {
		return "", false, nil
	}
	if v[0] == '"' {
		if err := json.Unmarshal(v, &s); err != nil {
			return "", false, err
		}
		return s, true, nil
	}
	return string(v), true, nil
}

// arguments reads a call's arguments: an object, or a string holding one
// (as models send them). Anything else is kept as text with no object.
func arguments(v json.RawMessage) (string, map[string]any) {
	if isAbsent(v) {
		return "", nil
	}
	text := string(v)
	if v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return text, nil
		}
		text = s
	}
	var m map[string]any
	if json.Unmarshal([]byte(text), &m) != nil {
		return text, nil
	}
	return text, m
}
