// Package target talks to the model under test. A Target takes a chat
// request (system prompt, message history, tool definitions) and returns the
// model's reply (text and tool calls). Open parses a spec such as "mock",
// "mock:obedient" or "openai:gpt-4o-mini" into a Target through the
// provider registered for its prefix.
package target

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pikit-go/pikit/method"
)

// Roles of chat messages.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one turn of a conversation. An assistant message may carry
// tool calls; a tool message carries the result of one call.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"` // tool messages: the call answered
	Name       string     `json:"name,omitempty"`         // tool messages: the tool's name
}

// ToolCall is a model's request to call a tool. Arguments is the JSON text
// the model produced, kept verbatim so malformed arguments can be recorded.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Args decodes the call's arguments as a JSON object.
func (c ToolCall) Args() (map[string]any, error) {
	if strings.TrimSpace(c.Arguments) == "" {
		return map[string]any{}, nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(c.Arguments), &m); err != nil {
		return nil, fmt.Errorf("tool call %s: arguments are not a JSON object: %w", c.Name, err)
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// Tool is a tool definition offered to the model. Parameters is a JSON
// Schema object.
type Tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

// Request is one call to a model.
type Request struct {
	System      string    `json:"system,omitempty"`
	Messages    []Message `json:"messages"`
	Tools       []Tool    `json:"tools,omitempty"`
	Temperature *float64  `json:"temperature,omitempty"`
	Seed        *int64    `json:"seed,omitempty"`
	MaxTokens   int       `json:"max_tokens,omitempty"`
	// ResponseSchema, when set, is a JSON Schema object the answer must
	// follow: the Chat Completions providers ask for it as structured
	// output (response_format json_schema, strict); others ignore it.
	ResponseSchema map[string]any `json:"response_schema,omitempty"`
}

// Usage counts the tokens a call consumed, as the provider reports them.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.PromptTokens + v.PromptTokens, u.CompletionTokens + v.CompletionTokens}
}

// Response is a model's reply.
type Response struct {
	Text       string     `json:"text"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	StopReason string     `json:"stop_reason,omitempty"`
	Usage      Usage      `json:"usage"`
}

// Target is a model that can be chatted with. Implementations are safe for
// concurrent use: one Target serves every worker of a run.
type Target interface {
	Chat(ctx context.Context, req Request) (Response, error)
}

// Options configure a provider: the config's [target] table (base_url, ...)
// and command-line overrides.
type Options map[string]any

// Provider opens a target for a model name (the part of the spec after the
// colon, "" when there is none).
type Provider struct {
	Name        string
	Description string
	// Open builds the target. opts holds provider options; unknown ones
	// are an error.
	Open func(model string, opts Options) (Target, error)
	// KeyEnv is the environment variable holding the provider's API key
	// ("" for a provider that sends none); KeyOptional says a missing key
	// is not an error.
	KeyEnv      string
	KeyOptional bool
	// BaseURLEnv is the environment variable that moves the API, and
	// DefaultBaseURL where it is otherwise ("" for an offline provider).
	BaseURLEnv     string
	DefaultBaseURL string
	// Options are the options Open takes (the config's [target] table),
	// shown by pikit list targets; an option not among them, or one that
	// would put a credential in a file, is an error before Open is called.
	Options []method.Option
}

// Registry holds the target providers, by name.
var Registry = method.NewRegistry[Provider]("target provider")

// Register adds a provider; it panics on a duplicate name.
func Register(p Provider) {
	if p.Open == nil {
		panic("target: provider " + p.Name + " registered without Open")
	}
	open, names := p.Open, make([]string, len(p.Options))
	for i, o := range p.Options {
		names[i] = o.Name
	}
	p.Open = func(model string, opts Options) (Target, error) {
		if err := checkOptions(opts, names...); err != nil {
			return nil, err
		}
		return open(model, opts)
	}
	Registry.Register(method.Info{Name: p.Name, Description: p.Description, Options: p.Options},
		func(method.Args) (Provider, error) { return p, nil })
}

// provider returns the registered provider of a name.
func provider(name string) (Provider, bool) {
	if _, ok := Registry.Lookup(name); !ok {
		return Provider{}, false
	}
	p, err := Registry.New(name, nil, 0)
	return p, err == nil
}

// Providers returns the registered providers, sorted by name.
func Providers() []Provider {
	var out []Provider
	for _, name := range Registry.Names() {
		if p, ok := provider(name); ok {
			out = append(out, p)
		}
	}
	return out
}

// ProviderNames returns the registered provider names, sorted.
func ProviderNames() []string { return Registry.Names() }

// ParseSpec splits "provider:model" into its parts and checks the provider
// is known; the error wraps method.ErrUnknown and lists the known providers.
func ParseSpec(spec string) (provider, model string, err error) {
	provider, model, _ = strings.Cut(strings.TrimSpace(spec), ":")
	if _, ok := Registry.Lookup(provider); !ok {
		if msg, known := unservedProviders[provider]; known {
			return "", "", &unservedError{name: provider, msg: msg}
		}
		return "", "", &method.UnknownError{Kind: "target provider", Name: provider, Known: ProviderNames()}
	}
	return provider, model, nil
}

// Open builds the target a spec names.
func Open(spec string, opts Options) (Target, error) {
	name, model, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	p, _ := provider(name)
	t, err := p.Open(model, opts)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", spec, err)
	}
	return t, nil
}
