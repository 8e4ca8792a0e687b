package wire

import (
	"bytes"
	"encoding/json"
	"strings"
)

// ChatRequest is a Chat Completions request body.
type ChatRequest struct {
	Model    string        `json:"model"`
	Messages []ChatMessage `json:"messages"`
	Tools    []ChatTool    `json:"tools,omitempty"`
	// ToolChoice is "auto", "none" or "required" ("" leaves it out).
	ToolChoice  string   `json:"tool_choice,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
	// MaxCompletionTokens is the current name of the reply's bound;
	// MaxTokens the older one, which some compatible servers alone know.
	MaxCompletionTokens *int            `json:"max_completion_tokens,omitempty"`
	MaxTokens           *int            `json:"max_tokens,omitempty"`
	ResponseFormat      *ResponseFormat `json:"response_format,omitempty"`
	Stream              bool            `json:"stream,omitempty"`
}

// ChatMessage is one message of a request: system, user, assistant (with
// its tool calls) or tool (a call's result).
type ChatMessage struct {
	Role string `json:"role"`
	// Content is the message's text; nil leaves it out (an assistant
	// turn that only calls tools).
	Content    *string        `json:"content,omitempty"`
	ToolCalls  []ChatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// Text returns a message with content s.
func Text(role, s string) ChatMessage { return ChatMessage{Role: role, Content: &s} }

// ChatToolCall is a tool call in an assistant message: a function call,
// or (type "custom") a free-form one.
type ChatToolCall struct {
	ID       string            `json:"id"`
	Type     string            `json:"type"`
	Function *ChatFunctionCall `json:"function,omitempty"`
	Custom   *ChatCustomCall   `json:"custom,omitempty"`
}

// ChatFunctionCall names a function and carries its arguments as the
// model wrote them: JSON text, well formed or not.
type ChatFunctionCall struct {
	Name      string `json:"name"`
	Arguments Args   `json:"arguments"`
}

// Args is a function call's arguments: JSON text sent as a string. It
// reads a string, or (from a server that sends them unquoted) any other
// JSON value as its text; it writes a string.
type Args string

// UnmarshalJSON implements json.Unmarshaler.
func (a *Args) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*a = Args(s)
		return nil
	}
	if bytes.Equal(b, []byte("null")) {
		*a = ""
		return nil
	}
	*a = Args(b)
	return nil
}

// ChatCustomCall is a custom tool's call with its free-form input.
type ChatCustomCall struct {
	Name  string `json:"name"`
	Input string `json:"input"`
}

// ChatTool offers the model a function.
type ChatTool struct {
	Type     string       `json:"type"` // "function"
	Function ChatFunction `json:"function"`
}

// ChatFunction is a function's name, description and JSON Schema.
type ChatFunction struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
}

// ResponseFormat asks for a reply that matches a JSON Schema.
type ResponseFormat struct {
	Type       string      `json:"type"` // "json_schema"
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
}

// JSONSchema is a named schema for ResponseFormat.
type JSONSchema struct {
	Name   string `json:"name"`
	Schema any    `json:"schema,omitempty"`
	Strict *bool  `json:"strict,omitempty"`
}

// ChatCompletion is a whole (not streamed) Chat Completions reply.
type ChatCompletion struct {
	ID      string       `json:"id,omitempty"`
	Object  string       `json:"object,omitempty"`
	Created int64        `json:"created,omitempty"`
	Model   string       `json:"model,omitempty"`
	Choices []ChatChoice `json:"choices"`
	Usage   *ChatUsage   `json:"usage,omitempty"`
}

// ChatChoice is one of a reply's choices.
type ChatChoice struct {
	Index        int       `json:"index"`
	Message      ChatReply `json:"message"`
	FinishReason string    `json:"finish_reason"`
}

// ChatReply is the assistant message of a choice.
type ChatReply struct {
	Role      string         `json:"role"`
	Content   Content        `json:"content"`
	Refusal   string         `json:"refusal,omitempty"`
	ToolCalls []ChatToolCall `json:"tool_calls,omitempty"`
}

// ChatUsage counts a reply's tokens.
type ChatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Content is a reply's text. It reads a string, null, or a list of parts
// (as some compatible servers send), whose text parts are joined; it
// writes a string, or null when empty.
type Content string

// UnmarshalJSON implements json.Unmarshaler.
func (c *Content) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*c = ""
		return nil
	case len(b) > 0 && b[0] == '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		var s strings.Builder
		for _, p := range parts {
			if p.Type == "text" || p.Type == "output_text" {
				s.WriteString(p.Text)
			}
		}
		*c = Content(s.String())
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*c = Content(s)
	return nil
}

// MarshalJSON implements json.Marshaler.
func (c Content) MarshalJSON() ([]byte, error) {
	if c == "" {
		return []byte("null"), nil
	}
	return json.Marshal(string(c))
}

// OpenAIError is the body of an OpenAI-style error answer.
type OpenAIError struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		// Code is a string, a number or null.
		Code json.RawMessage `json:"code"`
	} `json:"error"`
}

// CodeText returns the error's code as text ("" when it has none).
func (e *OpenAIError) CodeText() string {
	c := bytes.TrimSpace(e.Error.Code)
	if len(c) == 0 || bytes.Equal(c, []byte("null")) {
		return ""
	}
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s
	}
	return string(c)
}
