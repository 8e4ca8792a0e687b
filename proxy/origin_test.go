package proxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// countingBody counts the bytes a handler reads of a request body.
type countingBody struct {
	r    io.Reader
	read int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}

func (c *countingBody) Close() error { return nil }

// TestHostAndOrigin: a request for another host (DNS rebinding) or from a
// web page that is not on this machine (a browser's cross-site request)
// is refused with 403 before anything is read or forwarded; requests an
// agent on this machine sends pass.
func TestHostAndOrigin(t *testing.T) {
	up := newUpstream(t, func(rw http.ResponseWriter, _ *http.Request, _ int, _ []byte) { writeWhole(rw, []byte(`{}`)) })
	srv, hs := newProxy(t, up.URL+"/v1")
	srv.Hosts = []string{"proxy.lan"}
	mustOpen(t, srv, "web", newDrive("openai:gpt-test"), sinkRules())
	port := hs.Listener.Addr().(*net.TCPAddr).Port
	at := func(host string) string { return fmt.Sprintf("%s:%d", host, port) }
	cases := []struct {
		name, host, origin, fetchSite string
		ok                            bool
	}{
		{name: "127.0.0.1", host: at("127.0.0.1"), ok: true},
		{name: "localhost", host: at("localhost"), ok: true},
		{name: "LOCALHOST.", host: at("LOCALHOST."), ok: true},
		{name: "::1", host: at("[::1]"), ok: true},
		{name: "the --listen host", host: at("proxy.lan"), ok: true},
		{name: "a loopback origin", host: at("127.0.0.1"), origin: "http://localhost:3000", ok: true},
		{name: "a loopback IP origin", host: at("127.0.0.1"), origin: "http://127.0.0.1:8080", ok: true},
		{name: "a same-origin fetch", host: at("127.0.0.1"), fetchSite: "same-origin", ok: true},
		{name: "a rebound name", host: at("evil.example")},
		{name: "a name under localhost's", host: at("localhost.evil.example")},
		{name: "another port", host: "127.0.0.1:1"},
		{name: "no port", host: "localhost"},
		{name: "a hostile origin", host: at("127.0.0.1"), origin: "https://evil.example"},
		{name: "a hostile origin on the loopback port", host: at("localhost"), origin: "http://evil.example:" + fmt.Sprint(port)},
		{name: "the null origin", host: at("127.0.0.1"), origin: "null"},
		{name: "a cross-site load without an origin", host: at("127.0.0.1"), fetchSite: "cross-site"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := len(up.requests())
			req, _ := http.NewRequest(http.MethodPost, hs.URL+"/s/web/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[]}`))
			req.Host = tc.host
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.fetchSite != "" {
				req.Header.Set("Sec-Fetch-Site", tc.fetchSite)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			forwarded := len(up.requests()) - before
			if tc.ok {
				if resp.StatusCode != http.StatusOK || forwarded != 1 {
					t.Errorf("%d %s, %d forwarded; want it through", resp.StatusCode, b, forwarded)
				}
				return
			}
			if resp.StatusCode != http.StatusForbidden || forwarded != 0 {
				t.Fatalf("%d %s, %d forwarded; want 403 and nothing forwarded", resp.StatusCode, b, forwarded)
			}
			if resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(b), `"type":"pikit_proxy_error"`) || !strings.Contains(string(b), "refuses") {
				t.Errorf("not a clear API error: %s", b)
			}
		})
	}
}

// TestHostRefusedBeforeReading: the check comes before the body is read.
func TestHostRefusedBeforeReading(t *testing.T) {
	srv := &Server{}
	body := &countingBody{r: strings.NewReader(`{"model":"m","messages":[]}`)}
	req := httptest.NewRequest(http.MethodPost, "http://evil.example:8787/s/x/v1/chat/completions", body)
	req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8787}))
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden || body.read != 0 {
		t.Errorf("%d %s, %d bytes read; want 403 with nothing read", rec.Code, rec.Body, body.read)
	}
}

// TestServeControlChecksOrigin: the control endpoints of pikit proxy serve
// are checked as the proxy is: a web page cannot open a session (and take
// a cell).
func TestServeControlChecksOrigin(t *testing.T) {
	sv, hs := newServe(t, "", time.Minute)
	sv.ClaimWait = 20 * time.Millisecond
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/pikit/sessions", nil)
	req.Header.Set("Origin", "https://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("%d %s, want 403", resp.StatusCode, b)
	}
	if n := inClaim(); n != 0 {
		t.Errorf("%d claims started", n)
	}
}
