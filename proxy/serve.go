package proxy

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/matrix"
)

// DefaultIdleTimeout ends a served session that has had no request for
// this long.
const DefaultIdleTimeout = 2 * time.Minute

// DefaultClaimWait is how long a new session waits for a cell.
const DefaultClaimWait = 30 * time.Second

// Serve hands the cells of a plan to sessions that agents open
// themselves: pikit proxy serve, for agents pikit cannot launch. Each new
// session id (in the base URL path or the X-Pikit-Session header) takes the
// next cell; the session ends on POST /pikit/sessions/{id}/end or after
// IdleTimeout without a request, and its cell's result is written then.
// It implements matrix.Driver (the runner offers it cells) and
// http.Handler (agents and their harnesses talk to it).
type Serve struct {
	Server *Server
	// URL is the proxy's address, for the base URLs it hands out.
	URL         string
	IdleTimeout time.Duration
	ClaimWait   time.Duration

	once   sync.Once
	offers chan *offer
	done   chan struct{}
	rules  ruleCache

	claimMu  sync.Mutex
	claiming map[string]*claiming // new session ids being given a cell
}

// claiming is a claim in progress: the requests that arrive under its id
// meanwhile wait for it and share its session.
type claiming struct {
	done chan struct{}
	s    *Session
	err  error
}

// offer is a cell waiting for a session.
type offer struct {
	d       matrix.Drive
	claimed chan *Session
}

func (sv *Serve) init() {
	sv.once.Do(func() {
		sv.offers = make(chan *offer)
		sv.done = make(chan struct{})
		sv.Server.Claim = sv.claim
	})
}

// Finish tells sessions that arrive from now on that no cell is left.
func (sv *Serve) Finish() {
	sv.init()
	select {
	case <-sv.done:
	default:
		close(sv.done)
	}
}

// Drive implements matrix.Driver: it offers the cell to the next session
// and returns that session's trace when it ends.
func (sv *Serve) Drive(ctx context.Context, d matrix.Drive) (agent.Trace, error) {
	sv.init()
	o := &offer{d: d, claimed: make(chan *Session, 1)}
	select {
	case sv.offers <- o:
	case <-ctx.Done():
		return agent.Trace{}, ctx.Err()
	}
	var s *Session
	select {
	case s = <-o.claimed:
	case <-ctx.Done():
		return agent.Trace{}, ctx.Err()
	}
	if s == nil {
		return agent.Trace{}, errors.New("the session that took this cell could not open")
	}
	select {
	case <-s.Ended():
	case <-ctx.Done():
		sv.Server.Close(s)
		return s.Trace(), ctx.Err()
	}
	sv.Server.Close(s)
	tr := s.Trace()
	if tr.ModelCalls == 0 {
		if why := s.unanswered(); why != "" {
			return tr, fmt.Errorf("session %s ended without a model answer: %s", s.ID, why)
		}
		return tr, fmt.Errorf("session %s ended without a model request", s.ID)
	}
	return tr, nil
}

// claim gives a new session id the next cell on offer. Requests that
// arrive together under one new id share one claim: one session, one cell.
func (sv *Serve) claim(ctx context.Context, id string) (*Session, error) {
	if len(id) > 128 || strings.ContainsAny(id, "/?#% \t\r\n") {
		return nil, fmt.Errorf("session id %q: use up to 128 characters without /, ?, #, %% or spaces", id)
	}
	sv.claimMu.Lock()
	if c, ok := sv.claiming[id]; ok {
		sv.claimMu.Unlock()
		select {
		case <-c.done:
			return c.s, c.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	sv.Server.mu.Lock()
	s := sv.Server.sessions[id] // opened since the caller looked
	sv.Server.mu.Unlock()
	if s != nil {
		sv.claimMu.Unlock()
		return s, nil
	}
	c := &claiming{done: make(chan struct{})}
	if sv.claiming == nil {
		sv.claiming = map[string]*claiming{}
	}
	sv.claiming[id] = c
	sv.claimMu.Unlock()
	c.s, c.err = sv.take(ctx, id)
	sv.claimMu.Lock()
	delete(sv.claiming, id)
	sv.claimMu.Unlock()
	close(c.done)
	return c.s, c.err
}

// take waits for the next cell on offer and opens session id on it.
func (sv *Serve) take(ctx context.Context, id string) (*Session, error) {
	wait := sv.ClaimWait
	if wait <= 0 {
		wait = DefaultClaimWait
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	var o *offer
	select {
	case o = <-sv.offers:
	case <-sv.done:
		return nil, errors.New("every cell of the plan has run; no session can open")
	case <-timer.C:
		return nil, fmt.Errorf("no cell was free within %s: every worker has a session open (raise -j)", wait)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	rules, err := sv.rules.get(o.d.Cell.Config)
	var s *Session
	if err == nil {
		s, err = sv.Server.Open(id, o.d, rules)
	}
	if err != nil {
		// Another session may have opened under this id meanwhile: the
		// cell goes back on offer by failing this one.
		o.claimed <- nil
		return nil, err
	}
	idle := sv.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	s.endWhenIdle(idle)
	o.claimed <- s
	return s, nil
}

// ServeHTTP implements http.Handler: the control endpoints under /pikit/,
// and everything else through the proxy.
//
//	POST /pikit/sessions           open a session now; answers its id, cell and base URLs
//	POST /pikit/sessions/{id}/end  end a session: its cell is judged and written
func (sv *Serve) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sv.init()
	if err := sv.Server.checkOrigin(r); err != nil {
		// A web page may not open sessions (taking cells) either.
		apiError(w, http.StatusForbidden, err.Error())
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/pikit/sessions")
	if !ok {
		sv.Server.handle(w, r)
		return
	}
	if r.Method != http.MethodPost {
		apiError(w, http.StatusMethodNotAllowed, "use POST")
		return
	}
	switch {
	case rest == "" || rest == "/":
		id := r.Header.Get(SessionHeader)
		if id == "" {
			id = newID()
		}
		s, err := sv.claim(r.Context(), id)
		if err != nil {
			apiError(w, http.StatusGone, err.Error())
			return
		}
		c := s.drive.Cell
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": s.ID, "key": c.Key, "attack": c.Attack.Name, "defense": c.Defense.Name, "channel": c.Channel.Name,
			"repeat_index": c.Repeat, "case_id": c.Config.CaseID,
			"openai_base_url":    sv.URL + "/s/" + s.ID + "/v1",
			"anthropic_base_url": sv.URL + "/s/" + s.ID,
		})
	case strings.HasSuffix(rest, "/end"):
		id := strings.TrimSuffix(strings.TrimPrefix(rest, "/"), "/end")
		sv.Server.mu.Lock()
		s := sv.Server.sessions[id]
		sv.Server.mu.Unlock()
		if s == nil {
			apiError(w, http.StatusNotFound, fmt.Sprintf("no pikit session %q is open", id))
			return
		}
		s.end()
		w.WriteHeader(http.StatusNoContent)
	default:
		apiError(w, http.StatusNotFound, "unknown pikit endpoint; POST /pikit/sessions or /pikit/sessions/{id}/end")
	}
}

// NewHTTPServer returns the http.Server that carries the proxy h (a Server
// or a Serve): headers bounded in size and time, idle keep-alive
// connections closed. It has no ReadTimeout or WriteTimeout: either would
// cut an answer that streams for longer (a ReadTimeout cancels the
// request once it passes, body read or not); the proxy bounds the reading
// of each body itself (Server.BodyTimeout).
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    256 << 10,
	}
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%x", b)
}
