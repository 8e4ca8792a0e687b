package mcpserve

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/mcpserve/mcptest"
)

// ended collects the sessions a server ended.
type ended struct {
	mu     sync.Mutex
	traces map[string]agent.Trace
	ch     chan string
}

func newEnded() *ended { return &ended{traces: map[string]agent.Trace{}, ch: make(chan string, 16)} }

func (e *ended) onEnd(id string, tr agent.Trace) {
	e.mu.Lock()
	e.traces[id] = tr
	e.mu.Unlock()
	e.ch <- id
}

func (e *ended) wait(t *testing.T, id string) agent.Trace {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		e.mu.Lock()
		tr, ok := e.traces[id]
		e.mu.Unlock()
		if ok {
			return tr
		}
		select {
		case <-e.ch:
		case <-timeout:
			t.Fatalf("session %s never ended", id)
		}
	}
}

func TestHTTPSessionsAreIsolated(t *testing.T) {
	s := cellSetup(t, emailCell+"[mcp]\npoison = \"rug_pull\"\n")
	done := newEnded()
	h, err := NewHandler(s, ServeOptions{OnEnd: done.onEnd})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()

	const clients = 4
	var wg sync.WaitGroup
	ids := make([]string, clients)
	errs := make(chan error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			changed := make(chan struct{}, 2)
			c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
			})
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
			if err != nil {
				errs <- err
				return
			}
			ids[i] = cs.ID()
			first, err := cs.ListTools(ctx, nil)
			if err != nil {
				errs <- err
				return
			}
			for _, tool := range first.Tools {
				if strings.Contains(tool.Description, attacker) {
					errs <- fmt.Errorf("client %d: first listing poisoned (another session's rug pull leaked)", i)
				}
			}
			select {
			case <-changed:
			case <-time.After(10 * time.Second):
				errs <- fmt.Errorf("client %d: no list_changed", i)
				return
			}
			second, err := cs.ListTools(ctx, nil)
			if err != nil {
				errs <- err
				return
			}
			poisoned := 0
			for _, tool := range second.Tools {
				if strings.Contains(tool.Description, attacker) {
					poisoned++
				}
			}
			if poisoned != 1 {
				errs <- fmt.Errorf("client %d: %d poisoned tools after the rug pull", i, poisoned)
			}
			// Each client sends its own address, to find it in its trace.
			args := map[string]any{"to": fmt.Sprintf("client%d@example.com", i), "body": "x"}
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_email", Arguments: args}); err != nil {
				errs <- err
			}
			if err := cs.Close(); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	for i, id := range ids {
		tr := done.wait(t, id)
		if len(tr.Steps) != 3 || len(tr.SinkCalls) != 1 {
			t.Errorf("session %d: %d steps, %d sink calls: %+v", i, len(tr.Steps), len(tr.SinkCalls), tr.Steps)
			continue
		}
		if got, want := tr.SinkCalls[0].Arguments["to"], fmt.Sprintf("client%d@example.com", i); got != want {
			t.Errorf("session %d recorded %v, want %s", i, got, want)
		}
		if tr.Steps[0].Tainted || !tr.Steps[1].Tainted || !tr.TaintDelivered {
			t.Errorf("session %d: listings %+v", i, tr.Steps[:2])
		}
	}
}

func TestHTTPObeyingAgent(t *testing.T) {
	s := cellSetup(t, emailCell)
	done := newEnded()
	var events []Event
	var mu sync.Mutex
	h, err := NewHandler(s, ServeOptions{OnEnd: done.onEnd, OnEvent: func(e Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	var out bytes.Buffer
	if err := mcptest.Obey(context.Background(), srv.URL, "email", &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "summary: obeyed") {
		t.Errorf("agent output:\n%s", out.String())
	}
	mu.Lock()
	id := events[0].Session
	mu.Unlock()
	tr := done.wait(t, id)
	if len(tr.SinkCalls) != 1 || !tr.TaintDelivered {
		t.Errorf("trace %+v", tr)
	}
}

func TestHTTPHostile(t *testing.T) {
	h, err := NewHandler(cellSetup(t, emailCell), ServeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func(body string, header map[string]string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"` + strings.Repeat("a", MaxMessageBytes) + `"}}`
	if resp := post(big, nil); resp.StatusCode != http.StatusRequestEntityTooLarge && resp.StatusCode < 400 {
		t.Errorf("oversized body: %s", resp.Status)
	}
	if resp := post(`{not json`, nil); resp.StatusCode < 400 {
		t.Errorf("malformed body: %s", resp.Status)
	}
	if resp := post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, map[string]string{"Mcp-Session-Id": "forged"}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown session id: %s", resp.Status)
	}
	// The server still serves a real client.
	var out bytes.Buffer
	if err := mcptest.Obey(context.Background(), srv.URL, "email", &out); err != nil {
		t.Fatal(err)
	}
}

func TestServeStdio(t *testing.T) {
	s := cellSetup(t, emailCell)
	cr, sw := io.Pipe() // server → client
	sr, cw := io.Pipe() // client → server
	type result struct {
		tr  agent.Trace
		err error
	}
	got := make(chan result, 1)
	go func() {
		tr, err := ServeStdio(context.Background(), s, sr, sw, ServeOptions{})
		sw.Close()
		got <- result{tr, err}
	}()
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_email", Arguments: map[string]any{}})
	if err != nil || !strings.Contains(mcptest.Text(res), attacker) {
		t.Fatalf("read_email: %v %+v", err, res)
	}
	cs.Close() // closes cw: the server sees the end of its input
	select {
	case r := <-got:
		if r.err != nil || !r.tr.TaintDelivered || len(r.tr.Steps) != 1 {
			t.Errorf("trace %+v, err %v", r.tr, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return at the end of its input")
	}
}
