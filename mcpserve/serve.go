package mcpserve

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/pikit-go/pikit/agent"
)

// ServeOptions configure ServeStdio and Handler.
type ServeOptions struct {
	// OnEvent is called with each listing and call of every session, one
	// at a time.
	OnEvent func(Event)
	// OnEnd is called once per session when it ends, with its trace.
	OnEnd func(session string, tr agent.Trace)
	// SessionTimeout ends an HTTP session after this long without a
	// request; 0 is DefaultSessionTimeout.
	SessionTimeout time.Duration
}

// DefaultSessionTimeout is how long an idle HTTP session lives.
const DefaultSessionTimeout = 30 * time.Minute

// StdioSession is the session name of the one session ServeStdio serves.
const StdioSession = "stdio"

// ServeStdio serves one session over newline-delimited JSON-RPC on r and
// w (a client that launched pikit as its MCP server talks over stdin and
// stdout) until the client closes r or ctx ends, and returns the trace.
func ServeStdio(ctx context.Context, s Setup, r io.Reader, w io.Writer, o ServeOptions) (agent.Trace, error) {
	sess, err := New(s, SessionOptions{ID: StdioSession, OnEvent: o.OnEvent})
	if err != nil {
		return agent.Trace{}, err
	}
	t := &mcp.IOTransport{Reader: io.NopCloser(r), Writer: nopWriteCloser{w}, MaxLineLength: MaxMessageBytes}
	ss, err := sess.Server().Connect(ctx, t, nil)
	if err != nil {
		return sess.End(), err
	}
	done := make(chan struct{})
	go func() {
		_ = ss.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		_ = ss.Close()
	}
	tr := sess.End()
	if o.OnEnd != nil {
		o.OnEnd(StdioSession, tr)
	}
	return tr, nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// Handler serves MCP over streamable HTTP, each client session with a
// Session of its own: its own trace, and its own rug pull.
type Handler struct {
	setup Setup
	opts  ServeOptions
	http  *mcp.StreamableHTTPHandler
	probe *mcp.Server // answers the protocol-version check of requests in a session

	mu     sync.Mutex
	live   map[*Session]*sync.Once
	closed bool
}

// NewHandler returns a handler serving s; it checks s as New does.
func NewHandler(s Setup, o ServeOptions) (*Handler, error) {
	probe, err := New(s, SessionOptions{})
	if err != nil {
		return nil, err
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	h := &Handler{setup: s, opts: o, probe: probe.Server(), live: map[*Session]*sync.Once{}}
	h.http = mcp.NewStreamableHTTPHandler(h.server, &mcp.StreamableHTTPOptions{
		MaxRequestBodyBytes: MaxMessageBytes,
		SessionTimeout:      o.SessionTimeout,
	})
	return h, nil
}

type holderKey struct{}

// holder keeps the one session a request without a session id creates:
// the SDK asks for the server more than once per request.
type holder struct{ s *Session }

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r = r.WithContext(context.WithValue(r.Context(), holderKey{}, &holder{}))
	h.http.ServeHTTP(w, r)
}

// server gives the SDK the server of a request: a fresh session's for a
// request that starts one, the probe's for requests within a session (the
// SDK routes those by their session id).
func (h *Handler) server(r *http.Request) *mcp.Server {
	hd, _ := r.Context().Value(holderKey{}).(*holder)
	if r.Header.Get("Mcp-Session-Id") != "" || hd == nil {
		return h.probe
	}
	if hd.s == nil {
		s, err := New(h.setup, SessionOptions{OnEvent: h.opts.OnEvent})
		if err != nil {
			return nil // checked by NewHandler: cannot happen
		}
		s.onSession = func(ss *mcp.ServerSession) { h.track(s, ss) }
		hd.s = s
	}
	return hd.s.server
}

// track follows a session the first time it lists or calls a tool: when
// its transport closes (the client ended it, or it idled out), it ends.
func (h *Handler) track(s *Session, ss *mcp.ServerSession) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		_ = ss.Close()
		return
	}
	once, ok := h.live[s]
	if !ok {
		once = &sync.Once{}
		h.live[s] = once
	}
	h.mu.Unlock()
	go func() {
		_ = ss.Wait()
		h.end(s, once)
	}()
}

func (h *Handler) end(s *Session, once *sync.Once) {
	once.Do(func() {
		tr := s.End()
		h.mu.Lock()
		delete(h.live, s)
		h.mu.Unlock()
		if h.opts.OnEnd != nil {
			h.opts.OnEnd(s.ID(), tr)
		}
	})
}

// Close ends every live session (calling OnEnd for each) and refuses new
// ones.
func (h *Handler) Close() {
	h.mu.Lock()
	h.closed = true
	live := make(map[*Session]*sync.Once, len(h.live))
	for s, once := range h.live {
		live[s] = once
	}
	h.mu.Unlock()
	for s, once := range live {
		h.end(s, once)
	}
}
