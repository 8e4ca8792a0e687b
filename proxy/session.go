package proxy

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/target"
)

// maxSteps bounds the steps a session records: a runaway agent cannot grow
// a trace without end.
const maxSteps = 4096

// StepProxy is the kind of the step a proxied agent's trace ends with when
// the proxy has something to say about the run beyond its exchange: the
// taint rules that tainted nothing, and why. Readers that know only
// agent's kinds skip it; reports show its text.
const StepProxy = "proxy"

// Session is one agent run: one cell. It rewrites the tool results of the
// requests that pass and records the answers, building the cell's trace.
// Its methods are safe for concurrent use (an agent may send requests in
// parallel).
type Session struct {
	ID    string
	drive matrix.Drive
	rules Rules
	up    upstream
	// budget admits the model requests the session forwards: the cell's
	// share of the run's budget, when its target is one (see
	// matrix.Drive.Target); nil for none.
	budget target.Budget

	mu       sync.Mutex
	tr       agent.Trace
	given    map[string]string          // call id → the text the model was given
	calls    map[string]target.ToolCall // call id → the call, from answers
	sinks    map[string]int             // sink call id → its step
	hits     []int                      // per taint rule: the calls it matched
	user     bool                       // the user message is recorded
	system   bool                       // the system prompt is recorded
	requests int                        // requests that reached the session
	passed   int                        // requests passed through unread
	apis     map[string]int             // requests read, by API
	errs     []string
	// lastFail says what became of the last request that failed, as the
	// end of a sentence: "was refused: 413 body over 32 MiB".
	lastFail string
	ended    chan struct{}
	endOnce  sync.Once
	idle     *time.Timer
	idleFor  time.Duration

	inFlight int // requests being served: the session is not idle
}

func newSession(id string, d matrix.Drive, rules Rules, up upstream) *Session {
	budget, _ := d.Target.(target.Budget)
	return &Session{
		ID: id, drive: d, rules: rules, up: up, budget: budget,
		tr:    agent.Trace{Agent: d.Cell.Agent},
		given: map[string]string{}, calls: map[string]target.ToolCall{}, sinks: map[string]int{},
		hits: make([]int, len(rules.Taint)), ended: make(chan struct{}),
	}
}

// end closes the session; later requests are refused.
func (s *Session) end() {
	s.endOnce.Do(func() {
		close(s.ended)
		s.mu.Lock()
		if s.idle != nil {
			s.idle.Stop()
		}
		s.mu.Unlock()
	})
}

// Ended is closed when the session ends.
func (s *Session) Ended() <-chan struct{} { return s.ended }

// Trace returns what the session recorded so far. Its metadata
// ("proxy") counts the APIs the agent spoke and the requests passed
// through unread, and names the taint rules that tainted nothing
// ("unmatched_rules"), which a closing StepProxy step says too.
func (s *Session) Trace() agent.Trace {
	s.mu.Lock()
	defer s.mu.Unlock()
	tr := s.tr
	tr.Steps = append([]agent.Step(nil), s.tr.Steps...)
	tr.SinkCalls = append([]agent.SinkCall(nil), s.tr.SinkCalls...)
	// What the result's metadata says of the exchange: the APIs the agent
	// spoke (requests each) and what passed through unread.
	apis := make(map[string]any, len(s.apis))
	for k, n := range s.apis {
		apis[k] = n
	}
	// The taint rules that tainted nothing, and why, in the metadata and
	// in a closing step: a cell the payload never reached says why.
	px := map[string]any{"apis": apis, "passed_through": s.passed}
	if um := s.unmatched(); len(um) > 0 {
		px["unmatched_rules"] = um
		note := "taint rules that tainted no tool result: " + strings.Join(um, "; ")
		switch {
		case s.drive.Benign:
			note = "a baseline run, with no payload to deliver; " + note
		case !tr.TaintDelivered:
			note = "the payload was never delivered; " + note
		}
		tr.Steps = append(tr.Steps, agent.Step{Index: len(tr.Steps), Kind: StepProxy, Text: note})
	}
	tr.Meta = map[string]any{"proxy": px}
	return tr
}

// unmatched describes the taint rules that tainted nothing: they matched
// no call, or fewer calls than their nth.
func (s *Session) unmatched() []string {
	var out []string
	for i := range s.rules.Taint {
		r := &s.rules.Taint[i]
		name := fmt.Sprintf("proxy.taint[%d]", i)
		if s.rules.dflt {
			name = "the default rule"
		}
		switch {
		case s.hits[i] == 0:
			out = append(out, fmt.Sprintf("%s (%s) matched no tool call", name, r))
		case r.Nth > s.hits[i]:
			calls := "calls"
			if s.hits[i] == 1 {
				calls = "call"
			}
			out = append(out, fmt.Sprintf("%s (%s) matched %d tool %s, fewer than its nth", name, r, s.hits[i], calls))
		}
	}
	return out
}

