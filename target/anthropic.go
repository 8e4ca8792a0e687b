package target

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/pikit-go/pikit/method"
	"github.com/pikit-go/pikit/wire"
)

// Environment variables the anthropic provider reads.
const (
	AnthropicKeyEnv     = "ANTHROPIC_API_KEY"
	AnthropicBaseURLEnv = "ANTHROPIC_BASE_URL"
)

// DefaultAnthropicBaseURL is the Anthropic API's base URL.
const DefaultAnthropicBaseURL = "https://api.anthropic.com/"

// DefaultAnthropicMaxTokens is the max_tokens the Messages API requires
// when neither the request nor the max_tokens option sets one.
const DefaultAnthropicMaxTokens = 1024

// OptAnthropicVersion pins the anthropic-version header. The default,
// DefaultAnthropicVersion, rejects temperature; pinning "2023-06-01" sends
// Request.Temperature again.
const OptAnthropicVersion = "anthropic_version"

// DefaultAnthropicVersion is the anthropic-version header sent when the
// anthropic_version option sets none: the API version of Anthropic's
// current clients.
const DefaultAnthropicVersion = "2026-10-21"

// anthropicTemperatureVersion is the API version that still takes a
// temperature.
const anthropicTemperatureVersion = "2023-06-01"

func init() {
	Register(Provider{
		Name: "anthropic",
		Description: "Anthropic Messages API (anthropic:<model>, e.g. anthropic:claude-haiku-4-5); key from " + AnthropicKeyEnv +
			"; base URL from option base_url, else " + AnthropicBaseURLEnv +
			" (temperature is sent only with anthropic_version=2023-06-01; seed never)",
		Options: []method.Option{
			networkOptions[0],
			{Name: OptMaxTokens, Help: "the most tokens a reply may have when a request sets none", Default: DefaultAnthropicMaxTokens},
			{Name: OptAnthropicVersion, Help: "the anthropic-version header (default: " + DefaultAnthropicVersion + "; 2023-06-01 still takes a temperature)", Default: ""},
			networkOptions[2],
		},
		Open:           openAnthropic,
		KeyEnv:         AnthropicKeyEnv,
		BaseURLEnv:     AnthropicBaseURLEnv,
		DefaultBaseURL: DefaultAnthropicBaseURL,
	})
}

// anthropicTarget is a Target speaking the Anthropic Messages API
// (package wire), with pikit's own retries around it.
type anthropicTarget struct {
	model     string
	baseURL   string
	maxTokens int
	// temperature is sent only under an API version that accepts it.
	temperature bool
	call        *call
	secrets     []string
}

var _ Target = (*anthropicTarget)(nil)

func openAnthropic(model string, opts Options) (Target, error) {
	if strings.TrimSpace(model) == "" {
		return nil, fmt.Errorf("no model given; use anthropic:<model>")
	}
	opt, err := stringOption(opts, OptBaseURL)
	if err != nil {
		return nil, err
	}
	base, err := resolveBaseURL(opt, AnthropicBaseURLEnv, DefaultAnthropicBaseURL)
	if err != nil {
		return nil, err
	}
	maxTokens, err := positiveIntOption(opts, OptMaxTokens)
	if err != nil {
		return nil, err
	}
	if maxTokens == 0 {
		maxTokens = DefaultAnthropicMaxTokens
	}
	version, err := stringOption(opts, OptAnthropicVersion)
	if err != nil {
		return nil, err
	}
	maxBody, err := maxResponseBytesOption(opts)
	if err != nil {
		return nil, err
	}
	key, err := lookupKey(AnthropicKeyEnv)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	// x-api-key is the API's own; Authorization: Bearer too, for gateways
	// and proxies that read only it (the API prefers x-api-key).
	h.Set("x-api-key", key)
	h.Set("Authorization", "Bearer "+key)
	h.Set("anthropic-version", cmp.Or(version, DefaultAnthropicVersion))
	h.Set("User-Agent", userAgent)
	endpoint, err := endpointURL(base, "v1/messages")
	if err != nil {
		return nil, fmt.Errorf("base URL %q: %w", Redact(base), err)
	}
	return &anthropicTarget{
		model:       model,
		baseURL:     base,
		maxTokens:   maxTokens,
		temperature: version == anthropicTemperatureVersion,
		call:        &call{provider: "anthropic", client: newHTTPClient(maxBody), url: endpoint, header: h, secrets: []string{key}, message: anthropicMessage},
		secrets:     []string{key},
	}, nil
}

// anthropicMessage reads an Anthropic error body: its message, and its
// error type as the code.
func anthropicMessage(body []byte) (message, code string) {
	var e wire.AnthropicError
	if json.Unmarshal(body, &e) != nil {
		return "", ""
	}
	return e.Error.Message, e.Error.Type
}

// String names the target for logs, e.g. "anthropic:claude-haiku-4-5".
func (t *anthropicTarget) String() string { return "anthropic:" + t.model }

// GoString keeps %#v from printing the key.
func (t *anthropicTarget) GoString() string { return t.String() }

