package proxy

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/pikit-go/pikit/target"
)

// A format is one model API's wire format: how its requests carry tool
// results, and how its answers (whole or streamed) carry text and tool
// calls. The local side (decode a request into a target.Request, write a
// target.Response back) lets a local target such as mock:obedient answer
// in the agent's own format.
type format interface {
	name() string
	// parseRequest finds what the proxy reads and rewrites in a request
	// body, decoding only that (see rawjson.go).
	parseRequest(body object) request
	// parseResponse reads a whole (non-streamed) answer.
	parseResponse(body []byte) reply
	// newStream returns a reader of a streamed answer's events.
	newStream() streamReader
	// toRequest turns a decoded request into pikit's own.
	toRequest(body map[string]any) target.Request
	// writeResponse answers in the format, streamed or whole.
	writeResponse(w http.ResponseWriter, resp target.Response, model string, stream bool)
}

// request is what the proxy found in a request body.
type request struct {
	stream bool
	model  string
	// user is the conversation's first user message: the trusted request
	// that defenses restate.
	user string
	// system is the agent's system prompt (its system and developer
	// messages, instructions or system blocks), "" when it sent none.
	system string
	// calls are the tool calls in the history, by call id.
	calls map[string]target.ToolCall
	// results are the tool results, in order.
	results []toolResult
}

// toolResult is one tool result in a request, with a way to change it.
type toolResult struct {
	callID string
	name   string // from the request's own history; "" when not there
	text   string // its text: the string, or its text parts joined
	// content is the result as the agent sent it: a string, a list of
	// parts (text, images, files), or nil.
	content any
	// parts are the bytes of each part of a list, as the agent sent
	// them: a part the proxy does not rewrite goes upstream as they are.
	parts [][]byte
	// partType is the type of the format's text parts ("text",
	// "input_text"), for a part the proxy adds.
	partType string
	set      func(any)
}

// resultIn reads the tool result that o holds under key (a tool message's
// content, a function_call_output's output, a tool_result block's
// content), to be rewritten in place.
func resultIn(o object, key, callID, name, partType string) toolResult {
	v := o.get(key)
	r := toolResult{callID: callID, name: name, partType: partType}
	if v.kind() == '[' {
		// Each part on its own, to keep its bytes.
		var parts []any
		for p := range v.elems() {
			parts = append(parts, p.decode())
			r.parts = append(r.parts, p.raw())
		}
		r.content = parts
	} else {
		r.content = v.decode()
	}
	r.text = text(r.content)
	r.set = func(c any) { o.set(key, encodeContent(c)) }
	return r
}

// encodeContent writes a tool result's new content: a part kept as the
// agent sent it (a json.RawMessage) is written as its bytes, the rest as
// encode writes them.
func encodeContent(c any) []byte {
	parts, ok := c.([]any)
	if !ok {
		return encode(c)
	}
	out := []byte{'['}
	for i, p := range parts {
		if i > 0 {
			out = append(out, ',')
		}
		if raw, ok := p.(json.RawMessage); ok {
			out = append(out, raw...)
		} else {
			out = append(out, encode(p)...)
		}
	}
	return append(out, ']')
}

