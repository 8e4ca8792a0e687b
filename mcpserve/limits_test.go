package mcpserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pikit-go/pikit/agent"
)

// notes collects what a server said through ServeOptions.Notify.
type notes struct {
	mu   sync.Mutex
	msgs []string
}

func (n *notes) add(msg string) {
	n.mu.Lock()
	n.msgs = append(n.msgs, msg)
	n.mu.Unlock()
}

func (n *notes) all() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return strings.Join(n.msgs, "\n")
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// postMCP sends one JSON-RPC message as a streamable HTTP client would.
func postMCP(t *testing.T, url, body, session string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// rpcError decodes the JSON-RPC error of a refusal.
func rpcError(t *testing.T, b []byte) (id any, code int, msg string) {
	t.Helper()
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Error == nil || m.JSONRPC != "2.0" {
		t.Fatalf("not a JSON-RPC error: %q (%v)", b, err)
	}
	_ = json.Unmarshal(m.ID, &id)
	return id, m.Error.Code, m.Error.Message
}

func TestHTTPMaxSessions(t *testing.T) {
	said := &notes{}
	h, err := NewHandler(cellSetup(t, emailCell), ServeOptions{MaxSessions: 2, Notify: said.add})
	if err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{}, 64)
	h.gate.onRelease = func() { released <- struct{}{} }
	// waitLive waits until the gate counts n open sessions.
	waitLive := func(n int) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			h.gate.mu.Lock()
			live := h.gate.live
			h.gate.mu.Unlock()
			if live == n {
				return
			}
			select {
			case <-released:
			case <-timeout:
				t.Fatalf("%d sessions open, want %d", live, n)
			}
		}
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close)

	// Requests that open no session hold no place: a call without a
	// session, a malformed initialize.
	for _, body := range []string{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, `{"jsonrpc":"2.0","id":1,"method":"initialize"}`, `{not json`} {
		postMCP(t, srv.URL, body, "")
	}
	waitLive(0)
	ctx := context.Background()
	connect := func() (*mcp.ClientSession, error) {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1}, nil)
		if err == nil {
			t.Cleanup(func() { cs.Close() }) // before the server's, which waits for them
		}
		return cs, err
	}
	var open []*mcp.ClientSession
	for range 2 {
		cs, err := connect()
		if err != nil {
			t.Fatalf("session %d of 2: %v", len(open)+1, err)
		}
		open = append(open, cs)
	}
	resp, body := postMCP(t, srv.URL, initialize, "")
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a third session: %s %q, want 503", resp.Status, body)
	}
	if id, code, msg := rpcError(t, body); id != nil || code >= 0 || !strings.Contains(msg, "already 2 open MCP sessions") || !strings.Contains(msg, "--max-sessions") {
		t.Errorf("refusal: id %v, code %d, message %q", id, code, msg)
	}
	if _, err := connect(); err == nil {
		t.Error("the SDK client connected a third session")
	}
	if n := strings.Count(said.all(), "refusing new sessions"); n != 1 {
		t.Errorf("told %d times of the refusals:\n%s", n, said.all())
	}
	// The open sessions still work.
	if _, err := open[0].ListTools(ctx, nil); err != nil {
		t.Errorf("an open session failed: %v", err)
	}
	// A session that ends frees its place.
	open[1].Close()
	waitLive(1)
	if _, err := connect(); err != nil {
		t.Fatalf("after one ended: %v", err)
	}
}

// countingListener counts the bytes its connections read.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, n: &l.n}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// rawServer serves h as pikit mcp does (NewHTTPServer, changed by tune
// when set), counting the bytes it reads.
func rawServer(t *testing.T, h http.Handler, tune func(*http.Server)) (addr string, read *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	srv := NewHTTPServer(h)
	if tune != nil {
		tune(srv)
	}
	go srv.Serve(cl)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), &cl.n
}

