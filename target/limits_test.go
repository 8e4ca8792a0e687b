package target

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// limitProviders are every network provider, each opened against a test
// server with extra options.
var limitProviders = []struct {
	name string
	wire string // "openai" or "anthropic": the format the server speaks
	open func(*testing.T, *wireServer, Options) Target
}{
	{"openai", "openai", openOpenAITest},
	{"anthropic", "anthropic", openAnthropicTest},
	{"ollama", "openai", openCompatibleTest("ollama:llama-test", OllamaKeyEnv)},
	{"vllm", "openai", openCompatibleTest("vllm:qwen-test", VLLMKeyEnv)},
	{"openai_compatible", "openai", openCompatibleTest("openai_compatible:m", CompatibleKeyEnv)},
}

// openCompatibleTest opens an OpenAI-compatible provider without a key
// against a test server.
func openCompatibleTest(spec, keyEnv string) func(*testing.T, *wireServer, Options) Target {
	return func(t *testing.T, srv *wireServer, opts Options) Target {
		t.Helper()
		t.Setenv(keyEnv, "")
		all := Options{OptBaseURL: srv.URL + "/v1"}
		for k, v := range opts {
			all[k] = v
		}
		tg, err := Open(spec, all)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return tg
	}
}

// bigReplyParts are the start and end of a well-formed reply whose text
// goes between them, in each wire format.
var bigReplyParts = map[string][2]string{
	"openai": {
		`{"id":"chatcmpl-big","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"`,
		`"}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`,
	},
	"anthropic": {
		`{"id":"msg_big","type":"message","role":"assistant","model":"m","stop_reason":"end_turn","content":[{"type":"text","text":"`,
		`"}],"usage":{"input_tokens":1,"output_tokens":1}}`,
	},
}

// bigBodyCap is where an "endless" test body stops even if the client
// keeps reading, so a regression fails the test instead of the machine.
const bigBodyCap = 48 << 20

// bigReply answers every request with status and a body of size bytes in
// the wire format (endless when size is negative: it goes on for as long
// as the client reads, up to bigBodyCap), and counts the bytes it got
// written. declare sends a Content-Length.
func bigReply(wire string, status int, size int64, declare bool, written *atomic.Int64) func(http.ResponseWriter, *http.Request, int) {
	parts := bigReplyParts[wire]
	if status >= 400 {
		parts = [2]string{`{"error":{"type":"server_error","message":"`, `"}}`}
	}
	return func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "application/json")
		if declare && size >= 0 {
			w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		}
		w.WriteHeader(status)
		write := func(b []byte) bool {
			m, err := w.Write(b)
			written.Add(int64(m))
			return err == nil
		}
		if !write([]byte(parts[0])) {
			return
		}
		chunk := bytes.Repeat([]byte("a"), 32<<10)
		fill := size - int64(len(parts[0])+len(parts[1]))
		if size < 0 {
			fill = bigBodyCap
		}
		for fill > 0 {
			c := chunk[:min(int64(len(chunk)), fill)]
			if !write(c) {
				return
			}
			fill -= int64(len(c))
		}
		if size >= 0 {
			write([]byte(parts[1]))
		}
	}
}

// TestResponseTooLarge has every provider get a reply over its limit:
// the call fails quickly with the typed error, naming the limit and how
// to raise it, and is not retried.
func TestResponseTooLarge(t *testing.T) {
	tests := []struct {
		name    string
		size    int64 // -1: endless
		declare bool
		opts    Options
		limit   int64
	}{
		{name: "20 MiB reply, default limit", size: 20 << 20, limit: DefaultMaxResponseBytes},
		{name: "endless reply, default limit", size: -1, limit: DefaultMaxResponseBytes},
		{name: "20 MiB reply with Content-Length", size: 20 << 20, declare: true, limit: DefaultMaxResponseBytes},
		{name: "2 MiB reply, limit 1 MiB", size: 2 << 20, opts: Options{OptMaxResponseBytes: int64(1 << 20)}, limit: 1 << 20},
		{name: "endless reply, limit from a flag string", size: -1, opts: Options{OptMaxResponseBytes: "65536"}, limit: 64 << 10},
	}
	for _, p := range limitProviders {
		for _, tt := range tests {
			t.Run(p.name+"/"+tt.name, func(t *testing.T) {
				var written atomic.Int64
				srv := newWireServer(t, bigReply(p.wire, http.StatusOK, tt.size, tt.declare, &written))
				tg := p.open(t, srv, tt.opts)
				clock := newWireClock()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				start := time.Now()
				_, err := WithRetry(tg, wirePolicy(clock)).Chat(ctx, wireHi)
				elapsed := time.Since(start)
				if !errors.Is(err, ErrResponseTooLarge) {
					t.Fatalf("Chat error = %v, want ErrResponseTooLarge", err)
				}
				var tl *ResponseTooLargeError
				if !errors.As(err, &tl) || tl.Limit != tt.limit {
					t.Errorf("error %v: limit %v, want a *ResponseTooLargeError with limit %d", err, tl, tt.limit)
				}
				for _, want := range []string{"--max-response-bytes", strconv.FormatInt(tt.limit, 10) + " bytes", p.name + ": "} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				if retryable, _, _ := Classify(err); retryable {
					t.Error("Classify calls a too-large reply retryable")
				}
				if n := srv.Count(); n != 1 {
					t.Errorf("server got %d requests, want 1 (no retry)", n)
				}
				if s := clock.Sleeps(); len(s) != 0 {
					t.Errorf("waited %v before retries", s)
				}
				if elapsed > 10*time.Second {
					t.Errorf("the call took %v", elapsed)
				}
				if w := written.Load(); tt.size < 0 && w >= bigBodyCap {
					t.Errorf("the client read the endless body to the test's cap (%d bytes)", w)
				}
				t.Logf("server wrote %d bytes; %v; %v", written.Load(), elapsed.Round(time.Millisecond), err)
			})
		}
	}
}

