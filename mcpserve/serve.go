package mcpserve

import (
	"context"
	"fmt"
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
	// MaxSessions bounds the HTTP sessions open at once; a client that
	// would open one more gets a 503 with a JSON-RPC error saying why. 0
	// is DefaultMaxSessions.
	MaxSessions int
	// BodyTimeout bounds reading an HTTP request's body; 0 is
	// DefaultBodyTimeout.
	BodyTimeout time.Duration
	// Notify, when set, is told in a line what the server refused a
	// client and why: a stdio message over MaxMessageBytes (each one), new
	// HTTP sessions over MaxSessions (once each time the bound is
	// reached).
	Notify func(string)
	// Hosts are host names, beside this machine's loopback names and
	// the address a request came in at, that an HTTP request may name in
	// its Host header (the --listen host). A request for any other host,
	// or one a web page elsewhere sent, is refused (see localOnly).
	Hosts []string
}

// DefaultSessionTimeout is how long an idle HTTP session lives.
const DefaultSessionTimeout = 5 * time.Minute

// StdioSession is the session name of the one session ServeStdio serves.
const StdioSession = "stdio"

// ServeStdio serves one session over newline-delimited JSON-RPC on r and
// w (a client that launched pikit as its MCP server talks over stdin and
// stdout) until the client closes r or ctx ends, and returns the trace.
// A line over MaxMessageBytes is skipped (pikit reads on to its end,
// keeping none of it) and answered with a JSON-RPC error; the session
// goes on.
func ServeStdio(ctx context.Context, s Setup, r io.Reader, w io.Writer, o ServeOptions) (agent.Trace, error) {
	sess, err := New(s, SessionOptions{ID: StdioSession, OnEvent: o.OnEvent})
	if err != nil {
		return agent.Trace{}, err
	}
	out := &lockedWriter{w: w} // the SDK's answers and pikit's refusals, a line at a time
	lines, relay := io.Pipe()
	defer lines.Close()
	go relayLines(r, relay, out, o.Notify)
	// Every line that reaches the SDK is within MaxMessageBytes; its own
	// bound (which would end the session) is left above that.
	t := &mcp.IOTransport{Reader: lines, Writer: nopWriteCloser{out}, MaxLineLength: 2 * MaxMessageBytes}
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

	body http.Handler // reads the request's body, bounded, then serve
	gate sessionGate

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
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	h := &Handler{setup: s, opts: o, probe: probe.Server(), live: map[*Session]*sync.Once{}}
	h.http = mcp.NewStreamableHTTPHandler(h.server, &mcp.StreamableHTTPOptions{
		MaxRequestBodyBytes: MaxMessageBytes,
		SessionTimeout:      o.SessionTimeout,
		// localOnly checks every request's Host (the SDK's own check
		// would refuse the --listen host too) and its Origin.
		DisableLocalhostProtection: true,
	})
	h.gate = sessionGate{
		max:    o.MaxSessions,
		why:    fmt.Sprintf("the most this server keeps (pikit mcp serve --max-sessions; one idle for %v ends)", o.SessionTimeout),
		notify: o.Notify,
	}
	h.body = localOnly(bodyLimited(http.HandlerFunc(h.serve), o.BodyTimeout), o.Hosts)
	return h, nil
}

type holderKey struct{}

// holder keeps the one session a request without a session id creates:
// the SDK asks for the server more than once per request.
type holder struct{ s *Session }

// ServeHTTP implements http.Handler. A request must come from this
// machine, not a web page (see ServeOptions.Hosts); its body is bounded
// (see NewHTTPServer), and so is the number of open sessions
// (MaxSessions).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.body.ServeHTTP(w, r)
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) {
	hd := &holder{}
	r = r.WithContext(context.WithValue(r.Context(), holderKey{}, hd))
	h.gate.serve(w, r, h.http, func() *mcp.Server {
		if hd.s == nil {
			return nil
		}
		return hd.s.server
	})
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