// Passed returns how many requests went through unread (formats the
// proxy does not read, and bodies that were not JSON).
func (s *Session) Passed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.passed
}

// Past maxSteps only sink steps are kept (up to as many again): the
// evidence the judge needs most.
func (s *Session) add(st agent.Step) int {
	if n := len(s.tr.Steps); n >= 2*maxSteps || (n >= maxSteps && !st.Sink) {
		return -1
	}
	st.Index = len(s.tr.Steps)
	st.At = time.Now()
	s.tr.Steps = append(s.tr.Steps, st)
	return st.Index
}

// rewrite reads a request of format f and rewrites its tool results. It
// returns the body to send, in pieces to send in turn (body itself when
// nothing changed; otherwise body with only the values it rewrote
// changed, see rawjson.go), and what it read.
func (s *Session) rewrite(f format, body []byte, model string) ([][]byte, request, error) {
	m, err := parseJSON(body)
	if err != nil {
		return [][]byte{body}, request{}, fmt.Errorf("%s request body is not a JSON object: %w", f.name(), err)
	}
	req := f.parseRequest(m)
	changed := false
	if model != "" && req.model != model {
		m.set("model", encode(model))
		changed = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.apis == nil {
		s.apis = map[string]int{}
	}
	s.apis[f.name()]++
	if !s.system && req.system != "" {
		s.system = true
		s.tr.System = req.system
	}
	if !s.user && req.user != "" {
		s.user = true
		s.add(agent.Step{Kind: agent.StepUser, Text: req.user})
	}
	instruction := s.drive.Instruction
	if instruction == "" {
		instruction = req.user
	}
	for _, r := range req.results {
		text, seen := s.given[r.callID]
		if !seen {
			call, ok := req.calls[r.callID]
			if !ok {
				call = s.calls[r.callID]
			}
			if r.name == "" {
				r.name = call.Name
			}
			text = s.decide(r, call, instruction)
			if len(s.given) < 1<<16 {
				s.given[r.callID] = text
			}
		}
		if text != r.text {
			r.replace(text)
			changed = true
		}
	}
	if !changed {
		return [][]byte{body}, req, nil
	}
	return m.body.pieces(), req, nil
}

// decide works out what the model is given for a tool result it has not
// seen: tainted by the first rule that matches the call (when that rule's
// nth call it is), screened by the cell's detectors, hardened by its
// defense.
func (s *Session) decide(r toolResult, call target.ToolCall, instruction string) string {
	step := agent.Step{Kind: agent.StepTool, Tool: r.name, CallID: r.callID, Arguments: call.Arguments}
	if s.rules.IsSink(r.name) {
		// The agent ran its own sink; the attempt was recorded when the
		// model asked for it, and what came of it is recorded now.
		s.sinkResult(r)
		return r.text
	}
	out := r.text
	// A benign cell matches its rules too, tainting nothing: the rules
	// that would not have tainted anything are named all the same.
	args, _ := call.Args()
	for i := range s.rules.Taint {
		rule := &s.rules.Taint[i]
		if !rule.matches(r.name, args) {
			continue
		}
		s.hits[i]++
		if !s.drive.Benign && (rule.Nth == 0 || s.hits[i] == rule.Nth) {
			out = s.taint(rule, r.text)
			step.Tainted = true
		}
		break
	}
	if b := s.drive.Hooks.Screen(out); b != nil {
		step.Blocked = true
		step.Result = agent.Withheld(b.Detector, "tool result")
		b.Point, b.Step = "tool_result", s.add(step)
		if s.tr.Blocked == nil {
			s.tr.Blocked = b
		}
		return step.Result
	}
	if h := s.drive.Hooks.ToolResult; h != nil {
		out = h.Apply(out, instruction)
	}
	step.Result = out
	if step.Tainted {
		s.tr.TaintDelivered = true
	}
	s.add(step)
	return out
}

// taint places the cell's crafted text in a tool's real result.
func (s *Session) taint(rule *Rule, result string) string {
	d := s.drive.Delivery
	glue := func(a, b string) string {
		if a == "" {
			return b
		}
		if b == "" {
			return a
		}
		return a + "\n\n" + b
	}
	switch rule.Mode {
	case ModePrepend:
		return glue(d, result)
	case ModeReplace:
		return d
	case ModeInsert:
		// On a line of its own after the first marker, which stays.
		if i := strings.Index(result, rule.Marker); i >= 0 {
			end := i + len(rule.Marker)
			rest := result[end:]
			if rest != "" && !strings.HasPrefix(rest, "\n") && !strings.HasPrefix(rest, "\r\n") {
				rest = "\n" + rest
			}
			return result[:end] + "\n" + d + rest
		}
	case ModeCarrier:
		if s.drive.Channel != nil {
			if out, err := s.drive.Channel.Taint(result, s.drive.Payload); err == nil {
				return out
			}
		}
	}
	return glue(result, d)
}

// record adds a model answer to the trace: its text, its tool calls, and
// the sink calls among them. An answer the proxy forwarded is spent
// against the run's budgets: its tokens, and its request unless the
// session's budget admitted it (and counted it then); one of the cell's
// own Target is not, as that target counts its requests itself.
func (s *Session) record(r reply, forwarded bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tr.ModelCalls++
	s.tr.Usage = s.tr.Usage.Add(r.usage)
	if forwarded && s.drive.Spend != nil {
		requests := int64(1)
		if s.budget != nil {
			requests = 0
		}
		s.drive.Spend(requests, int64(r.usage.PromptTokens+r.usage.CompletionTokens))
	}
	step := agent.Step{Kind: agent.StepModel, Text: r.text, ToolCalls: r.calls}
	if r.err != "" {
		step.Error = "model API error: " + r.err
		s.errs = append(s.errs, r.err)
	}
	s.add(step)
	s.tr.FinalText = r.text
	for _, c := range r.calls {
		if len(s.calls) < 1<<16 {
			s.calls[c.ID] = c
		}
		if !s.rules.IsSink(c.Name) {
			continue
		}
		st := agent.Step{Kind: agent.StepTool, Tool: c.Name, CallID: c.ID, Arguments: c.Arguments, Sink: true,
			Result: "(a sink call: pikit proxy recorded it; the agent runs its own tools)"}
		args, err := c.Args()
		if err != nil {
			st.Error = err.Error()
			s.add(st)
			continue
		}
		i := s.add(st)
		if i >= 0 && len(s.sinks) < 1<<16 {
			s.sinks[c.ID] = i
		}
		if len(s.tr.SinkCalls) < maxSteps {
			s.tr.SinkCalls = append(s.tr.SinkCalls, agent.SinkCall{Step: i, Tool: c.Name, Arguments: args})
		}
	}
}

// sinkResult records what the agent's own sink returned for a call, in
// the call's step, and a policy block it reports (see PolicyBlock): the
// call is then no sink attempt but a blocked one, as a runtime agent's
// policy_block event is.
func (s *Session) sinkResult(r toolResult) {
	i, ok := s.sinks[r.callID]
	if !ok {
		// A call the proxy did not see asked for (the agent's history
		// from before the session, an answer it could not read): no
		// attempt was recorded, so there is none to complete.
		return
	}
	st := &s.tr.Steps[i]
	st.Result = r.text
	reason, policy, blocked := PolicyBlock(r.text)
	if !blocked {
		return
	}
	st.Blocked = true
	s.tr.SinkCalls = slices.DeleteFunc(s.tr.SinkCalls, func(c agent.SinkCall) bool { return c.Step == i })
	if s.tr.Blocked == nil {
		s.tr.Blocked = &agent.Block{Point: "tool_call", Detector: policy, Reason: reason, Step: i}
	}
}

// fail records an error of the exchange (the upstream unreachable, a
// stream broken off).
func (s *Session) fail(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed(msg, "failed: "+msg)
	s.add(agent.Step{Kind: agent.StepModel, Error: msg})
}

// refuse records a request the proxy refused with status.
func (s *Session) refuse(status int, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	text := fmt.Sprintf("%d %s", status, msg)
	s.failed(text, "was refused: "+text)
	s.add(agent.Step{Kind: agent.StepModel, Error: "the proxy refused the request: " + text})
}

// unread records a model request whose body the proxy could not read and
// passed upstream as it came; status is the upstream's answer.
func (s *Session) unread(why string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastFail = fmt.Sprintf("was not read (%s) and went upstream as it came; the upstream answered %d %s", why, status, http.StatusText(status))
}

func (s *Session) failed(err, clause string) {
	if len(s.errs) < maxSteps {
		s.errs = append(s.errs, err)
	}
	s.lastFail = clause
}

// unanswered says what became of the requests of a session that had no
// model answer: "" when none of them failed.
func (s *Session) unanswered() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.lastFail == "":
		return ""
	case s.requests == 1:
		return "the agent's only request " + s.lastFail
	}
	return fmt.Sprintf("none of the agent's %d requests got a model answer; the last %s", s.requests, s.lastFail)
}

// Errors returns the errors the session met.
func (s *Session) Errors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.errs...)
}
