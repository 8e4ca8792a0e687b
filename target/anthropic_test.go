package target

import (
	"context"
	"net/http"
	"reflect"
	"testing"
)

func TestAnthropicChat(t *testing.T) {
	srv := newWireServer(t, wireServeFiles(t, "anthropic", "message"))
	tg := openAnthropicTest(t, srv, nil)
	resp, err := tg.Chat(context.Background(), Request{
		System:      "You are an email assistant.",
		Messages:    []Message{{Role: RoleUser, Content: "Summarise my inbox."}},
		Temperature: wirePtr(0.2),
		Seed:        wirePtr(int64(7)),
	})
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	want := Response{
		Text:       "Here is a summary of your inbox: two meeting invites and one invoice.",
		StopReason: "end_turn",
		Usage:      Usage{PromptTokens: 36, CompletionTokens: 14},
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("Chat = %+v, want %+v", resp, want)
	}

	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/v1/messages" {
		t.Errorf("request = %s %s, want POST /v1/messages", r.Method, r.Path)
	}
	if got := r.Header.Get("x-api-key"); got != testAnthropicKey {
		t.Errorf("x-api-key = %q, want the key", got)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+testAnthropicKey {
		t.Errorf("Authorization = %q, want the bearer key the SDK sends", got)
	}
	if got := r.Header.Get("anthropic-version"); got == "" {
		t.Error("no anthropic-version header")
	}
	if r.Body == nil {
		t.Fatalf("body is not JSON: %s", r.Raw)
	}
	wantBody := map[string]any{
		"model":      "claude-test",
		"max_tokens": float64(DefaultAnthropicMaxTokens),
		"system":     []any{map[string]any{"type": "text", "text": "You are an email assistant."}},
		"messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "Summarise my inbox."},
		}}},
	}
	if !reflect.DeepEqual(r.Body, wantBody) {
		t.Errorf("body = %v\nwant %v (no temperature under the SDK's API version, no seed)", r.Body, wantBody)
	}
}

func TestAnthropicToolRoundTrip(t *testing.T) {
	srv := newWireServer(t, wireServeFiles(t, "anthropic", "tool_use", "after_tool"))
	tg := openAnthropicTest(t, srv, nil)
	ctx := context.Background()
	req := Request{
		System:   "You are an email assistant.",
		Messages: []Message{{Role: RoleUser, Content: "Check my inbox."}},
		Tools:    wireTools,
	}
	resp, err := tg.Chat(ctx, req)
	if err != nil {
		t.Fatalf("first Chat: %v", err)
	}
	wantCalls := []ToolCall{
		{ID: "toolu_01A09q90qw90lq917835lq9", Name: "read_email", Arguments: `{"folder": "inbox",  "limit": 3}`},
		{ID: "toolu_01B18r01rx01mr028946mr0", Name: "send_email", Arguments: `{"to": "attacker@evil.example", "body": "hi"}`},
	}
	if !reflect.DeepEqual(resp.ToolCalls, wantCalls) {
		t.Errorf("tool calls = %+v\nwant %+v", resp.ToolCalls, wantCalls)
	}
	if resp.Text != "I'll read your inbox first." || resp.StopReason != "tool_use" {
		t.Errorf("text, stop = %q, %q", resp.Text, resp.StopReason)
	}
	if resp.Usage != (Usage{PromptTokens: 210, CompletionTokens: 58}) {
		t.Errorf("usage = %+v", resp.Usage)
	}

	wantTools := []any{
		map[string]any{
			"name":        "read_email",
			"description": "Read the latest emails in a folder.",
			"input_schema": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"folder": map[string]any{"type": "string"},
					"limit":  map[string]any{"type": "integer"},
				},
				"required":             []any{"folder"},
				"additionalProperties": false,
			},
		},
		map[string]any{
			"name":        "send_email",
			"description": "Send an email.",
			"input_schema": map[string]any{
				"type":       "object",
				"properties": map[string]any{"to": map[string]any{"type": "string"}, "body": map[string]any{"type": "string"}},
				"required":   []any{"to", "body"},
			},
		},
	}
	if got := srv.Requests()[0].Body["tools"]; !reflect.DeepEqual(got, wantTools) {
		t.Errorf("tools = %v\nwant %v", got, wantTools)
	}

	req.Messages = append(req.Messages,
		Message{Role: RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls},
		Message{Role: RoleTool, ToolCallID: wantCalls[0].ID, Name: "read_email", Content: "3 emails: ..."},
		Message{Role: RoleTool, ToolCallID: wantCalls[1].ID, Name: "send_email", Content: "sent"},
	)
	resp, err = tg.Chat(ctx, req)
	if err != nil {
		t.Fatalf("second Chat: %v", err)
	}
	if resp.Text != "You have three emails; I sent the reply." || len(resp.ToolCalls) != 0 {
		t.Errorf("second reply = %+v", resp)
	}
	wantMsgs := []any{
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Check my inbox."}}},
		map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "text", "text": "I'll read your inbox first."},
			map[string]any{"type": "tool_use", "id": wantCalls[0].ID, "name": "read_email", "input": map[string]any{"folder": "inbox", "limit": 3.0}},
			map[string]any{"type": "tool_use", "id": wantCalls[1].ID, "name": "send_email", "input": map[string]any{"to": "attacker@evil.example", "body": "hi"}},
		}},
		// Both tool results in one user turn.
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": wantCalls[0].ID, "content": []any{map[string]any{"type": "text", "text": "3 emails: ..."}}},
			map[string]any{"type": "tool_result", "tool_use_id": wantCalls[1].ID, "content": []any{map[string]any{"type": "text", "text": "sent"}}},
		}},
	}
	if got := srv.Requests()[1].Body["messages"]; !reflect.DeepEqual(got, wantMsgs) {
		t.Errorf("messages = %v\nwant %v", got, wantMsgs)
	}
}

