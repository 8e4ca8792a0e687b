package conformance

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/pikit-go/pikit/target"
)

// sdkMessageParams builds, with anthropic-sdk-go's own types, the request
// pikit's anthropic target means to send: consecutive turns of one role
// merged, tool results as tool_result blocks of a user turn, an empty
// assistant turn left out, a tool's schema split into properties and
// required.
func sdkMessageParams(model string, maxTokens int, req target.Request) anthropic.MessageNewParams {
	if req.MaxTokens > 0 {
		maxTokens = req.MaxTokens
	}
	p := anthropic.MessageNewParams{Model: model, MaxTokens: int64(maxTokens)}
	if req.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	add := func(role string, blocks ...anthropic.ContentBlockParamUnion) {
		if n := len(p.Messages); n > 0 {
			last := &p.Messages[n-1]
			switch {
			case role == target.RoleUser && last.OfUser != nil:
				last.OfUser.Content = append(last.OfUser.Content, blocks...)
				return
			case role == target.RoleAssistant && last.OfAssistant != nil:
				last.OfAssistant.Content = append(last.OfAssistant.Content, blocks...)
				return
			}
		}
		if role == target.RoleUser {
			p.Messages = append(p.Messages, anthropic.NewUserMessage(blocks...))
		} else {
			p.Messages = append(p.Messages, anthropic.NewAssistantMessage(blocks...))
		}
	}
	for _, m := range req.Messages {
		switch m.Role {
		case target.RoleUser:
			add(target.RoleUser, anthropic.NewTextBlock(m.Content))
		case target.RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for _, c := range m.ToolCalls {
				input := json.RawMessage("{}")
				if a := strings.TrimSpace(c.Arguments); strings.HasPrefix(a, "{") && json.Valid([]byte(a)) {
					input = json.RawMessage(a)
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, input, c.Name))
			}
			if len(blocks) > 0 {
				add(target.RoleAssistant, blocks...)
			}
		case target.RoleTool:
			result := anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if m.Content != "" {
				result.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: m.Content}}}
			}
			add(target.RoleUser, anthropic.ContentBlockParamUnion{OfToolResult: &result})
		}
	}
	for _, tool := range req.Tools {
		var schema anthropic.ToolInputSchemaParam
		extra := map[string]any{}
		for k, v := range tool.Parameters {
			switch k {
			case "type":
			case "properties":
				schema.Properties = v
			case "required":
				var names []string
				switch x := v.(type) {
				case []string:
					names = x
				case []any:
					for _, e := range x {
						names = append(names, e.(string))
					}
				}
				schema.Required = names
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
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &def})
	}
	return p
}

