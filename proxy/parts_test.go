package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/pikit-go/pikit/matrix"
)

// partsWire is a wire format's tool result made of parts: where the
// parts go in a request, and what its text and image parts look like.
type partsWire struct {
	wire  string
	text  func(s string) any
	image any
	// body builds a request whose read_inbox result (call_a) is content,
	// asking for the model the upstream's spec names (the proxy leaves
	// the model alone).
	body func(content any) []byte
	// result finds that result's content in a request the upstream got.
	result func(t *testing.T, body []byte) any
}

var partsWires = []partsWire{
	{
		wire:  "chat",
		text:  func(s string) any { return map[string]any{"type": "text", "text": s} },
		image: map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,iVBORw0KGgo="}},
		body: func(content any) []byte {
			return mustJSON(map[string]any{"model": "gpt-test", "messages": []any{
				map[string]any{"role": "system", "content": "You are an email assistant."},
				map[string]any{"role": "user", "content": userText},
				map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "call_a", "type": "function",
					"function": map[string]any{"name": "read_inbox", "arguments": "{}"}}}},
				map[string]any{"role": "tool", "tool_call_id": "call_a", "content": content},
			}})
		},
		result: func(t *testing.T, body []byte) any {
			var b struct{ Messages []map[string]any }
			if err := json.Unmarshal(body, &b); err != nil {
				t.Fatal(err)
			}
			return b.Messages[3]["content"]
		},
	},
	{
		wire:  "responses",
		text:  func(s string) any { return map[string]any{"type": "input_text", "text": s} },
		image: map[string]any{"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"},
		body: func(content any) []byte {
			return mustJSON(map[string]any{"model": "gpt-test", "instructions": "You are an email assistant.", "input": []any{
				map[string]any{"role": "user", "content": userText},
				map[string]any{"type": "function_call", "call_id": "call_a", "name": "read_inbox", "arguments": "{}"},
				map[string]any{"type": "function_call_output", "call_id": "call_a", "output": content},
			}})
		},
		result: func(t *testing.T, body []byte) any {
			var b struct{ Input []map[string]any }
			if err := json.Unmarshal(body, &b); err != nil {
				t.Fatal(err)
			}
			return b.Input[2]["output"]
		},
	},
	{
		wire:  "anthropic",
		text:  func(s string) any { return map[string]any{"type": "text", "text": s} },
		image: map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
		body: func(content any) []byte {
			return mustJSON(map[string]any{"model": "claude-test", "max_tokens": 1024, "system": "You are an email assistant.", "messages": []any{
				map[string]any{"role": "user", "content": userText},
				map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": "call_a", "name": "read_inbox", "input": map[string]any{}}}},
				map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "call_a", "content": content}}},
			}})
		},
		result: func(t *testing.T, body []byte) any {
			var b struct{ Messages []map[string]any }
			if err := json.Unmarshal(body, &b); err != nil {
				t.Fatal(err)
			}
			blocks, _ := b.Messages[2]["content"].([]any)
			return blocks[0].(map[string]any)["content"]
		},
	},
}

// TestTaintKeepsParts: a tool result made of parts (text and an image)
// keeps every part that is not its text as the agent sent it; the payload
// is a text part of its own (or goes in the text part, for modes that
// rewrite the text); a clean cell's request goes upstream byte for byte.
func TestTaintKeepsParts(t *testing.T) {
	const marker = "<!--here-->"
	text := inboxText + " " + marker
	for _, pw := range partsWires {
		w := wireNamed(pw.wire)
		cases := []struct {
			name  string
			mode  string
			drive func(*matrix.Drive)
			want  []any // nil: the body unchanged, byte for byte
		}{
			{name: "append", mode: ModeAppend, want: []any{pw.text(text), pw.image, pw.text(delivery)}},
			{name: "prepend", mode: ModePrepend, want: []any{pw.text(delivery), pw.text(text), pw.image}},
			{name: "replace", mode: ModeReplace, want: []any{pw.text(delivery), pw.image}},
			{name: "insert", mode: ModeInsert, want: []any{pw.text(inboxText + " " + marker + "\n" + delivery), pw.image}},
			{name: "clean cell", mode: ModeAppend, drive: func(d *matrix.Drive) { d.Benign, d.Payload, d.Delivery = true, "", "" }},
		}
		for _, tc := range cases {
			t.Run(pw.wire+"/"+tc.name, func(t *testing.T) {
				up := newUpstream(t, func(rw http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
					writeWhole(rw, fixture(t, w.name, "final", false))
				})
				srv, hs := newProxy(t, w.upstreamBase(up.URL))
				d := newDrive(w.spec)
				if tc.drive != nil {
					tc.drive(&d)
				}
				rule := Rule{Tool: "read_*", Mode: tc.mode}
				if tc.mode == ModeInsert {
					rule.Marker = marker
				}
				mustOpen(t, srv, "parts", d, Rules{Taint: []Rule{rule}, Sinks: []string{"send_*"}})
				// The agent's own spacing: a proxy that re-encoded a clean
				// request would change it.
				var sent bytes.Buffer
				if err := json.Indent(&sent, pw.body([]any{pw.text(text), pw.image}), "", " "); err != nil {
					t.Fatal(err)
				}
				resp, b, err := post(t, w.baseFor(hs.URL, "parts")+w.agentPath, sent.Bytes(), nil)
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("%v %v %s", resp, err, b)
				}
				got := up.requests()[0].Body
				if tc.want == nil {
					if !bytes.Equal(got, sent.Bytes()) {
						t.Errorf("a clean cell's request was changed:\n got %s\nwant %s", got, sent.Bytes())
					}
					return
				}
				want := mustJSON(tc.want)
				if gotParts := pw.result(t, got); !reflect.DeepEqual(gotParts, mustDecode(t, want)) {
					t.Errorf("the upstream got\n %s\nwant\n %s", mustJSON(gotParts), want)
				}
			})
		}
	}
}

func mustDecode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}
