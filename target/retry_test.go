package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

var wireHi = Request{Messages: []Message{{Role: RoleUser, Content: "hi"}}}

// wireProviders runs a test against both wire formats.
var wireProviders = []struct {
	name string
	open func(*testing.T, *wireServer, Options) Target
	ok   string // testdata name of a successful reply
}{
	{"openai", openOpenAITest, "chat"},
	{"anthropic", openAnthropicTest, "message"},
}

func TestRetryAfterHeaders(t *testing.T) {
	tests := []struct {
		name     string
		headers  []string
		atLeast  time.Duration
		atMost   time.Duration
		provider string
	}{
		{name: "Retry-After seconds", headers: []string{"Retry-After", "2"}, atLeast: 2 * time.Second, atMost: 2 * time.Second, provider: "openai"},
		{name: "retry-after-ms", headers: []string{"retry-after-ms", "1500"}, atLeast: 1500 * time.Millisecond, atMost: 1500 * time.Millisecond, provider: "openai"},
		{name: "retry-after-ms wins", headers: []string{"retry-after-ms", "1200", "Retry-After", "9"}, atLeast: 1200 * time.Millisecond, atMost: 1200 * time.Millisecond, provider: "anthropic"},
		{name: "anthropic Retry-After", headers: []string{"Retry-After", "3"}, atLeast: 3 * time.Second, atMost: 3 * time.Second, provider: "anthropic"},
		// No header: the jittered back-off, 0.5 of the 500ms base.
		{name: "no header", atLeast: 250 * time.Millisecond, atMost: 250 * time.Millisecond, provider: "openai"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rateLimited := wireBody(t, tt.provider, "error_429")
			ok := wireBody(t, tt.provider, map[string]string{"openai": "chat", "anthropic": "message"}[tt.provider])
			srv := newWireServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if n == 0 {
					wireWriteJSON(w, http.StatusTooManyRequests, rateLimited, tt.headers...)
					return
				}
				wireWriteJSON(w, http.StatusOK, ok)
			})
			var tg Target
			if tt.provider == "openai" {
				tg = openOpenAITest(t, srv, nil)
			} else {
				tg = openAnthropicTest(t, srv, nil)
			}
			clock := newWireClock()
			resp, err := WithRetry(tg, wirePolicy(clock)).Chat(context.Background(), wireHi)
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if resp.Text == "" {
				t.Error("empty reply after the retry")
			}
			if srv.Count() != 2 {
				t.Errorf("server got %d requests, want 2", srv.Count())
			}
			if got := clock.Total(); got < tt.atLeast || got > tt.atMost {
				t.Errorf("waited %v (%v), want between %v and %v", got, clock.Sleeps(), tt.atLeast, tt.atMost)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		headers []string
		want    time.Duration
	}{
		{[]string{"Retry-After", "2"}, 2 * time.Second},
		{[]string{"Retry-After", "0.5"}, 500 * time.Millisecond},
		{[]string{"Retry-After", now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{[]string{"Retry-After", now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{[]string{"Retry-After", "soon"}, 0},
		{[]string{"Retry-After", "-4"}, 0},
		{[]string{"retry-after-ms", "250"}, 250 * time.Millisecond},
		{[]string{"retry-after-ms", "junk", "Retry-After", "1"}, time.Second},
		{nil, 0},
	}
	for _, tt := range tests {
		h := http.Header{}
		for i := 0; i+1 < len(tt.headers); i += 2 {
			h.Set(tt.headers[i], tt.headers[i+1])
		}
		if got := parseRetryAfter(h, now); got != tt.want {
			t.Errorf("parseRetryAfter(%v) = %v, want %v", tt.headers, got, tt.want)
		}
	}
}

func TestRetryTransientFailures(t *testing.T) {
	failures := []struct {
		name  string
		write func(w http.ResponseWriter, provider string)
	}{
		{"500", func(w http.ResponseWriter, p string) {
			wireWriteJSON(w, http.StatusInternalServerError, []byte(`{"error":{"message":"The server had an error","type":"server_error"}}`))
		}},
		{"529 overloaded", func(w http.ResponseWriter, p string) {
			wireWriteJSON(w, 529, []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
		}},
		{"502 from a proxy, not JSON", func(w http.ResponseWriter, p string) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "<html><body>502 Bad Gateway</body></html>")
		}},
		{"malformed JSON body", func(w http.ResponseWriter, p string) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id": "chatcmpl-1", "choices": [{"message": {"content": "trunc`)
		}},
		{"200 with an HTML body", func(w http.ResponseWriter, p string) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<html>captive portal</html>")
		}},
		{"JSON of the wrong shape", func(w http.ResponseWriter, p string) {
			wireWriteJSON(w, http.StatusOK, []byte(`{}`))
		}},
		{"connection dropped mid-body", func(w http.ResponseWriter, p string) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, `{"id":`)
			if hj, ok := w.(http.Hijacker); ok {
				conn, _, _ := hj.Hijack()
				conn.Close()
			}
		}},
	}
	for _, p := range wireProviders {
		for _, f := range failures {
			t.Run(p.name+"/"+f.name, func(t *testing.T) {
				ok := wireBody(t, p.name, p.ok)
				srv := newWireServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
					if n <= 1 { // once unwrapped, once under WithRetry
						f.write(w, p.name)
						return
					}
					wireWriteJSON(w, http.StatusOK, ok)
				})
				tg := p.open(t, srv, nil)
				// Without the wrapper the failure is retryable.
				_, err := tg.Chat(context.Background(), wireHi)
				if retryable, _, _ := Classify(err); err == nil || !retryable {
					t.Fatalf("first Chat error %v: retryable %v, want a retryable error", err, retryable)
				}
				clock := newWireClock()
				resp, err := WithRetry(tg, wirePolicy(clock)).Chat(context.Background(), wireHi)
				if err != nil {
					t.Fatalf("retried Chat: %v", err)
				}
				if resp.Text == "" {
					t.Error("empty reply")
				}
				if srv.Count() != 3 {
					t.Errorf("server got %d requests, want 3", srv.Count())
				}
			})
		}
	}
}

func TestRetryMalformedIsMarked(t *testing.T) {
	srv := newWireServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"choices": [`)
	})
	tg := openOpenAITest(t, srv, nil)
	clock := newWireClock()
	p := wirePolicy(clock)
	p.MaxRetries = 2
	_, err := WithRetry(tg, p).Chat(context.Background(), wireHi)
	if !errors.Is(err, ErrMalformedResponse) {
		t.Fatalf("error %v does not wrap ErrMalformedResponse", err)
	}
	if !strings.Contains(err.Error(), "gave up after 3 attempts") || !strings.Contains(err.Error(), `{"choices": [`) {
		t.Errorf("error %q does not say how often it tried and what came back", err)
	}
	if srv.Count() != 3 {
		t.Errorf("server got %d requests, want 3", srv.Count())
	}
}

func TestRetryAttemptTimeout(t *testing.T) {
	for _, p := range wireProviders {
		t.Run(p.name, func(t *testing.T) {
			srv := newWireServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				<-r.Context().Done() // hang until the client gives up
			})
			tg := p.open(t, srv, nil)
			clock := newWireClock()
			policy := wirePolicy(clock)
			policy.AttemptTimeout = 50 * time.Millisecond
			policy.MaxRetries = 2
			start := time.Now()
			_, err := WithRetry(tg, policy).Chat(context.Background(), wireHi)
			if err == nil {
				t.Fatal("Chat against a hanging server succeeded")
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
			}
			if !strings.Contains(err.Error(), "gave up after 3 attempts") {
				t.Errorf("error %q does not say it gave up", err)
			}
			if srv.Count() != 3 {
				t.Errorf("server got %d requests, want 3", srv.Count())
			}
			if el := time.Since(start); el > 2*time.Second {
				t.Errorf("took %v", el)
			}
		})
	}
}

func TestRetryNotOnClientErrors(t *testing.T) {
	tests := []struct {
		provider, file string
		status         int
		message        string
		unauthorized   bool
	}{
		{"openai", "error_401", 401, "Incorrect API key provided", true},
		{"openai", "error_400", 400, "Invalid value for 'temperature'", false},
		{"anthropic", "error_401", 401, "invalid x-api-key", true},
		{"anthropic", "error_400", 400, "roles must alternate", false},
		{"openai", "", 403, "", false},
		{"anthropic", "", 404, "", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d", tt.provider, tt.status), func(t *testing.T) {
			body := []byte(`{"error":{"message":"nope","type":"x"}}`)
			if tt.file != "" {
				body = wireBody(t, tt.provider, tt.file)
			}
			srv := newWireServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				wireWriteJSON(w, tt.status, body)
			})
			var tg Target
			if tt.provider == "openai" {
				tg = openOpenAITest(t, srv, nil)
			} else {
				tg = openAnthropicTest(t, srv, nil)
			}
			clock := newWireClock()
			_, err := WithRetry(tg, wirePolicy(clock)).Chat(context.Background(), wireHi)
			if err == nil {
				t.Fatal("Chat succeeded")
			}
			if srv.Count() != 1 {
				t.Errorf("server got %d requests, want 1 (no retry)", srv.Count())
			}
			if len(clock.Sleeps()) != 0 {
				t.Errorf("waited %v before giving up", clock.Sleeps())
			}
			if got := errors.Is(err, ErrUnauthorized); got != tt.unauthorized {
				t.Errorf("errors.Is(%v, ErrUnauthorized) = %v, want %v", err, got, tt.unauthorized)
			}
			if !strings.Contains(err.Error(), fmt.Sprint(tt.status)) || !strings.Contains(err.Error(), tt.message) {
				t.Errorf("error %q does not show the status and the server's message %q", err, tt.message)
			}
			var te *Error
			if !errors.As(err, &te) || te.StatusCode != tt.status || te.Provider != tt.provider {
				t.Errorf("error %#v is not an *Error with status %d", err, tt.status)
			}
		})
	}
}

