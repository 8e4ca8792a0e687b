package wire

import (
	"encoding/json"
	"fmt"
)

// MessagesRequest is an Anthropic Messages request body.
type MessagesRequest struct {
	Model       string             `json:"model"`
	MaxTokens   int                `json:"max_tokens"`
	System      []Block            `json:"system,omitempty"`
	Messages    []AnthropicMessage `json:"messages"`
	Tools       []AnthropicTool    `json:"tools,omitempty"`
	Temperature *float64           `json:"temperature,omitempty"`
	Stream      bool               `json:"stream,omitempty"`
}

// AnthropicMessage is one turn: its role ("user" or "assistant") and its
// blocks.
type AnthropicMessage struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// Block is a content block: text, tool_use (a call), or tool_result (a
// call's result, with blocks of its own). Each type is written with the
// fields the API requires of it.
type Block struct {
	Type string `json:"type"`
	Text string `json:"text"`
	// tool_use
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// tool_result
	ToolUseID string  `json:"tool_use_id"`
	Content   []Block `json:"content"`
}

// TextBlock returns a text block.
func TextBlock(s string) Block { return Block{Type: "text", Text: s} }

// MarshalJSON writes the fields of the block's type.
func (b Block) MarshalJSON() ([]byte, error) {
	switch b.Type {
	case "text":
		return json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{b.Type, b.Text})
	case "tool_use":
		input := b.Input
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		return json.Marshal(struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}{b.Type, b.ID, b.Name, input})
	case "tool_result":
		return json.Marshal(struct {
			Type      string  `json:"type"`
			ToolUseID string  `json:"tool_use_id"`
			Content   []Block `json:"content,omitempty"`
		}{b.Type, b.ToolUseID, b.Content})
	}
	return nil, fmt.Errorf("wire: content block of type %q", b.Type)
}

// AnthropicTool offers the model a tool.
type AnthropicTool struct {
	Name        string      `json:"name"`
	Description string      `json:"description,omitempty"`
	InputSchema InputSchema `json:"input_schema"`
}

// InputSchema is a tool's JSON Schema, which the API wants as an object
// with its properties and required names split out; Extra holds the
// schema's other keywords.
type InputSchema struct {
	Properties any
	Required   []string
	Extra      map[string]any
}

// MarshalJSON writes the schema as one object of type "object".
func (s InputSchema) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(s.Extra)+3)
	for k, v := range s.Extra {
		m[k] = v
	}
	m["type"] = "object"
	props := s.Properties
	if props == nil {
		props = map[string]any{}
	}
	m["properties"] = props
	if s.Required != nil {
		m["required"] = s.Required
	}
	return json.Marshal(m)
}

// AnthropicReply is a whole (not streamed) Messages reply.
type AnthropicReply struct {
	ID    string `json:"id,omitempty"`
	Type  string `json:"type,omitempty"` // "message"
	Role  string `json:"role,omitempty"`
	Model string `json:"model,omitempty"`
	// Content is nil when the reply has none (or null).
	Content    []ReplyBlock `json:"content"`
	StopReason string       `json:"stop_reason"`
	Usage      struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

// ReplyBlock is a block of a reply, as pikit reads it: text, or a
// tool_use call whose input is kept as sent (an object, or a string from
// a model that wrote its arguments as text). Blocks of other types
// (thinking, a server tool's result) are read without their content.
type ReplyBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

// AnthropicError is the body of an Anthropic error answer.
type AnthropicError struct {
	Type  string `json:"type"` // "error"
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}
