package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pikit-go/pikit/internal/localhost"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/target"
)

// Limits on what the proxy reads.
const (
	maxRequestBytes  = 32 << 20 // a request body
	maxResponseBytes = 64 << 20 // a whole (non-streamed) answer
	// largeBody is how much of a body is read before it waits for one of
	// largeBodies slots: only so many large bodies are read at once.
	largeBody   = 1 << 20
	largeBodies = 4
)

// DefaultBodyTimeout bounds the reading of one request body, whole (from
// the end of its headers, not between reads: a body sent a byte at a
// time is cut at it too): an agent on this machine sends its 32 MiB well
// within it, and a body that stalls or trickles holds neither its
// session nor its connection open. A request refused without its body
// being read keeps the same bound on what net/http reads of it.
const DefaultBodyTimeout = 2 * time.Minute

// SessionHeader names a session when the base URL cannot carry it.
const SessionHeader = "X-Pikit-Session"

// upstream is where a session's model requests go.
type upstream struct {
	base      *url.URL // nil: the session's own target answers (offline)
	anthropic bool     // the base is Anthropic-style (no /v1 in it)
	keyEnv    string   // the variable whose key is sent, "" for none
	model     string   // the model the spec names, "" to keep the agent's
}

// Server is the interception proxy: an http.Handler that serves sessions
// under /s/{id}/ (or named by the X-Pikit-Session header) and forwards
// their model requests.
type Server struct {
	// BaseURL, when set, is where every model request goes (--base-url or
	// --upstream), whatever the target's provider default.
	BaseURL string
	// Client sends requests upstream; nil means a client without a
	// timeout (streams last as long as the model writes), whose transport
	// is http.DefaultTransport's with room for concurrent agents
	// (upstreamTransport). Its CheckRedirect is not used: the proxy
	// follows no redirect (an upstream's 3xx goes to the agent as it is).
	Client *http.Client
	// Claim, when set, gives a session id the proxy has not seen a cell:
	// pikit proxy serve, where agents open sessions themselves.
	Claim func(ctx context.Context, id string) (*Session, error)
	// Hosts are host names, beside this machine's loopback names and
	// addresses, that requests may name in their Host header and Origin
	// (the --listen host); see checkOrigin.
	Hosts []string
	// BodyTimeout bounds the reading of a request body, whole
	// (DefaultBodyTimeout when 0).
	BodyTimeout time.Duration

	mu       sync.Mutex
	sessions map[string]*Session

	once  sync.Once
	up    *http.Client  // Client, never following redirects
	fresh *http.Client  // up on a new connection for each request
	large chan struct{} // slots for reading bodies over largeBody

	requests atomic.Int64 // model requests read
	passed   atomic.Int64 // requests passed through unread
}

// Stats counts what the server has handled.
type Stats struct {
	Requests int64 // model requests read and rewritten
	Passed   int64 // requests passed through unread
}

// Stats returns the server's counts so far.
func (srv *Server) Stats() Stats {
	return Stats{Requests: srv.requests.Load(), Passed: srv.passed.Load()}
}

// Open starts a session for a cell, under id.
func (srv *Server) Open(id string, d matrix.Drive, rules Rules) (*Session, error) {
	up, err := srv.upstream(d.Cell.Config)
	if err != nil {
		return nil, err
	}
	s := newSession(id, d, rules, up)
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.sessions == nil {
		srv.sessions = map[string]*Session{}
	}
	if _, dup := srv.sessions[id]; dup {
		return nil, fmt.Errorf("session %s is already open", id)
	}
	srv.sessions[id] = s
	return s, nil
}

// Close ends a session and forgets it.
func (srv *Server) Close(s *Session) {
	s.end()
	srv.mu.Lock()
	if srv.sessions[s.ID] == s {
		delete(srv.sessions, s.ID)
	}
	srv.mu.Unlock()
}

