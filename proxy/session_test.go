package proxy

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// formatUpstream is a model API of every format at once: it asks for
// read_inbox until a tool result comes, then answers. The answers are the
// recorded ones, so every session's calls have the same ids.
func formatUpstream(t testing.TB) *fakeUpstream {
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ int, body []byte) {
		format := "chat"
		switch {
		case strings.HasSuffix(r.URL.Path, "/responses"):
			format = "responses"
		case strings.HasSuffix(r.URL.Path, "/messages"):
			format = "anthropic"
		}
		name := "read"
		if bytes.Contains(body, []byte(inboxText[:10])) {
			name = "final"
		}
		b := fixture(t, format, name, isStream(body))
		if isStream(body) {
			writeStream(t, w, sseChunks(b), nil)
			return
		}
		writeWhole(w, b)
	})
}

// TestConcurrentSessions: sessions of one proxy, in every format, streamed
// or not, run at once with the same call ids; each taints its own results
// with its own payload and records only its own conversation.
func TestConcurrentSessions(t *testing.T) {
	const n = 16
	up := formatUpstream(t)
	// No --upstream: each cell's config says where its target is.
	srv, hs := newProxy(t, "")
	sessions := make([]*Session, n)
	for i := range sessions {
		w := wires[i%len(wires)]
		d := newDrive(w.spec)
		d.Cell.Config.TargetOpts = map[string]any{"base_url": w.upstreamBase(up.URL)}
		d.Delivery = fmt.Sprintf("PAYLOAD-%02d", i)
		sessions[i] = mustOpen(t, srv, fmt.Sprintf("s%02d", i), d, sinkRules())
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			w := wires[i%len(wires)]
			_, errs[i] = runAgent(t.Context(), http.DefaultClient, w, w.baseFor(hs.URL, fmt.Sprintf("s%02d", i))+w.agentPath, i%2 == 1, nil)
		})
	}
	wg.Wait()
	for i, s := range sessions {
		if errs[i] != nil {
			t.Errorf("session %d: %v", i, errs[i])
			continue
		}
		tr := s.Trace()
		if got := stepKinds(tr); got != "user model tool* model" {
			t.Errorf("session %d: steps %s", i, got)
			continue
		}
		own := fmt.Sprintf("PAYLOAD-%02d", i)
		if tr.Steps[2].Result != inboxText+"\n\n"+own || tr.ModelCalls != 2 {
			t.Errorf("session %d: tool result %q, %d model calls", i, tr.Steps[2].Result, tr.ModelCalls)
		}
	}
	reqs := up.requests()
	if len(reqs) != 2*n {
		t.Fatalf("%d upstream requests, want %d", len(reqs), 2*n)
	}
	tainted := map[string]int{}
	for _, r := range reqs {
		if r.Path != "/v1/chat/completions" && r.Path != "/v1/responses" && r.Path != "/v1/messages" {
			t.Errorf("upstream path %s", r.Path)
		}
		found := 0
		for i := range n {
			if p := fmt.Sprintf("PAYLOAD-%02d", i); bytes.Contains(r.Body, []byte(p)) {
				found++
				tainted[p]++
			}
		}
		if found > 1 {
			t.Errorf("a request carries %d sessions' payloads: %s", found, r.Body)
		}
	}
	if len(tainted) != n {
		t.Errorf("%d payloads went upstream, want %d: %v", len(tainted), n, tainted)
	}
	if st := srv.Stats(); st.Requests != 2*n || st.Passed != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestParallelRequestsOfOneSession: an agent that sends its history in
// parallel requests gets one decision per call id: one tool step, the same
// text in every request.
func TestParallelRequestsOfOneSession(t *testing.T) {
	const n = 8
	w := wireNamed("chat")
	up := newUpstream(t, func(rw http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
		writeWhole(rw, fixture(t, "chat", "final", false))
	})
	srv, hs := newProxy(t, w.upstreamBase(up.URL))
	rules := sinkRules()
	rules.Taint[0].Nth = 1
	s := mustOpen(t, srv, "par", newDrive(w.spec), rules)
	body := w.encode(w.model, false, []msg{
		{role: "user", text: userText},
		{role: "assistant", calls: []call{{"call_1", "read_inbox", `{}`}}},
		{role: "tool", callID: "call_1", name: "read_inbox", text: inboxText},
	})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if resp, _, err := post(t, w.baseFor(hs.URL, "par")+w.agentPath, body, nil); err != nil || resp.StatusCode != 200 {
				t.Errorf("%v %v", resp, err)
			}
		})
	}
	wg.Wait()
	for _, r := range up.requests() {
		got, _ := w.results(r.Body)
		if got["call_1"] != inboxText+"\n\n"+delivery {
			t.Errorf("the upstream got %q", got["call_1"])
		}
	}
	if tr := s.Trace(); stepKinds(tr) != "user tool*"+strings.Repeat(" model", n) {
		t.Errorf("steps %s", stepKinds(tr))
	}
}