var messageReply = []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-conf","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}`)

// TestAnthropicRequests: for every conversation, the body pikit's
// anthropic target sends is the body anthropic-sdk-go sends for it (with
// a temperature only under anthropic_version 2023-06-01, as the SDK is
// asked to), decodes into the SDK's parameter type and back unchanged,
// and carries the key and API version the SDK's would.
func TestAnthropicRequests(t *testing.T) {
	t.Setenv(target.AnthropicKeyEnv, testKey)
	for _, version := range []string{"", "2023-06-01"} {
		for name, req := range conversations {
			if req.ResponseSchema != nil {
				continue // the anthropic target sends no response schema
			}
			t.Run("version="+version+"/"+name, func(t *testing.T) {
				ours, theirs := newCapture(t, messageReply), newCapture(t, messageReply)
				opts := target.Options{target.OptBaseURL: ours.URL}
				if version != "" {
					opts[target.OptAnthropicVersion] = version
				}
				tg, err := target.Open("anthropic:claude-conf", opts)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tg.Chat(context.Background(), req); err != nil {
					t.Fatalf("pikit: %v", err)
				}
				sdkOpts := []option.RequestOption{option.WithoutEnvironmentDefaults(), option.WithBaseURL(theirs.URL), option.WithAPIKey(testKey),
					option.WithHeader("x-api-key", testKey), option.WithMaxRetries(0)}
				var call []option.RequestOption
				if version != "" {
					sdkOpts = append(sdkOpts, option.WithHeader("anthropic-version", version))
					if req.Temperature != nil {
						call = append(call, option.WithJSONSet("temperature", *req.Temperature))
					}
				}
				sdk := anthropic.NewClient(sdkOpts...)
				if _, err := sdk.Messages.New(context.Background(), sdkMessageParams("claude-conf", target.DefaultAnthropicMaxTokens, req), call...); err != nil {
					t.Fatalf("anthropic-sdk-go: %v", err)
				}
				body, header := ours.last(t)
				sdkBody, sdkHeader := theirs.last(t)
				sameJSON(t, "the request body", body, sdkBody)
				for _, h := range []string{"x-api-key", "Authorization", "anthropic-version"} {
					if header.Get(h) != sdkHeader.Get(h) {
						t.Errorf("%s: pikit sends %q, anthropic-sdk-go %q", h, header.Get(h), sdkHeader.Get(h))
					}
				}
				var params anthropic.MessageNewParams
				if err := params.UnmarshalJSON(body); err != nil {
					t.Fatalf("anthropic-sdk-go cannot decode pikit's request: %v", err)
				}
				again, err := params.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				if version == "" { // the temperature is set beside the params
					sameJSON(t, "the body through the SDK's parameter type", body, again)
				}
			})
		}
	}
}

// TestAnthropicReplies: pikit's anthropic target reads a reply as
// anthropic-sdk-go does: the recorded replies pikit's own tests use, and
// replies holding blocks pikit does not act on (thinking, a server tool's
// result).
func TestAnthropicReplies(t *testing.T) {
	t.Setenv(target.AnthropicKeyEnv, testKey)
	replies := map[string][]byte{
		"thinking then text": []byte(`{"id":"msg_t","type":"message","role":"assistant","model":"claude-conf","content":[{"type":"thinking","thinking":"Let me see.","signature":"c2ln"},{"type":"redacted_thinking","data":"eHg="},{"type":"text","text":"Plain answer ünïcödé 🙂"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":4}}`),
		"server tool result": []byte(`{"id":"msg_s","type":"message","role":"assistant","model":"claude-conf","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"x"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","title":"t","url":"https://example.com","encrypted_content":"e"}]},{"type":"text","text":"Found it."}],"stop_reason":"end_turn","usage":{"input_tokens":20,"output_tokens":5}}`),
		"tool use and text":  []byte(`{"id":"msg_u","type":"message","role":"assistant","model":"claude-conf","content":[{"type":"text","text":"Sending."},{"type":"tool_use","id":"toolu_1","name":"send_email","input":{"to":"a@b.example","body":"hi"}},{"type":"tool_use","id":"toolu_2","name":"list_folders","input":{}}],"stop_reason":"tool_use","usage":{"input_tokens":30,"output_tokens":12}}`),
	}
	files, _ := filepath.Glob("../target/testdata/anthropic/*.json")
	for _, f := range files {
		if strings.Contains(f, "error_") || strings.Contains(f, "malformed") {
			continue // a string input the SDK reads differently: pikit's own tests pin it
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		replies[filepath.Base(f)] = b
	}
	for name, reply := range replies {
		t.Run(name, func(t *testing.T) {
			srv := newCapture(t, reply)
			tg, err := target.Open("anthropic:claude-conf", target.Options{target.OptBaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			got, err := tg.Chat(context.Background(), target.Request{Messages: []target.Message{{Role: target.RoleUser, Content: "hi"}}})
			if err != nil {
				t.Fatalf("pikit: %v", err)
			}
			sdk := anthropic.NewClient(option.WithoutEnvironmentDefaults(), option.WithBaseURL(srv.URL), option.WithAPIKey(testKey), option.WithMaxRetries(0))
			msg, err := sdk.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "claude-conf", MaxTokens: 10, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
			if err != nil {
				t.Fatalf("anthropic-sdk-go: %v", err)
			}
			if want := fromSDKMessage(msg); !reflect.DeepEqual(got, want) {
				t.Errorf("pikit read\n%+v\nanthropic-sdk-go read\n%+v", got, want)
			}
		})
	}
}

// fromSDKMessage is what a message decoded by anthropic-sdk-go says, in
// pikit's terms.
func fromSDKMessage(m *anthropic.Message) target.Response {
	r := target.Response{StopReason: string(m.StopReason),
		Usage: target.Usage{PromptTokens: int(m.Usage.InputTokens), CompletionTokens: int(m.Usage.OutputTokens)}}
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			r.Text += b.Text
		case "tool_use":
			r.ToolCalls = append(r.ToolCalls, target.ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
		}
	}
	return r
}