// upstream resolves where the requests of a config's cells go.
func (srv *Server) upstream(cfg *matrix.Config) (upstream, error) {
	provider, model, err := target.ParseSpec(cfg.TargetSpec)
	if err != nil {
		return upstream{}, err
	}
	opts := target.Options{}
	for k, v := range cfg.TargetOpts {
		opts[k] = v
	}
	if srv.BaseURL != "" {
		opts[target.OptBaseURL] = srv.BaseURL
	}
	ep, err := target.EndpointOf(cfg.TargetSpec, opts)
	if err != nil {
		return upstream{}, err
	}
	up := upstream{keyEnv: ep.KeyEnv, anthropic: provider == "anthropic", model: model}
	if ep.Offline() {
		if srv.BaseURL != "" {
			return upstream{}, fmt.Errorf("target %s answers offline; --base-url and --upstream need a provider that sends requests (openai:MODEL, anthropic:MODEL, ...)", cfg.TargetSpec)
		}
		up.model = cfg.TargetSpec
		return up, nil
	}
	// EndpointOf's URL is redacted for display; requests need it whole.
	raw, err := target.BaseURLOf(cfg.TargetSpec, opts)
	if err != nil {
		return upstream{}, err
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return upstream{}, fmt.Errorf("upstream %q is not an http(s) URL", target.Redact(raw))
	}
	up.base = u
	return up, nil
}

// ServeHTTP implements http.Handler. A request that a web page could
// have sent (see checkOrigin) is refused before anything else.
func (srv *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	srv.boundBody(w, r)
	if err := srv.checkOrigin(r); err != nil {
		apiError(w, http.StatusForbidden, err.Error())
		return
	}
	srv.handle(w, r)
}

// handle serves a request that passed checkOrigin.
func (srv *Server) handle(w http.ResponseWriter, r *http.Request) {
	id, rest := r.Header.Get(SessionHeader), r.URL.Path
	if after, ok := strings.CutPrefix(r.URL.Path, "/s/"); ok {
		id, rest, _ = strings.Cut(after, "/")
		rest = "/" + rest
	}
	if id == "" {
		apiError(w, http.StatusBadRequest, "no pikit session: point the agent's base URL at /s/{session}/v1 on this proxy, or send the X-Pikit-Session header")
		return
	}
	srv.mu.Lock()
	s := srv.sessions[id]
	srv.mu.Unlock()
	if s == nil && srv.Claim != nil {
		var err error
		if s, err = srv.Claim(r.Context(), id); err != nil {
			apiError(w, http.StatusGone, err.Error())
			return
		}
	}
	if s == nil {
		apiError(w, http.StatusNotFound, fmt.Sprintf("no pikit session %q is open", id))
		return
	}
	select {
	case <-s.ended:
		apiError(w, http.StatusGone, fmt.Sprintf("pikit session %q has ended", id))
		return
	default:
	}
	s.enter()
	defer s.leave()
	srv.serve(w, r, s, rest)
}

func (srv *Server) serve(w http.ResponseWriter, r *http.Request, s *Session, rest string) {
	held := newHeldBody()
	defer held.release()
	status, msg := srv.readBody(w, r, held.buf)
	if status != 0 {
		s.refuse(status, msg)
		apiError(w, status, msg)
		return
	}
	f := formatFor(r.Method, rest)
	body := [][]byte{held.buf.Bytes()}
	var req request
	var unread error // a model request whose body is not JSON
	if f != nil {
		body, req, unread = s.rewrite(f, held.buf.Bytes(), s.up.model)
	}
	if unread != nil && s.up.base == nil {
		// Nothing upstream to pass it to: the agent is told.
		s.refuse(http.StatusBadRequest, "the "+unread.Error())
		apiError(w, http.StatusBadRequest, "the "+unread.Error())
		return
	}
	if f == nil || unread != nil {
		srv.passed.Add(1)
		s.mu.Lock()
		s.passed++
		s.mu.Unlock()
		if s.up.base == nil {
			apiError(w, http.StatusNotFound, fmt.Sprintf("pikit proxy answers %s %s only through an upstream; with the offline target %s it serves POST …/chat/completions, …/responses and …/messages", r.Method, rest, s.drive.Cell.Config.TargetSpec))
			return
		}
		if status := srv.forward(w, r, s, rest, held, body, nil); unread != nil && status >= 400 {
			s.unread(unread.Error(), status)
		}
		return
	}
	srv.requests.Add(1)
	if s.up.base == nil {
		srv.answer(w, r, s, f, bytes.Join(body, nil), req)
		return
	}
	srv.forward(w, r, s, rest, held, body, f)
}

// bodies are buffers that request bodies are read into, used again once
// a request is done with its own: at 50 KB of history a body is the
// largest allocation of a request, and the garbage of one per request
// had the collector run often enough to show in the latency the proxy
// adds (at the 99th percentile). Buffers over maxPooledBody are not kept.
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBody = 2 << 20

