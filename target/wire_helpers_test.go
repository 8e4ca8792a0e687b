package target

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Keys the provider tests use; long enough for Redact to replace by value.
const (
	testOpenAIKey    = "sk-test-openai-0123456789abcdefWXYZ"
	testAnthropicKey = "sk-ant-test-0123456789abcdefWXYZ"
)

// wireRequest is one request a wireServer received.
type wireRequest struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Raw    []byte
	Body   map[string]any // Raw decoded, nil when it is not a JSON object
}

// wireServer is an httptest server speaking a provider's wire format: the
// handler answers request n (from 0) and the server records every request.
type wireServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []wireRequest
}

func newWireServer(t *testing.T, handler func(w http.ResponseWriter, r *http.Request, n int)) *wireServer {
	t.Helper()
	s := &wireServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		req := wireRequest{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Raw: raw}
		var body map[string]any
		if json.Unmarshal(raw, &body) == nil {
			req.Body = body
		}
		s.mu.Lock()
		n := len(s.requests)
		s.requests = append(s.requests, req)
		s.mu.Unlock()
		handler(w, r, n)
	}))
	t.Cleanup(s.Close)
	return s
}

// Requests returns what the server received so far.
func (s *wireServer) Requests() []wireRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]wireRequest(nil), s.requests...)
}

// Count returns how many requests the server received.
func (s *wireServer) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// wireBody reads a recorded-shape body from testdata/<provider>/<name>.json.
func wireBody(t *testing.T, provider, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", provider, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wireWriteJSON answers with a JSON body, a status and extra headers as
// name, value pairs.
func wireWriteJSON(w http.ResponseWriter, status int, body []byte, headers ...string) {
	for i := 0; i+1 < len(headers); i += 2 {
		w.Header().Set(headers[i], headers[i+1])
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// wireServeFiles answers request n with the nth testdata body, status 200.
func wireServeFiles(t *testing.T, provider string, names ...string) func(http.ResponseWriter, *http.Request, int) {
	bodies := make([][]byte, len(names))
	for i, n := range names {
		bodies[i] = wireBody(t, provider, n)
	}
	return func(w http.ResponseWriter, r *http.Request, n int) {
		if n >= len(bodies) {
			wireWriteJSON(w, http.StatusInternalServerError, []byte(`{"error":{"message":"test server: no more responses"}}`))
			return
		}
		wireWriteJSON(w, http.StatusOK, bodies[n])
	}
}

// openOpenAITest opens an openai target against srv with a test key.
func openOpenAITest(t *testing.T, srv *wireServer, opts Options) Target {
	t.Helper()
	t.Setenv(OpenAIKeyEnv, testOpenAIKey)
	t.Setenv(OpenAIBaseURLEnv, "")
	all := Options{OptBaseURL: srv.URL + "/v1"}
	for k, v := range opts {
		all[k] = v
	}
	tg, err := Open("openai:gpt-test", all)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return tg
}

// openAnthropicTest opens an anthropic target against srv with a test key.
func openAnthropicTest(t *testing.T, srv *wireServer, opts Options) Target {
	t.Helper()
	t.Setenv(AnthropicKeyEnv, testAnthropicKey)
	t.Setenv(AnthropicBaseURLEnv, "")
	all := Options{OptBaseURL: srv.URL}
	for k, v := range opts {
		all[k] = v
	}
	tg, err := Open("anthropic:claude-test", all)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return tg
}

// wireClock is an injected clock and sleeper: Sleep advances the clock at
// once and records the wait, so retry tests never sleep for real.
type wireClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newWireClock() *wireClock {
	return &wireClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *wireClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *wireClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.sleeps = append(c.sleeps, d)
	return nil
}

func (c *wireClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

func (c *wireClock) Total() time.Duration {
	var sum time.Duration
	for _, d := range c.Sleeps() {
		sum += d
	}
	return sum
}

// wirePolicy is a retry policy on the fake clock with a fixed jitter.
func wirePolicy(c *wireClock) RetryPolicy {
	return RetryPolicy{Sleep: c.Sleep, Rand: func() float64 { return 0.5 }}
}

// wireLimiter is a Limiter on the fake clock.
func wireLimiter(c *wireClock, rps float64, burst int) *Limiter {
	l := NewLimiter(rps, burst)
	l.now, l.sleep = c.Now, c.Sleep
	return l
}

// wireJSONPath walks a decoded JSON value by object keys and array indexes.
func wireJSONPath(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func wirePtr[T any](v T) *T { return &v }
