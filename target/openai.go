package target

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
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
// through the official SDK, with the SDK's own retries off.
type openAI struct {
	settings  openAISettings
	model     string
	baseURL   string
	maxTokens int
	client    openai.Client
	secrets   []string
}

var _ Target = (*openAI)(nil)

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
	clientOpts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithAPIKey(key),
		option.WithMaxRetries(0),
		option.WithHTTPClient(newHTTPClient(maxBody)),
	}
	if s.provider != "openai" {
		// An ambient OPENAI_ORG_ID or OPENAI_PROJECT_ID, which the SDK reads,
		// belongs to OpenAI, not to this server.
		clientOpts = append(clientOpts, option.WithHeaderDel("OpenAI-Organization"), option.WithHeaderDel("OpenAI-Project"))
	}
	client := openai.NewClient(clientOpts...)
	return &openAI{settings: s, model: model, baseURL: base, maxTokens: maxTokens, client: client, secrets: secrets}, nil
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
	var body []byte
	if _, err := t.client.Chat.Completions.New(ctx, params, option.WithResponseBodyInto(&body)); err != nil {
		return Response{}, wireError(t.settings.provider, err, t.secrets)
	}
	var cc openai.ChatCompletion
	if err := json.Unmarshal(body, &cc); err != nil {
		return Response{}, malformedError(t.settings.provider, err.Error(), body, t.secrets)
	}
	if len(cc.Choices) == 0 {
		return Response{}, malformedError(t.settings.provider, "no choices in the completion", body, t.secrets)
	}
	choice := cc.Choices[0]
	resp := Response{
		Text:       choice.Message.Content,
		StopReason: choice.FinishReason,
		Usage:      Usage{PromptTokens: int(cc.Usage.PromptTokens), CompletionTokens: int(cc.Usage.CompletionTokens)},
	}
	if resp.Text == "" && choice.Message.Refusal != "" {
		resp.Text = choice.Message.Refusal
	}
	for _, tc := range choice.Message.ToolCalls {
		switch tc.Type {
		case "custom":
			resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Custom.Name, Arguments: tc.Custom.Input})
		default:
			// Arguments stay the text the model sent, malformed or not.
			resp.ToolCalls = append(resp.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
	}
	return resp, nil
}

// params builds the Chat Completions request.
func (t *openAI) params(req Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: t.model}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			p.Messages = append(p.Messages, openai.UserMessage(m.Content))
		case RoleAssistant:
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
		case RoleTool:
			p.Messages = append(p.Messages, openai.ToolMessage(m.Content, m.ToolCallID))
		default:
			return p, fmt.Errorf("message %d has role %q; valid roles: %s, %s, %s", i, m.Role, RoleUser, RoleAssistant, RoleTool)
		}
	}
	for _, tool := range req.Tools {
		def := openai.FunctionDefinitionParam{Name: tool.Name, Parameters: openai.FunctionParameters(schemaOrEmpty(tool.Parameters))}
		if tool.Description != "" {
			def.Description = openai.String(tool.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(def))
	}
	if len(p.Tools) > 0 {
		// As the Python pikit sends it: the model may call a tool or not.
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
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = t.maxTokens
	}
	if maxTokens > 0 {
		if t.settings.legacyMaxTokens {
			p.MaxTokens = openai.Int(int64(maxTokens))
		} else {
			p.MaxCompletionTokens = openai.Int(int64(maxTokens))
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
