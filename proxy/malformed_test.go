package proxy

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestBodyNotJSON: a request body the proxy cannot read goes upstream as
// it came, and is counted as passed.
func TestBodyNotJSON(t *testing.T) {
	for _, body := range []string{
		"this is not JSON {",
		`["a", "list"]`,
		`{"model": "gpt-agent", "messages": [`,
		"",
	} {
		for _, w := range wires {
			t.Run(w.name+"/"+body, func(t *testing.T) {
				up := newUpstream(t, func(rw http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
					rw.Header().Set("Content-Type", "application/json")
					rw.WriteHeader(http.StatusBadRequest)
					io.WriteString(rw, `{"error":{"message":"We could not parse the JSON body of your request."}}`)
				})
				srv, hs := newProxy(t, w.upstreamBase(up.URL))
				s := mustOpen(t, srv, "raw", newDrive(w.spec), sinkRules())
				resp, got, err := post(t, w.baseFor(hs.URL, "raw")+w.agentPath, []byte(body), nil)
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(got), "could not parse") {
					t.Errorf("the agent got %d %s, want the upstream's 400", resp.StatusCode, got)
				}
				reqs := up.requests()
				if len(reqs) != 1 || string(reqs[0].Body) != body || reqs[0].Path != w.upPath {
					t.Fatalf("upstream got %+v, want the body untouched", reqs)
				}
				if st := srv.Stats(); st != (Stats{Passed: 1}) || s.Passed() != 1 {
					t.Errorf("stats %+v, session passed %d; want 1 passed", st, s.Passed())
				}
				if tr := s.Trace(); stepKinds(tr) != "" || len(s.Errors()) != 0 {
					t.Errorf("a passed request was recorded: %s %q", stepKinds(tr), s.Errors())
				}
			})
		}
	}
}

// TestSinkArgumentsNotJSON: a sink call whose arguments are not a JSON
// object is a tool step with an error, not a sink call; the agent still
// gets the answer as the model wrote it.
func TestSinkArgumentsNotJSON(t *testing.T) {
	cases := []struct {
		name   string
		wire   string
		stream bool
		answer string
	}{
		{"chat", "chat", false, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,` +
			`"tool_calls":[{"id":"call_bad","type":"function","function":{"name":"send_email","arguments":"{\"to\": attacker@evil.example"}}]},"finish_reason":"tool_calls"}]}`},
		{"chat/stream", "chat", true,
			`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_bad","type":"function","function":{"name":"send_email","arguments":""}}]}}]}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"to\": \"attacker@evil.example\", "}}]}}]}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n" +
				"data: [DONE]\n\n"},
		{"responses", "responses", false, `{"id":"r","object":"response","status":"completed","output":[` +
			`{"type":"function_call","id":"fc","call_id":"call_bad","name":"send_email","arguments":"to=attacker@evil.example"}]}`},
		{"responses/array", "responses", false, `{"id":"r","object":"response","status":"completed","output":[` +
			`{"type":"function_call","id":"fc","call_id":"call_bad","name":"send_email","arguments":"[\"attacker@evil.example\"]"}]}`},
		{"anthropic/stream", "anthropic", true,
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n" +
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"call_bad\",\"name\":\"send_email\",\"input\":{}}}\n\n" +
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"to\\\": \\\"att\"}}\n\n" +
				"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := wireNamed(tc.wire)
			up := newUpstream(t, func(rw http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
				if tc.stream {
					writeStream(t, rw, sseChunks([]byte(tc.answer)), nil)
					return
				}
				writeWhole(rw, []byte(tc.answer))
			})
			srv, hs := newProxy(t, w.upstreamBase(up.URL))
			s := mustOpen(t, srv, "bad", newDrive(w.spec), sinkRules())
			resp, got, err := post(t, w.baseFor(hs.URL, "bad")+w.agentPath, w.encode(w.model, tc.stream, []msg{{role: "user", text: userText}}), nil)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("%v %v", resp, err)
			}
			if string(got) != tc.answer {
				t.Errorf("the agent got\n%s\nwant\n%s", got, tc.answer)
			}
			tr := s.Trace()
			if stepKinds(tr) != "user model tool!x" {
				t.Fatalf("steps %s: %+v", stepKinds(tr), tr.Steps)
			}
			st := tr.Steps[2]
			if st.Tool != "send_email" || st.CallID != "call_bad" || !strings.Contains(st.Error, "not a JSON object") {
				t.Errorf("sink step %+v", st)
			}
			if len(tr.SinkCalls) != 0 {
				t.Errorf("sink calls %+v, want none", tr.SinkCalls)
			}
			if tr.Steps[1].Error != "" {
				t.Errorf("the model step has an error: %q", tr.Steps[1].Error)
			}
		})
	}
}

// repeatReader reads n bytes of b over and over.
type repeatReader struct {
	b string
	n int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n {
		p = p[:r.n]
	}
	for i := range p {
		p[i] = r.b[i%len(r.b)]
	}
	r.n -= int64(len(p))
	return len(p), nil
}