// TestResponseTooLargeMemory checks that a call on a 20 MiB reply under
// a 1 MiB limit allocates a few MiB, not the reply's size.
func TestResponseTooLargeMemory(t *testing.T) {
	for _, p := range limitProviders[:2] {
		for _, size := range []int64{20 << 20, -1} {
			t.Run(fmt.Sprintf("%s/%d", p.name, size), func(t *testing.T) {
				var written atomic.Int64
				srv := newWireServer(t, bigReply(p.wire, http.StatusOK, size, false, &written))
				tg := p.open(t, srv, Options{OptMaxResponseBytes: 1 << 20})
				allocated := allocatedBy(func() {
					if _, err := tg.Chat(context.Background(), wireHi); !errors.Is(err, ErrResponseTooLarge) {
						t.Errorf("Chat error = %v, want ErrResponseTooLarge", err)
					}
				})
				if allocated > 8<<20 {
					t.Errorf("the call allocated %d MiB for a reply over a 1 MiB limit", allocated>>20)
				}
				t.Logf("allocated %.1f MiB", float64(allocated)/(1<<20))
			})
		}
	}
}

// allocatedBy returns the bytes the heap allocated while f ran.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestResponseAtLimit checks the bound is exact: a reply of exactly the
// limit is taken, one byte more is not.
func TestResponseAtLimit(t *testing.T) {
	for _, p := range wireProviders {
		body := wireBody(t, p.name, p.ok)
		for _, tt := range []struct {
			limit int
			ok    bool
		}{{len(body), true}, {len(body) - 1, false}} {
			t.Run(fmt.Sprintf("%s/%d", p.name, tt.limit), func(t *testing.T) {
				srv := newWireServer(t, wireServeFiles(t, p.name, p.ok))
				tg := p.open(t, srv, Options{OptMaxResponseBytes: tt.limit})
				resp, err := tg.Chat(context.Background(), wireHi)
				if tt.ok && (err != nil || resp.Text == "") {
					t.Errorf("reply of %d bytes under a limit of %d: %v", len(body), tt.limit, err)
				}
				if !tt.ok && !errors.Is(err, ErrResponseTooLarge) {
					t.Errorf("reply of %d bytes under a limit of %d: error %v, want ErrResponseTooLarge", len(body), tt.limit, err)
				}
			})
		}
	}
}

// TestErrorBodyBounded has the server answer 500 with a huge or endless
// body: the call fails by its status (retryable, retried), reading no more
// than MaxErrorBodyBytes of each body.
func TestErrorBodyBounded(t *testing.T) {
	for _, p := range wireProviders {
		for _, size := range []int64{20 << 20, -1} {
			t.Run(fmt.Sprintf("%s/%d", p.name, size), func(t *testing.T) {
				var written atomic.Int64
				srv := newWireServer(t, bigReply(p.name, http.StatusInternalServerError, size, false, &written))
				tg := p.open(t, srv, nil)
				clock := newWireClock()
				policy := wirePolicy(clock)
				policy.MaxRetries = 1
				var err error
				allocated := allocatedBy(func() {
					_, err = WithRetry(tg, policy).Chat(context.Background(), wireHi)
				})
				if _, _, status := Classify(err); status != http.StatusInternalServerError {
					t.Fatalf("error %v: status %d, want 500", err, status)
				}
				if errors.Is(err, ErrResponseTooLarge) {
					t.Errorf("an error body made a too-large error: %v", err)
				}
				if n := srv.Count(); n != 2 {
					t.Errorf("server got %d requests, want 2 (a 500 is retried)", n)
				}
				if allocated > 4<<20 {
					t.Errorf("two calls allocated %d MiB on error bodies", allocated>>20)
				}
				if len(err.Error()) > 2*maxMessage {
					t.Errorf("error is %d bytes long", len(err.Error()))
				}
				t.Logf("allocated %.1f MiB; server wrote %d bytes", float64(allocated)/(1<<20), written.Load())
			})
		}
	}
}

