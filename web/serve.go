package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/internal/claim"
	"github.com/pikit-go/pikit/internal/localhost"
	"github.com/pikit-go/pikit/matrix"
)

// DefaultIdleTimeout ends a served session that has had no request for
// this long.
const DefaultIdleTimeout = 2 * time.Minute

// Serve hands the cells of a plan to sessions that agents open
// themselves: pikit web serve, for agents pikit does not launch. The
// first request under a new session id (http://HOST/s/ID/…) takes the
// next cell; POST /pikit/sessions opens one and answers its id, cell,
// start URL and task. A session ends on POST /pikit/sessions/ID/end
// (whose body, when there is one, is the agent's answer) or after
// IdleTimeout without a request, and its cell's result is written then.
// It implements matrix.Driver and http.Handler.
type Serve struct {
	Server      *Server
	IdleTimeout time.Duration
	ClaimWait   time.Duration
	// HAR, when set, is where each cell's exchanges are written
	// (KEY.har).
	HAR *HARFiles

	once   sync.Once
	q      claim.Queue[*Session]
	setups matrix.PerConfig[Setup]
}

func (sv *Serve) init() {
	sv.once.Do(func() {
		if sv.IdleTimeout <= 0 {
			sv.IdleTimeout = DefaultIdleTimeout
		}
		sv.q = claim.Queue[*Session]{Open: sv.open, Find: sv.find, Wait: sv.ClaimWait, Ended: (*Session).Ended, Close: sv.Server.Close}
		sv.Server.Claim = sv.q.Claim
		sv.Server.Idle = sv.IdleTimeout
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
	if err := sv.HAR.write(s, d.Cell.Key); err != nil {
		return tr, err
	}
	if s.Requests() == 0 {
		return tr, fmt.Errorf("session %s ended without a request for a page", s.id)
	}
	return tr, nil
}

func (sv *Serve) find(id string) (*Session, bool) {
	sv.Server.mu.Lock()
	defer sv.Server.mu.Unlock()
	s := sv.Server.sessions[id]
	return s, s != nil
}

// open opens session id on a cell, to end after IdleTimeout without a
// request.
func (sv *Serve) open(_ context.Context, id string, d matrix.Drive) (*Session, error) {
	st, err := sv.setups.Get(d.Cell.Config, ParseSetup)
	if err != nil {
		return nil, err
	}
	s, err := sv.Server.Open(id, d, st)
	if err != nil {
		return nil, err
	}
	s.endWhenIdle(sv.IdleTimeout)
	return s, nil
}

// maxAnswer bounds the answer an agent gives when it ends its session.
const maxAnswer = 64 << 10

// ServeHTTP implements http.Handler: the control endpoints under /pikit/,
// and the sessions' sites.
//
//	POST /pikit/sessions           open a session now; answers its id, cell, start URL and task
//	POST /pikit/sessions/{id}/end  end a session (the body: the agent's answer); its cell is judged and written
func (sv *Serve) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sv.init()
	rest, ok := strings.CutPrefix(r.URL.Path, "/pikit/sessions")
	if !ok {
		sv.Server.ServeHTTP(w, r)
		return
	}
	if err := localhost.Check(r, sv.Server.Hosts, "pikit web"); err != nil {
		// A web page may not open sessions (taking cells) either.
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "use POST", http.StatusMethodNotAllowed)
		return
	}
	switch {
	case rest == "" || rest == "/":
		s, err := sv.q.Claim(r.Context(), claim.NewID())
		if err != nil {
			http.Error(w, err.Error(), http.StatusGone)
			return
		}
		c := s.drive.Cell
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": s.id, "key": c.Key, "attack": c.Attack.Name, "defense": c.Defense.Name, "channel": c.Channel.Name,
			"repeat_index": c.Repeat, "start_url": s.StartURL(sv.Server.URL), "task": s.Task(sv.Server.URL),
		})
	case strings.HasSuffix(rest, "/end"):
		id := strings.TrimSuffix(strings.TrimPrefix(rest, "/"), "/end")
		s, ok := sv.find(id)
		if !ok {
			http.Error(w, fmt.Sprintf("no pikit web session %q is open", id), http.StatusNotFound)
			return
		}
		answer, _ := io.ReadAll(io.LimitReader(r.Body, maxAnswer))
		s.mu.Lock()
		s.final = strings.ToValidUTF8(string(answer), "\uFFFD")
		s.mu.Unlock()
		s.end()
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, "unknown pikit endpoint; POST /pikit/sessions or /pikit/sessions/{id}/end", http.StatusNotFound)
	}
}
