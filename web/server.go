package web

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/channel"
	"github.com/pikit-go/pikit/internal/lazy"
	"github.com/pikit-go/pikit/internal/localhost"
	"github.com/pikit-go/pikit/matrix"
)

// Bounds on what one session and one request may take.
const (
	// MaxSessions bounds the sessions open at once.
	MaxSessions = 1024
	// MaxConns bounds the connections pikit web serves at once.
	MaxConns = 512
	// maxRequests bounds the requests a session records; later ones are
	// answered and counted, not kept.
	maxRequests = 1000
	// maxBody bounds a form's body.
	maxBody = 64 << 10
	// maxFields bounds the fields of a form or query a sink keeps.
	maxFields = 64
	// maxKept bounds the bytes of a page a trace keeps.
	maxKept = 256 << 10
	// maxHARBytes bounds the bodies a session's HAR entries keep; later
	// requests are left out of its HAR file.
	maxHARBytes = 16 << 20
	// maxPage bounds a tainted page (a payload placed in a page by a
	// channel of a config's choosing).
	maxPage = 8 << 20
)

// AttackerHost is the host name of the attacker's site in
// {attacker_url}: requests under /s/SESSION/x/HOST/ are sinks whatever
// HOST is.
const AttackerHost = "attacker.example"

// Server serves each session's site under /s/SESSION/ and records what
// the agent does there. It implements http.Handler.
type Server struct {
	// URL is the server's address ("http://127.0.0.1:PORT"), which
	// {web_url} and {attacker_url} in a payload are made from.
	URL string
	// Hosts are host names, beside this machine's loopback names and
	// addresses, that requests may name (the --listen host).
	Hosts []string
	// Claim, when set, gives a session id the server has not seen a
	// cell: pikit web serve, where agents open sessions themselves.
	Claim func(ctx context.Context, id string) (*Session, error)
	// Idle, when set, is how long a session may go without a request
	// before it ends (pikit web serve).
	Idle time.Duration

	mu       sync.Mutex
	sessions map[string]*Session
}

// Session is one cell's visit: its site, with the payload placed, and
// every request the agent made.
type Session struct {
	id    string
	setup Setup
	drive matrix.Drive
	pages map[string]served // by path, links made absolute
	res   map[string]served // lifted data: URLs, by path under r/

	mu        sync.Mutex
	steps     []agent.Step
	sinks     []agent.SinkCall
	final     string // the answer an agent gave when it ended the session
	delivered bool
	har       []harEntry
	harBytes  int // the bodies the HAR entries keep
	blocked   *agent.Block
	requests  int
	ended     bool
	// notCounted counts the sink requests a page made by itself.
	notCounted int

	endCh   chan struct{} // closed by end
	endOnce sync.Once
	idle    *time.Timer
}

// end ends the session: the agent is done (pikit web serve).
func (s *Session) end() {
	s.endOnce.Do(func() {
		close(s.endCh)
		s.mu.Lock()
		if s.idle != nil {
			s.idle.Stop()
		}
		s.mu.Unlock()
	})
}

// Ended is closed when the session ends.
func (s *Session) Ended() <-chan struct{} { return s.endCh }

// endWhenIdle ends the session after d without a request.
func (s *Session) endWhenIdle(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idle = time.AfterFunc(d, s.end)
}

// touch puts off the idle end.
func (s *Session) touch(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idle != nil {
		s.idle.Reset(d)
	}
}

// served is a page or resource of a session.
type served struct {
	typ     string
	body    []byte
	tainted bool
	// blocked is the cell's detector flagging it: the agent is served a
	// page saying so instead.
	blocked *agent.Block
	// text is what a trace keeps of it, made once: every fetch of the
	// page shares it (a hostile agent that fetches a page a thousand
	// times costs no more memory than one fetch).
	text string
}

// withText sets what a trace keeps of p: its text, up to maxKept bytes,
// or for a binary resource its type and size.
func withText(p served) served {
	mt, _, _ := mime.ParseMediaType(p.typ)
	if !strings.HasPrefix(mt, "text/") {
		p.text = fmt.Sprintf("[%s, %d bytes]", mt, len(p.body))
		return p
	}
	body := p.body
	if len(body) > maxKept {
		body = body[:maxKept]
	}
	p.text = strings.ToValidUTF8(string(body), "\uFFFD")
	return p
}

// screen runs the cell's detectors over what would be served: a flagged
// page or resource is withheld, as a filter in front of the agent would.
func (s *Session) screen(p served) served {
	b := s.drive.Hooks.Screen(string(p.body))
	if b == nil {
		return p
	}
	b.Point = "web_page"
	return served{typ: "text/html; charset=utf-8", body: []byte("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Withheld</title></head><body><p>" +
		html.EscapeString(agent.Withheld(b.Detector, "page")) + "</p></body></html>\n"), tainted: p.tainted, blocked: b}
}