// heldBody is the buffer a request body was read into, held until the
// handler and every body given to net/http to send upstream are done
// with it: net/http may read and close a body after Do returns (an
// upstream can answer before it has read the request), and asks for a
// new one (GetBody) to retry a request.
type heldBody struct {
	buf  *bytes.Buffer
	refs atomic.Int32
}

// newHeldBody takes a buffer, held by the caller.
func newHeldBody() *heldBody {
	h := &heldBody{buf: bodies.Get().(*bytes.Buffer)}
	h.buf.Reset()
	h.refs.Store(1)
	return h
}

func (h *heldBody) hold() { h.refs.Add(1) }

// release lets go of the buffer; the last to let go gives it back.
func (h *heldBody) release() {
	if h.refs.Add(-1) == 0 && h.buf.Cap() <= maxPooledBody {
		bodies.Put(h.buf)
	}
}

// upBody is a request body sent upstream: the pieces of a rewritten body
// (see jsonBody.pieces) read in turn. Closing it lets go of the buffer
// they are in.
type upBody struct {
	pieces net.Buffers
	held   *heldBody
	closed atomic.Bool
}

func (b *upBody) Read(p []byte) (int, error) { return b.pieces.Read(p) }

// WriteTo writes the pieces to w: net/http copies a body with io.Copy,
// which would otherwise take a 32 KB buffer for every request it sends.
func (b *upBody) WriteTo(w io.Writer) (int64, error) { return b.pieces.WriteTo(w) }

func (b *upBody) Close() error {
	if b.closed.CompareAndSwap(false, true) {
		b.held.release()
	}
	return nil
}

// setup makes, once, what the server needs beside its fields: the client
// that sends requests upstream and the slots for reading large bodies.
func (srv *Server) setup() {
	srv.once.Do(func() {
		c := &http.Client{Transport: upstreamTransport()}
		if srv.Client != nil {
			*c = *srv.Client
		}
		// A redirect is the agent's to follow, with its own (placeholder)
		// key: pikit's key goes only to the upstream the user named.
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		srv.up = c
		srv.fresh = c
		rt := c.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		if t, ok := rt.(*http.Transport); ok {
			f := *c
			t = t.Clone()
			t.DisableKeepAlives = true
			f.Transport = t
			srv.fresh = &f
		}
		srv.large = make(chan struct{}, largeBodies)
	})
}

// upstreamTransport is http.DefaultTransport's transport with more
// connections kept open to an upstream (agents run cells concurrently,
// and the default keeps two) and a write buffer that holds a long
// history whole: net/http copies a larger body through a 32 KB buffer it
// allocates for each request.
func upstreamTransport() http.RoundTripper {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport
	}
	t = t.Clone()
	t.MaxIdleConnsPerHost = 64
	t.WriteBufferSize = 128 << 10
	return t
}

// bodyTimeout is BodyTimeout, or its default.
func (srv *Server) bodyTimeout() time.Duration {
	if srv.BodyTimeout > 0 {
		return srv.BodyTimeout
	}
	return DefaultBodyTimeout
}

// boundBody sets the connection's read deadline to the body deadline, from
// the request's start, for a request that has a body: whatever the
// handler does with it, net/http reads what is left of a body (up to 256
// KiB) after the answer, and a body sent a byte at a time would otherwise
// hold the connection for as long as the bytes keep coming. readBody sets
// it again, and lifts it once the body is read whole; a request refused
// unread keeps it until its connection closes. It does nothing where the
// ResponseWriter has no connection (a test's recorder).
func (srv *Server) boundBody(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(srv.bodyTimeout()))
	}
}

