package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/matrix"
)

// newServe starts pikit proxy serve with sessions forwarding to base.
func newServe(t *testing.T, base string, idle time.Duration) (*Serve, *httptest.Server) {
	sv := &Serve{Server: &Server{BaseURL: base}, IdleTimeout: idle, ClaimWait: 10 * time.Second}
	hs := httptest.NewServer(sv)
	t.Cleanup(hs.Close)
	sv.URL = hs.URL
	return sv, hs
}

type driven struct {
	tr  agent.Trace
	err error
}

// drive offers a cell, as the runner's worker would, and delivers its
// outcome.
func drive(t *testing.T, sv *Serve, d matrix.Drive) <-chan driven {
	out := make(chan driven, 1)
	go func() {
		tr, err := sv.Drive(t.Context(), d)
		out <- driven{tr, err}
	}()
	return out
}

// await waits for a Drive to return.
func await(t *testing.T, c <-chan driven) driven {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("Drive did not return")
		return driven{}
	}
}

func postEmpty(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// TestServeClaimByRequest: an agent's first request under a new session id
// takes the cell on offer; ending the session hands its trace to Drive.
func TestServeClaimByRequest(t *testing.T) {
	sv, hs := newServe(t, "", time.Minute)
	res := drive(t, sv, offlineDrive())
	w := wireNamed("chat")
	if _, err := runAgent(t.Context(), http.DefaultClient, w, w.baseFor(hs.URL, "run-1")+w.agentPath, true, nil); err != nil {
		t.Fatal(err)
	}
	if resp, b := postEmpty(t, hs.URL+"/pikit/sessions/run-1/end"); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("end: %d %s", resp.StatusCode, b)
	}
	r := await(t, res)
	if r.err != nil || len(r.tr.SinkCalls) != 1 || stepKinds(r.tr) != "user model tool* model tool! model" {
		t.Errorf("err %v, steps %s, sink calls %+v", r.err, stepKinds(r.tr), r.tr.SinkCalls)
	}
	// The ended session is gone.
	if resp, _ := postEmpty(t, hs.URL+"/pikit/sessions/run-1/end"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("ending it again: %d, want 404", resp.StatusCode)
	}
}

