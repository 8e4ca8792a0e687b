package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pikit-go/pikit/target"
)

// rewriteOnce has a session of w's spec (taint read_* by appending) read
// and rewrite body, as the proxy does before it forwards it, and returns
// what would go upstream.
func rewriteOnce(t *testing.T, w *wire, body string) (string, error) {
	t.Helper()
	s := mustOpen(t, &Server{}, "raw", newDrive(w.spec), sinkRules())
	_, model, _ := target.ParseSpec(w.spec)
	pieces, _, err := s.rewrite(formatFor(http.MethodPost, w.upPath), []byte(body), model)
	return string(bytes.Join(pieces, nil)), err
}

// quoted is s as a JSON string.
func quoted(s string) string { return string(encode(s)) }

// bigTools is a large tools array as an agent might write it, with
// numbers encoding/json would not write back the same (1.0e2, -0.0,
// integers past 2⁵³, 1E+400, which is no float64) and keys out of order.
func bigTools(n int) string {
	var b strings.Builder
	b.WriteString("[\n")
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `  {"type": "function", "function": {"parameters": {"type": "object", "properties": {"n": {"type": "number", "maximum": 1.0e2, "minimum": -0.0, "default": 12345678901234567890, "huge": 1E+400}}}, "name": "tool_%d", "description": "Tool %d <b>&amp;</b> caf\u00e9"}}`, i, i)
	}
	b.WriteString("\n]")
	return b.String()
}

// vendor is a field no API of the proxy's defines.
const vendor = `{"trace_id": "abc", "weights": [1.0e2, 12345678901234567890, -0.0, 1E+400], "html": "<b>&amp;</b>", "esc": "caf\u00e9 \ud83d\ude00 \/", "nested": {"z": 1, "a": [true, false, null]}}`

// untouchedBodies are a second turn in each format, with INBOX where the
// tool result goes and the agent's model; everything else is bytes the
// proxy must pass on as they are.
var untouchedBodies = map[string]string{
	"chat": `{
  "model" : "gpt-agent",
  "x_vendor": ` + vendor + `,
  "messages": [
    {"role": "system", "content": "You are an email assistant."},
    {"role": "user", "content": "Summarise my inbox."},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read_inbox", "arguments": "{\"folder\": \"inbox\"}"}}]},
    {"tool_call_id": "call_1", "content": INBOX, "role": "tool"}
  ],
  "tools": TOOLS,
  "temperature": 0.10000000000000001,
  "seed": 12345678901234567890
}
`,
	"responses": `{"input":[{"role":"user","content":"Summarise my inbox.","x_item":1.0e2},` +
		`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"read_inbox","arguments":"{\"folder\": \"inbox\"}"},` +
		`{"type":"function_call_output","call_id":"call_1","output":INBOX}],` +
		`"model":"gpt-agent","instructions":"You are an email assistant.","x_vendor":` + vendor + `,"tools":TOOLS,"store":false}`,
	"anthropic": `{"max_tokens": 1024, "model": "claude-agent", "system": [{"type": "text", "text": "You are an email assistant.", "cache_control": {"type": "ephemeral"}}],
	"messages": [{"role": "user", "content": "Summarise my inbox."},
		{"role": "assistant", "content": [{"type": "tool_use", "id": "call_1", "name": "read_inbox", "input": {"folder": "inbox", "limit": 1.0e2}}]},
		{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": INBOX, "is_error": false}]}],
	"x_vendor": ` + vendor + `, "tools": TOOLS}`,
}

