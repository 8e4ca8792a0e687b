package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/pikit-go/pikit/target"
)

// anthropicFormat is Anthropic Messages (POST …/v1/messages): content
// blocks, tool_use blocks in assistant turns and tool_result blocks in user
// turns.
type anthropicFormat struct{}

func (anthropicFormat) name() string { return "anthropic_messages" }

// The keys of a message, and of a content block, that parseRequest reads
// (a tool_result's content is read where it is rewritten).
var (
	anthropicMessageKeys = []string{"role", "content"}
	anthropicBlockKeys   = []string{"type", "text", "id", "name", "input", "tool_use_id"}
)

func (anthropicFormat) parseRequest(body object) request {
	req := request{calls: map[string]target.ToolCall{}, model: body.get("model").str(), system: text(body.get("system").decode())}
	req.stream = body.get("stream").isTrue()
	for it := range body.get("messages").elems() {
		m := it.object()
		if !m.ok() {
			continue
		}
		var v [2]value
		m.find(anthropicMessageKeys, v[:])
		role, content := v[0].str(), v[1]
		if content.kind() == '"' {
			if role == "user" && req.user == "" {
				req.user = content.str()
			}
			continue
		}
		for b := range content.elems() {
			block := b.object()
			if !block.ok() {
				continue
			}
			var v [6]value
			block.find(anthropicBlockKeys, v[:])
			typ, txt, useID, name, input, resultID := v[0].str(), v[1], v[2], v[3], v[4], v[5]
			switch typ {
			case "text":
				if role == "user" && req.user == "" {
					req.user = txt.str()
				}
			case "tool_use":
				id := useID.str()
				req.calls[id] = target.ToolCall{ID: id, Name: name.str(), Arguments: input.args()}
			case "tool_result":
				id := resultID.str()
				req.results = append(req.results, resultIn(block, "content", id, req.calls[id].Name, "text"))
			}
		}
	}
	return req
}

func (anthropicFormat) parseResponse(body []byte) reply {
	m, err := decode(body)
	if err != nil {
		return reply{err: fmt.Sprintf("malformed answer: %v", err)}
	}
	if e := obj(m, "error"); e != nil {
		return reply{err: str(e, "message")}
	}
	var r reply
	var texts []string
	for _, b := range list(m, "content") {
		block, _ := b.(map[string]any)
		switch str(block, "type") {
		case "text":
			texts = append(texts, str(block, "text"))
		case "tool_use":
			r.calls = append(r.calls, target.ToolCall{ID: str(block, "id"), Name: str(block, "name"), Arguments: rawArgs(block["input"])})
		}
	}
	r.text = strings.Join(texts, "\n")
	u := obj(m, "usage")
	r.usage = target.Usage{PromptTokens: num(u, "input_tokens"), CompletionTokens: num(u, "output_tokens")}
	return r
}

func (anthropicFormat) newStream() streamReader {
	return &anthropicStream{blocks: map[int]*anthropicBlock{}}
}

type anthropicBlock struct {
	kind string
	text []byte
	call target.ToolCall
	json []byte
}

// anthropicStream assembles a streamed message from its content block
// events.
type anthropicStream struct {
	blocks map[int]*anthropicBlock
	usage  target.Usage
	err    string
}

func (s *anthropicStream) event(name string, data []byte) {
	m, err := decode(data)
	if err != nil {
		s.err = fmt.Sprintf("malformed stream event: %v", err)
		return
	}
	typ := str(m, "type")
	if typ == "" {
		typ = name
	}
	switch typ {
	case "message_start":
		u := obj(obj(m, "message"), "usage")
		s.usage.PromptTokens = num(u, "input_tokens")
	case "content_block_start":
		if len(s.blocks) >= 1024 {
			return
		}
		cb := obj(m, "content_block")
		b := &anthropicBlock{kind: str(cb, "type")}
		b.text = append(b.text, str(cb, "text")...)
		if b.kind == "tool_use" {
			b.call = target.ToolCall{ID: str(cb, "id"), Name: str(cb, "name")}
			if in := obj(cb, "input"); len(in) > 0 {
				b.json = encode(in)
			}
		}
		s.blocks[num(m, "index")] = b
	case "content_block_delta":
		b := s.blocks[num(m, "index")]
		if b == nil {
			return
		}
		d := obj(m, "delta")
		switch str(d, "type") {
		case "text_delta":
			if len(b.text) < maxEventBytes {
				b.text = append(b.text, str(d, "text")...)
			}
		case "input_json_delta":
			if len(b.json) < maxEventBytes {
				b.json = append(b.json, str(d, "partial_json")...)
			}
		}
	case "message_delta":
		if u := obj(m, "usage"); u != nil {
			s.usage.CompletionTokens = num(u, "output_tokens")
		}
	case "error":
		s.err = str(obj(m, "error"), "message")
	}
}

