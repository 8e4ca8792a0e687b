package wire

import (
	"encoding/json"
	"testing"
)

func TestContent(t *testing.T) {
	for in, want := range map[string]string{
		`"hello"`: "hello",
		`null`:    "",
		`""`:      "",
		`[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}},{"type":"output_text","text":"b"}]`: "ab",
		`[]`: "",
	} {
		var c Content
		if err := json.Unmarshal([]byte(in), &c); err != nil || string(c) != want {
			t.Errorf("Content from %s = %q, %v; want %q", in, c, err, want)
		}
	}
	for _, bad := range []string{`42`, `{"a":1}`, `[1,2]`} {
		var c Content
		if err := json.Unmarshal([]byte(bad), &c); err == nil {
			t.Errorf("Content from %s = %q, want an error", bad, c)
		}
	}
	for c, want := range map[Content]string{"": `null`, "hi \"there\"": `"hi \"there\""`} {
		if b, err := json.Marshal(c); err != nil || string(b) != want {
			t.Errorf("Content %q encodes as %s, %v; want %s", c, b, err, want)
		}
	}
}

func TestArgs(t *testing.T) {
	for in, want := range map[string]string{
		`"{\"to\":\"x\"}"`:   `{"to":"x"}`,
		`"{\"to\": \"x\", "`: `{"to": "x", `, // malformed text kept as sent
		`{"to":"x"}`:         `{"to":"x"}`,   // a server that sends an object
		`null`:               "",
	} {
		var a Args
		if err := json.Unmarshal([]byte(in), &a); err != nil || string(a) != want {
			t.Errorf("Args from %s = %q, %v; want %q", in, a, err, want)
		}
	}
	if b, _ := json.Marshal(ChatFunctionCall{Name: "f", Arguments: `{"a":1}`}); string(b) != `{"name":"f","arguments":"{\"a\":1}"}` {
		t.Errorf("a call encodes as %s", b)
	}
}

func TestOpenAIErrorCode(t *testing.T) {
	for body, want := range map[string]string{
		`{"error":{"message":"m","code":"rate_limit_exceeded"}}`: "rate_limit_exceeded",
		`{"error":{"message":"m","code":429}}`:                   "429",
		`{"error":{"message":"m","code":null}}`:                  "",
		`{"error":{"message":"m"}}`:                              "",
	} {
		var e OpenAIError
		if err := json.Unmarshal([]byte(body), &e); err != nil || e.CodeText() != want {
			t.Errorf("%s: code %q, %v; want %q", body, e.CodeText(), err, want)
		}
	}
}

func TestBlock(t *testing.T) {
	tests := []struct {
		b    Block
		want string
	}{
		{TextBlock(""), `{"type":"text","text":""}`},
		{TextBlock("hi"), `{"type":"text","text":"hi"}`},
		{Block{Type: "tool_use", ID: "t1", Name: "f"}, `{"type":"tool_use","id":"t1","name":"f","input":{}}`},
		{Block{Type: "tool_use", ID: "t1", Name: "f", Input: json.RawMessage(`{"a":1}`)}, `{"type":"tool_use","id":"t1","name":"f","input":{"a":1}}`},
		{Block{Type: "tool_result", ToolUseID: "t1"}, `{"type":"tool_result","tool_use_id":"t1"}`},
		{Block{Type: "tool_result", ToolUseID: "t1", Content: []Block{TextBlock("ok")}}, `{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"ok"}]}`},
	}
	for _, tt := range tests {
		if b, err := json.Marshal(tt.b); err != nil || string(b) != tt.want {
			t.Errorf("%+v encodes as %s, %v; want %s", tt.b, b, err, tt.want)
		}
	}
	if _, err := json.Marshal(Block{Type: "image"}); err == nil {
		t.Error("a block of an unknown type encoded")
	}
}

func TestInputSchema(t *testing.T) {
	tests := []struct {
		s    InputSchema
		want string
	}{
		{InputSchema{}, `{"properties":{},"type":"object"}`},
		{InputSchema{Properties: map[string]any{"to": map[string]any{"type": "string"}}, Required: []string{"to"}},
			`{"properties":{"to":{"type":"string"}},"required":["to"],"type":"object"}`},
		{InputSchema{Extra: map[string]any{"additionalProperties": false, "type": "array"}},
			`{"additionalProperties":false,"properties":{},"type":"object"}`},
	}
	for _, tt := range tests {
		if b, err := json.Marshal(tt.s); err != nil || string(b) != tt.want {
			t.Errorf("%+v encodes as %s, %v; want %s", tt.s, b, err, tt.want)
		}
	}
}

func TestAnthropicReplyContent(t *testing.T) {
	var r AnthropicReply
	if err := json.Unmarshal([]byte(`{"content":null,"stop_reason":"end_turn"}`), &r); err != nil || r.Content != nil {
		t.Errorf("null content: %v, %v", r.Content, err)
	}
	body := `{"content":[{"type":"web_search_tool_result","tool_use_id":"s","content":{"error_code":"x"}},{"type":"tool_use","id":"t","name":"f","input":"{\"a\":"}],"usage":{"input_tokens":1,"output_tokens":2}}`
	if err := json.Unmarshal([]byte(body), &r); err != nil || len(r.Content) != 2 || string(r.Content[1].Input) != `"{\"a\":"` || r.Usage.OutputTokens != 2 {
		t.Errorf("reply %+v, %v", r, err)
	}
}
