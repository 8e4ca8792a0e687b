package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/channel"
	"github.com/pikit-go/pikit/matrix"
)

// newServe starts a Serve behind an httptest server.
func newServe(t *testing.T) (*Serve, *httptest.Server) {
	t.Helper()
	sv := &Serve{Server: &Server{}, IdleTimeout: time.Minute, ClaimWait: 5 * time.Second}
	hs := httptest.NewServer(sv)
	t.Cleanup(hs.Close)
	sv.Server.URL = hs.URL
	return sv, hs
}

// serveDrive is a cell of the forum site with testPayload placed visibly.
func serveDrive(t *testing.T, key string) matrix.Drive {
	t.Helper()
	cfg, err := matrix.Parse("exp.toml", []byte("attacks = [\"naive\"]\n[web]\nsite = \"forum\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	ch, _ := channel.New("web_visible", nil, 0)
	return matrix.Drive{Cell: matrix.Cell{Key: key, Config: &cfg}, Payload: testPayload, Channel: ch}
}

type served2 struct {
	tr  agent.Trace
	err error
}

// TestServeSessions: a session an agent opens (by its first request, or
// POST /pikit/sessions) takes the next cell; ending it with an answer
// hands its trace, the answer as the final text, to the cell.
func TestServeSessions(t *testing.T) {
	sv, hs := newServe(t)
	ctx := context.Background()
	done := make(chan served2, 2)
	for _, key := range []string{"cell-a", "cell-b"} {
		go func() {
			tr, err := sv.Drive(ctx, serveDrive(t, key))
			done <- served2{tr, err}
		}()
	}
	// One agent names its session in its first request.
	code, body, _ := get(t, hs.URL+"/s/agent-1/t/stove-advice")
	if code != http.StatusOK || !strings.Contains(body, "/s/agent-1/x/attacker.example/collect") {
		t.Fatalf("first request of a new session: %d\n%s", code, body)
	}
	// Another asks for one.
	resp, err := http.Post(hs.URL+"/pikit/sessions", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var opened struct {
		ID       string `json:"id"`
		StartURL string `json:"start_url"`
		Task     string `json:"task"`
	}
	json.NewDecoder(resp.Body).Decode(&opened)
	resp.Body.Close()
	if opened.ID == "" || !strings.HasPrefix(opened.StartURL, hs.URL+"/s/"+opened.ID+"/") || !strings.Contains(opened.Task, opened.StartURL) {
		t.Fatalf("POST /pikit/sessions: %+v", opened)
	}
	get(t, opened.StartURL)
	for _, id := range []string{"agent-1", opened.ID} {
		resp, err := http.Post(hs.URL+"/pikit/sessions/"+id+"/end", "text/plain", strings.NewReader("The advice: take a liquid-fuel stove."))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Errorf("end %s: %d", id, resp.StatusCode)
		}
	}
	for range 2 {
		got := <-done
		if got.err != nil || got.tr.FinalText != "The advice: take a liquid-fuel stove." || len(got.tr.Steps) != 1 {
			t.Errorf("a cell's trace: %v, %q, %d steps", got.err, got.tr.FinalText, len(got.tr.Steps))
		}
	}
	// Ended sessions are gone; with no cell on offer a new one waits,
	// then is told.
	sv.ClaimWait = 0
	sv.Finish()
	if code, body, _ := get(t, hs.URL+"/s/agent-1/"); code != http.StatusGone || !strings.Contains(body, "every cell of the plan has run") {
		t.Errorf("a session after the plan: %d %s", code, body)
	}
	for _, tc := range []struct{ method, path string }{{http.MethodGet, "/pikit/sessions"}, {http.MethodPost, "/pikit/sessions/nobody/end"}, {http.MethodPost, "/pikit/sessions/x/pause"}} {
		req, _ := http.NewRequest(tc.method, hs.URL+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("%s %s: %d", tc.method, tc.path, resp.StatusCode)
		}
	}
}

// TestServeIdleSessionEnds: a session without requests for IdleTimeout
// ends, and its cell is judged on what it recorded.
func TestServeIdleSessionEnds(t *testing.T) {
	sv, hs := newServe(t)
	sv.IdleTimeout = 50 * time.Millisecond
	done := make(chan served2, 1)
	go func() {
		tr, err := sv.Drive(context.Background(), serveDrive(t, "idle"))
		done <- served2{tr, err}
	}()
	get(t, hs.URL+"/s/sleepy/t/stove-advice")
	select {
	case got := <-done:
		if got.err != nil || !got.tr.TaintDelivered {
			t.Errorf("idle cell: %v, delivered %v", got.err, got.tr.TaintDelivered)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an idle session did not end")
	}
}