// TestMaxResponseBytesOption checks every network provider takes the
// option and refuses a bad value, naming it.
func TestMaxResponseBytesOption(t *testing.T) {
	t.Setenv(OpenAIKeyEnv, testOpenAIKey)
	t.Setenv(AnthropicKeyEnv, testAnthropicKey)
	for _, spec := range []string{"openai:m", "anthropic:m", "ollama:m", "vllm:m", "openai_compatible:m"} {
		for _, tt := range []struct {
			value any
			want  string // "" for no error
		}{
			{int64(1 << 20), ""},
			{"8388608", ""},
			{float64(65536), ""},
			{0, "option max_response_bytes is 0, want a positive whole number"},
			{-5, "option max_response_bytes is -5"},
			{"4MiB", `option max_response_bytes is 4MiB`},
		} {
			t.Run(fmt.Sprintf("%s/%v", spec, tt.value), func(t *testing.T) {
				_, err := Open(spec, Options{OptMaxResponseBytes: tt.value})
				switch {
				case tt.want == "" && err != nil:
					t.Errorf("Open: %v", err)
				case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
					t.Errorf("Open error = %v, want one saying %q", err, tt.want)
				}
			})
		}
	}
}

// TestRedirectNotFollowed has the API answer with a redirect to a second
// server: no request reaches it (so neither does the key), and the call
// fails at once with an error saying what to do.
func TestRedirectNotFollowed(t *testing.T) {
	tests := []struct {
		status   int
		location string // appended to the second server's URL; "-" for none
	}{
		{http.StatusTemporaryRedirect, "/v1/messages"},
		{http.StatusPermanentRedirect, "/v1/chat/completions"},
		{http.StatusMovedPermanently, "/moved"},
		{http.StatusFound, "/found?key=" + testAnthropicKey},
		{http.StatusSeeOther, "/other"},
		{http.StatusMultipleChoices, "-"},
	}
	for _, p := range wireProviders {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/%d", p.name, tt.status), func(t *testing.T) {
				elsewhere := newWireServer(t, wireServeFiles(t, p.name, p.ok, p.ok, p.ok))
				location := ""
				if tt.location != "-" {
					location = elsewhere.URL + tt.location
				}
				api := newWireServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
					if location != "" {
						w.Header().Set("Location", location)
					}
					w.WriteHeader(tt.status)
				})
				tg := p.open(t, api, nil)
				clock := newWireClock()
				_, err := WithRetry(tg, wirePolicy(clock)).Chat(context.Background(), wireHi)
				for _, r := range elsewhere.Requests() {
					t.Errorf("the redirect was followed: the second server got %s %s with x-api-key %q, Authorization %q",
						r.Method, r.Path, r.Header.Get("x-api-key"), r.Header.Get("Authorization"))
				}
				if !errors.Is(err, ErrRedirect) {
					t.Fatalf("Chat error = %v, want ErrRedirect", err)
				}
				var re *RedirectError
				if !errors.As(err, &re) || re.StatusCode != tt.status {
					t.Errorf("error %v: want a *RedirectError with status %d", err, tt.status)
				}
				want := fmt.Sprintf("the API answered %d %s", tt.status, http.StatusText(tt.status))
				if location != "" {
					want += " to " + elsewhere.URL + strings.ReplaceAll(tt.location, testAnthropicKey, Redacted)
				}
				want += ": pikit does not follow redirects with your key; point --base-url at the final URL"
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error = %q\nwant it to say %q", err, want)
				}
				for _, key := range []string{testAnthropicKey, testOpenAIKey} {
					if strings.Contains(fmt.Sprintf("%v %+v %#v", err, err, err), key) {
						t.Errorf("error shows a key: %v", err)
					}
				}
				if n := api.Count(); n != 1 {
					t.Errorf("API got %d requests, want 1 (no retry)", n)
				}
				t.Logf("%v", err)
			})
		}
	}
}

// TestRefusedResponsesNotRetried checks Classify on the two refusals as
// the HTTP client hands them back, wrapped, and as a target reports them.
func TestRefusedResponsesNotRetried(t *testing.T) {
	for _, err := range []error{
		&url.Error{Op: "Post", URL: "http://x", Err: &RedirectError{StatusCode: 307}},
		fmt.Errorf("error reading response body: %w", &ResponseTooLargeError{Limit: 1}),
		transportError("openai", fmt.Errorf("error reading response body: %w", &ResponseTooLargeError{Limit: 1}), nil),
		transportError("anthropic", &url.Error{Op: "Post", URL: "http://x", Err: &RedirectError{StatusCode: 308, Location: "http://y/"}}, nil),
	} {
		if retryable, _, _ := Classify(err); retryable {
			t.Errorf("Classify(%v) says retryable", err)
		}
	}
}

// TestClientNeverFollows checks the client's own redirect policy, which
// holds even if a 3xx got past the transport.
func TestClientNeverFollows(t *testing.T) {
	c := newHTTPClient(DefaultMaxResponseBytes)
	next, _ := url.Parse("https://elsewhere.example/v1/messages")
	req := &http.Request{URL: next, Response: &http.Response{StatusCode: http.StatusTemporaryRedirect}}
	err := c.CheckRedirect(req, nil)
	var re *RedirectError
	if !errors.As(err, &re) || re.StatusCode != http.StatusTemporaryRedirect || re.Location != next.String() {
		t.Errorf("CheckRedirect = %v, want a *RedirectError for 307 to %s", err, next)
	}
}