// TestUntouchedBytes: a request the proxy rewrites goes upstream with
// only the values it rewrote changed, the model and the tool result:
// fields it does not read (a vendor's extension, a large tools array),
// numbers as the agent wrote them, escapes, spacing and the order of keys
// are the agent's bytes.
func TestUntouchedBytes(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			tmpl := strings.ReplaceAll(untouchedBodies[w.name], "TOOLS", bigTools(200))
			body := strings.ReplaceAll(tmpl, "INBOX", quoted(inboxText))
			_, model, _ := target.ParseSpec(w.spec)
			want := strings.ReplaceAll(tmpl, "INBOX", quoted(inboxText+"\n\n"+delivery))
			want = strings.Replace(want, quoted(w.model), quoted(model), 1)
			got, err := rewriteOnce(t, w, body)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("upstream body differs from the agent's beyond the model and the tool result:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestUntouchedParts: a tool result made of parts keeps the bytes of the
// parts the proxy does not rewrite; the part it adds is written as
// before.
func TestUntouchedParts(t *testing.T) {
	w := wireNamed("chat")
	text := `{"text": "` + strings.ReplaceAll(inboxText, "\n", `\n`) + `", "type": "text", "cache": {"n": 1.0e2}}`
	image := `{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"}, "x": 12345678901234567890}`
	body := `{"model": "gpt-test", "messages": [{"role": "user", "content": "Summarise my inbox."},
{"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read_inbox", "arguments": "{}"}}]},
{"role": "tool", "tool_call_id": "call_1", "content": [` + text + `, ` + image + `]}]}`
	want := strings.Replace(body, text+`, `+image, text+`,`+image+`,{"text":`+quoted(delivery)+`,"type":"text"}`, 1)
	got, err := rewriteOnce(t, w, body)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestDuplicateAndMissingKeys: a key sent twice is read as encoding/json
// reads it, the last one, and a rewritten body keeps that one alone, so
// that no upstream that reads the first gets a result the proxy did not
// rewrite; a tool message without content gets one.
func TestDuplicateAndMissingKeys(t *testing.T) {
	w := wireNamed("chat")
	prefix := `{"model": "gpt-agent", "messages": [{"role": "user", "content": "Summarise my inbox."}, ` +
		`{"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read_inbox", "arguments": "{}"}}]}, `
	for _, tc := range []struct{ name, body, want string }{
		{"content twice",
			prefix + `{"role": "tool", "content": "stale", "tool_call_id": "call_1", "content": ` + quoted(inboxText) + `}], "model": "gpt-agent"}`,
			`{"messages": [{"role": "user", "content": "Summarise my inbox."}, ` +
				`{"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read_inbox", "arguments": "{}"}}]}, ` +
				`{"role": "tool", "tool_call_id": "call_1", "content": ` + quoted(inboxText+"\n\n"+delivery) + `}], "model": "gpt-test"}`},
		{"no content",
			prefix + `{"role": "tool", "tool_call_id": "call_1"}]}`,
			prefix[:len(`{"model": `)] + `"gpt-test"` + prefix[len(`{"model": "gpt-agent"`):] + `{"role": "tool", "tool_call_id": "call_1","content":` + quoted(delivery) + `}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := rewriteOnce(t, w, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("not JSON: %s", got)
			}
		})
	}
}

// TestMalformedBodyErrors: a body the proxy does not read gets
// encoding/json's own error, word for word, as when the proxy decoded
// every body whole; what follows a whole object is not read, as before.
func TestMalformedBodyErrors(t *testing.T) {
	for _, body := range []string{
		"", " ", "{", "}", `{"a":}`, `{"a":1,}`, `{,}`, `{"a" 1}`, `{'a':1}`, `{"a":1]`, `{"a":[1,2}`,
		`[1]`, `"str"`, `12`, `true`, "\ufeff{}", `{"a":"` + "\x01" + `"}`, `{"a":"\u12"}`, `{"a":"\x"}`,
		`{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":1e}`, `{"a":1e+}`, `{"a":.5}`, `{"a":tru}`, `{"a":nul}`, `{"a":True}`,
		`{"a":"unterminated`, `{"a":"\`, `{"a":[` + strings.Repeat("[", maxDepth) + `]}`,
	} {
		_, got := parseJSON([]byte(body))
		_, want := decode([]byte(body))
		if got == nil || want == nil || got.Error() != want.Error() {
			t.Errorf("%q: error %v, want encoding/json's %v", body, got, want)
		}
	}
	for _, body := range []string{`{}`, ` {"a":1} trailing`, `{"a":1}{"b":2}`, "\t{\"a\":[]}\n"} {
		if _, err := parseJSON([]byte(body)); err != nil {
			t.Errorf("%q: %v, want it read as encoding/json's Decoder reads it", body, err)
		}
	}
	if _, err := parseJSON([]byte("null")); err == nil || !strings.Contains(err.Error(), "null") {
		t.Errorf("null: %v, want an error naming it", err)
	}
}

// TestHostileBodies: bodies built to cost the proxy are bounded. Nesting
// as deep as encoding/json allows is passed on untouched; deeper is not
// JSON the proxy reads, is refused with encoding/json's error, and costs
// no more than its bytes whatever its depth (nothing is recursive); a
// string of megabytes in a field the proxy does not read is stepped over,
// and one in a tool result is read once.
func TestHostileBodies(t *testing.T) {
	w := wireNamed("chat")
	tool := `{"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read_inbox", "arguments": "{}"}}]}, {"role": "tool", "tool_call_id": "call_1", "content": INBOX}`
	chat := func(extra string) string {
		return `{"model": "gpt-test", "x": ` + extra + `, "messages": [{"role": "user", "content": "hi"}, ` + tool + `]}`
	}
	nested := func(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }
	escapes := `"` + strings.Repeat(`\"\\\u00e9`, 1<<20) + `"`
	for _, tc := range []struct {
		name, extra string
		inbox       string
		err         string
	}{
		{"deepest allowed", nested(maxDepth - 1), inboxText, ""}, // the body is one level
		{"too deep", nested(maxDepth), inboxText, "exceeded max depth"},
		{"a million deep", nested(1_000_000), inboxText, "exceeded max depth"},
		{"megabytes of escapes", escapes, inboxText, ""},
		{"a 16 MiB tool result", "null", strings.Repeat("x", 16<<20), ""},
		{"an unterminated 16 MiB string", `"` + strings.Repeat("x", 16<<20), inboxText, "unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := chat(tc.extra)
			if strings.HasPrefix(tc.extra, `"x`) {
				tmpl = `{"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}, ` + tool + `], "x": ` + tc.extra
			}
			body := strings.Replace(tmpl, "INBOX", quoted(tc.inbox), 1)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			got, err := rewriteOnce(t, w, body)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if want := strings.Replace(tmpl, "INBOX", quoted(tc.inbox+"\n\n"+delivery), 1); got != want {
					t.Errorf("the body was changed beyond its tool result (%d bytes, want %d)", len(got), len(want))
				}
			}
			// What reading costs is a few times the body at most: the
			// text of a tool result is read, tainted and written (a
			// buffer that grows as it goes) and the body joined for the
			// test; the rest of the body is only stepped over.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(10*len(body)+(4<<20)) {
				t.Errorf("reading %d bytes allocated %d", len(body), alloc)
			}
			if took > 10*time.Second {
				t.Errorf("reading %d bytes took %s", len(body), took)
			}
		})
	}
}

