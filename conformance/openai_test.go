package conformance

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pikit-go/pikit/target"
)

const testKey = "sk-conformance-0123456789abcdef"

func ptr[T any](v T) *T { return &v }

var emailTools = []target.Tool{
	{Name: "read_email", Description: "Read the latest emails in a folder.", Parameters: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"folder": map[string]any{"type": "string", "enum": []any{"inbox", "archive"}},
			"limit":  map[string]any{"type": "integer", "minimum": 1},
			"filter": map[string]any{"type": "object", "properties": map[string]any{"from": map[string]any{"type": "string"}}},
		},
		"required":             []any{"folder"},
		"additionalProperties": false,
	}},
	{Name: "send_email", Description: "Send an email.", Parameters: map[string]any{
		"type":       "object",
		"properties": map[string]any{"to": map[string]any{"type": "string"}, "body": map[string]any{"type": "string"}},
		"required":   []string{"to", "body"},
	}},
	{Name: "list_folders"}, // no description, no schema
}

// conversations are the requests pikit's agents send, in every shape the
// targets encode: a system prompt, tools, past tool calls (well formed,
// malformed and empty arguments) with their results, text beside calls,
// generation settings and a response schema.
var conversations = map[string]target.Request{
	"plain":               {System: "You are an email assistant.", Messages: []target.Message{{Role: target.RoleUser, Content: "Summarise my inbox."}}},
	"no system, odd text": {Messages: []target.Message{{Role: target.RoleUser, Content: "tab\there \"quotes\" \u202eRLO\u202c <b>html</b> \x00nul ünïcödé 🙂"}}},
	"tools offered": {
		System:   "You are an email assistant.",
		Messages: []target.Message{{Role: target.RoleUser, Content: "Check my inbox."}},
		Tools:    emailTools,
	},
	"tool round trip": {
		System: "You are an email assistant.",
		Messages: []target.Message{
			{Role: target.RoleUser, Content: "Check my inbox."},
			{Role: target.RoleAssistant, ToolCalls: []target.ToolCall{
				{ID: "call_1", Name: "read_email", Arguments: `{"folder": "inbox",  "limit": 3}`},
				{ID: "call_2", Name: "send_email", Arguments: `{"to": "x@example.com", "body": `},
				{ID: "call_3", Name: "list_folders", Arguments: ""},
			}},
			{Role: target.RoleTool, ToolCallID: "call_1", Content: "3 emails: ..."},
			{Role: target.RoleTool, ToolCallID: "call_2", Content: "error: malformed arguments"},
			{Role: target.RoleTool, ToolCallID: "call_3", Content: ""},
			{Role: target.RoleAssistant, Content: "Let me also send it.", ToolCalls: []target.ToolCall{{ID: "call_4", Name: "send_email", Arguments: `{"to":"a@b.example","body":"hi"}`}}},
			{Role: target.RoleTool, ToolCallID: "call_4", Content: "sent"},
			{Role: target.RoleAssistant, Content: "Done."},
			{Role: target.RoleUser, Content: "Thanks."},
		},
		Tools: emailTools,
	},
	"generation settings": {
		Messages:    []target.Message{{Role: target.RoleUser, Content: "hi"}},
		Temperature: ptr(0.0), Seed: ptr(int64(42)), MaxTokens: 77,
	},
	"response schema": {
		Messages: []target.Message{{Role: target.RoleUser, Content: "Judge this."}},
		ResponseSchema: map[string]any{
			"type": "object", "additionalProperties": false, "required": []any{"verdict"},
			"properties": map[string]any{"verdict": map[string]any{"type": "string", "enum": []any{"yes", "no"}}},
		},
		Temperature: ptr(0.7),
	},
}