// TestServeOpenSession: POST /pikit/sessions opens a session on the next
// cell and says where to point the agent.
func TestServeOpenSession(t *testing.T) {
	sv, hs := newServe(t, "", time.Minute)
	d := offlineDrive()
	d.Cell.Key, d.Cell.Repeat = "key-7", 2
	res := drive(t, sv, d)
	resp, b := postEmpty(t, hs.URL+"/pikit/sessions")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var got struct {
		ID               string `json:"id"`
		Key              string `json:"key"`
		Attack           string `json:"attack"`
		Repeat           int    `json:"repeat_index"`
		OpenAIBaseURL    string `json:"openai_base_url"`
		AnthropicBaseURL string `json:"anthropic_base_url"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.ID == "" || got.Key != "key-7" || got.Attack != "naive" || got.Repeat != 2 ||
		got.OpenAIBaseURL != hs.URL+"/s/"+got.ID+"/v1" || got.AnthropicBaseURL != hs.URL+"/s/"+got.ID {
		t.Fatalf("%s", b)
	}
	w := wireNamed("anthropic")
	if _, err := runAgent(t.Context(), http.DefaultClient, w, got.AnthropicBaseURL+w.agentPath, false, nil); err != nil {
		t.Fatal(err)
	}
	if resp, b := postEmpty(t, hs.URL+"/pikit/sessions/"+got.ID+"/end"); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("end: %d %s", resp.StatusCode, b)
	}
	if r := await(t, res); r.err != nil || len(r.tr.SinkCalls) != 1 {
		t.Errorf("err %v, sink calls %+v", r.err, r.tr.SinkCalls)
	}
}

// TestServeIdleTimeout: a session ends after IdleTimeout without a
// request; one that never asked the model is an error.
func TestServeIdleTimeout(t *testing.T) {
	sv, hs := newServe(t, "", 50*time.Millisecond)
	res := drive(t, sv, offlineDrive())
	w := wireNamed("responses")
	if _, err := runAgent(t.Context(), http.DefaultClient, w, w.baseFor(hs.URL, "idle")+w.agentPath, true, nil); err != nil {
		t.Fatal(err)
	}
	if r := await(t, res); r.err != nil || len(r.tr.SinkCalls) != 1 {
		t.Errorf("err %v, sink calls %+v", r.err, r.tr.SinkCalls)
	}

	res = drive(t, sv, offlineDrive())
	if resp, b := postEmpty(t, hs.URL+"/pikit/sessions"); resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if r := await(t, res); r.err == nil || !strings.Contains(r.err.Error(), "without a model request") {
		t.Errorf("err %v, want one saying the session asked nothing", r.err)
	}
}

// TestServeFinish: once every cell has run, new sessions are refused.
func TestServeFinish(t *testing.T) {
	sv, hs := newServe(t, "", time.Minute)
	sv.Finish()
	sv.Finish() // twice is fine
	w := wireNamed("chat")
	resp, b, err := post(t, w.baseFor(hs.URL, "late")+w.agentPath, w.encode(w.model, false, []msg{{role: "user", text: userText}}), nil)
	if err != nil || resp.StatusCode != http.StatusGone || !strings.Contains(string(b), "every cell of the plan has run") {
		t.Errorf("%v %v %s", resp, err, b)
	}
	if resp, b := postEmpty(t, hs.URL+"/pikit/sessions"); resp.StatusCode != http.StatusGone {
		t.Errorf("POST /pikit/sessions: %d %s", resp.StatusCode, b)
	}
}

func TestServeControlErrors(t *testing.T) {
	sv, hs := newServe(t, "", time.Minute)
	sv.ClaimWait = 20 * time.Millisecond
	cases := []struct {
		method, path string
		want         int
		msg          string
	}{
		{http.MethodGet, "/pikit/sessions", http.StatusMethodNotAllowed, "use POST"},
		{http.MethodPost, "/pikit/sessions/nope/end", http.StatusNotFound, "no pikit session"},
		{http.MethodPost, "/pikit/sessions/nope/pause", http.StatusNotFound, "unknown pikit endpoint"},
		{http.MethodPost, "/pikit/sessions", http.StatusGone, "no cell was free within 20ms"},
		{http.MethodPost, "/s/" + strings.Repeat("x", 129) + "/v1/chat/completions", http.StatusGone, "up to 128 characters"},
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(tc.method, hs.URL+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want || !strings.Contains(string(b), tc.msg) {
			t.Errorf("%s %s: %d %s, want %d with %q", tc.method, tc.path, resp.StatusCode, b, tc.want, tc.msg)
		}
	}
}

// waitUntil polls cond, for what a test cannot otherwise wait on (another
// goroutine reaching a blocking call).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// inClaim counts the goroutines waiting in a claim of a session id.
func inClaim() int {
	buf := make([]byte, 1<<20)
	return bytes.Count(buf[:runtime.Stack(buf, true)], []byte("claim.(*Queue[...]).Claim("))
}

// TestServeSameNewIDAtOnce: an agent whose first requests under a new
// session id arrive together (parallel tool-less calls, a tracing request
// beside the model's) opens one session on one cell; the next cell stays
// on offer for the next session.
func TestServeSameNewIDAtOnce(t *testing.T) {
	sv, hs := newServe(t, "", time.Minute)
	w := wireNamed("chat")
	body := w.encode(w.model, false, []msg{{role: "user", text: userText}})
	var wg sync.WaitGroup
	statuses := make([]int, 2)
	for i := range statuses {
		wg.Go(func() {
			resp, b, err := post(t, w.baseFor(hs.URL, "twin")+w.agentPath, body, nil)
			if err != nil {
				t.Error(err)
				return
			}
			statuses[i] = resp.StatusCode
			if resp.StatusCode != http.StatusOK {
				t.Errorf("request %d: %d %s", i, resp.StatusCode, b)
			}
		})
	}
	// Both requests wait for a cell before any is offered.
	waitUntil(t, "both requests to wait for a cell", func() bool { return inClaim() >= 2 })
	first, second := drive(t, sv, offlineDrive()), drive(t, sv, offlineDrive())
	wg.Wait()
	if _, b := postEmpty(t, hs.URL+"/pikit/sessions/twin/end"); len(b) > 0 {
		t.Fatalf("end: %s", b)
	}
	var r driven
	select {
	case r = <-first:
	case r = <-second:
	case <-time.After(10 * time.Second):
		t.Fatal("no Drive returned")
	}
	if r.err != nil || r.tr.ModelCalls != 2 {
		t.Errorf("the twin session: err %v, %d model calls, want 2", r.err, r.tr.ModelCalls)
	}
	// The other cell is still on offer: a new session takes it.
	if _, err := runAgent(t.Context(), http.DefaultClient, w, w.baseFor(hs.URL, "next")+w.agentPath, false, nil); err != nil {
		t.Fatalf("the next session: %v", err)
	}
	postEmpty(t, hs.URL+"/pikit/sessions/next/end")
	select {
	case r = <-first:
	case r = <-second:
	case <-time.After(10 * time.Second):
		t.Fatal("the other Drive did not return")
	}
	if r.err != nil || len(r.tr.SinkCalls) != 1 {
		t.Errorf("the next session: err %v, sink calls %+v", r.err, r.tr.SinkCalls)
	}
}

// TestServeIdleDuringStream: a session is not idle while a request of its
// own is in flight, however long the model takes; it ends IdleTimeout
// after its last request is done.
func TestServeIdleDuringStream(t *testing.T) {
	const idle = 60 * time.Millisecond
	release := make(chan struct{})
	chunks := sseChunks(fixture(t, "chat", "read", true))
	up := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(chunks[0])
		w.(http.Flusher).Flush()
		<-release // the model thinks
		for _, c := range chunks[1:] {
			w.Write(c)
		}
	})
	sv, hs := newServe(t, up.URL+"/v1", idle)
	res := drive(t, sv, newDrive("openai:gpt-test"))
	w := wireNamed("chat")
	resp, err := http.Post(w.baseFor(hs.URL, "slow")+w.agentPath, "application/json", bytes.NewReader(w.encode(w.model, true, []msg{{role: "user", text: userText}})))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, len(chunks[0]))
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	// Nothing to wait on: the session must not end while the stream is
	// open, however long that is; several idle timeouts will do.
	select {
	case r := <-res:
		close(release)
		t.Fatalf("the session ended mid-stream: %v, %s", r.err, stepKinds(r.tr))
	case <-time.After(5 * idle):
	}
	close(release)
	rest, err := io.ReadAll(resp.Body)
	if err != nil || !bytes.HasSuffix(rest, []byte("data: [DONE]\n\n")) {
		t.Fatalf("the stream: %v %q", err, rest)
	}
	r := await(t, res)
	if r.err != nil || r.tr.ModelCalls != 1 || stepKinds(r.tr) != "user model" || len(r.tr.Steps[1].ToolCalls) != 1 {
		t.Errorf("err %v, steps %s: the streamed answer was not recorded", r.err, stepKinds(r.tr))
	}
}

// TestServeRefusedRequestNamed: a served session that ends without a model
// request says what became of the requests it had.
func TestServeRefusedRequestNamed(t *testing.T) {
	sv, hs := newServe(t, "", time.Minute)
	res := drive(t, sv, offlineDrive())
	resp, b, err := post(t, hs.URL+"/s/bad/v1/chat/completions", []byte("this is not JSON {"), nil)
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("%v %v %s", resp, err, b)
	}
	resp, b, err = post(t, hs.URL+"/s/bad/v1/messages", []byte("[1, 2]"), nil)
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("%v %v %s", resp, err, b)
	}
	if resp, b := postEmpty(t, hs.URL+"/pikit/sessions/bad/end"); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	r := await(t, res)
	if r.err == nil || !strings.Contains(r.err.Error(), "none of the agent's 2 requests got a model answer; the last was refused: 400 the anthropic_messages request body is not a JSON object") {
		t.Errorf("err %v", r.err)
	}
}