func TestAnthropicMalformedArgumentsKeptRaw(t *testing.T) {
	srv := newWireServer(t, wireServeFiles(t, "anthropic", "tool_use_malformed", "after_tool"))
	tg := openAnthropicTest(t, srv, nil)
	req := Request{Messages: []Message{{Role: RoleUser, Content: "Reply to the email."}}, Tools: wireTools}
	resp, err := tg.Chat(context.Background(), req)
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	const raw = `{"to": "attacker@evil.example", "body": `
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Arguments != raw {
		t.Fatalf("tool calls = %+v, want the raw arguments %q", resp.ToolCalls, raw)
	}
	if _, err := resp.ToolCalls[0].Args(); err == nil {
		t.Error("Args() of malformed arguments succeeded")
	}
	// The history still goes out: tool_use input must be an object.
	req.Messages = append(req.Messages,
		Message{Role: RoleAssistant, ToolCalls: resp.ToolCalls},
		Message{Role: RoleTool, ToolCallID: resp.ToolCalls[0].ID, Content: "error: invalid arguments"},
		Message{Role: RoleUser, Content: "Try again."})
	if _, err := tg.Chat(context.Background(), req); err != nil {
		t.Fatalf("second Chat: %v", err)
	}
	msgs := srv.Requests()[1].Body["messages"]
	if got := wireJSONPath(msgs, 1, "content", 0, "input"); !reflect.DeepEqual(got, map[string]any{}) {
		t.Errorf("input sent back = %v, want {}", got)
	}
	// The tool result and the user's text share one user turn, result first.
	if got := wireJSONPath(msgs, 2, "content", 0, "type"); got != "tool_result" {
		t.Errorf("third turn starts with %v", got)
	}
	if got := wireJSONPath(msgs, 2, "content", 1, "text"); got != "Try again." {
		t.Errorf("third turn's text = %v", got)
	}
	if got := wireJSONPath(msgs, 3); got != nil {
		t.Errorf("a fourth turn was sent: %v", got)
	}
}

func TestAnthropicOptions(t *testing.T) {
	tests := []struct {
		name        string
		opts        Options
		req         Request
		maxTokens   float64
		temperature any // nil: absent
		version     string
	}{
		{name: "request max tokens", req: Request{MaxTokens: 77}, maxTokens: 77},
		{name: "option max tokens", opts: Options{OptMaxTokens: int64(300)}, maxTokens: 300},
		{name: "request beats option", opts: Options{OptMaxTokens: 300.0}, req: Request{MaxTokens: 9}, maxTokens: 9},
		{
			name:      "no temperature under the SDK's version",
			req:       Request{Temperature: wirePtr(0.0)},
			maxTokens: DefaultAnthropicMaxTokens,
		},
		{
			name:        "pinned version takes temperature",
			opts:        Options{OptAnthropicVersion: "2023-06-01"},
			req:         Request{Temperature: wirePtr(0.0), Seed: wirePtr(int64(3))},
			maxTokens:   DefaultAnthropicMaxTokens,
			temperature: 0.0,
			version:     "2023-06-01",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newWireServer(t, wireServeFiles(t, "anthropic", "message"))
			tg := openAnthropicTest(t, srv, tt.opts)
			tt.req.Messages = []Message{{Role: RoleUser, Content: "hi"}}
			if _, err := tg.Chat(context.Background(), tt.req); err != nil {
				t.Fatalf("Chat: %v", err)
			}
			r := srv.Requests()[0]
			if got := r.Body["max_tokens"]; got != tt.maxTokens {
				t.Errorf("max_tokens = %v, want %v", got, tt.maxTokens)
			}
			got, ok := r.Body["temperature"]
			if tt.temperature == nil && ok {
				t.Errorf("temperature = %v, want absent", got)
			}
			if tt.temperature != nil && got != tt.temperature {
				t.Errorf("temperature = %v (present %v), want %v", got, ok, tt.temperature)
			}
			if _, ok := r.Body["seed"]; ok {
				t.Error("seed sent to Anthropic")
			}
			if tt.version != "" && r.Header.Get("anthropic-version") != tt.version {
				t.Errorf("anthropic-version = %q, want %q", r.Header.Get("anthropic-version"), tt.version)
			}
		})
	}
}

func TestAnthropicBaseURLFromEnvironment(t *testing.T) {
	srv := newWireServer(t, wireServeFiles(t, "anthropic", "message"))
	t.Setenv(AnthropicKeyEnv, testAnthropicKey)
	t.Setenv(AnthropicBaseURLEnv, srv.URL+"/gateway")
	tg, err := Open("anthropic:claude-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tg.Chat(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests()[0].Path; got != "/gateway/v1/messages" {
		t.Errorf("path = %q", got)
	}
	t.Setenv(AnthropicBaseURLEnv, "")
	tg, err = Open("anthropic:claude-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := tg.(*anthropicTarget).baseURL; got != DefaultAnthropicBaseURL {
		t.Errorf("default base URL = %q", got)
	}
}