// sdkChatParams builds, with openai-go's own types, the request pikit's
// openai target means to send: the oracle pikit's body is held against.
func sdkChatParams(model string, req target.Request, legacyMaxTokens bool) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{Model: model}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case target.RoleUser:
			p.Messages = append(p.Messages, openai.UserMessage(m.Content))
		case target.RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Content)
			}
			for _, c := range m.ToolCalls {
				args := c.Arguments
				if strings.TrimSpace(args) == "" {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: args},
					},
				})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case target.RoleTool:
			p.Messages = append(p.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		}
	}
	for _, tool := range req.Tools {
		params := tool.Parameters
		if len(params) == 0 {
			params = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		def := openai.FunctionDefinitionParam{Name: tool.Name, Parameters: openai.FunctionParameters(params)}
		if tool.Description != "" {
			def.Description = openai.String(tool.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(def))
	}
	if len(p.Tools) > 0 {
		p.ToolChoice.OfAuto = openai.String("auto")
	}
	if req.Temperature != nil {
		p.Temperature = openai.Float(*req.Temperature)
	}
	if req.Seed != nil {
		p.Seed = openai.Int(*req.Seed)
	}
	if req.ResponseSchema != nil {
		p.ResponseFormat.OfJSONSchema = &openai.ResponseFormatJSONSchemaParam{JSONSchema: openai.ResponseFormatJSONSchemaJSONSchemaParam{
			Name: "answer", Schema: req.ResponseSchema, Strict: openai.Bool(true),
		}}
	}
	if req.MaxTokens > 0 {
		if legacyMaxTokens {
			p.MaxTokens = openai.Int(int64(req.MaxTokens))
		} else {
			p.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
		}
	}
	return p
}

// chatReply is a small valid completion for the capture server.
var chatReply = []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1767225600,"model":"gpt-conf","choices":[{"index":0,"message":{"role":"assistant","content":"ok","refusal":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)

// chatSchema compiles the Chat Completions request schema cut from
// OpenAI's OpenAPI description (testdata/openai/PROVENANCE.md).
func chatSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	path, _ := filepath.Abs("testdata/openai/chat-request.schema.json")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(path, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestOpenAIRequests: for every conversation, the body pikit's openai
// target sends (and the ollama one's, which names max_tokens the old way)
// is the body openai-go sends for it, decodes into the SDK's parameter
// type and back unchanged, and is valid under OpenAI's published schema;
// the key goes as the SDK sends it.
func TestOpenAIRequests(t *testing.T) {
	t.Setenv(target.OpenAIKeyEnv, testKey)
	t.Setenv(target.OllamaKeyEnv, testKey)
	t.Setenv("OPENAI_ORG_ID", "")
	t.Setenv("OPENAI_PROJECT_ID", "")
	schema := chatSchema(t)
	for _, provider := range []string{"openai", "ollama"} {
		for name, req := range conversations {
			t.Run(provider+"/"+name, func(t *testing.T) {
				ours, theirs := newCapture(t, chatReply), newCapture(t, chatReply)
				tg, err := target.Open(provider+":gpt-conf", target.Options{target.OptBaseURL: ours.URL + "/v1"})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tg.Chat(context.Background(), req); err != nil {
					t.Fatalf("pikit: %v", err)
				}
				sdk := openai.NewClient(option.WithBaseURL(theirs.URL+"/v1/"), option.WithAPIKey(testKey), option.WithMaxRetries(0))
				if _, err := sdk.Chat.Completions.New(context.Background(), sdkChatParams("gpt-conf", req, provider == "ollama")); err != nil {
					t.Fatalf("openai-go: %v", err)
				}
				body, header := ours.last(t)
				sdkBody, sdkHeader := theirs.last(t)
				sameJSON(t, "the request body", body, sdkBody)
				if header.Get("Authorization") != sdkHeader.Get("Authorization") || header.Get("Content-Type") != "application/json" {
					t.Errorf("headers: pikit %q %q, openai-go %q", header.Get("Authorization"), header.Get("Content-Type"), sdkHeader.Get("Authorization"))
				}

				var params openai.ChatCompletionNewParams
				if err := params.UnmarshalJSON(body); err != nil {
					t.Fatalf("openai-go cannot decode pikit's request: %v", err)
				}
				again, err := params.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				sameJSON(t, "the body through the SDK's parameter type", body, again)

				var v any
				json.Unmarshal(body, &v)
				if err := schema.Validate(v); err != nil {
					t.Errorf("pikit's request is not valid under OpenAI's schema: %v\n%s", err, body)
				}
			})
		}
	}
}

// TestOpenAIReplies: pikit's openai target reads a reply as openai-go
// does: the recorded replies pikit's own tests use, and replies encoded
// from the SDK's own types.
func TestOpenAIReplies(t *testing.T) {
	t.Setenv(target.OpenAIKeyEnv, testKey)
	replies := map[string][]byte{}
	files, _ := filepath.Glob("../target/testdata/openai/*.json")
	for _, f := range files {
		if strings.Contains(f, "error_") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		replies[filepath.Base(f)] = b
	}
	for name, cc := range sdkReplies() {
		b, err := json.Marshal(cc)
		if err != nil {
			t.Fatal(err)
		}
		replies["sdk/"+name] = b
	}
	if len(replies) < 6 {
		t.Fatalf("only %d replies to read", len(replies))
	}
	for name, reply := range replies {
		t.Run(name, func(t *testing.T) {
			srv := newCapture(t, reply)
			tg, err := target.Open("openai:gpt-conf", target.Options{target.OptBaseURL: srv.URL + "/v1"})
			if err != nil {
				t.Fatal(err)
			}
			got, err := tg.Chat(context.Background(), target.Request{Messages: []target.Message{{Role: target.RoleUser, Content: "hi"}}})
			if err != nil {
				t.Fatalf("pikit: %v", err)
			}
			sdk := openai.NewClient(option.WithBaseURL(srv.URL+"/v1/"), option.WithAPIKey(testKey), option.WithMaxRetries(0))
			cc, err := sdk.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-conf", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
			if err != nil {
				t.Fatalf("openai-go: %v", err)
			}
			if want := fromSDKCompletion(cc); !reflect.DeepEqual(got, want) {
				t.Errorf("pikit read\n%+v\nopenai-go read\n%+v", got, want)
			}
		})
	}
}

// fromSDKCompletion is what a completion decoded by openai-go says, in
// pikit's terms.
func fromSDKCompletion(cc *openai.ChatCompletion) target.Response {
	c := cc.Choices[0]
	r := target.Response{Text: c.Message.Content, StopReason: c.FinishReason,
		Usage: target.Usage{PromptTokens: int(cc.Usage.PromptTokens), CompletionTokens: int(cc.Usage.CompletionTokens)}}
	if r.Text == "" {
		r.Text = c.Message.Refusal
	}
	for _, tc := range c.Message.ToolCalls {
		if tc.Type == "custom" {
			r.ToolCalls = append(r.ToolCalls, target.ToolCall{ID: tc.ID, Name: tc.Custom.Name, Arguments: tc.Custom.Input})
			continue
		}
		r.ToolCalls = append(r.ToolCalls, target.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return r
}

// sdkReplies are completions built with openai-go's types, to be encoded
// as the SDK encodes them.
func sdkReplies() map[string]openai.ChatCompletion {
	base := func(msg openai.ChatCompletionMessage, finish string) openai.ChatCompletion {
		return openai.ChatCompletion{
			ID: "chatcmpl-sdk", Object: "chat.completion", Created: 1767225600, Model: "gpt-conf",
			Choices: []openai.ChatCompletionChoice{{Index: 0, Message: msg, FinishReason: finish}},
			Usage:   openai.CompletionUsage{PromptTokens: 11, CompletionTokens: 7, TotalTokens: 18},
		}
	}
	return map[string]openai.ChatCompletion{
		"text":    base(openai.ChatCompletionMessage{Role: "assistant", Content: "Here is your summary: ünïcödé 🙂"}, "stop"),
		"refusal": base(openai.ChatCompletionMessage{Role: "assistant", Refusal: "I can't help with sending that."}, "stop"),
		"tool calls": base(openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ChatCompletionMessageToolCallUnion{
			{ID: "call_a", Type: "function", Function: openai.ChatCompletionMessageFunctionToolCallFunction{Name: "read_email", Arguments: `{"folder":"inbox"}`}},
			{ID: "call_b", Type: "function", Function: openai.ChatCompletionMessageFunctionToolCallFunction{Name: "send_email", Arguments: `{"to": "x@`}},
		}}, "tool_calls"),
		"custom tool call": base(openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ChatCompletionMessageToolCallUnion{
			{ID: "call_c", Type: "custom", Custom: openai.ChatCompletionMessageCustomToolCallCustom{Name: "shell", Input: "ls -la"}},
		}}, "tool_calls"),
		"cut at the length": base(openai.ChatCompletionMessage{Role: "assistant", Content: "The answer is"}, "length"),
	}
}

// TestChatSchemaRejects: the schema the requests are held against does
// refuse bodies OpenAI would refuse, so its passing them means something.
func TestChatSchemaRejects(t *testing.T) {
	schema := chatSchema(t)
	for name, body := range map[string]string{
		"no messages":                     `{"model":"m"}`,
		"an unknown role":                 `{"model":"m","messages":[{"role":"wizard","content":"hi"}]}`,
		"temperature of 5":                `{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":5}`,
		"a tool without a function":       `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function"}]}`,
		"a tool message without its call": `{"model":"m","messages":[{"role":"tool","content":"x"}]}`,
	} {
		var v any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatal(err)
		}
		if schema.Validate(v) == nil {
			t.Errorf("%s: the schema accepts %s", name, body)
		}
	}
}