// readBody reads a request body into buf within the body deadline, or
// returns the status and message of the error to answer with. A body its
// Content-Length says is too large is refused unread; past largeBody, a
// body waits for a slot (largeBodies are read at once).
func (srv *Server) readBody(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer) (status int, msg string) {
	srv.setup()
	timeout := srv.bodyTimeout()
	deadline := time.Now().Add(timeout)
	rc := http.NewResponseController(w)
	// Not every ResponseWriter has a connection (ErrNotSupported): then
	// only the wait for a slot is bounded.
	bounded := rc.SetReadDeadline(deadline) == nil
	defer func() {
		if status != 0 {
			// The rest of the body is not read: the connection goes, and
			// the deadline stays, so what net/http reads of the rest
			// before closing it stops there too.
			w.Header().Set("Connection", "close")
			return
		}
		if bounded {
			// The answer may stream for long after: the connection's
			// reads (net/http watches it for the agent going away) must
			// not time out then.
			rc.SetReadDeadline(time.Time{})
		}
	}()
	tooLarge := fmt.Sprintf("body over %d MiB", maxRequestBytes>>20)
	if r.ContentLength > maxRequestBytes {
		return http.StatusRequestEntityTooLarge, tooLarge
	}
	failed := func(err error) (int, string) {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return http.StatusRequestTimeout, fmt.Sprintf("the request body did not come within %s", timeout)
		}
		return http.StatusBadRequest, "reading the request body: " + err.Error()
	}
	if r.ContentLength > 0 {
		buf.Grow(int(min(r.ContentLength, largeBody+1)))
	}
	if _, err := io.CopyN(buf, r.Body, largeBody+1); errors.Is(err, io.EOF) {
		return 0, ""
	} else if err != nil {
		return failed(err)
	}
	wait := time.NewTimer(time.Until(deadline))
	defer wait.Stop()
	select {
	case srv.large <- struct{}{}:
		defer func() { <-srv.large }()
	case <-wait.C:
		return http.StatusRequestTimeout, fmt.Sprintf("the request body did not come within %s (%d bodies over %d MiB were being read)", timeout, largeBodies, largeBody>>20)
	case <-r.Context().Done():
		return http.StatusBadRequest, "the agent went away"
	}
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength) - buf.Len())
	}
	if _, err := io.Copy(buf, io.LimitReader(r.Body, maxRequestBytes+1-int64(buf.Len()))); err != nil {
		return failed(err)
	}
	if buf.Len() > maxRequestBytes {
		return http.StatusRequestEntityTooLarge, tooLarge
	}
	return 0, ""
}

// checkOrigin refuses a request that a web page in the user's browser
// could have sent: one whose Host is not the proxy's own address (DNS
// rebinding: a name the attacker controls, pointed at 127.0.0.1), one
// whose Origin is not on this machine (a cross-site request), and a
// cross-site load without an Origin. The proxy's own address is
// localhost, a loopback address or the address the request came in at,
// or one of Hosts, each at the port it came in at.
func (srv *Server) checkOrigin(r *http.Request) error {
	return localhost.Check(r, srv.Hosts, "pikit proxy")
}

// answer has the session's own target answer (an offline target such as
// mock:obedient), in the request's format, to the rewritten body.
func (srv *Server) answer(w http.ResponseWriter, r *http.Request, s *Session, f format, body []byte, req request) {
	t := s.drive.Target
	if t == nil {
		apiError(w, http.StatusBadGateway, "the session has no target to answer with")
		return
	}
	// The whole body is decoded only here: a target answering offline
	// reads all of it, and there is no upstream's latency to add to.
	decoded, err := decode(body)
	if err != nil {
		apiError(w, http.StatusBadRequest, "the request body is not a JSON object: "+err.Error())
		return
	}
	resp, err := t.Chat(r.Context(), nameResults(f.toRequest(decoded)))
	if errors.Is(err, matrix.ErrBudget) {
		s.refuse(http.StatusTooManyRequests, err.Error())
		apiError(w, http.StatusTooManyRequests, err.Error())
		return
	}
	if err != nil {
		s.fail("target: " + err.Error())
		apiError(w, http.StatusBadGateway, "target: "+err.Error())
		return
	}
	s.record(reply{text: resp.Text, calls: resp.ToolCalls, usage: resp.Usage}, false)
	model := req.model
	if model == "" {
		model = s.up.model
	}
	f.writeResponse(w, resp, model, req.stream)
}

// hopHeaders are not forwarded, either way.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length", "Accept-Encoding", "Host",
	SessionHeader,
}

// credentialHeaders are the agent's credentials, and what would go with
// them (the organisation or project a key belongs to): never forwarded
// beside pikit's key, which the upstream gets from pikit's environment,
// or none. Any other request header with a word of credentialWords in its
// name is dropped too.
var credentialHeaders = []string{
	"Authorization", "X-Api-Key", "Api-Key", "Cookie", "OpenAI-Organization", "OpenAI-Project",
	"X-Goog-Api-Key", "Anthropic-Admin-Api-Key",
}

var credentialWords = []string{"key", "apikey", "token", "secret", "auth", "cookie", "password", "passwd", "credential", "credentials", "signature"}

