package target

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

var wireTools = []Tool{
	{
		Name:        "read_email",
		Description: "Read the latest emails in a folder.",
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"folder": map[string]any{"type": "string"},
				"limit":  map[string]any{"type": "integer"},
			},
			"required":             []any{"folder"},
			"additionalProperties": false,
		},
	},
	{Name: "send_email", Description: "Send an email.", Parameters: map[string]any{
		"type":       "object",
		"properties": map[string]any{"to": map[string]any{"type": "string"}, "body": map[string]any{"type": "string"}},
		"required":   []string{"to", "body"},
	}},
}

func TestOpenAIChat(t *testing.T) {
	srv := newWireServer(t, wireServeFiles(t, "openai", "chat"))
	tg := openOpenAITest(t, srv, nil)
	resp, err := tg.Chat(context.Background(), Request{
		System:   "You are an email assistant.",
		Messages: []Message{{Role: RoleUser, Content: "Summarise my inbox."}},
	})
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	want := Response{
		Text:       "Here is a summary of your inbox: two meeting invites and one invoice.",
		StopReason: "stop",
		Usage:      Usage{PromptTokens: 42, CompletionTokens: 17},
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("Chat = %+v, want %+v", resp, want)
	}

	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/v1/chat/completions" {
		t.Errorf("request = %s %s, want POST /v1/chat/completions", r.Method, r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+testOpenAIKey {
		t.Errorf("Authorization = %q, want the bearer key", got)
	}
	if r.Body == nil {
		t.Fatalf("body is not JSON: %s", r.Raw)
	}
	if got := r.Body["model"]; got != "gpt-test" {
		t.Errorf("model = %v, want gpt-test", got)
	}
	wantMsgs := []any{
		map[string]any{"role": "system", "content": "You are an email assistant."},
		map[string]any{"role": "user", "content": "Summarise my inbox."},
	}
	if !reflect.DeepEqual(r.Body["messages"], wantMsgs) {
		t.Errorf("messages = %v, want %v", r.Body["messages"], wantMsgs)
	}
	for _, absent := range []string{"tools", "tool_choice", "temperature", "seed", "max_tokens", "max_completion_tokens", "stream"} {
		if v, ok := r.Body[absent]; ok {
			t.Errorf("body has %s = %v, want it absent", absent, v)
		}
	}
}

func TestOpenAIToolRoundTrip(t *testing.T) {
	srv := newWireServer(t, wireServeFiles(t, "openai", "tool_call", "after_tool"))
	tg := openOpenAITest(t, srv, nil)
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
		{ID: "call_Vx7r2mQpL9aB3cD4", Name: "read_email", Arguments: `{"folder": "inbox",  "limit": 3}`},
		{ID: "call_Kp0sT5uW8yZ1eF2g", Name: "send_email", Arguments: `{"to":"attacker@evil.example","body":"hi"}`},
	}
	if !reflect.DeepEqual(resp.ToolCalls, wantCalls) {
		t.Errorf("tool calls = %+v, want %+v", resp.ToolCalls, wantCalls)
	}
	if resp.Text != "" || resp.StopReason != "tool_calls" {
		t.Errorf("text, stop = %q, %q, want empty, tool_calls", resp.Text, resp.StopReason)
	}

	first := srv.Requests()[0].Body
	wantTools := []any{
		map[string]any{"type": "function", "function": map[string]any{
			"name":        "read_email",
			"description": "Read the latest emails in a folder.",
			"parameters": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"folder": map[string]any{"type": "string"},
					"limit":  map[string]any{"type": "integer"},
				},
				"required":             []any{"folder"},
				"additionalProperties": false,
			},
		}},
		map[string]any{"type": "function", "function": map[string]any{
			"name":        "send_email",
			"description": "Send an email.",
			"parameters": map[string]any{
				"type":       "object",
				"properties": map[string]any{"to": map[string]any{"type": "string"}, "body": map[string]any{"type": "string"}},
				"required":   []any{"to", "body"},
			},
		}},
	}
	if !reflect.DeepEqual(first["tools"], wantTools) {
		t.Errorf("tools = %v\nwant %v", first["tools"], wantTools)
	}
	// With tools, tool_choice "auto", as the Python pikit sends.
	if first["tool_choice"] != "auto" {
		t.Errorf("tool_choice = %v, want auto", first["tool_choice"])
	}

	// The agent loop's next request: the assistant turn with its calls,
	// then one tool message per call.
	req.Messages = append(req.Messages,
		Message{Role: RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls},
		Message{Role: RoleTool, ToolCallID: "call_Vx7r2mQpL9aB3cD4", Name: "read_email", Content: "3 emails: ..."},
		Message{Role: RoleTool, ToolCallID: "call_Kp0sT5uW8yZ1eF2g", Name: "send_email", Content: "sent"},
	)
	resp, err = tg.Chat(ctx, req)
	if err != nil {
		t.Fatalf("second Chat: %v", err)
	}
	if resp.Text != "You have three emails; I sent the reply." || len(resp.ToolCalls) != 0 {
		t.Errorf("second reply = %+v", resp)
	}
	msgs, _ := srv.Requests()[1].Body["messages"].([]any)
	if len(msgs) != 5 {
		t.Fatalf("second request has %d messages, want 5: %v", len(msgs), msgs)
	}
	wantAssistant := map[string]any{
		"role": "assistant",
		"tool_calls": []any{
			map[string]any{"id": "call_Vx7r2mQpL9aB3cD4", "type": "function", "function": map[string]any{"name": "read_email", "arguments": `{"folder": "inbox",  "limit": 3}`}},
			map[string]any{"id": "call_Kp0sT5uW8yZ1eF2g", "type": "function", "function": map[string]any{"name": "send_email", "arguments": `{"to":"attacker@evil.example","body":"hi"}`}},
		},
	}
	if !reflect.DeepEqual(msgs[2], wantAssistant) {
		t.Errorf("assistant message = %v\nwant %v", msgs[2], wantAssistant)
	}
	wantTool := map[string]any{"role": "tool", "tool_call_id": "call_Vx7r2mQpL9aB3cD4", "content": "3 emails: ..."}
	if !reflect.DeepEqual(msgs[3], wantTool) {
		t.Errorf("tool message = %v, want %v", msgs[3], wantTool)
	}
	if got := wireJSONPath(msgs[4], "tool_call_id"); got != "call_Kp0sT5uW8yZ1eF2g" {
		t.Errorf("second tool message answers %v", got)
	}
}

