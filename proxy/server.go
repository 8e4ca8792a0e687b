package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/target"
)

// Limits on what the proxy reads.
const (
	maxRequestBytes  = 32 << 20 // a request body
	maxResponseBytes = 64 << 20 // a whole (non-streamed) answer
)

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
	// is http.DefaultTransport's.
	Client *http.Client
	// Claim, when set, gives a session id the proxy has not seen a cell:
	// pikit proxy serve, where agents open sessions themselves.
	Claim func(ctx context.Context, id string) (*Session, error)

	mu       sync.Mutex
	sessions map[string]*Session

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

// ServeHTTP implements http.Handler.
func (srv *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes+1))
	if err != nil {
		apiError(w, http.StatusBadRequest, "reading the request: "+err.Error())
		return
	}
	if len(body) > maxRequestBytes {
		apiError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", maxRequestBytes))
		return
	}
	f := formatFor(r.Method, rest)
	var decoded map[string]any
	var req request
	if f != nil {
		var err error
		body, decoded, req, err = s.rewrite(f, body, s.up.model)
		if err != nil {
			f = nil // not JSON: passed through as it came
		}
	}
	if f == nil {
		srv.passed.Add(1)
		s.mu.Lock()
		s.passed++
		s.mu.Unlock()
		if s.up.base == nil {
			apiError(w, http.StatusNotFound, fmt.Sprintf("pikit proxy answers %s %s only through an upstream; with the offline target %s it serves POST …/chat/completions, …/responses and …/messages", r.Method, rest, s.drive.Cell.Config.TargetSpec))
			return
		}
		srv.forward(w, r, s, rest, body, nil)
		return
	}
	srv.requests.Add(1)
	if s.up.base == nil {
		srv.answer(w, r, s, f, decoded, req)
		return
	}
	srv.forward(w, r, s, rest, body, f)
}

// answer has the session's own target answer (an offline target such as
// mock:obedient), in the request's format.
func (srv *Server) answer(w http.ResponseWriter, r *http.Request, s *Session, f format, decoded map[string]any, req request) {
	t := s.drive.Target
	if t == nil {
		apiError(w, http.StatusBadGateway, "the session has no target to answer with")
		return
	}
	resp, err := t.Chat(r.Context(), nameResults(f.toRequest(decoded)))
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

// hopHeaders are not forwarded, nor are the agent's credentials: the
// upstream gets the key from pikit's environment or none.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length", "Accept-Encoding", "Host",
	"Authorization", "X-Api-Key", "Api-Key", SessionHeader,
}

// forward sends a request upstream and relays the answer, reading it when
// f is set.
func (srv *Server) forward(w http.ResponseWriter, r *http.Request, s *Session, rest string, body []byte, f format) {
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
	out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		apiError(w, http.StatusBadGateway, err.Error())
		return
	}
	for k, vs := range r.Header {
		if !skipHeader(k, r.Header) {
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
	client := srv.Client
	if client == nil {
		client = &http.Client{}
	}
	resp, err := client.Do(out)
	if err != nil {
		msg := "upstream unreachable: " + target.Redact(err.Error())
		s.fail(msg)
		apiError(w, http.StatusBadGateway, msg)
		return
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
			s.fail(fmt.Sprintf("upstream answered %s", resp.Status))
		}
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		return
	}
	if !stream {
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
		w.Write(b)
		if err != nil {
			s.fail("upstream answer broke off: " + target.Redact(err.Error()))
			panic(http.ErrAbortHandler)
		}
		s.record(f.parseResponse(b), true)
		return
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
				return
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