// replace makes the result's text read text instead of r.text. A string
// result becomes text. A result made of parts keeps every part that is
// not text as it was: a paragraph added after the text (append; a
// defense's closing words) or before it (prepend) becomes a text part of
// its own there, as does any text given to a result without one; text
// rewritten otherwise (replace, insert, a channel's carrier, a defense
// that marks the text) goes in the first text part, and the other text
// parts go.
func (r *toolResult) replace(text string) {
	parts, ok := r.content.([]any)
	if !ok {
		r.set(text)
		return
	}
	var texts []int // the parts text() reads
	for i, p := range parts {
		if m, ok := p.(map[string]any); ok {
			if _, ok := m["text"].(string); ok {
				texts = append(texts, i)
			}
		}
	}
	typ := r.partType
	if len(texts) > 0 {
		if t := str(parts[texts[0]].(map[string]any), "type"); t != "" {
			typ = t
		}
	}
	part := func(s string) any { return map[string]any{"type": typ, "text": s} }
	// keep is a part that stays as it was: its bytes, when known.
	keep := func(i int) any {
		if i < len(r.parts) {
			return json.RawMessage(r.parts[i])
		}
		return parts[i]
	}
	out := make([]any, 0, len(parts)+1)
	keepAll := func() {
		for i := range parts {
			out = append(out, keep(i))
		}
	}
	switch old := r.text; {
	case old == "":
		keepAll()
		out = append(out, part(text))
	case strings.HasPrefix(text, old+"\n\n"):
		keepAll()
		out = append(out, part(text[len(old)+2:]))
	case strings.HasSuffix(text, "\n\n"+old):
		out = append(out, part(text[:len(text)-len(old)-2]))
		keepAll()
	default:
		for i, p := range parts {
			switch {
			case i == texts[0]:
				m := maps.Clone(p.(map[string]any))
				m["text"] = text
				out = append(out, m)
			case slices.Contains(texts[1:], i):
			default:
				out = append(out, keep(i))
			}
		}
	}
	r.set(out)
}

// reply is what the proxy read in a model's answer.
type reply struct {
	text  string
	calls []target.ToolCall
	usage target.Usage
	err   string // an error the API reported
}

// streamReader reads the events of a streamed answer as they pass.
type streamReader interface {
	event(name string, data []byte)
	reply() reply
}

// formatFor picks the format of a request from its path, nil for a request
// the proxy passes through untouched.
func formatFor(method, path string) format {
	if method != http.MethodPost {
		return nil
	}
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		return chatFormat{}
	case strings.HasSuffix(path, "/responses"):
		return responsesFormat{}
	case strings.HasSuffix(path, "/messages"):
		return anthropicFormat{}
	}
	return nil
}

// text reads a content value as text: a string, or the text of a list of
// parts ({"type": "text", "text": ...}, "input_text", "output_text").
func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var b strings.Builder
		for _, p := range x {
			m, ok := p.(map[string]any)
			if !ok {
				continue
			}
			if s, ok := m["text"].(string); ok {
				if b.Len() > 0 {
					b.WriteByte('\n')
				}
				b.WriteString(s)
			}
		}
		return b.String()
	}
	return ""
}

// joinText adds b to a as a paragraph of its own.
func joinText(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "\n\n" + b
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func obj(m map[string]any, k string) map[string]any {
	o, _ := m[k].(map[string]any)
	return o
}

func list(m map[string]any, k string) []any {
	l, _ := m[k].([]any)
	return l
}

func num(m map[string]any, k string) int {
	switch x := m[k].(type) {
	case json.Number:
		n, _ := x.Int64()
		return int(n)
	case float64:
		return int(x)
	}
	return 0
}

// decode reads a JSON object keeping numbers exact.
func decode(b []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// encode writes JSON without escaping <, > and &, as the agent sent it.
func encode(v any) []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}

// rawArgs gives a tool call's arguments as JSON text, whatever form the
// format uses (a string of JSON, or an object).
func rawArgs(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return "{}"
	}
	return string(encode(v))
}

// schema returns a tool's parameters, an empty object schema when absent.
func schema(v any) map[string]any {
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return map[string]any{"type": "object", "properties": map[string]any{}}
}

// nameResults fills in the tool name of each tool message from the call it
// answers, as pikit's targets expect.
func nameResults(req target.Request) target.Request {
	names := map[string]string{}
	for i, m := range req.Messages {
		for _, c := range m.ToolCalls {
			names[c.ID] = c.Name
		}
		if m.Role == target.RoleTool && m.Name == "" {
			req.Messages[i].Name = names[m.ToolCallID]
		}
	}
	return req
}
