package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/pikit-go/pikit/target"
)

// responsesFormat is the OpenAI Responses API (POST …/responses), the
// OpenAI Agents SDK's default: input items instead of messages, tool calls
// and their outputs as items of their own.
type responsesFormat struct{}

func (responsesFormat) name() string { return "openai_responses" }

// responsesItemKeys are the keys of an input item parseRequest reads
// (a function_call_output's output is read where it is rewritten).
var responsesItemKeys = []string{"type", "call_id", "name", "arguments", "role", "content"}

func (responsesFormat) parseRequest(body object) request {
	req := request{calls: map[string]target.ToolCall{}, model: body.get("model").str(), system: body.get("instructions").str()}
	req.stream = body.get("stream").isTrue()
	input := body.get("input")
	if input.kind() == '"' {
		req.user = input.str()
		return req
	}
	for it := range input.elems() {
		m := it.object()
		if !m.ok() {
			continue
		}
		var v [6]value
		m.find(responsesItemKeys, v[:])
		typ, callID, name, args, role, content := v[0].str(), v[1], v[2], v[3], v[4], v[5]
		switch {
		case typ == "function_call":
			id := callID.str()
			req.calls[id] = target.ToolCall{ID: id, Name: name.str(), Arguments: args.args()}
		case typ == "function_call_output":
			id := callID.str()
			req.results = append(req.results, resultIn(m, "output", id, req.calls[id].Name, "input_text"))
		case typ == "" || typ == "message":
			switch role.str() {
			case "user":
				if req.user == "" {
					req.user = text(content.decode())
				}
			case "system", "developer":
				req.system = joinText(req.system, text(content.decode()))
			}
		}
	}
	return req
}

// output reads the output items of a response object.
func (responsesFormat) output(resp map[string]any) reply {
	var r reply
	for _, it := range list(resp, "output") {
		r.add(it)
	}
	u := obj(resp, "usage")
	r.usage = target.Usage{PromptTokens: num(u, "input_tokens"), CompletionTokens: num(u, "output_tokens")}
	if e := obj(resp, "error"); e != nil {
		r.err = str(e, "message")
	}
	return r
}

// add reads one output item into r.
func (r *reply) add(it any) {
	m, _ := it.(map[string]any)
	switch str(m, "type") {
	case "message":
		if t := text(m["content"]); t != "" {
			if r.text != "" {
				r.text += "\n"
			}
			r.text += t
		}
	case "function_call":
		r.calls = append(r.calls, target.ToolCall{ID: str(m, "call_id"), Name: str(m, "name"), Arguments: rawArgs(m["arguments"])})
	}
}

func (f responsesFormat) parseResponse(body []byte) reply {
	m, err := decode(body)
	if err != nil {
		return reply{err: fmt.Sprintf("malformed answer: %v", err)}
	}
	return f.output(m)
}

func (responsesFormat) newStream() streamReader { return &responsesStream{} }

// responsesStream reads a streamed response: the final response object
// (response.completed) says it all; the items done before it, and the
// text deltas, stand in when the stream breaks first.
type responsesStream struct {
	final *reply
	items reply
	delta []byte
	err   string
	// open are the function calls begun and not yet done, by item id, in
	// the order they began: a stream that breaks inside one still shows
	// what the model was calling.
	open  map[string]*target.ToolCall
	order []string
}

func (s *responsesStream) event(name string, data []byte) {
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
	case "response.completed", "response.incomplete", "response.failed":
		r := responsesFormat{}.output(obj(m, "response"))
		s.final = &r
	case "response.output_item.added":
		it := obj(m, "item")
		if str(it, "type") != "function_call" || len(s.open) >= 1024 {
			return
		}
		if s.open == nil {
			s.open = map[string]*target.ToolCall{}
		}
		id := str(it, "id")
		s.open[id] = &target.ToolCall{ID: str(it, "call_id"), Name: str(it, "name"), Arguments: str(it, "arguments")}
		s.order = append(s.order, id)
	case "response.function_call_arguments.delta":
		if c := s.open[str(m, "item_id")]; c != nil && len(c.Arguments) < maxEventBytes {
			c.Arguments += str(m, "delta")
		}
	case "response.function_call_arguments.done":
		if c := s.open[str(m, "item_id")]; c != nil {
			c.Arguments = str(m, "arguments")
		}
	case "response.output_item.done":
		s.items.add(m["item"])
		delete(s.open, str(obj(m, "item"), "id"))
	case "response.output_text.delta":
		if d, ok := m["delta"].(string); ok && len(s.delta) < maxEventBytes {
			s.delta = append(s.delta, d...)
		}
	case "error":
		s.err = str(m, "message")
		if e := obj(m, "error"); e != nil {
			s.err = str(e, "message")
		}
	}
}

func (s *responsesStream) reply() reply {
	var r reply
	switch {
	case s.final != nil:
		r = *s.final
	default:
		r = s.items
		if r.text == "" {
			r.text = string(s.delta)
		}
		for _, id := range s.order {
			if c := s.open[id]; c != nil {
				r.calls = append(r.calls, *c)
			}
		}
	}
	if r.err == "" {
		r.err = s.err
	}
	return r
}