func TestRetryConnectionRefused(t *testing.T) {
	// A port where nothing listens.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	t.Setenv(OpenAIKeyEnv, testOpenAIKey)
	tg, err := Open("openai:gpt-test", Options{OptBaseURL: "http://" + addr + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	clock := newWireClock()
	p := wirePolicy(clock)
	p.MaxRetries = 3
	var retries []int
	p.OnRetry = func(n int, wait time.Duration, err error) { retries = append(retries, n) }
	_, err = WithRetry(tg, p).Chat(context.Background(), wireHi)
	if !errors.Is(err, ErrConnection) {
		t.Fatalf("error %v does not wrap ErrConnection", err)
	}
	if len(retries) != 3 || retries[2] != 3 {
		t.Errorf("OnRetry saw %v, want [1 2 3]", retries)
	}
	// Full jitter at 0.5: 250ms, 500ms, 1s.
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second}
	if got := clock.Sleeps(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("waits = %v, want %v", got, want)
	}
}

func TestRetryCancelStopsAtOnce(t *testing.T) {
	srv := newWireServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		wireWriteJSON(w, http.StatusServiceUnavailable, []byte(`{"error":{"message":"busy"}}`), "Retry-After", "30")
	})
	tg := openOpenAITest(t, srv, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := RetryPolicy{
		OnRetry: func(int, time.Duration, error) { cancel() },
		// A real wait of 30s, cut short by the cancellation.
		Sleep: sleepContext,
	}
	start := time.Now()
	_, err := WithRetry(tg, p).Chat(ctx, wireHi)
	if !errors.Is(err, context.Canceled) || err != context.Canceled {
		t.Fatalf("error = %v, want ctx.Err() itself", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("cancelled retry took %v", el)
	}
	if srv.Count() != 1 {
		t.Errorf("server got %d requests, want 1", srv.Count())
	}
	// A context that is already done sends nothing.
	if _, err := WithRetry(tg, p).Chat(ctx, wireHi); err != context.Canceled {
		t.Errorf("Chat with a cancelled context = %v", err)
	}
	if srv.Count() != 1 {
		t.Errorf("server got %d requests, want still 1", srv.Count())
	}
}

func TestRetryAfterTooLong(t *testing.T) {
	srv := newWireServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		wireWriteJSON(w, http.StatusTooManyRequests, []byte(`{"error":{"message":"quota"}}`), "Retry-After", "3600")
	})
	tg := openOpenAITest(t, srv, nil)
	clock := newWireClock()
	_, err := WithRetry(tg, wirePolicy(clock)).Chat(context.Background(), wireHi)
	if err == nil || !strings.Contains(err.Error(), "1h0m0s") {
		t.Fatalf("error = %v, want one saying the server asks for 1h", err)
	}
	if srv.Count() != 1 || len(clock.Sleeps()) != 0 {
		t.Errorf("requests %d, waits %v; want 1 request and no wait", srv.Count(), clock.Sleeps())
	}
}

