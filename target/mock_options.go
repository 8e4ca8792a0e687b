package target

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// mockModels are the offline models that take no options, added by the
// init functions of the packages that define them (target/obedient's
// obedient model, the adaptive package's attacker).
var mockModels = map[string]func() Target{}

// RegisterMockModel adds an offline model, opened as "mock:NAME"; call it
// from an init function. It panics on a name already taken.
func RegisterMockModel(name string, open func() Target) {
	if _, dup := mockModels[name]; dup || name == "" || name == "echo" {
		panic("target: mock model " + name + " registered twice")
	}
	mockModels[name] = open
}

// MockModels returns the names of the offline models, sorted.
func MockModels() []string {
	names := append([]string{"echo"}, slices.Collect(maps.Keys(mockModels))...)
	slices.Sort(names)
	return names
}

// openMock opens a mock model with the Python pikit's mock options:
// prefix, the text the echo starts its answers with, and script, the
// answers to give in turn (Register refused any other).
func openMock(model string, opts Options) (Target, error) {
	prefix, hasPrefix := opts["prefix"]
	script, hasScript := opts["script"]
	switch model {
	case "", "echo":
	default:
		open, ok := mockModels[model]
		if !ok {
			return nil, fmt.Errorf("unknown mock model %q; known: %s", model, strings.Join(MockModels(), ", "))
		}
		if hasPrefix || hasScript {
			return nil, fmt.Errorf("mock:%s takes no options; prefix and script are the echo mock's (mock)", model)
		}
		return open(), nil
	}
	if hasScript {
		if hasPrefix {
			return nil, fmt.Errorf("mock: give prefix or script, not both (a script says every answer)")
		}
		return parseScript(script)
	}
	if !hasPrefix {
		return Echo{}, nil
	}
	p, ok := prefix.(string)
	if !ok {
		return nil, fmt.Errorf("mock option prefix: want a string, got %T", prefix)
	}
	return prefixEcho{prefix: p}, nil
}

// prefixEcho is the echo mock with a prefix of the config's choosing.
type prefixEcho struct{ prefix string }

func (p prefixEcho) Chat(ctx context.Context, req Request) (Response, error) {
	resp, err := Echo{}.Chat(ctx, req)
	if t, ok := strings.CutPrefix(resp.Text, MockPrefix); ok {
		resp.Text = p.prefix + t
	}
	return resp, err
}

// scripted answers the nth turn of a conversation (its nth model call,
// counted from the assistant turns in the request) with the nth answer of
// its script, and the last answer after that. Being a function of the
// request alone, one script serves every cell at once.
type scripted struct{ answers []Response }

func (s scripted) Chat(ctx context.Context, req Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	turn := 0
	for _, m := range req.Messages {
		if m.Role == RoleAssistant {
			turn++
		}
	}
	r := s.answers[min(turn, len(s.answers)-1)]
	r.ToolCalls = slices.Clone(r.ToolCalls)
	for i := range r.ToolCalls {
		r.ToolCalls[i].ID = fmt.Sprintf("script-%d-%d", turn, i)
	}
	return r, nil
}

func parseScript(v any) (Target, error) {
	items, ok := v.([]any)
	if !ok || len(items) == 0 {
		return nil, fmt.Errorf("mock option script: want a non-empty list of answers (texts, or { tool = \"...\", arguments = {...} }), got %T", v)
	}
	var s scripted
	for i, it := range items {
		switch x := it.(type) {
		case string:
			s.answers = append(s.answers, Response{Text: x, StopReason: "end"})
		case map[string]any:
			tool, _ := x["tool"].(string)
			text, _ := x["text"].(string)
			for k := range x {
				if k != "tool" && k != "arguments" && k != "text" {
					return nil, fmt.Errorf("mock option script[%d]: unknown key %q; an answer has text, or tool and arguments", i, k)
				}
			}
			if tool == "" {
				if text == "" {
					return nil, fmt.Errorf("mock option script[%d]: want text or a tool to call", i)
				}
				s.answers = append(s.answers, Response{Text: text, StopReason: "end"})
				continue
			}
			args := "{}"
			if a, ok := x["arguments"]; ok {
				m, isMap := a.(map[string]any)
				if !isMap {
					return nil, fmt.Errorf("mock option script[%d].arguments: want a table, got %T", i, a)
				}
				b, err := json.Marshal(m)
				if err != nil {
					return nil, fmt.Errorf("mock option script[%d].arguments: %w", i, err)
				}
				args = string(b)
			}
			s.answers = append(s.answers, Response{Text: text, ToolCalls: []ToolCall{{Name: tool, Arguments: args}}, StopReason: "tool_use"})
		default:
			return nil, fmt.Errorf("mock option script[%d]: want a text or a table, got %T", i, it)
		}
	}
	return s, nil
}