func (responsesFormat) toRequest(body map[string]any) target.Request {
	req := target.Request{System: str(body, "instructions")}
	if t, ok := body["temperature"].(json.Number); ok {
		if f, err := t.Float64(); err == nil {
			req.Temperature = &f
		}
	}
	for _, it := range list(body, "tools") {
		t, _ := it.(map[string]any)
		if str(t, "type") != "function" {
			continue
		}
		req.Tools = append(req.Tools, target.Tool{Name: str(t, "name"), Description: str(t, "description"), Parameters: schema(t["parameters"])})
	}
	if s, ok := body["input"].(string); ok {
		req.Messages = append(req.Messages, target.Message{Role: target.RoleUser, Content: s})
		return req
	}
	for _, it := range list(body, "input") {
		m, _ := it.(map[string]any)
		switch typ := str(m, "type"); typ {
		case "function_call":
			call := target.ToolCall{ID: str(m, "call_id"), Name: str(m, "name"), Arguments: rawArgs(m["arguments"])}
			if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == target.RoleAssistant {
				req.Messages[n-1].ToolCalls = append(req.Messages[n-1].ToolCalls, call)
			} else {
				req.Messages = append(req.Messages, target.Message{Role: target.RoleAssistant, ToolCalls: []target.ToolCall{call}})
			}
		case "function_call_output":
			req.Messages = append(req.Messages, target.Message{Role: target.RoleTool, ToolCallID: str(m, "call_id"), Content: text(m["output"])})
		case "", "message":
			switch str(m, "role") {
			case "system", "developer":
				req.System = joinText(req.System, text(m["content"]))
			case "user":
				req.Messages = append(req.Messages, target.Message{Role: target.RoleUser, Content: text(m["content"])})
			case "assistant":
				req.Messages = append(req.Messages, target.Message{Role: target.RoleAssistant, Content: text(m["content"])})
			}
		}
	}
	return req
}

func (responsesFormat) writeResponse(w http.ResponseWriter, resp target.Response, model string, stream bool) {
	now := time.Now()
	id := fmt.Sprintf("resp_pikit%d", now.UnixNano())
	var items []any
	if resp.Text != "" || len(resp.ToolCalls) == 0 {
		items = append(items, map[string]any{
			"type": "message", "id": "msg_" + id, "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": resp.Text, "annotations": []any{}}},
		})
	}
	for i, c := range resp.ToolCalls {
		items = append(items, map[string]any{
			"type": "function_call", "id": fmt.Sprintf("fc_%s_%d", id, i), "call_id": c.ID,
			"name": c.Name, "arguments": c.Arguments, "status": "completed",
		})
	}
	response := func(status string, output []any) map[string]any {
		r := map[string]any{
			"id": id, "object": "response", "created_at": now.Unix(), "status": status, "model": model,
			"output": output, "parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
			"error": nil, "incomplete_details": nil, "instructions": nil, "metadata": map[string]any{},
			"temperature": nil, "top_p": nil, "text": map[string]any{"format": map[string]any{"type": "text"}},
		}
		if status == "completed" {
			r["usage"] = map[string]any{
				"input_tokens": resp.Usage.PromptTokens, "output_tokens": resp.Usage.CompletionTokens,
				"total_tokens":         resp.Usage.PromptTokens + resp.Usage.CompletionTokens,
				"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			}
		}
		return r
	}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		w.Write(encode(response("completed", items)))
		return
	}
	sse := newSSE(w)
	seq := 0
	send := func(typ string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		sse.send(typ, fields)
	}
	send("response.created", map[string]any{"response": response("in_progress", []any{})})
	send("response.in_progress", map[string]any{"response": response("in_progress", []any{})})
	for i, it := range items {
		item := it.(map[string]any)
		if item["type"] == "message" {
			empty := map[string]any{"type": "message", "id": item["id"], "status": "in_progress", "role": "assistant", "content": []any{}}
			send("response.output_item.added", map[string]any{"output_index": i, "item": empty})
			part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
			send("response.content_part.added", map[string]any{"item_id": item["id"], "output_index": i, "content_index": 0, "part": part})
			send("response.output_text.delta", map[string]any{"item_id": item["id"], "output_index": i, "content_index": 0, "delta": resp.Text, "logprobs": []any{}})
			send("response.output_text.done", map[string]any{"item_id": item["id"], "output_index": i, "content_index": 0, "text": resp.Text, "logprobs": []any{}})
			send("response.content_part.done", map[string]any{"item_id": item["id"], "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": resp.Text, "annotations": []any{}}})
		} else {
			start := map[string]any{}
			for k, v := range item {
				start[k] = v
			}
			start["arguments"], start["status"] = "", "in_progress"
			send("response.output_item.added", map[string]any{"output_index": i, "item": start})
			send("response.function_call_arguments.delta", map[string]any{"item_id": item["id"], "output_index": i, "delta": item["arguments"]})
			send("response.function_call_arguments.done", map[string]any{"item_id": item["id"], "output_index": i, "arguments": item["arguments"]})
		}
		send("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	send("response.completed", map[string]any{"response": response("completed", items)})
}