// TestOneRequestPerChat checks that a successful Chat through the full
// OpenWith stack sends exactly one request: the SDKs do not retry or
// probe on their own.
func TestOneRequestPerChat(t *testing.T) {
	for _, p := range wireProviders {
		t.Run(p.name, func(t *testing.T) {
			ok := wireBody(t, p.name, p.ok)
			srv := newWireServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				wireWriteJSON(w, http.StatusOK, ok)
			})
			p.open(t, srv, nil) // sets the key
			spec := map[string]string{"openai": "openai:gpt-test", "anthropic": "anthropic:claude-test"}[p.name]
			base := map[string]string{"openai": srv.URL + "/v1", "anthropic": srv.URL}[p.name]
			clock := newWireClock()
			tg, err := OpenWith(spec, Options{OptBaseURL: base}, wirePolicy(clock), wireLimiter(clock, 0, 1))
			if err != nil {
				t.Fatal(err)
			}
			for i := 1; i <= 5; i++ {
				if _, err := tg.Chat(context.Background(), wireHi); err != nil {
					t.Fatal(err)
				}
				if srv.Count() != i {
					t.Fatalf("after %d chats the server got %d requests", i, srv.Count())
				}
			}
			if got := fmt.Sprint(tg); got != spec {
				t.Errorf("target prints as %q, want %q", got, spec)
			}
		})
	}
}

