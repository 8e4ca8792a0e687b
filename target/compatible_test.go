package target

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/method"
)

func TestCompatibleProviders(t *testing.T) {
	for _, tc := range []struct{ spec, keyEnv, baseEnv string }{
		{"vllm:meta-llama/Llama-3.1-8B-Instruct", VLLMKeyEnv, VLLMBaseURLEnv},
		{"openai_compatible:local-model", CompatibleKeyEnv, CompatibleBaseURLEnv},
	} {
		t.Run(strings.SplitN(tc.spec, ":", 2)[0], func(t *testing.T) {
			srv := newWireServer(t, wireServeFiles(t, "openai", "chat", "chat"))
			t.Setenv(OpenAIKeyEnv, "sk-openai-must-not-leak-0123456789")
			// Through the provider's base URL variable, with no key: none
			// is sent but a placeholder (servers without --api-key ignore it).
			t.Setenv(tc.baseEnv, srv.URL+"/v1")
			t.Setenv(tc.keyEnv, "")
			tg, err := Open(tc.spec, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tg.Chat(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}); err != nil {
				t.Fatal(err)
			}
			// With its own key set, that key goes; never OpenAI's.
			t.Setenv(tc.keyEnv, "local-key-0123456789")
			tg, _ = Open(tc.spec, nil)
			if _, err := tg.Chat(context.Background(), Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}); err != nil {
				t.Fatal(err)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 || reqs[0].Path != "/v1/chat/completions" {
				t.Fatalf("requests %+v", reqs)
			}
			if got := reqs[0].Header.Get("Authorization"); got != "Bearer none" {
				t.Errorf("without a key: Authorization %q", got)
			}
			if got := reqs[1].Header.Get("Authorization"); got != "Bearer local-key-0123456789" {
				t.Errorf("with %s: Authorization %q", tc.keyEnv, got)
			}
			if m := reqs[0].Body["model"]; m != strings.SplitN(tc.spec, ":", 2)[1] {
				t.Errorf("model %v", m)
			}
			ep, _ := EndpointOf(tc.spec, nil)
			if ep.BaseURLEnv != tc.baseEnv || ep.URL != srv.URL+"/v1" {
				t.Errorf("endpoint %+v", ep)
			}
		})
	}
}

func TestHuggingFaceSpecPointsAtServers(t *testing.T) {
	for _, spec := range []string{"hf:meta-llama/Llama-3.1-8B", "huggingface:gpt2"} {
		_, err := Open(spec, nil)
		if err == nil || !errors.Is(err, method.ErrUnknown) || !strings.Contains(err.Error(), "vllm:MODEL") || strings.Contains(err.Error(), "known:") {
			t.Errorf("%s: %v", spec, err)
		}
	}
}

// quiet is a mock model of the tests' own, registered as "mock:quiet".
type quiet struct{}

func (quiet) Chat(context.Context, Request) (Response, error) { return Response{Text: "…"}, nil }

func init() { RegisterMockModel("quiet", func() Target { return quiet{} }) }

func TestMockOptions(t *testing.T) {
	ctx := context.Background()
	user := Request{Messages: []Message{{Role: RoleUser, Content: "hello"}}}
	tg, err := Open("mock", Options{"prefix": "ECHO: "})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := tg.Chat(ctx, user); r.Text != "ECHO: hello" {
		t.Errorf("prefix: %q", r.Text)
	}
	tg, err = Open("mock", Options{"script": []any{
		map[string]any{"tool": "read_email", "arguments": map[string]any{"id": "1"}},
		"All done.",
	}})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := tg.Chat(ctx, user)
	if len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "read_email" || r.ToolCalls[0].Arguments != `{"id":"1"}` {
		t.Fatalf("turn 1: %+v", r)
	}
	next := Request{Messages: append(user.Messages, Message{Role: RoleAssistant, ToolCalls: r.ToolCalls}, Message{Role: RoleTool, ToolCallID: r.ToolCalls[0].ID, Content: "mail"})}
	if r, _ = tg.Chat(ctx, next); r.Text != "All done." {
		t.Errorf("turn 2: %+v", r)
	}
	if r, _ = tg.Chat(ctx, user); len(r.ToolCalls) != 1 {
		t.Error("a script is a function of the conversation: a new one starts at its first answer")
	}
	for _, tc := range []struct {
		spec string
		opts Options
		want string
	}{
		{"mock", Options{"temperature": 0.5}, `unknown option "temperature"; valid options: prefix, script`},
		{"mock:quiet", Options{"prefix": "x"}, "mock:quiet takes no options"},
		{"mock", Options{"script": []any{}}, "want a non-empty list"},
		{"mock", Options{"script": []any{map[string]any{"tol": "x"}}}, `unknown key "tol"`},
		{"mock", Options{"prefix": 3}, "want a string"},
	} {
		if _, err := Open(tc.spec, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: %v, want %q", tc.spec, tc.opts, err, tc.want)
		}
	}
}

func TestBaseURLOfIsUnredacted(t *testing.T) {
	t.Setenv(OpenAIBaseURLEnv, "")
	withPass := "https://user:s3cret-pass-0123@llm.example/v1"
	got, err := BaseURLOf("openai:m", Options{OptBaseURL: withPass})
	ep, _ := EndpointOf("openai:m", Options{OptBaseURL: withPass})
	if err != nil || got != withPass || strings.Contains(ep.URL, "s3cret") {
		t.Errorf("BaseURLOf %q (%v); EndpointOf shows %q", got, err, ep.URL)
	}
	if u, _ := BaseURLOf("mock", nil); u != "" {
		t.Errorf("offline: %q", u)
	}
}