// rawRequest writes head (and body) on a fresh connection and reads the
// response, up to a bound of 10s.
func rawRequest(t *testing.T, addr, head, body string) (*http.Response, []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, head+body); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no response: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, b
}

func postHead(addr string, headers ...string) string {
	return "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
		strings.Join(headers, "") + "\r\n"
}

func TestHTTPBodyLimits(t *testing.T) {
	h, err := NewHandler(cellSetup(t, emailCell), ServeOptions{BodyTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	addr, read := rawServer(t, h, nil)

	t.Run("a 100 MB upload is refused unread", func(t *testing.T) {
		before := read.Load()
		start := time.Now()
		// The body is never sent: the answer must come from the
		// headers alone.
		resp, body := rawRequest(t, addr, postHead(addr, "Content-Length: 104857600\r\n"), "")
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("%s %q, want 413", resp.Status, body)
		}
		if _, _, msg := rpcError(t, body); !strings.Contains(msg, "1048576") {
			t.Errorf("message %q", msg)
		}
		n := read.Load() - before
		if n > 4<<10 {
			t.Errorf("the server read %d bytes", n)
		}
		t.Logf("refused after reading %d bytes (the request's headers)", n)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("refused after %v", d)
		}
	})
	t.Run("a chunked body over the bound", func(t *testing.T) {
		big := strings.Repeat("a", MaxMessageBytes+1)
		chunked := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(big), big)
		resp, body := rawRequest(t, addr, postHead(addr, "Transfer-Encoding: chunked\r\n"), chunked)
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("%s %q, want 413", resp.Status, body)
		}
	})
	t.Run("a body that never comes", func(t *testing.T) {
		start := time.Now()
		// Ten bytes of the hundred promised, then nothing: the deadline
		// ends it, with an answer.
		resp, body := rawRequest(t, addr, postHead(addr, "Content-Length: 100\r\n"), `{"jsonrpc"`)
		if resp.StatusCode != http.StatusRequestTimeout {
			t.Fatalf("%s %q, want 408", resp.Status, body)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("answered after %v", d)
		}
	})
	t.Run("an ordinary session still works", func(t *testing.T) {
		resp, body := rawRequest(t, addr, postHead(addr, fmt.Sprintf("Content-Length: %d\r\n", len(initialize))), initialize)
		if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"serverInfo"`)) {
			t.Fatalf("%s %q", resp.Status, body)
		}
	})
}

func TestNewHTTPServer(t *testing.T) {
	srv := NewHTTPServer(http.NotFoundHandler())
	if srv.ReadHeaderTimeout <= 0 || srv.IdleTimeout <= 0 || srv.MaxHeaderBytes <= 0 {
		t.Errorf("unbounded: ReadHeaderTimeout %v, IdleTimeout %v, MaxHeaderBytes %d", srv.ReadHeaderTimeout, srv.IdleTimeout, srv.MaxHeaderBytes)
	}
	// A read or write timeout would cut a long SSE stream.
	if srv.ReadTimeout != 0 || srv.WriteTimeout != 0 {
		t.Errorf("ReadTimeout %v, WriteTimeout %v: they would end streams", srv.ReadTimeout, srv.WriteTimeout)
	}

	// An idle connection is closed.
	addr, _ := rawServer(t, http.NotFoundHandler(), func(s *http.Server) { s.IdleTimeout = 100 * time.Millisecond })
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("an idle connection was kept: %v", err)
	}
}

func TestBodyDeadlineSparesStreams(t *testing.T) {
	const deadline = 50 * time.Millisecond
	stream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		// A response streamed for four times the body's deadline.
		tick := time.NewTicker(deadline)
		defer tick.Stop()
		for i := range 4 {
			fmt.Fprintf(w, "data: %d %s\n\n", i, b)
			http.NewResponseController(w).Flush()
			<-tick.C
		}
		if r.Context().Err() != nil {
			fmt.Fprint(w, "data: cancelled\n\n")
			return
		}
		fmt.Fprint(w, "data: done\n\n")
	})
	addr, _ := rawServer(t, bodyLimited(stream, deadline), nil)
	resp, body := rawRequest(t, addr, postHead(addr, "Content-Length: 2\r\n"), "{}")
	if resp.StatusCode != http.StatusOK || !strings.HasSuffix(string(body), "data: 3 {}\n\ndata: done\n\n") {
		t.Errorf("%s %q", resp.Status, body)
	}
}

// stdioClient drives ServeStdio with raw lines.
type stdioClient struct {
	in    *io.PipeWriter
	lines chan string
	done  chan agent.Trace
}

func startStdio(t *testing.T, o ServeOptions) *stdioClient {
	t.Helper()
	sr, cw := io.Pipe()
	cr, sw := io.Pipe()
	c := &stdioClient{in: cw, lines: make(chan string, 16), done: make(chan agent.Trace, 1)}
	go func() {
		tr, _ := ServeStdio(context.Background(), cellSetup(t, emailCell), sr, sw, o)
		sw.Close()
		sr.CloseWithError(errors.New("the server returned"))
		c.done <- tr
	}()
	go func() {
		sc := bufio.NewScanner(cr)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	return c
}

func (c *stdioClient) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(c.in, line); err != nil {
		t.Fatalf("the server stopped reading: %v", err)
	}
}

func (c *stdioClient) next(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			t.Fatal("the server ended the session")
		}
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
	}
	return ""
}

func TestServeStdioOversizedMessage(t *testing.T) {
	huge := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_email","arguments":{"x":"` + strings.Repeat("a", MaxMessageBytes) + `"}}}`
	tests := []struct {
		name string
		// sent after the session is initialized
		lines []string
	}{
		{"one line", []string{huge + "\n"}},
		{"in pieces", []string{huge[:1000], huge[1000 : MaxMessageBytes/2], huge[MaxMessageBytes/2:] + "\n"}},
		{"with CRLF", []string{huge + "\r\n"}},
		{"two in a row", []string{huge + "\n" + huge + "\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			said := &notes{}
			c := startStdio(t, ServeOptions{Notify: said.add})
			c.send(t, initialize+"\n")
			if l := c.next(t); !strings.Contains(l, `"id":1`) || !strings.Contains(l, "serverInfo") {
				t.Fatalf("initialize: %s", l)
			}
			c.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
			for _, l := range tt.lines {
				c.send(t, l)
			}
			refusals := strings.Count(strings.Join(tt.lines, ""), "\n")
			for range refusals {
				id, code, msg := rpcError(t, []byte(c.next(t)))
				if id != nil || code != -32600 || !strings.Contains(msg, "1048576") {
					t.Errorf("refusal: id %v, code %d, message %q", id, code, msg)
				}
			}
			// The session goes on.
			c.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_email","arguments":{}}}`+"\n")
			if l := c.next(t); !strings.Contains(l, `"id":2`) || !strings.Contains(l, attacker) {
				t.Errorf("after the refusal: %s", clipped(l))
			}
			c.in.Close()
			select {
			case tr := <-c.done:
				if len(tr.Steps) != 1 || !tr.TaintDelivered {
					t.Errorf("trace %+v", tr)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("ServeStdio did not end with its input")
			}
			if n := strings.Count(said.all(), "over 1048576 bytes"); n != refusals {
				t.Errorf("told %d times, want %d:\n%s", n, refusals, said.all())
			}
		})
	}
}

func TestServeStdioOversizedAtEOF(t *testing.T) {
	c := startStdio(t, ServeOptions{})
	c.send(t, initialize+"\n")
	c.next(t)
	c.send(t, strings.Repeat("b", MaxMessageBytes+1))
	c.in.Close()
	if _, code, _ := rpcError(t, []byte(c.next(t))); code != -32600 {
		t.Errorf("code %d", code)
	}
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not end with its input")
	}
}