func (s *anthropicStream) reply() reply {
	r := reply{usage: s.usage, err: s.err}
	idx := make([]int, 0, len(s.blocks))
	for i := range s.blocks {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var texts []string
	for _, i := range idx {
		b := s.blocks[i]
		switch b.kind {
		case "text":
			texts = append(texts, string(b.text))
		case "tool_use":
			b.call.Arguments = string(b.json)
			if strings.TrimSpace(b.call.Arguments) == "" {
				b.call.Arguments = "{}"
			}
			r.calls = append(r.calls, b.call)
		}
	}
	r.text = strings.Join(texts, "\n")
	return r
}

func (anthropicFormat) toRequest(body map[string]any) target.Request {
	req := target.Request{System: text(body["system"])}
	if t, ok := body["temperature"].(json.Number); ok {
		if f, err := t.Float64(); err == nil {
			req.Temperature = &f
		}
	}
	for _, it := range list(body, "tools") {
		t, _ := it.(map[string]any)
		if str(t, "name") == "" {
			continue
		}
		req.Tools = append(req.Tools, target.Tool{Name: str(t, "name"), Description: str(t, "description"), Parameters: schema(t["input_schema"])})
	}
	for _, it := range list(body, "messages") {
		m, _ := it.(map[string]any)
		role := str(m, "role")
		if s, ok := m["content"].(string); ok {
			req.Messages = append(req.Messages, target.Message{Role: role, Content: s})
			continue
		}
		msg := target.Message{Role: role}
		var texts []string
		for _, b := range list(m, "content") {
			block, _ := b.(map[string]any)
			switch str(block, "type") {
			case "text":
				texts = append(texts, str(block, "text"))
			case "tool_use":
				msg.ToolCalls = append(msg.ToolCalls, target.ToolCall{ID: str(block, "id"), Name: str(block, "name"), Arguments: rawArgs(block["input"])})
			case "tool_result":
				req.Messages = append(req.Messages, target.Message{Role: target.RoleTool, ToolCallID: str(block, "tool_use_id"), Content: text(block["content"])})
			}
		}
		msg.Content = strings.Join(texts, "\n")
		if msg.Content != "" || len(msg.ToolCalls) > 0 {
			req.Messages = append(req.Messages, msg)
		}
	}
	return req
}

func (anthropicFormat) writeResponse(w http.ResponseWriter, resp target.Response, model string, stream bool) {
	id := fmt.Sprintf("msg_pikit%d", time.Now().UnixNano())
	stop := "end_turn"
	var blocks []map[string]any
	if resp.Text != "" {
		blocks = append(blocks, map[string]any{"type": "text", "text": resp.Text})
	}
	for _, c := range resp.ToolCalls {
		var input any = map[string]any{}
		if m, err := decode([]byte(c.Arguments)); err == nil {
			input = m
		}
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": input})
		stop = "tool_use"
	}
	message := func(content []map[string]any, out int) map[string]any {
		return map[string]any{"id": id, "type": "message", "role": "assistant", "model": model, "content": content,
			"stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": resp.Usage.PromptTokens, "output_tokens": out}}
	}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		w.Write(encode(message(blocks, resp.Usage.CompletionTokens)))
		return
	}
	sse := newSSE(w)
	start := message([]map[string]any{}, 0)
	start["stop_reason"] = nil
	sse.send("message_start", map[string]any{"type": "message_start", "message": start})
	for i, b := range blocks {
		switch b["type"] {
		case "text":
			sse.send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			sse.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		case "tool_use":
			sse.send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			sse.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(encode(b["input"]))}})
		}
		sse.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	sse.send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": resp.Usage.CompletionTokens}})
	sse.send("message_stop", map[string]any{"type": "message_stop"})
}