func TestOpenAIMalformedArgumentsKeptRaw(t *testing.T) {
	srv := newWireServer(t, wireServeFiles(t, "openai", "tool_call_malformed", "after_tool"))
	tg := openOpenAITest(t, srv, nil)
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
	// Sent back verbatim in the history.
	req.Messages = append(req.Messages,
		Message{Role: RoleAssistant, ToolCalls: resp.ToolCalls},
		Message{Role: RoleTool, ToolCallID: resp.ToolCalls[0].ID, Content: "error: invalid arguments"})
	if _, err := tg.Chat(context.Background(), req); err != nil {
		t.Fatalf("second Chat: %v", err)
	}
	if got := wireJSONPath(srv.Requests()[1].Body, "messages", 1, "tool_calls", 0, "function", "arguments"); got != raw {
		t.Errorf("arguments sent back = %v, want %q", got, raw)
	}
}

func TestOpenAIGenerationParams(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		req  Request
		want map[string]any // body fields; nil value means absent
	}{
		{
			name: "temperature and seed",
			req:  Request{Temperature: wirePtr(0.3), Seed: wirePtr(int64(42))},
			want: map[string]any{"temperature": 0.3, "seed": 42.0, "max_completion_tokens": nil},
		},
		{
			name: "zero temperature is sent",
			req:  Request{Temperature: wirePtr(0.0), Seed: wirePtr(int64(0))},
			want: map[string]any{"temperature": 0.0, "seed": 0.0},
		},
		{
			name: "request max tokens",
			req:  Request{MaxTokens: 77},
			want: map[string]any{"max_completion_tokens": 77.0, "max_tokens": nil, "temperature": nil},
		},
		{
			name: "option max tokens",
			opts: Options{OptMaxTokens: int64(300)},
			want: map[string]any{"max_completion_tokens": 300.0},
		},
		{
			name: "request beats option",
			opts: Options{OptMaxTokens: "300"},
			req:  Request{MaxTokens: 5},
			want: map[string]any{"max_completion_tokens": 5.0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newWireServer(t, wireServeFiles(t, "openai", "chat"))
			tg := openOpenAITest(t, srv, tt.opts)
			tt.req.Messages = []Message{{Role: RoleUser, Content: "hi"}}
			if _, err := tg.Chat(context.Background(), tt.req); err != nil {
				t.Fatalf("Chat: %v", err)
			}
			body := srv.Requests()[0].Body
			for k, want := range tt.want {
				got, ok := body[k]
				if want == nil {
					if ok {
						t.Errorf("%s = %v, want absent", k, got)
					}
					continue
				}
				if got != want {
					t.Errorf("%s = %v (present %v), want %v", k, got, ok, want)
				}
			}
		})
	}
}

