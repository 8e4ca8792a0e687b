package mcpserve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of pikit's MCP endpoints over HTTP (Handler, and the endpoint a
// Runner serves its cells at). A client is untrusted and may be anything
// on the network it listens to: each bound caps what it can hold.
const (
	// DefaultMaxSessions is how many MCP sessions a Handler keeps open at
	// once unless ServeOptions.MaxSessions says otherwise.
	DefaultMaxSessions = 64
	// DefaultBodyTimeout bounds reading one request's body (at most
	// MaxMessageBytes).
	DefaultBodyTimeout = 30 * time.Second
	// headerTimeout bounds reading a request's headers.
	headerTimeout = 10 * time.Second
	// idleTimeout closes a keep-alive connection with no request.
	idleTimeout = 60 * time.Second
	// maxHeaderBytes bounds a request's headers.
	maxHeaderBytes = 64 << 10
)

// JSON-RPC error codes of the refusals.
const (
	codeInvalidRequest = -32600 // a message too large
	codeServerError    = -32000 // no place for a session; a body too slow
)

// NewHTTPServer returns the http.Server pikit serves MCP with: a
// request's headers are bounded in size and in time, and a keep-alive
// connection idle for a minute is closed. It sets no ReadTimeout or
// WriteTimeout: either would cut a session's SSE stream short. A
// request's body is bounded where it is read instead (Handler, Runner):
// refused unread when its Content-Length is over MaxMessageBytes, and
// read within a deadline that is lifted once it is in.
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: headerTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeaderBytes}
}

// bodyLimited reads a request's body whole before next sees it: at most
// MaxMessageBytes (a larger Content-Length is refused with 413 before a
// byte of it is read; a chunked body that grows past it, as soon as it
// does) and within timeout (408 after). The read deadline is lifted once
// the body is in (net/http lifts it too when it starts watching for the
// client to hang up), so the response may stream as long as it needs.
func bodyLimited(next http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > MaxMessageBytes {
			refuse(w, http.StatusRequestEntityTooLarge, codeInvalidRequest,
				fmt.Sprintf("the request body is %d bytes; pikit mcp reads at most %d in one message", r.ContentLength, MaxMessageBytes))
			return
		}
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		deadline := rc.SetReadDeadline(time.Now().Add(timeout)) == nil
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxMessageBytes))
		if deadline {
			_ = rc.SetReadDeadline(time.Time{})
		}
		var tooLarge *http.MaxBytesError
		var netErr net.Error
		switch {
		case errors.As(err, &tooLarge):
			refuse(w, http.StatusRequestEntityTooLarge, codeInvalidRequest,
				fmt.Sprintf("the request body is over %d bytes, the most pikit mcp reads in one message", MaxMessageBytes))
			return
		case errors.As(err, &netErr) && netErr.Timeout():
			refuse(w, http.StatusRequestTimeout, codeServerError,
				fmt.Sprintf("the request body did not arrive within %v", timeout))
			return
		case err != nil:
			refuse(w, http.StatusBadRequest, codeInvalidRequest, "reading the request body: "+err.Error())
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
		next.ServeHTTP(w, r)
	})
}

// refuse answers a request pikit will not pass on with a JSON-RPC error
// (id null: the request was not read, or not as a message) saying why,
// and closes the connection when its body may be left unread.
func refuse(w http.ResponseWriter, status, code int, msg string) {
	b, _ := json.Marshal(refusalMessage{JSONRPC: "2.0", Error: refusalError{Code: code, Message: "pikit mcp: " + msg}})
	w.Header().Set("Content-Type", "application/json")
	if status != http.StatusServiceUnavailable {
		w.Header().Set("Connection", "close")
	}
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// refusalMessage is a JSON-RPC error response to no request in particular.
type refusalMessage struct {
	JSONRPC string       `json:"jsonrpc"`
	ID      *int         `json:"id"` // always null
	Error   refusalError `json:"error"`
}

type refusalError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// sessionHeader carries a streamable HTTP session's id.
const sessionHeader = "Mcp-Session-Id"

// sessionGate keeps at most max MCP sessions of an SDK handler open: a
// request that would open one more (an initialize without a session id)
// gets a 503 with a JSON-RPC error saying why. A place is taken when such
// a request comes and freed when it opened no session, or when the
// session it opened closes (the client ended it, it idled out, the server
// ended it). Other requests without a session id (a newer client's
// server/discover probe) open none that lasts: the SDK closes a session
// that did not begin with initialize.
type sessionGate struct {
	max int
	// why says, in a refusal, whose bound it is and what frees a place.
	why string
	// notify, when set, is told the first time a request is refused
	// since a place was last freed.
	notify func(string)
	// onRelease, when set, is called each time a place is freed (tests).
	onRelease func()

	mu       sync.Mutex
	live     int
	refusing bool
}

// serve passes r to next, if a request that may open a session finds a
// place; server gives, once next has returned, the server such a
// session was connected to (nil if none). r's body has been read whole
// (bodyLimited): the gate reads it again.
func (g *sessionGate) serve(w http.ResponseWriter, r *http.Request, next http.Handler, server func() *mcp.Server) {
	if r.Method != http.MethodPost || r.Header.Get(sessionHeader) != "" || !initializes(r) {
		next.ServeHTTP(w, r)
		return
	}
	if !g.take() {
		refuse(w, http.StatusServiceUnavailable, codeServerError, g.refusal())
		return
	}
	next.ServeHTTP(w, r)
	if id := w.Header().Get(sessionHeader); id != "" {
		if srv := server(); srv != nil {
			for ss := range srv.Sessions() {
				// One the request did not initialize the SDK has closed
				// already (it may still be listed a moment).
				if ss.ID() == id && ss.InitializeParams() != nil {
					go func() {
						_ = ss.Wait()
						g.free()
					}()
					return
				}
			}
		}
	}
	g.free() // no session, or one already closed
}

// initializes reports whether a request's body may be an initialize: it
// is, or it is not a single JSON-RPC message the gate can read.
func initializes(r *http.Request) bool {
	b, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	var msg struct {
		Method string `json:"method"`
	}
	return err != nil || json.Unmarshal(b, &msg) != nil || msg.Method == "initialize"
}

func (g *sessionGate) refusal() string {
	sessions := "sessions"
	if g.max == 1 {
		sessions = "session"
	}
	return fmt.Sprintf("already %d open MCP %s, %s: refusing new sessions until one ends (an HTTP DELETE with its %s header ends it)", g.max, sessions, g.why, sessionHeader)
}

func (g *sessionGate) take() bool {
	g.mu.Lock()
	ok := g.live < g.max
	tell := !ok && !g.refusing
	if ok {
		g.live++
	} else {
		g.refusing = true
	}
	g.mu.Unlock()
	if tell && g.notify != nil {
		g.notify(g.refusal())
	}
	return ok
}

func (g *sessionGate) free() {
	g.mu.Lock()
	g.live--
	g.refusing = false
	g.mu.Unlock()
	if g.onRelease != nil {
		g.onRelease()
	}
}