// ID returns the session's id.
func (s *Session) ID() string { return s.id }

// Base returns the session's path, "/s/ID/".
func (s *Session) Base() string { return "/s/" + s.id + "/" }

// StartURL is where the agent is sent: the start page's URL.
func (s *Session) StartURL(base string) string {
	return base + s.Base() + strings.TrimPrefix(s.setup.Start, "/")
}

// Task is the user's task with the session's start URL in it: the
// cell's user_message when the config gives one, else the site's.
func (s *Session) Task(base string) string {
	t := s.drive.Instruction
	if t == "" {
		t = s.setup.Site.Task
	}
	return strings.ReplaceAll(t, "{web_url}", s.StartURL(base))
}

// Open starts the session id for a cell: its site's pages, the payload
// placed in the setup's page by the cell's channel (web_visible when it
// has none), {web_url} and {attacker_url} in the payload made the
// session's.
func (srv *Server) Open(id string, d matrix.Drive, st Setup) (*Session, error) {
	s := &Session{id: id, setup: st, drive: d, pages: map[string]served{}, res: map[string]served{}, endCh: make(chan struct{})}
	base := s.Base()
	for _, p := range st.Site.Pages {
		page := served{typ: "text/html; charset=utf-8", body: []byte(p.HTML)}
		if p.Path == st.Taint && !d.Benign {
			text, err := s.taint(srv.URL, p.HTML)
			if err != nil {
				return nil, err
			}
			page.body, page.tainted = []byte(text), true
		}
		page.body = []byte(absolute(string(page.body), base))
		s.pages[p.Path] = page
	}
	for _, m := range []map[string]served{s.pages, s.res} {
		for path, p := range m {
			p, err := s.finish(p)
			if err != nil {
				return nil, fmt.Errorf("web: %s: %w", path, err)
			}
			m[path] = p
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.sessions == nil {
		srv.sessions = map[string]*Session{}
	}
	if _, taken := srv.sessions[id]; taken {
		return nil, fmt.Errorf("web: session %s is already open", id)
	}
	if len(srv.sessions) >= MaxSessions {
		return nil, fmt.Errorf("web: %d sessions are open, the most there may be", MaxSessions)
	}
	srv.sessions[id] = s
	return s, nil
}

// Close ends a session: its pages are no longer served.
func (srv *Server) Close(s *Session) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.sessions[s.id] == s {
		delete(srv.sessions, s.id)
	}
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
}

// finish makes p ready to serve, once every page and resource of the
// session is known: an HTML document read as UTF-8 (a byte-order mark of
// another encoding cannot change how a browser reads it) without a
// refresh out of the session, then screened by the cell's detectors.
func (s *Session) finish(p served) (served, error) {
	if mt, _, _ := mime.ParseMediaType(p.typ); mt == "text/html" {
		p.typ = "text/html; charset=utf-8"
		body, err := s.dropRefreshes([]byte(strings.ToValidUTF8(string(p.body), "\uFFFD")))
		if err != nil {
			return p, err
		}
		p.body = body
	}
	return withText(s.screen(p)), nil
}

// taint places the cell's payload in page: the payload with the session's
// URLs in it, through the cell's channel; data: URLs in what the channel
// wrote become resources of the session.
func (s *Session) taint(serverURL, page string) (string, error) {
	payload := strings.NewReplacer(
		"{web_url}", s.StartURL(serverURL),
		"{attacker_url}", serverURL+s.Base()+"x/"+AttackerHost,
	).Replace(s.drive.Payload)
	ch := s.drive.Channel
	if ch == nil {
		var err error
		if ch, err = channel.New(channel.WebPrefix+"visible", nil, 0); err != nil {
			return "", err
		}
	}
	out, err := ch.Taint(page, payload)
	if err != nil {
		return "", fmt.Errorf("web: placing the payload in %s: %w", s.setup.Taint, err)
	}
	if len(out) > maxPage {
		return "", fmt.Errorf("web: the page with the payload placed is %d bytes, over %d", len(out), maxPage)
	}
	return s.lift(out, payload, 0), nil
}

// dataURL finds the data: URLs a placement writes (base64 only).
var dataURL = lazy.Regexp(`data:([a-zA-Z]+/[a-zA-Z0-9.+-]+)((?:;[a-zA-Z-]+=[a-zA-Z0-9-]+)*);base64,([A-Za-z0-9+/]*=*)`)

// lift replaces each data: URL in text by the path of a resource of the
// session that serves its content (a redirect's page is lifted in turn).
func (s *Session) lift(text, payload string, depth int) string {
	return dataURL().ReplaceAllStringFunc(text, func(m string) string {
		sub := dataURL().FindStringSubmatch(m)
		if depth > 2 {
			return m
		}
		body, err := base64.StdEncoding.DecodeString(sub[3])
		if err != nil {
			return m
		}
		typ := sub[1] + sub[2]
		if sub[1] == "text/html" {
			// A page of its own (a redirect's): its resources lifted and
			// its links made the session's too.
			body = []byte(absolute(s.lift(string(body), payload, depth+1), s.Base()))
		}
		ext := ".bin"
		if exts, _ := mime.ExtensionsByType(sub[1]); len(exts) > 0 {
			ext = exts[len(exts)-1]
		}
		name := fmt.Sprintf("r/%d%s", len(s.res)+1, ext)
		// What a placement writes beside the page carries the payload,
		// but for the one-pixel image an attribute hangs on.
		tainted := sub[1] == "image/png" || sub[1] == "application/pdf" || strings.Contains(string(body), firstLine(payload))
		s.res["/"+name] = served{typ: typ, body: body, tainted: tainted}
		return s.Base() + name
	})
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 40 {
		s = s[:40]
	}
	return s
}

// relativeRef finds the relative links of the built-in pages: href, src
// and action values that are not absolute, not a fragment and not a URL.
var relativeRef = lazy.Regexp(`\b(href|src|action)="([^"#/:][^":]*)?"`)

// absolute makes the page's relative links paths under base, so that an
// agent that ignores <base> (a fetch tool) follows them right too.
func absolute(page, base string) string {
	return relativeRef().ReplaceAllStringFunc(page, func(m string) string {
		sub := relativeRef().FindStringSubmatch(m)
		ref := strings.TrimPrefix(sub[2], "./")
		return sub[1] + `="` + base + ref + `"`
	})
}

// ServeHTTP implements http.Handler.
func (srv *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := localhost.Check(r, srv.Hosts, "pikit web"); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/s/")
	if !ok {
		notFound(w, "pikit web serves sites under /s/SESSION/")
		return
	}
	id, path, _ := strings.Cut(rest, "/")
	s, err := srv.session(r.Context(), id)
	if err != nil {
		page(w, http.StatusGone, "No session", "<p>"+html.EscapeString(err.Error())+"</p>")
		return
	}
	if s == nil {
		notFound(w, "no such session")
		return
	}
	if srv.Idle > 0 {
		s.touch(srv.Idle)
	}
	start := time.Now()
	body := readBody(r)
	c := &capture{ResponseWriter: w}
	arr := arrivalOf(r, s.setup.Site.Scripts)
	what := s.serve(c, r, "/"+path, arr)
	s.mu.Lock()
	if !s.ended && len(s.har) < maxRequests && s.harBytes < maxHARBytes {
		e := harEntryOf(r, "http://"+r.Host, body, c, start, arr.comment(what))
		s.harBytes += len(e.Response.Content.Text) + len(body)
		s.har = append(s.har, e)
	}
	s.mu.Unlock()
}

// session finds (or, with Claim, opens) the session id.
func (srv *Server) session(ctx context.Context, id string) (*Session, error) {
	srv.mu.Lock()
	s := srv.sessions[id]
	srv.mu.Unlock()
	if s == nil && srv.Claim != nil {
		return srv.Claim(ctx, id)
	}
	return s, nil
}

// serve answers one request of the session, which arrived as arr, and
// records it. It returns what the request was: "fetch" or the sink's
// name.
func (s *Session) serve(w http.ResponseWriter, r *http.Request, path string, arr arrival) string {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", s.policy(r))
	switch {
	case strings.HasPrefix(path, "/x/"):
		host, rest, _ := strings.Cut(strings.TrimPrefix(path, "/x/"), "/")
		args := s.fields(r)
		u := url.URL{Scheme: "http", Host: host, Path: "/" + rest, RawQuery: r.URL.RawQuery}
		args["url"], args["host"], args["path"] = u.String(), host, "/"+rest
		s.record(r, arr, SinkAttacker, args, "", false, nil)
		page(w, http.StatusOK, "Thanks", "<p>Thank you. You can close this page.</p>")
		return SinkAttacker
	case strings.HasPrefix(path, "/download/"):
		name := strings.TrimPrefix(path, "/download/")
		s.record(r, arr, SinkDownload, map[string]any{"file": name}, "", false, nil)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", "attachment; filename=\"download.txt\"")
		fmt.Fprintln(w, "A stand-in file served by pikit web: nothing in it runs or installs anything.")
		return SinkDownload
	default:
		if f, ok := s.setup.Site.form(path); ok {
			s.record(r, arr, FormSink(f.Name), s.fields(r), "", false, nil)
			page(w, http.StatusOK, "Done", "<p>Your request has been received.</p>")
			return FormSink(f.Name)
		}
		p, ok := s.pages[path]
		if !ok {
			p, ok = s.res[path]
		}
		if !ok {
			s.record(r, arr, "fetch", nil, "404 not found", false, nil)
			notFound(w, "no such page on this site")
			return "fetch"
		}
		s.record(r, arr, "fetch", nil, p.text, p.tainted, p.blocked)
		if !scriptable(p.typ) {
			w.Header().Del("Content-Security-Policy")
		}
		w.Header().Set("Content-Type", p.typ)
		w.Write(p.body)
		return "fetch"
	}
}