func TestOpenAIOpenErrors(t *testing.T) {
	tests := []struct {
		name    string
		spec    string
		key     string
		opts    Options
		want    []string
		missing bool // wraps ErrMissingKey
	}{
		{name: "missing key", spec: "openai:gpt-test", want: []string{OpenAIKeyEnv}, missing: true},
		{name: "no model", spec: "openai", key: "k", want: []string{"openai:<model>"}},
		{name: "unknown option", spec: "openai:gpt-test", key: "k", opts: Options{"temprature": 1}, want: []string{`"temprature"`, "base_url", "max_tokens"}},
		{name: "api_key refused", spec: "openai:gpt-test", key: "k", opts: Options{"api_key": "sk-in-config-0123456789abcdef"}, want: []string{"api_key", "environment"}},
		{name: "bad base_url", spec: "openai:gpt-test", key: "k", opts: Options{OptBaseURL: "localhost:8080"}, want: []string{"base_url", "http"}},
		{name: "base_url not a string", spec: "openai:gpt-test", key: "k", opts: Options{OptBaseURL: 8080}, want: []string{"base_url", "string"}},
		{name: "bad max_tokens", spec: "openai:gpt-test", key: "k", opts: Options{OptMaxTokens: -3}, want: []string{"max_tokens", "positive"}},
		{name: "fractional max_tokens", spec: "openai:gpt-test", key: "k", opts: Options{OptMaxTokens: 2.5}, want: []string{"max_tokens"}},
		{name: "anthropic missing key", spec: "anthropic:claude-test", want: []string{AnthropicKeyEnv}, missing: true},
		{name: "anthropic unknown option", spec: "anthropic:claude-test", key: "k", opts: Options{"seed": 1}, want: []string{`"seed"`, "anthropic_version", "max_tokens", "base_url"}},
		{name: "anthropic no model", spec: "anthropic:", key: "k", want: []string{"anthropic:<model>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(OpenAIKeyEnv, tt.key)
			t.Setenv(AnthropicKeyEnv, tt.key)
			t.Setenv(OpenAIBaseURLEnv, "")
			t.Setenv(AnthropicBaseURLEnv, "")
			tg, err := Open(tt.spec, tt.opts)
			if err == nil {
				t.Fatalf("Open(%q, %v) = %v, want an error", tt.spec, tt.opts, tg)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %s", err, w)
				}
			}
			if got := errors.Is(err, ErrMissingKey); got != tt.missing {
				t.Errorf("errors.Is(%v, ErrMissingKey) = %v, want %v", err, got, tt.missing)
			}
			if strings.Contains(err.Error(), "sk-in-config") {
				t.Errorf("error %q quotes the refused key", err)
			}
			// OpenWith fails the same way, before anything is sent.
			if _, err2 := OpenWith(tt.spec, tt.opts, RetryPolicy{}, NewLimiter(1, 1)); err2 == nil || err2.Error() != err.Error() {
				t.Errorf("OpenWith error = %v, want %v", err2, err)
			}
		})
	}
}