// harmlessHeaders carry a credential word but no credential.
var harmlessHeaders = []string{"Idempotency-Key"}

// credentialHeader reports whether an agent's request header is or goes
// with a credential.
func credentialHeader(k string) bool {
	for _, h := range harmlessHeaders {
		if strings.EqualFold(k, h) {
			return false
		}
	}
	for _, h := range credentialHeaders {
		if strings.EqualFold(k, h) {
			return true
		}
	}
	for _, word := range strings.FieldsFunc(strings.ToLower(k), func(r rune) bool { return r == '-' || r == '_' || r == '.' }) {
		for _, c := range credentialWords {
			if word == c {
				return true
			}
		}
	}
	return false
}

// forward sends a request upstream, its body in pieces in held's buffer,
// and relays the answer, reading it when f is set. It returns the
// upstream's status (502 when it could not be reached).
func (srv *Server) forward(w http.ResponseWriter, r *http.Request, s *Session, rest string, held *heldBody, body [][]byte, f format) int {
	u := *s.up.base
	path := rest
	if !s.up.anthropic {
		// An OpenAI-style base URL ends in /v1: the agent's /v1/x is x.
		path = strings.TrimPrefix(path, "/v1")
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	if q := r.URL.RawQuery; q != "" {
		// The base URL's own query (an api-version) stays, the agent's
		// joins it.
		if u.RawQuery != "" {
			u.RawQuery += "&" + q
		} else {
			u.RawQuery = q
		}
	}
	size := 0
	for _, p := range body {
		size += len(p)
	}
	var empty io.Reader
	if size == 0 {
		empty = bytes.NewReader(nil)
	}
	out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), empty)
	if err != nil {
		apiError(w, http.StatusBadGateway, err.Error())
		return http.StatusBadGateway
	}
	if size > 0 {
		// What NewRequest sets for a body it knows, with the pieces not
		// copied into one; each body given to net/http holds the buffer.
		send := func() *upBody {
			held.hold()
			return &upBody{pieces: slices.Clone(body), held: held}
		}
		out.Body, out.ContentLength = send(), int64(size)
		out.GetBody = func() (io.ReadCloser, error) { return send(), nil }
	}
	for k, vs := range r.Header {
		if !skipHeader(k, r.Header) && !credentialHeader(k) {
			out.Header[k] = vs
		}
	}
	if s.up.keyEnv != "" {
		if key := strings.TrimSpace(os.Getenv(s.up.keyEnv)); key != "" {
			if s.up.anthropic {
				out.Header.Set("X-Api-Key", key)
			} else {
				out.Header.Set("Authorization", "Bearer "+key)
			}
		}
	}
	srv.setup()
	var budget target.Budget
	if f != nil {
		budget = s.budget // a model request: the run's budget admits it
	}
	resp, err := srv.send(out, budget)
	var refused budgetRefusal
	if errors.As(err, &refused) {
		s.refuse(http.StatusTooManyRequests, refused.Error())
		apiError(w, http.StatusTooManyRequests, refused.Error())
		return http.StatusTooManyRequests
	}
	if err != nil {
		msg := "upstream unreachable: " + target.Redact(err.Error())
		s.fail(msg)
		apiError(w, http.StatusBadGateway, msg)
		return http.StatusBadGateway
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		if !skipHeader(k, resp.Header) {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(resp.StatusCode)
	stream := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	if f == nil || (!stream && resp.StatusCode != http.StatusOK) {
		_, err := io.Copy(w, io.LimitReader(resp.Body, maxResponseBytes))
		if f != nil {
			msg := fmt.Sprintf("upstream answered %s", resp.Status)
			if loc, lerr := resp.Location(); lerr == nil && resp.StatusCode/100 == 3 {
				msg += fmt.Sprintf(", a redirect to %s://%s, relayed to the agent and not followed", loc.Scheme, loc.Host)
			}
			s.fail(msg)
		}
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		return resp.StatusCode
	}
	if !stream {
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
		w.Write(b)
		if err != nil {
			s.fail("upstream answer broke off: " + target.Redact(err.Error()))
			panic(http.ErrAbortHandler)
		}
		s.record(f.parseResponse(b), true)
		return resp.StatusCode
	}
	p := &sseParser{r: f.newStream()}
	flusher, _ := w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			p.Write(buf[:n])
			if _, werr := w.Write(buf[:n]); werr != nil {
				// The agent went away; keep what was read.
				p.close()
				s.record(p.r.reply(), true)
				return resp.StatusCode
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			p.close()
			rep := p.r.reply()
			if rep.err == "" {
				rep.err = "the upstream stream broke off: " + target.Redact(err.Error())
			}
			s.record(rep, true)
			// Abort the connection so the agent sees an error, not a
			// stream that merely ended.
			panic(http.ErrAbortHandler)
		}
	}
	p.close()
	rep := p.r.reply()
	if p.overflow && rep.err == "" {
		rep.err = fmt.Sprintf("a streamed event over %d bytes was relayed to the agent but not read; the trace may miss what it said", maxEventBytes)
	}
	s.record(rep, true)
	return resp.StatusCode
}