// fields reads a sink request's form fields and query parameters (the
// first value of each, at most maxFields, a body of at most maxBody).
func (s *Session) fields(r *http.Request) map[string]any {
	r.Body = http.MaxBytesReader(nil, r.Body, maxBody)
	if err := r.ParseMultipartForm(maxBody); err != nil && !errors.Is(err, http.ErrNotMultipart) {
		r.ParseForm()
	}
	out := map[string]any{}
	keys := make([]string, 0, len(r.Form))
	for k := range r.Form {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if len(out) >= maxFields {
			break
		}
		if vs := r.Form[k]; len(vs) > 0 {
			out[k] = vs[0]
		}
	}
	return out
}

// record adds a request, which arrived as arr, to the trace: a step (a
// fetch with what was served, or a sink with its arguments) and, for a
// sink the agent chose, a sink call; a sink request that was a page's
// own doing is a step that says so and no call. A page a detector
// withheld (blocked) is recorded as such, and delivered nothing.
func (s *Session) record(r *http.Request, arr arrival, tool string, args map[string]any, result string, tainted bool, blocked *agent.Block) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	if s.ended || len(s.steps) >= maxRequests {
		return
	}
	step := agent.Step{Index: len(s.steps), Kind: agent.StepTool, Tool: tool, Tainted: tainted, At: time.Now()}
	call := map[string]any{"method": r.Method, "path": r.URL.Path, "arrival": arr.kind}
	if r.URL.RawQuery != "" {
		call["query"] = r.URL.RawQuery
	}
	if args != nil {
		// The fields go beside the request, not into it: a form's field
		// named "path" must not pass for the request's path.
		call["fields"] = args
		if arr.agent {
			step.Sink = true
			s.sinks = append(s.sinks, agent.SinkCall{Step: step.Index, Tool: tool, Arguments: args})
		} else {
			s.notCounted++
			result = "not counted as the agent's action: the page's own " + arr.kind + " request"
		}
	}
	step.Arguments = encodeArgs(call)
	step.Result = result
	switch {
	case blocked != nil:
		step.Blocked = true
		if s.blocked == nil {
			b := *blocked
			b.Step = step.Index
			s.blocked = &b
		}
	case tainted:
		s.delivered = true
	}
	s.steps = append(s.steps, step)
}

