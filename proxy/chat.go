package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/pikit-go/pikit/target"
	api "github.com/pikit-go/pikit/wire"
)

// chatFormat is OpenAI Chat Completions (POST …/chat/completions), which
// most OpenAI-compatible servers also speak.
type chatFormat struct{}

func (chatFormat) name() string { return "openai_chat" }

// chatMessageKeys are the keys of a message parseRequest reads.
var chatMessageKeys = []string{"role", "content", "tool_calls"}

func (chatFormat) parseRequest(body object) request {
	req := request{calls: map[string]target.ToolCall{}, model: body.get("model").str()}
	req.stream = body.get("stream").isTrue()
	for it := range body.get("messages").elems() {
		m := it.object()
		if !m.ok() {
			continue
		}
		var v [3]value
		m.find(chatMessageKeys, v[:])
		role, content, toolCalls := v[0], v[1], v[2]
		switch role.str() {
		case "system", "developer":
			req.system = joinText(req.system, text(content.decode()))
		case "user":
			if req.user == "" {
				req.user = text(content.decode())
			}
		case "assistant":
			for c := range toolCalls.elems() {
				cm := c.object()
				fn := cm.get("function").object()
				if id := cm.get("id").str(); id != "" {
					req.calls[id] = target.ToolCall{ID: id, Name: fn.get("name").str(), Arguments: fn.get("arguments").args()}
				}
			}
		case "tool":
			id := m.get("tool_call_id").str()
			req.results = append(req.results, resultIn(m, "content", id, req.calls[id].Name, "text"))
		}
	}
	return req
}

func (chatFormat) parseResponse(body []byte) reply {
	m, err := decode(body)
	if err != nil {
		return reply{err: fmt.Sprintf("malformed answer: %v", err)}
	}
	if e := obj(m, "error"); e != nil {
		return reply{err: str(e, "message")}
	}
	var r reply
	if ch := list(m, "choices"); len(ch) > 0 {
		c, _ := ch[0].(map[string]any)
		msg := obj(c, "message")
		r.text = text(msg["content"])
		for _, tc := range list(msg, "tool_calls") {
			cm, _ := tc.(map[string]any)
			fn := obj(cm, "function")
			r.calls = append(r.calls, target.ToolCall{ID: str(cm, "id"), Name: str(fn, "name"), Arguments: rawArgs(fn["arguments"])})
		}
	}
	u := obj(m, "usage")
	r.usage = target.Usage{PromptTokens: num(u, "prompt_tokens"), CompletionTokens: num(u, "completion_tokens")}
	return r
}

func (chatFormat) newStream() streamReader { return &chatStream{calls: map[int]*target.ToolCall{}} }

// chatStream assembles a streamed chat completion: text deltas, and tool
// calls whose id and name come first and whose arguments come in pieces,
// each under its index.
type chatStream struct {
	text  []byte
	calls map[int]*target.ToolCall
	usage target.Usage
	err   string
}

func (s *chatStream) event(_ string, data []byte) {
	if string(data) == "[DONE]" {
		return
	}
	m, err := decode(data)
	if err != nil {
		s.err = fmt.Sprintf("malformed stream event: %v", err)
		return
	}
	if e := obj(m, "error"); e != nil {
		s.err = str(e, "message")
		return
	}
	if u := obj(m, "usage"); u != nil {
		s.usage = target.Usage{PromptTokens: num(u, "prompt_tokens"), CompletionTokens: num(u, "completion_tokens")}
	}
	for _, it := range list(m, "choices") {
		c, _ := it.(map[string]any)
		d := obj(c, "delta")
		if t, ok := d["content"].(string); ok && len(s.text) < maxEventBytes {
			s.text = append(s.text, t...)
		}
		for _, tc := range list(d, "tool_calls") {
			cm, _ := tc.(map[string]any)
			i := num(cm, "index")
			call := s.calls[i]
			if call == nil {
				if len(s.calls) >= 1024 {
					continue
				}
				call = &target.ToolCall{}
				s.calls[i] = call
			}
			if id := str(cm, "id"); id != "" {
				call.ID = id
			}
			fn := obj(cm, "function")
			if n := str(fn, "name"); n != "" {
				call.Name += n
			}
			if a, ok := fn["arguments"].(string); ok && len(call.Arguments) < maxEventBytes {
				call.Arguments += a
			}
		}
	}
}

func (s *chatStream) reply() reply {
	r := reply{text: string(s.text), usage: s.usage, err: s.err}
	idx := make([]int, 0, len(s.calls))
	for i := range s.calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		r.calls = append(r.calls, *s.calls[i])
	}
	return r
}

func (chatFormat) toRequest(body map[string]any) target.Request {
	var req target.Request
	if t, ok := body["temperature"].(json.Number); ok {
		if f, err := t.Float64(); err == nil {
			req.Temperature = &f
		}
	}
	for _, it := range list(body, "tools") {
		t, _ := it.(map[string]any)
		fn := obj(t, "function")
		if fn == nil {
			continue
		}
		req.Tools = append(req.Tools, target.Tool{Name: str(fn, "name"), Description: str(fn, "description"), Parameters: schema(fn["parameters"])})
	}
	for _, it := range list(body, "messages") {
		m, _ := it.(map[string]any)
		switch role := str(m, "role"); role {
		case "system", "developer":
			req.System = joinText(req.System, text(m["content"]))
		case "user":
			req.Messages = append(req.Messages, target.Message{Role: target.RoleUser, Content: text(m["content"])})
		case "assistant":
			msg := target.Message{Role: target.RoleAssistant, Content: text(m["content"])}
			for _, tc := range list(m, "tool_calls") {
				cm, _ := tc.(map[string]any)
				fn := obj(cm, "function")
				msg.ToolCalls = append(msg.ToolCalls, target.ToolCall{ID: str(cm, "id"), Name: str(fn, "name"), Arguments: rawArgs(fn["arguments"])})
			}
			req.Messages = append(req.Messages, msg)
		case "tool":
			req.Messages = append(req.Messages, target.Message{Role: target.RoleTool, ToolCallID: str(m, "tool_call_id"), Content: text(m["content"])})
		}
	}
	return req
}

func (chatFormat) writeResponse(w http.ResponseWriter, resp target.Response, model string, stream bool) {
	id := fmt.Sprintf("chatcmpl-pikit-%d", time.Now().UnixNano())
	created := time.Now().Unix()
	finish := "stop"
	if len(resp.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	usage := api.ChatUsage{PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens, TotalTokens: resp.Usage.PromptTokens + resp.Usage.CompletionTokens}
	if !stream {
		msg := api.ChatReply{Role: "assistant", Content: api.Content(resp.Text)}
		for _, c := range resp.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, api.ChatToolCall{ID: c.ID, Type: "function", Function: &api.ChatFunctionCall{Name: c.Name, Arguments: api.Args(c.Arguments)}})
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(encode(api.ChatCompletion{
			ID: id, Object: "chat.completion", Created: created, Model: model,
			Choices: []api.ChatChoice{{Index: 0, Message: msg, FinishReason: finish}},
			Usage:   &usage,
		}))
		return
	}
	sse := newSSE(w)
	chunk := func(delta map[string]any, finishReason any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finishReason}}}
	}
	sse.send("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	if resp.Text != "" {
		sse.send("", chunk(map[string]any{"content": resp.Text}, nil))
	}
	for i, c := range resp.ToolCalls {
		sse.send("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil))
		sse.send("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": c.Arguments}}}}, nil))
	}
	last := chunk(map[string]any{}, finish)
	last["usage"] = usage
	sse.send("", last)
	sse.send("", []byte("[DONE]"))
}