// TestBodyHeldUntilClosed: the buffer a body was read into is not used
// again while net/http may still read it: a transport that reads a body
// (or asks for it again, to retry) after the proxy has answered, and
// after later requests have come and gone, reads the body that was sent.
func TestBodyHeldUntilClosed(t *testing.T) {
	type sent struct {
		body    io.ReadCloser
		getBody func() (io.ReadCloser, error)
	}
	var mu sync.Mutex
	var held []sent
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		held = append(held, sent{r.Body, r.GetBody})
		mu.Unlock()
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(`{}`)), Request: r}, nil
	})
	srv, hs := newProxy(t, "http://upstream.invalid/v1")
	srv.Client = &http.Client{Transport: rt}
	w := wireNamed("chat")
	mustOpen(t, srv, "held", newDrive("openai"), sinkRules())
	var bodies [][]byte
	for i := range 8 {
		body := fmt.Appendf(nil, `{"messages": [{"role": "user", "content": "request %d %s"}], "model": "m"}`, i, strings.Repeat("x", 64<<10))
		bodies = append(bodies, body)
		if resp, b, err := post(t, w.baseFor(hs.URL, "held")+w.agentPath, body, nil); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%v %v %s", resp, err, b)
		}
	}
	for i, s := range held {
		again, err := s.getBody()
		if err != nil {
			t.Fatal(err)
		}
		for _, rc := range []io.ReadCloser{s.body, again} {
			got, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(got, bodies[i]) {
				t.Errorf("request %d: net/http read %.60q…, want %.60q…", i, got, bodies[i])
			}
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// FuzzValidJSON: validJSON says a body is JSON exactly when encoding/json
// does, parseJSON reads exactly the objects decode does, and a body
// rewritten in every format is JSON that reads back with its results
// rewritten.
func FuzzValidJSON(f *testing.F) {
	for _, body := range untouchedBodies {
		f.Add([]byte(strings.ReplaceAll(strings.ReplaceAll(body, "TOOLS", bigTools(2)), "INBOX", quoted(inboxText))))
	}
	for _, s := range []string{`{"a":[1,-0.5e+3,"\u00e9\n",true,false,null,{}]}`, `{"a":1}{`, `{"a" : "\"\\"}`, "[\x00]", `{"messages":[{"role":"tool","content":[{"type":"text","text":"a"},1]}]}`,
		`{"input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"t"}]}]}`,
		`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"x"}]}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		start, end, ok := validJSON(b)
		if got, want := ok && skipSpace(b, end) == len(b), json.Valid(b); got != want {
			t.Fatalf("validJSON %v (start %d end %d), json.Valid %v", got, start, end, want)
		}
		o, err := parseJSON(b)
		m, derr := decode(b)
		if (err == nil) != (derr == nil && m != nil) {
			t.Fatalf("parseJSON error %v, decode error %v (%v)", err, derr, m)
		}
		if err != nil {
			return
		}
		for _, fm := range []format{chatFormat{}, responsesFormat{}, anthropicFormat{}} {
			o := value{body: &jsonBody{b: b}, start: o.start, end: o.end}.object().index()
			req := fm.parseRequest(o)
			for _, r := range req.results {
				r.replace("rewritten")
			}
			o.set("model", encode("m"))
			out := bytes.Join(o.body.pieces(), nil)
			back, err := parseJSON(out)
			if err != nil {
				t.Fatalf("%s: the rewritten body is not JSON: %v\n%s", fm.name(), err, out)
			}
			again := fm.parseRequest(back)
			if again.model != "m" || len(again.results) != len(req.results) {
				t.Fatalf("%s: read back model %q, %d results, want m and %d\n%s", fm.name(), again.model, len(again.results), len(req.results), out)
			}
			for _, r := range again.results {
				if r.text != "rewritten" {
					t.Fatalf("%s: a result reads %q after its rewrite\n%s", fm.name(), r.text, out)
				}
			}
		}
	})
}