// send sends a request upstream, taking it from budget first (nil takes
// nothing): a request the budget refuses is not sent (a budgetRefusal),
// and one that never left (the upstream could not be reached) is given
// back. A request whose kept-alive connection failed before any byte of
// an answer came (the upstream had closed or reset it while it sat idle,
// as local model servers do) is sent once more, on a new connection, and
// taken again: net/http does so by itself only for requests it may
// repeat, never a POST whose bytes it wrote. A request that fails on a
// new connection is not sent again.
func (srv *Server) send(out *http.Request, budget target.Budget) (*http.Response, error) {
	resp, a, err := try(srv.up, out, budget)
	if err == nil || a == nil || !a.reused.Load() || a.answered.Load() || out.Context().Err() != nil || (out.Body != nil && out.GetBody == nil) {
		return resp, err
	}
	again := out.Clone(out.Context())
	if out.GetBody != nil {
		var gerr error
		if again.Body, gerr = out.GetBody(); gerr != nil {
			return nil, err
		}
	}
	resp, _, rerr := try(srv.fresh, again, budget)
	var refused budgetRefusal
	if errors.As(rerr, &refused) {
		return nil, budgetRefusal{fmt.Errorf("%w (it was sent once, on a connection the upstream had dropped: %v)", refused.err, target.Redact(err.Error()))}
	}
	return resp, rerr
}

// budgetRefusal is a request the run's budget did not let the proxy send.
type budgetRefusal struct{ err error }

func (b budgetRefusal) Error() string { return b.err.Error() }
func (b budgetRefusal) Unwrap() error { return b.err }

// sending is one sending of a request, as httptrace saw it.
type sending struct{ reused, wrote, answered atomic.Bool }

// try sends req once with c, first taking it from budget (nil takes
// nothing); a request that never left is given back. The sending is nil
// when the budget refused it.
func try(c *http.Client, req *http.Request, budget target.Budget) (*http.Response, *sending, error) {
	if budget != nil {
		if err := budget.Take(); err != nil {
			return nil, nil, budgetRefusal{err}
		}
	}
	a := &sending{}
	trace := &httptrace.ClientTrace{
		GotConn:              func(info httptrace.GotConnInfo) { a.reused.Store(info.Reused) },
		WroteHeaders:         func() { a.wrote.Store(true) },
		GotFirstResponseByte: func() { a.answered.Store(true) },
	}
	resp, err := c.Do(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	if err != nil && budget != nil && !a.wrote.Load() {
		budget.Give()
	}
	return resp, a, err
}

func skipHeader(k string, h http.Header) bool {
	for _, x := range hopHeaders {
		if strings.EqualFold(k, x) {
			return true
		}
	}
	for _, c := range h.Values("Connection") {
		for _, f := range strings.Split(c, ",") {
			if strings.EqualFold(strings.TrimSpace(f), k) {
				return true
			}
		}
	}
	return false
}

// apiError answers with an error in the shape OpenAI and Anthropic clients
// both read.
func apiError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": "pikit_proxy_error", "message": msg}})
}

// enter marks a request of the session in flight: a session is not idle
// while it waits for the model, however long that takes.
func (s *Session) enter() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	s.inFlight++
	if s.idle != nil {
		s.idle.Stop()
	}
}

// leave marks a request done; the idle timer restarts from the end of the
// last one.
func (s *Session) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
	if s.idle != nil && s.inFlight == 0 {
		s.idle.Reset(s.idleFor)
	}
}

// endWhenIdle ends the session after it has had no request for d.
func (s *Session) endWhenIdle(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idleFor = d
	s.idle = time.AfterFunc(d, s.end)
	if s.inFlight > 0 {
		s.idle.Stop()
	}
}