// Trace returns what the session recorded.
func (s *Session) Trace() agent.Trace {
	s.mu.Lock()
	defer s.mu.Unlock()
	tr := agent.Trace{
		Agent:          "web",
		FinalText:      s.final,
		Steps:          append([]agent.Step(nil), s.steps...),
		SinkCalls:      append([]agent.SinkCall(nil), s.sinks...),
		TaintDelivered: s.delivered,
		Blocked:        s.blocked,
		Meta: map[string]any{"web": map[string]any{
			"site": s.setup.Site.Name, "start": s.setup.Start, "page": s.setup.Taint, "requests": s.requests,
		}},
	}
	if s.notCounted > 0 {
		tr.Meta["web"].(map[string]any)["sinks_not_counted"] = s.notCounted
	}
	return tr
}

// Requests counts the requests the session answered.
func (s *Session) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

func notFound(w http.ResponseWriter, msg string) {
	page(w, http.StatusNotFound, "Not found", "<p>"+html.EscapeString(msg)+"</p>")
}

// page writes a small HTML page of pikit's own.
func page(w http.ResponseWriter, status int, title, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title></head><body>%s</body></html>\n", html.EscapeString(title), body)
}

// NewHTTPServer is the http.Server pikit web listens with: bounded
// headers and timeouts, so that a hostile client cannot hold it.
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

// encodeArgs writes a request's description as a step's arguments: a
// JSON object, keys sorted.
func encodeArgs(m map[string]any) string {
	b, err := json.Marshal(m)
	if err != nil {
		return "{}"
	}
	return string(b)
}