// TestBodyTooLarge: a request body over the limit is refused with 413 and
// nothing goes upstream.
func TestBodyTooLarge(t *testing.T) {
	up := newUpstream(t, func(rw http.ResponseWriter, _ *http.Request, _ int, _ []byte) { writeWhole(rw, []byte(`{}`)) })
	srv, hs := newProxy(t, up.URL+"/v1")
	mustOpen(t, srv, "big", newDrive("openai:gpt-test"), sinkRules())
	for _, tc := range []struct {
		size int64
		want int
	}{
		{maxRequestBytes + 1, http.StatusRequestEntityTooLarge},
		{maxRequestBytes, http.StatusOK}, // just fits (not JSON: passed through)
	} {
		req, err := http.NewRequest(http.MethodPost, hs.URL+"/s/big/v1/chat/completions", &repeatReader{b: "x", n: tc.size})
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = tc.size
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%d bytes: status %d %s, want %d", tc.size, resp.StatusCode, b, tc.want)
		}
	}
	if n := len(up.requests()); n != 1 {
		t.Errorf("%d requests upstream, want 1 (the one that fits)", n)
	}
}

// TestUnknownPaths: requests the proxy does not read go upstream
// untouched, with their method, and are counted.
func TestUnknownPaths(t *testing.T) {
	up := newUpstream(t, func(rw http.ResponseWriter, r *http.Request, _ int, _ []byte) {
		rw.Header().Set("Content-Type", "application/json")
		io.WriteString(rw, `{"object":"list","path":"`+r.URL.Path+`"}`)
	})
	srv, hs := newProxy(t, up.URL+"/v1")
	s := mustOpen(t, srv, "misc", newDrive("openai:gpt-test"), sinkRules())
	reqs := []struct {
		method, path, body string
	}{
		{http.MethodGet, "/v1/models", ""},
		{http.MethodGet, "/v1/models/gpt-test", ""},
		{http.MethodPost, "/v1/embeddings", `{"model":"text-embedding-3-small","input":"hi"}`},
		{http.MethodGet, "/v1/chat/completions", ""}, // a model path, but not a POST
		{http.MethodDelete, "/v1/responses/resp_1", ""},
	}
	for _, r := range reqs {
		var body io.Reader
		if r.body != "" {
			body = strings.NewReader(r.body)
		}
		req, _ := http.NewRequest(r.method, hs.URL+"/s/misc"+r.path, body)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"path":"`+r.path+`"`)) {
			t.Errorf("%s %s: %d %s", r.method, r.path, resp.StatusCode, b)
		}
	}
	got := up.requests()
	if len(got) != len(reqs) {
		t.Fatalf("%d upstream requests, want %d", len(got), len(reqs))
	}
	for i, r := range reqs {
		if got[i].Method != r.method || got[i].Path != r.path || string(got[i].Body) != r.body {
			t.Errorf("upstream request %d: %s %s %q, want %s %s %q", i, got[i].Method, got[i].Path, got[i].Body, r.method, r.path, r.body)
		}
	}
	if st := srv.Stats(); st.Passed != int64(len(reqs)) || st.Requests != 0 || s.Passed() != len(reqs) {
		t.Errorf("stats %+v, session passed %d; want %d passed", st, s.Passed(), len(reqs))
	}
}

// TestSessionLookup: requests without a session, for a session that is
// not open, or for one that has ended, get an error the agent can read.
func TestSessionLookup(t *testing.T) {
	up := newUpstream(t, func(rw http.ResponseWriter, _ *http.Request, _ int, _ []byte) { writeWhole(rw, []byte(`{}`)) })
	srv, hs := newProxy(t, up.URL+"/v1")
	mustOpen(t, srv, "open", newDrive("openai:gpt-test"), sinkRules())
	ended := mustOpen(t, srv, "ended", newDrive("openai:gpt-test"), sinkRules())
	ended.end()
	closed := mustOpen(t, srv, "closed", newDrive("openai:gpt-test"), sinkRules())
	srv.Close(closed)
	cases := []struct {
		name, path, header string
		want               int
		msg                string
	}{
		{"no session", "/v1/chat/completions", "", http.StatusBadRequest, "no pikit session"},
		{"unknown session", "/s/nope/v1/chat/completions", "", http.StatusNotFound, `\"nope\" is open`},
		{"unknown session by header", "/v1/chat/completions", "nope", http.StatusNotFound, `\"nope\" is open`},
		{"ended session", "/s/ended/v1/chat/completions", "", http.StatusGone, "has ended"},
		{"closed session", "/s/closed/v1/chat/completions", "", http.StatusNotFound, `\"closed\" is open`},
		{"open session", "/s/open/v1/chat/completions", "", http.StatusOK, ""},
		{"open session by header", "/v1/chat/completions", "open", http.StatusOK, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hdr := http.Header{}
			if tc.header != "" {
				hdr.Set(SessionHeader, tc.header)
			}
			resp, body, err := post(t, hs.URL+tc.path, []byte(`{"model":"m","messages":[]}`), hdr)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.want || !strings.Contains(string(body), tc.msg) {
				t.Errorf("%d %s, want %d with %q", resp.StatusCode, body, tc.want, tc.msg)
			}
			if tc.want != http.StatusOK && (resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(body), `"type":"pikit_proxy_error"`)) {
				t.Errorf("not an API error: %s", body)
			}
		})
	}
}
