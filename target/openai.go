package target

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/pikit-go/pikit/wire"
)

// Environment variables the openai provider reads.
const (
	OpenAIKeyEnv     = "OPENAI_API_KEY"
	OpenAIBaseURLEnv = "OPENAI_BASE_URL"
)

// DefaultOpenAIBaseURL is the OpenAI API's base URL.
const DefaultOpenAIBaseURL = "https://api.openai.com/v1/"

func init() {
	Register(Provider{
		Name: "openai",
		Description: "OpenAI Chat Completions API (openai:<model>, e.g. openai:gpt-4o-mini); key from " + OpenAIKeyEnv +
			"; base URL from option base_url, else " + OpenAIBaseURLEnv,
		Options: networkOptions,
		Open: func(model string, opts Options) (Target, error) {
			return openOpenAICompatible(openAISettings{
				provider:   "openai",
				keyEnv:     OpenAIKeyEnv,
				keyNeeded:  true,
				baseURLEnv: OpenAIBaseURLEnv,
				baseURL:    DefaultOpenAIBaseURL,
			}, model, opts)
		},
		KeyEnv:         OpenAIKeyEnv,
		BaseURLEnv:     OpenAIBaseURLEnv,
		DefaultBaseURL: DefaultOpenAIBaseURL,
	})
}

// openAISettings are what distinguishes the providers that speak the Chat
// Completions wire format.
type openAISettings struct {
	provider   string
	keyEnv     string
	keyNeeded  bool   // a missing key is an error
	keyDefault string // sent when the key is optional and unset
	baseURLEnv string
	baseURL    string // default
	// legacyMaxTokens sends max_tokens rather than max_completion_tokens,
	// for OpenAI-compatible servers that know only the older name.
	legacyMaxTokens bool
}

// openAI is a Target speaking the OpenAI Chat Completions wire format
// (package wire), with pikit's own retries around it.
type openAI struct {
	settings  openAISettings
	model     string
	baseURL   string
	maxTokens int
	call      *call
	secrets   []string
}

var _ Target = (*openAI)(nil)

// Variables the openai provider reads for its organization and project
// headers, as OpenAI's own clients do.
const (
	OpenAIOrgEnv     = "OPENAI_ORG_ID"
	OpenAIProjectEnv = "OPENAI_PROJECT_ID"
)

func openOpenAICompatible(s openAISettings, model string, opts Options) (Target, error) {
	if strings.TrimSpace(model) == "" {
		return nil, fmt.Errorf("no model given; use %s:<model>", s.provider)
	}
	opt, err := stringOption(opts, OptBaseURL)
	if err != nil {
		return nil, err
	}
	base, err := resolveBaseURL(opt, s.baseURLEnv, s.baseURL)
	if err != nil {
		return nil, err
	}
	maxTokens, err := positiveIntOption(opts, OptMaxTokens)
	if err != nil {
		return nil, err
	}
	maxBody, err := maxResponseBytesOption(opts)
	if err != nil {
		return nil, err
	}
	key := s.keyDefault
	var secrets []string
	if s.keyNeeded {
		if key, err = lookupKey(s.keyEnv); err != nil {
			return nil, err
		}
		secrets = append(secrets, key)
	} else if k := strings.TrimSpace(os.Getenv(s.keyEnv)); k != "" {
		key = k
		secrets = append(secrets, key)
	}
	h := http.Header{}
	h.Set("Authorization", "Bearer "+key)
	h.Set("User-Agent", userAgent)
	if s.provider == "openai" {
		// OpenAI's own organization and project, never another server's.
		if v := strings.TrimSpace(os.Getenv(OpenAIOrgEnv)); v != "" {
			h.Set("OpenAI-Organization", v)
		}
		if v := strings.TrimSpace(os.Getenv(OpenAIProjectEnv)); v != "" {
			h.Set("OpenAI-Project", v)
		}
	}
	endpoint, err := endpointURL(base, "chat/completions")
	if err != nil {
		return nil, fmt.Errorf("base URL %q: %w", Redact(base), err)
	}
	c := &call{provider: s.provider, client: newHTTPClient(maxBody), url: endpoint, header: h, secrets: secrets, message: openAIMessage}
	return &openAI{settings: s, model: model, baseURL: base, maxTokens: maxTokens, call: c, secrets: secrets}, nil
}

// userAgent names pikit to the servers it calls.
const userAgent = "pikit"

