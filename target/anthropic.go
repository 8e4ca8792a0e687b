package target

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/pikit-go/pikit/method"
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

// OptAnthropicVersion pins the anthropic-version header. The SDK sends its
// own API version, which rejects temperature; pinning "2023-06-01" sends
// Request.Temperature again.
const OptAnthropicVersion = "anthropic_version"

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
			{Name: OptAnthropicVersion, Help: "the anthropic-version header (default: the SDK's; 2023-06-01 still takes a temperature)", Default: ""},
			networkOptions[2],
		},
		Open:           openAnthropic,
		KeyEnv:         AnthropicKeyEnv,
		BaseURLEnv:     AnthropicBaseURLEnv,
		DefaultBaseURL: DefaultAnthropicBaseURL,
	})
}

// anthropicTarget is a Target speaking the Anthropic Messages API through
// the official SDK, with the SDK's own retries off.
type anthropicTarget struct {
	model     string
	baseURL   string
	maxTokens int
	// temperature is sent only under an API version that accepts it.
	temperature bool
	client      anthropic.Client
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
	clientOpts := []option.RequestOption{
		// pikit resolves the key and base URL itself; the SDK must not
		// fall back to profiles or other credentials it finds.
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(base),
		option.WithAPIKey(key), // Authorization: Bearer
		// x-api-key too, for gateways and proxies that read only it; the
		// API prefers it when both are present.
		option.WithHeader("x-api-key", key),
		option.WithMaxRetries(0),
		option.WithHTTPClient(newHTTPClient(maxBody)),
	}
	if version != "" {
		clientOpts = append(clientOpts, option.WithHeader("anthropic-version", version))
	}
	return &anthropicTarget{
		model:       model,
		baseURL:     base,
		maxTokens:   maxTokens,
		temperature: version == anthropicTemperatureVersion,
		client:      anthropic.NewClient(clientOpts...),
		secrets:     []string{key},
	}, nil
}

// String names the target for logs, e.g. "anthropic:claude-haiku-4-5".
func (t *anthropicTarget) String() string { return "anthropic:" + t.model }

// GoString keeps %#v from printing the key.
func (t *anthropicTarget) GoString() string { return t.String() }

// Chat implements Target. Request.Seed is ignored: the API has none.
// Request.Temperature is sent only when the anthropic_version option pins
// 2023-06-01; the SDK's API version rejects any temperature.
func (t *anthropicTarget) Chat(ctx context.Context, req Request) (Response, error) {
	const provider = "anthropic"
	params, err := t.params(req)
	if err != nil {
		return Response{}, &Error{Provider: provider, Message: Redact(err.Error(), t.secrets...)}
	}
	var body []byte
	callOpts := []option.RequestOption{option.WithResponseBodyInto(&body)}
	if t.temperature && req.Temperature != nil {
		callOpts = append(callOpts, option.WithJSONSet("temperature", *req.Temperature))
	}
	if _, err := t.client.Messages.New(ctx, params, callOpts...); err != nil {
		return Response{}, wireError(provider, err, t.secrets)
	}
	var msg anthropic.Message
	if err := json.Unmarshal(body, &msg); err != nil {
		return Response{}, malformedError(provider, err.Error(), body, t.secrets)
	}
	if !msg.JSON.Content.Valid() {
		return Response{}, malformedError(provider, "no content in the message", body, t.secrets)
	}
	resp := Response{
		StopReason: string(msg.StopReason),
		Usage:      Usage{PromptTokens: int(msg.Usage.InputTokens), CompletionTokens: int(msg.Usage.OutputTokens)},
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
func (t *anthropicTarget) params(req Request) (anthropic.MessageNewParams, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = t.maxTokens
	}
	p := anthropic.MessageNewParams{Model: t.model, MaxTokens: int64(maxTokens)}
	if req.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	add := func(role string, blocks ...anthropic.ContentBlockParamUnion) {
		if n := len(p.Messages); n > 0 {
			last := &p.Messages[n-1]
			switch {
			case role == RoleUser && last.OfUser != nil:
				last.OfUser.Content = append(last.OfUser.Content, blocks...)
				return
			case role == RoleAssistant && last.OfAssistant != nil:
				last.OfAssistant.Content = append(last.OfAssistant.Content, blocks...)
				return
			}
		}
		if role == RoleUser {
			p.Messages = append(p.Messages, anthropic.NewUserMessage(blocks...))
		} else {
			p.Messages = append(p.Messages, anthropic.NewAssistantMessage(blocks...))
		}
	}
	for i, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			add(RoleUser, anthropic.NewTextBlock(m.Content))
		case RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for _, c := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, toolInput(c.Arguments), c.Name))
			}
			if len(blocks) == 0 {
				continue // the API refuses an empty assistant turn
			}
			add(RoleAssistant, blocks...)
		case RoleTool:
			result := anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if m.Content != "" {
				result.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: m.Content}}}
			}
			add(RoleUser, anthropic.ContentBlockParamUnion{OfToolResult: &result})
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
func anthropicTool(tool Tool) anthropic.ToolUnionParam {
	var schema anthropic.ToolInputSchemaParam
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
	if schema.Properties == nil {
		schema.Properties = map[string]any{}
	}
	if len(extra) > 0 {
		schema.ExtraFields = extra
	}
	def := anthropic.ToolParam{Name: tool.Name, InputSchema: schema}
	if tool.Description != "" {
		def.Description = anthropic.String(tool.Description)
	}
	return anthropic.ToolUnionParam{OfTool: &def}
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