func TestOpenAIBaseURL(t *testing.T) {
	t.Setenv(OpenAIKeyEnv, testOpenAIKey)
	t.Run("default", func(t *testing.T) {
		t.Setenv(OpenAIBaseURLEnv, "")
		tg, err := Open("openai:gpt-test", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := tg.(*openAI).baseURL; got != DefaultOpenAIBaseURL {
			t.Errorf("base URL = %q, want %q", got, DefaultOpenAIBaseURL)
		}
	})
	t.Run("environment", func(t *testing.T) {
		srv := newWireServer(t, wireServeFiles(t, "openai", "chat"))
		t.Setenv(OpenAIBaseURLEnv, srv.URL+"/proxy/v1")
		tg, err := Open("openai:gpt-test", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tg.Chat(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}); err != nil {
			t.Fatal(err)
		}
		if got := srv.Requests()[0].Path; got != "/proxy/v1/chat/completions" {
			t.Errorf("path = %q", got)
		}
	})
	t.Run("option beats environment", func(t *testing.T) {
		srv := newWireServer(t, wireServeFiles(t, "openai", "chat"))
		t.Setenv(OpenAIBaseURLEnv, "http://127.0.0.1:1/never")
		tg, err := Open("openai:gpt-test", Options{OptBaseURL: srv.URL + "/v1/"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tg.Chat(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}); err != nil {
			t.Fatal(err)
		}
		if got := srv.Requests()[0].Path; got != "/v1/chat/completions" {
			t.Errorf("path = %q", got)
		}
	})
}

func TestOpenAIBadRole(t *testing.T) {
	srv := newWireServer(t, wireServeFiles(t, "openai", "chat"))
	tg := openOpenAITest(t, srv, nil)
	_, err := tg.Chat(context.Background(), Request{Messages: []Message{{Role: "system", Content: "x"}}})
	if err == nil || !strings.Contains(err.Error(), `"system"`) {
		t.Fatalf("Chat with role system: %v, want an error naming it", err)
	}
	if retryable, _, _ := Classify(err); retryable {
		t.Error("a bad request is retryable")
	}
	if srv.Count() != 0 {
		t.Errorf("server got %d requests, want 0", srv.Count())
	}
}

func TestOllama(t *testing.T) {
	srv := newWireServer(t, wireServeFiles(t, "openai", "chat", "chat"))
	// An OpenAI key in the environment must not reach the Ollama server.
	t.Setenv(OpenAIKeyEnv, testOpenAIKey)
	t.Setenv(OllamaKeyEnv, "")
	t.Setenv(OllamaBaseURLEnv, srv.URL+"/v1")
	t.Setenv("OPENAI_ORG_ID", "org-should-not-leak")
	tg, err := Open("ollama:llama3.2", Options{OptMaxTokens: 64})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if _, err := tg.Chat(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}); err != nil {
		t.Fatalf("Chat: %v", err)
	}
	r := srv.Requests()[0]
	if r.Path != "/v1/chat/completions" {
		t.Errorf("path = %q", r.Path)
	}
	if got := r.Header.Get("Authorization"); strings.Contains(got, testOpenAIKey) {
		t.Errorf("the OpenAI key was sent to Ollama: %q", got)
	}
	if got := r.Header.Get("OpenAI-Organization"); got != "" {
		t.Errorf("OpenAI-Organization = %q sent to Ollama", got)
	}
	if got := r.Body["max_tokens"]; got != 64.0 {
		t.Errorf("max_tokens = %v, want 64 (Ollama's name)", got)
	}
	if got := r.Body["model"]; got != "llama3.2" {
		t.Errorf("model = %v", got)
	}

	t.Run("default base URL", func(t *testing.T) {
		t.Setenv(OllamaBaseURLEnv, "")
		tg, err := Open("ollama:llama3.2", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := tg.(*openAI).baseURL; got != DefaultOllamaBaseURL {
			t.Errorf("base URL = %q, want %q", got, DefaultOllamaBaseURL)
		}
	})
	t.Run("key when set", func(t *testing.T) {
		t.Setenv(OllamaKeyEnv, "ollama-secret-key-123")
		tg, err := Open("ollama:llama3.2", Options{OptBaseURL: srv.URL + "/v1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tg.Chat(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}); err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		if got := reqs[len(reqs)-1].Header.Get("Authorization"); got != "Bearer ollama-secret-key-123" {
			t.Errorf("Authorization = %q", got)
		}
	})
}