// openAIMessage reads an OpenAI-style error body.
func openAIMessage(body []byte) (message, code string) {
	var e wire.OpenAIError
	if json.Unmarshal(body, &e) != nil {
		return "", ""
	}
	return e.Error.Message, e.CodeText()
}

// String names the target for logs, e.g. "openai:gpt-4o-mini".
func (t *openAI) String() string { return t.settings.provider + ":" + t.model }

// GoString keeps %#v from printing the key.
func (t *openAI) GoString() string { return t.String() }

// Chat implements Target.
func (t *openAI) Chat(ctx context.Context, req Request) (Response, error) {
	params, err := t.params(req)
	if err != nil {
		return Response{}, &Error{Provider: t.settings.provider, Message: Redact(err.Error(), t.secrets...)}
	}
	body, err := t.call.post(ctx, params)
	if err != nil {
		return Response{}, err
	}
	var cc wire.ChatCompletion
	if err := json.Unmarshal(body, &cc); err != nil {
		return Response{}, malformedError(t.settings.provider, err.Error(), body, t.secrets)
	}
	if len(cc.Choices) == 0 {
		return Response{}, malformedError(t.settings.provider, "no choices in the completion", body, t.secrets)
	}
	choice := cc.Choices[0]
	resp := Response{
		Text:       string(choice.Message.Content),
		StopReason: choice.FinishReason,
	}
	if cc.Usage != nil {
		resp.Usage = Usage{PromptTokens: cc.Usage.PromptTokens, CompletionTokens: cc.Usage.CompletionTokens}
	}
	if resp.Text == "" && choice.Message.Refusal != "" {
		resp.Text = choice.Message.Refusal
	}
	for _, tc := range choice.Message.ToolCalls {
		switch {
		case tc.Type == "custom" && tc.Custom != nil:
			resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Custom.Name, Arguments: tc.Custom.Input})
		case tc.Function != nil:
			// Arguments stay the text the model sent, malformed or not.
			resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: string(tc.Function.Arguments)})
		}
	}
	return resp, nil
}

// params builds the Chat Completions request.
func (t *openAI) params(req Request) (wire.ChatRequest, error) {
	p := wire.ChatRequest{Model: t.model}
	if req.System != "" {
		p.Messages = append(p.Messages, wire.Text("system", req.System))
	}
	for i, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			p.Messages = append(p.Messages, wire.Text("user", m.Content))
		case RoleAssistant:
			a := wire.ChatMessage{Role: "assistant"}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content = &m.Content
			}
			for _, c := range m.ToolCalls {
				args := c.Arguments
				if strings.TrimSpace(args) == "" {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, wire.ChatToolCall{
					ID: c.ID, Type: "function",
					Function: &wire.ChatFunctionCall{Name: c.Name, Arguments: wire.Args(args)},
				})
			}
			p.Messages = append(p.Messages, a)
		case RoleTool:
			tm := wire.Text("tool", m.Content)
			tm.ToolCallID = m.ToolCallID
			p.Messages = append(p.Messages, tm)
		default:
			return p, fmt.Errorf("message %d has role %q; valid roles: %s, %s, %s", i, m.Role, RoleUser, RoleAssistant, RoleTool)
		}
	}
	for _, tool := range req.Tools {
		p.Tools = append(p.Tools, wire.ChatTool{Type: "function", Function: wire.ChatFunction{
			Name: tool.Name, Description: tool.Description, Parameters: schemaOrEmpty(tool.Parameters),
		}})
	}
	if len(p.Tools) > 0 {
		// As the Python pikit sends it: the model may call a tool or not.
		p.ToolChoice = "auto"
	}
	p.Temperature = req.Temperature
	p.Seed = req.Seed
	if req.ResponseSchema != nil {
		strict := true
		p.ResponseFormat = &wire.ResponseFormat{Type: "json_schema", JSONSchema: &wire.JSONSchema{Name: "answer", Schema: req.ResponseSchema, Strict: &strict}}
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = t.maxTokens
	}
	if maxTokens > 0 {
		if t.settings.legacyMaxTokens {
			p.MaxTokens = &maxTokens
		} else {
			p.MaxCompletionTokens = &maxTokens
		}
	}
	return p, nil
}

// schemaOrEmpty returns a tool's parameter schema, or the schema of an
// object with no properties when it has none.
func schemaOrEmpty(schema map[string]any) map[string]any {
	if len(schema) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}
	}
	return schema
}
