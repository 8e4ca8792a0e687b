package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/internal/claim"
	"github.com/pikit-go/pikit/matrix"
)

// DefaultIdleTimeout ends a served session that has had no request for
// this long.
const DefaultIdleTimeout = 2 * time.Minute

// DefaultClaimWait is how long a new session waits for a cell.
const DefaultClaimWait = claim.DefaultWait

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

	once  sync.Once
	q     claim.Queue[*Session]
	rules matrix.PerConfig[Rules]
}

func (sv *Serve) init() {
	sv.once.Do(func() {
		sv.q = claim.Queue[*Session]{Open: sv.open, Find: sv.find, Wait: sv.ClaimWait, Ended: (*Session).Ended, Close: sv.Server.Close}
		sv.Server.Claim = sv.q.Claim
	})
}

// Finish tells sessions that arrive from now on that no cell is left.
func (sv *Serve) Finish() {
	sv.init()
	sv.q.Finish()
}

// Drive implements matrix.Driver: it offers the cell to the next session
// and returns that session's trace when it ends.
func (sv *Serve) Drive(ctx context.Context, d matrix.Drive) (agent.Trace, error) {
	sv.init()
	s, err := sv.q.Serve(ctx, d)
	if s == nil {
		return agent.Trace{}, err
	}
	tr := s.Trace()
	if err != nil {
		return tr, err
	}
	if tr.ModelCalls == 0 {
		if why := s.unanswered(); why != "" {
			return tr, fmt.Errorf("session %s ended without a model answer: %s", s.ID, why)
		}
		return tr, fmt.Errorf("session %s ended without a model request", s.ID)
	}
	return tr, nil
}

// find returns the session open under id.
func (sv *Serve) find(id string) (*Session, bool) {
	sv.Server.mu.Lock()
	defer sv.Server.mu.Unlock()
	s := sv.Server.sessions[id]
	return s, s != nil
}

// open opens session id on a cell, to end after IdleTimeout without a
// request.
func (sv *Serve) open(_ context.Context, id string, d matrix.Drive) (*Session, error) {
	rules, err := sv.rules.Get(d.Cell.Config, ParseRules)
	if err != nil {
		return nil, err
	}
	s, err := sv.Server.Open(id, d, rules)
	if err != nil {
		return nil, err
	}
	idle := sv.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	s.endWhenIdle(idle)
	return s, nil
}

// ServeHTTP implements http.Handler: the control endpoints under /pikit/,
// and everything else through the proxy.
//
//	POST /pikit/sessions           open a session now; answers its id, cell and base URLs
//	POST /pikit/sessions/{id}/end  end a session: its cell is judged and written
func (sv *Serve) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sv.init()
	sv.Server.boundBody(w, r)
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
			id = claim.NewID()
		}
		s, err := sv.q.Claim(r.Context(), id)
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
// of each body itself, whole, from its request's start
// (Server.BodyTimeout).
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    256 << 10,
	}
}
