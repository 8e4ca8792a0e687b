package target

import (
	"context"
	"fmt"
	"sync"

	"github.com/pikit-go/pikit/method"
	"github.com/pikit-go/pikit/target/toolargs"
)

// MockPrefix starts every text the echo mock returns.
const MockPrefix = "[mock] "

func init() {
	Register(Provider{
		Name:        "mock",
		Description: "offline test fixtures, no key or network: mock (an echo that never follows an injection), mock:obedient (follows any instruction it reads), mock:attacker (the adaptive attack's attacker model); the options are the echo's",
		Options: []method.Option{
			{Name: "prefix", Help: "the text the echo starts each answer with", Default: MockPrefix},
			{Name: "script", Help: `the answers to give in turn instead of echoing: texts, or { tool = "...", arguments = {...} } calls`, Default: []string{}},
		},
		Open: func(model string, opts Options) (Target, error) {
			return openMock(model, opts)
		},
	})
}

// Echo is the offline test fixture behind "mock". It never follows an
// injection, so it cannot show whether an attack works; it shows that the
// pipeline delivered what it should. When tools are offered and none has
// been called yet, it calls the first one, giving each required parameter
// a placeholder value chosen from the tool's schema alone (its name and
// type, as mock:obedient fills a parameter it finds no value for), so the
// call passes the tool's checks whatever the conversation says; otherwise
// it answers with MockPrefix followed by the latest tool result, or the
// latest user message when there is none. The same request always gets
// the same response.
type Echo struct{}

var _ Target = Echo{}

// Chat implements Target.
func (Echo) Chat(ctx context.Context, req Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	called := false
	for _, m := range req.Messages {
		if m.Role == RoleTool {
			called = true
			break
		}
	}
	if len(req.Tools) > 0 && !called {
		return Response{
			ToolCalls:  []ToolCall{{ID: fmt.Sprintf("mock-%d", len(req.Messages)), Name: req.Tools[0].Name, Arguments: toolargs.FromSchema(req.Tools[0].Parameters)}},
			StopReason: "tool_use",
		}, nil
	}
	seen := ""
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role == RoleTool || m.Role == RoleUser {
			seen = m.Content
			break
		}
	}
	return Response{Text: MockPrefix + seen, StopReason: "end"}, nil
}

// Scripted returns given responses in turn, for tests that drive an exact
// tool-call sequence. Once the script is used up it answers with a final
// text saying so. It is safe for concurrent use, though concurrent callers
// share one script.
type Scripted struct {
	mu        sync.Mutex
	responses []Response
	requests  []Request
}

var _ Target = (*Scripted)(nil)

// NewScripted returns a target that replays responses.
func NewScripted(responses ...Response) *Scripted {
	return &Scripted{responses: responses}
}

// Chat implements Target.
func (s *Scripted) Chat(ctx context.Context, req Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	if len(s.responses) == 0 {
		return Response{Text: MockPrefix + "(script exhausted)", StopReason: "end"}, nil
	}
	r := s.responses[0]
	s.responses = s.responses[1:]
	return r, nil
}

// Requests returns the requests received so far.
func (s *Scripted) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}