func TestOpenWithMock(t *testing.T) {
	tg, err := OpenWith("mock", nil, RetryPolicy{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tg.Chat(context.Background(), wireHi)
	if err != nil || resp.Text != MockPrefix+"hi" {
		t.Errorf("Chat = %+v, %v", resp, err)
	}
	if u, ok := tg.(interface{ Unwrap() Target }); !ok || u.Unwrap() != (Echo{}) {
		t.Errorf("OpenWith(mock) does not unwrap to Echo")
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		retryable bool
		after     time.Duration
		status    int
	}{
		{"nil", nil, false, 0, 0},
		{"429", &Error{StatusCode: 429, RetryAfter: time.Second}, true, time.Second, 429},
		{"500", &Error{StatusCode: 500}, true, 0, 500},
		{"503 wrapped", fmt.Errorf("cell 3: %w", &Error{StatusCode: 503}), true, 0, 503},
		{"408", &Error{StatusCode: 408}, true, 0, 408},
		{"400", &Error{StatusCode: 400}, false, 0, 400},
		{"401", &Error{StatusCode: 401, Err: ErrUnauthorized}, false, 0, 401},
		{"403", &Error{StatusCode: 403}, false, 0, 403},
		{"404", &Error{StatusCode: 404}, false, 0, 404},
		{"malformed", &Error{Err: ErrMalformedResponse}, true, 0, 0},
		{"connection", &Error{Err: ErrConnection}, true, 0, 0},
		{"attempt timeout", &Error{Err: context.DeadlineExceeded}, true, 0, 0},
		{"canceled", context.Canceled, false, 0, 0},
		{"canceled Error", &Error{Err: context.Canceled}, false, 0, 0},
		{"url error", &url.Error{Op: "Post", URL: "http://x", Err: errors.New("connection reset by peer")}, true, 0, 0},
		{"unexpected EOF", io.ErrUnexpectedEOF, true, 0, 0},
		{"plain", errors.New("bad request built"), false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, a, s := Classify(tt.err)
			if r != tt.retryable || a != tt.after || s != tt.status {
				t.Errorf("Classify(%v) = %v, %v, %v; want %v, %v, %v", tt.err, r, a, s, tt.retryable, tt.after, tt.status)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	for _, tt := range []struct {
		n    int
		rand float64
		want time.Duration
	}{
		{0, 0.5, 250 * time.Millisecond},
		{1, 0.5, 500 * time.Millisecond},
		{3, 1, 4 * time.Second},
		{6, 1, 30 * time.Second}, // 32s capped
		{80, 1, 30 * time.Second},
		{2, 0, 0},
	} {
		p := RetryPolicy{Rand: func() float64 { return tt.rand }}
		if got := p.Backoff(tt.n); got != tt.want {
			t.Errorf("Backoff(%d) at %v = %v, want %v", tt.n, tt.rand, got, tt.want)
		}
	}
	// The real jitter stays within bounds.
	var p RetryPolicy
	for i := 0; i < 100; i++ {
		if d := p.Backoff(2); d < 0 || d >= 2*time.Second {
			t.Fatalf("Backoff(2) = %v, want in [0, 2s)", d)
		}
	}
}

func TestErrorText(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Provider: "openai", StatusCode: 401, Message: "bad key (invalid_api_key)", Err: ErrUnauthorized}, "openai: HTTP 401 Unauthorized: bad key (invalid_api_key)"},
		{&Error{Provider: "anthropic", StatusCode: 529, Message: "Overloaded (overloaded_error)"}, "anthropic: HTTP 529: Overloaded (overloaded_error)"},
		{&Error{Provider: "ollama", Err: ErrConnection, Message: "dial tcp: refused"}, "ollama: connection failed: dial tcp: refused"},
		{&Error{Provider: "openai"}, "openai: request failed"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

// TestRetryCountsAttempts (issue 21): every attempt is counted in the
// context's Attempts, the retries among them, and only the answered
// attempt's time: an attempt abandoned at the timeout is not in it.
func TestRetryCountsAttempts(t *testing.T) {
	srv := newWireServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 0 {
			<-r.Context().Done() // the first attempt hangs until it times out
			return
		}
		wireWriteJSON(w, http.StatusOK, []byte(`{"id":"c","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"late but fine"},"finish_reason":"stop"}]}`))
	})
	tg := openOpenAITest(t, srv, nil)
	policy := wirePolicy(newWireClock())
	policy.AttemptTimeout = 300 * time.Millisecond
	var a Attempts
	ctx := WithAttempts(context.Background(), &a)
	if AttemptsOf(ctx) != &a || AttemptsOf(context.Background()) != nil {
		t.Fatal("AttemptsOf does not return what WithAttempts put in")
	}
	start := time.Now()
	resp, err := WithRetry(tg, policy).Chat(ctx, wireHi)
	whole := time.Since(start)
	if err != nil || resp.Text != "late but fine" {
		t.Fatalf("Chat: %v %q", err, resp.Text)
	}
	sent, retries, answered := a.Counts()
	if sent != 2 || retries != 1 || int(sent) != srv.Count() {
		t.Errorf("counted %d attempts and %d retries; the server got %d requests", sent, retries, srv.Count())
	}
	if answered <= 0 || answered >= policy.AttemptTimeout || answered > whole-policy.AttemptTimeout {
		t.Errorf("answered attempts took %v of %v in all (the timed-out one took %v): want the answered one alone", answered, whole, policy.AttemptTimeout)
	}
	// A nil Attempts counts nothing and does not fail.
	var none *Attempts
	none.Add(true, time.Second, true)
	if s, r, d := none.Counts(); s != 0 || r != 0 || d != 0 {
		t.Errorf("nil Attempts counted %d %d %v", s, r, d)
	}
	if c, ok := WithRetry(tg, policy).(interface{ CountsAttempts() bool }); !ok || !c.CountsAttempts() {
		t.Error("the retry wrapper does not say it counts its attempts")
	}
}

// keyMissing fails every request for a missing key, sending nothing.
type keyMissing struct{}

func (keyMissing) Chat(context.Context, Request) (Response, error) {
	return Response{}, fmt.Errorf("target openai:m: %w", ErrMissingKey)
}

// testBudget admits left requests, counting what it was asked.
type testBudget struct {
	mu                 sync.Mutex
	left, taken, given int
}

var errSpent = errors.New("test budget spent")

func (b *testBudget) Take() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.left == 0 {
		return errSpent
	}
	b.left--
	b.taken++
	return nil
}

func (b *testBudget) Give() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.left++
	b.given++
}

// TestRetryTakesFromBudget: every attempt, retries included, takes a
// request from the context's budget before it is sent; one the budget
// refuses is not sent, and the error says so with the last failure. A
// request refused for a missing key was not sent: it is given back.
func TestRetryTakesFromBudget(t *testing.T) {
	srv := newWireServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		wireWriteJSON(w, http.StatusInternalServerError, []byte(`{"error":{"message":"boom","type":"server_error"}}`))
	})
	tg := openOpenAITest(t, srv, nil)
	b := &testBudget{left: 3}
	ctx := WithBudget(context.Background(), b)
	if BudgetOf(ctx) != b || BudgetOf(context.Background()) != nil {
		t.Fatal("BudgetOf does not return what WithBudget put in")
	}
	_, err := WithRetry(tg, wirePolicy(newWireClock())).Chat(ctx, wireHi)
	if !errors.Is(err, errSpent) || !strings.Contains(err.Error(), "500") {
		t.Errorf("err %v, want the budget's error and the last attempt's 500", err)
	}
	if srv.Count() != 3 || b.taken != 3 {
		t.Errorf("%d requests sent, %d taken; want the 3 the budget allows", srv.Count(), b.taken)
	}

	noKey := keyMissing{}
	b = &testBudget{left: 3}
	if _, err := WithRetry(noKey, wirePolicy(newWireClock())).Chat(WithBudget(context.Background(), b), wireHi); !errors.Is(err, ErrMissingKey) {
		t.Fatalf("err %v", err)
	}
	if b.taken != 1 || b.given != 1 {
		t.Errorf("a request refused for its key: %d taken, %d given back; want 1 and 1", b.taken, b.given)
	}
}