// Chat implements Target. Request.Seed is ignored: the API has none.
// Request.Temperature is sent only when the anthropic_version option pins
// 2023-06-01; later API versions reject any temperature.
func (t *anthropicTarget) Chat(ctx context.Context, req Request) (Response, error) {
	const provider = "anthropic"
	params, err := t.params(req)
	if err != nil {
		return Response{}, &Error{Provider: provider, Message: Redact(err.Error(), t.secrets...)}
	}
	if t.temperature {
		params.Temperature = req.Temperature
	}
	body, err := t.call.post(ctx, params)
	if err != nil {
		return Response{}, err
	}
	var msg wire.AnthropicReply
	if err := json.Unmarshal(body, &msg); err != nil {
		return Response{}, malformedError(provider, err.Error(), body, t.secrets)
	}
	if msg.Content == nil {
		return Response{}, malformedError(provider, "no content in the message", body, t.secrets)
	}
	resp := Response{
		StopReason: msg.StopReason,
		Usage:      Usage{PromptTokens: msg.Usage.InputTokens, CompletionTokens: msg.Usage.OutputTokens},
	}
	var text strings.Builder
	for _, block := range msg.Content {
		switch block.Type {
		case "text":
			text.WriteString(block.Text)
		case "tool_use":
			resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: block.ID, Name: block.Name, Arguments: rawArguments(block.Input)})
		}
	}
	resp.Text = text.String()
	return resp, nil
}

// rawArguments returns a tool_use block's input as the text the model
// sent: the JSON verbatim, or the content of a JSON string (a model that
// sent its arguments as a string, possibly malformed JSON).
func rawArguments(input json.RawMessage) string {
	trimmed := strings.TrimSpace(string(input))
	if trimmed == "" || trimmed == "null" {
		return "{}"
	}
	if strings.HasPrefix(trimmed, `"`) {
		var s string
		if err := json.Unmarshal([]byte(trimmed), &s); err == nil {
			return s
		}
	}
	return string(input)
}

// params builds the Messages API request. Consecutive turns of one role
// are merged, as the API wants: a run of tool results becomes one user
// turn of tool_result blocks.
func (t *anthropicTarget) params(req Request) (wire.MessagesRequest, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = t.maxTokens
	}
	p := wire.MessagesRequest{Model: t.model, MaxTokens: maxTokens}
	if req.System != "" {
		p.System = []wire.Block{wire.TextBlock(req.System)}
	}
	add := func(role string, blocks ...wire.Block) {
		if n := len(p.Messages); n > 0 && p.Messages[n-1].Role == role {
			p.Messages[n-1].Content = append(p.Messages[n-1].Content, blocks...)
			return
		}
		p.Messages = append(p.Messages, wire.AnthropicMessage{Role: role, Content: blocks})
	}
	for i, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			add(RoleUser, wire.TextBlock(m.Content))
		case RoleAssistant:
			var blocks []wire.Block
			if m.Content != "" {
				blocks = append(blocks, wire.TextBlock(m.Content))
			}
			for _, c := range m.ToolCalls {
				blocks = append(blocks, wire.Block{Type: "tool_use", ID: c.ID, Name: c.Name, Input: toolInput(c.Arguments)})
			}
			if len(blocks) == 0 {
				continue // the API refuses an empty assistant turn
			}
			add(RoleAssistant, blocks...)
		case RoleTool:
			result := wire.Block{Type: "tool_result", ToolUseID: m.ToolCallID}
			if m.Content != "" {
				result.Content = []wire.Block{wire.TextBlock(m.Content)}
			}
			add(RoleUser, result)
		default:
			return p, fmt.Errorf("message %d has role %q; valid roles: %s, %s, %s", i, m.Role, RoleUser, RoleAssistant, RoleTool)
		}
	}
	for _, tool := range req.Tools {
		p.Tools = append(p.Tools, anthropicTool(tool))
	}
	return p, nil
}

// toolInput is a past tool call's arguments as a tool_use block's input,
// which must be a JSON object: the arguments verbatim when they are one,
// else an empty object (the model's malformed text stays in the trace).
func toolInput(args string) json.RawMessage {
	trimmed := strings.TrimSpace(args)
	if strings.HasPrefix(trimmed, "{") && json.Valid([]byte(trimmed)) {
		return json.RawMessage(trimmed)
	}
	return json.RawMessage("{}")
}

// anthropicTool turns a tool definition into the API's form, whose
// input_schema splits out properties and required.
func anthropicTool(tool Tool) wire.AnthropicTool {
	var schema wire.InputSchema
	extra := map[string]any{}
	for k, v := range tool.Parameters {
		switch k {
		case "type": // always "object"
		case "properties":
			schema.Properties = v
		case "required":
			if names, ok := stringList(v); ok {
				schema.Required = names
			} else {
				extra[k] = v
			}
		default:
			extra[k] = v
		}
	}
	if len(extra) > 0 {
		schema.Extra = extra
	}
	return wire.AnthropicTool{Name: tool.Name, Description: tool.Description, InputSchema: schema}
}

// stringList converts a JSON Schema "required" list.
func stringList(v any) ([]string, bool) {
	switch x := v.(type) {
	case []string:
		return x, true
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}
