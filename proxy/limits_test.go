package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// localRequest is a request as the proxy's server hands it over: with the
// address it arrived at, in the Host the agent used.
func localRequest(method, path string, body io.Reader) *http.Request {
	req := httptest.NewRequest(method, "http://127.0.0.1:8787"+path, body)
	return req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8787}))
}

// TestBodyOverLimitNotRead: a body whose Content-Length is over the limit
// is refused at once, without reading a byte of it, and the session says
// why its request failed.
func TestBodyOverLimitNotRead(t *testing.T) {
	srv := &Server{}
	s := mustOpen(t, srv, "big", offlineDrive(), sinkRules())
	body := &countingBody{r: &repeatReader{b: "x", n: 100 << 20}}
	req := localRequest(http.MethodPost, "/s/big/v1/chat/completions", body)
	req.ContentLength = 100 << 20
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge || body.read != 0 {
		t.Errorf("%d %s, %d bytes read; want 413 with nothing read", rec.Code, rec.Body, body.read)
	}
	if errs := s.Errors(); len(errs) != 1 || !strings.Contains(errs[0], "413") || !strings.Contains(errs[0], "32 MiB") {
		t.Errorf("session errors %q, want the 413 named", errs)
	}
}

// TestLargeBodiesAtOnce: past the first MiB, a body waits for one of a
// few slots; one that cannot get a slot within the body deadline is
// refused having read no more than that first MiB, and gets through once a
// slot is free. Small bodies never wait.
func TestLargeBodiesAtOnce(t *testing.T) {
	srv := &Server{BodyTimeout: 50 * time.Millisecond}
	mustOpen(t, srv, "large", offlineDrive(), sinkRules())
	srv.setup()
	for range cap(srv.large) {
		srv.large <- struct{}{}
	}
	big := bytes.Repeat([]byte(" "), 3<<20)
	copy(big, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	send := func(b []byte, contentLength int64) (int, int64) {
		body := &countingBody{r: bytes.NewReader(b)}
		req := localRequest(http.MethodPost, "/s/large/v1/chat/completions", body)
		req.ContentLength = contentLength
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		return rec.Code, body.read
	}
	for _, cl := range []int64{int64(len(big)), -1} { // announced, and chunked
		if code, read := send(big, cl); code != http.StatusRequestTimeout || read > largeBody+1 {
			t.Errorf("content length %d, every slot taken: %d, %d bytes read; want 408 having read at most %d", cl, code, read, largeBody+1)
		}
	}
	if code, _ := send(big[:100], 100); code != http.StatusOK {
		t.Errorf("a small body waited for a slot: %d", code)
	}
	<-srv.large
	if code, read := send(big, int64(len(big))); code != http.StatusOK || read != int64(len(big)) {
		t.Errorf("with a slot free: %d, %d bytes read", code, read)
	}
	if n := len(srv.large); n != cap(srv.large)-1 {
		t.Errorf("%d slots taken after the request, want %d: a slot was not given back", n, cap(srv.large)-1)
	}
}

// stallBody starts a request whose body never finishes: the headers and
// the start of the body, then nothing. It returns the connection.
func stallBody(t *testing.T, addr, path string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"model\":", path, addr)
	return c
}

// TestSlowBodyTimesOut: a body that stops coming is cut off at the body
// deadline with 408, and the session says so.
func TestSlowBodyTimesOut(t *testing.T) {
	srv, hs := newProxy(t, "")
	srv.BodyTimeout = 100 * time.Millisecond
	s := mustOpen(t, srv, "slow", offlineDrive(), sinkRules())
	c := stallBody(t, hs.Listener.Addr().String(), "/s/slow/v1/chat/completions")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "pikit_proxy_error") {
		t.Errorf("%d %s, want 408", resp.StatusCode, b)
	}
	if errs := s.Errors(); len(errs) != 1 || !strings.Contains(errs[0], "408") {
		t.Errorf("session errors %q", errs)
	}
}

// TestLongStreamOutlivesBodyTimeout: the body deadline bounds reading the
// request, not the answer: a stream that takes longer is relayed whole.
func TestLongStreamOutlivesBodyTimeout(t *testing.T) {
	const bodyTimeout = 50 * time.Millisecond
	chunks := sseChunks(fixture(t, "chat", "final", true))
	up := newUpstream(t, func(w http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			w.Write(c)
			w.(http.Flusher).Flush()
			<-time.After(bodyTimeout) // the model is slow: the stream outlasts the body deadline several times
		}
	})
	srv, hs := newProxy(t, up.URL+"/v1")
	srv.BodyTimeout = bodyTimeout
	mustOpen(t, srv, "long", newDrive("openai:gpt-test"), sinkRules())
	w := wireNamed("chat")
	resp, body, err := post(t, w.baseFor(hs.URL, "long")+w.agentPath, w.encode(w.model, true, []msg{{role: "user", text: userText}}), nil)
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Equal(body, fixture(t, "chat", "final", true)) {
		t.Fatalf("%v %v: the stream was cut: %q", resp, err, body)
	}
}

// TestServedSessionEndsDespiteConnections: a served session ends after
// its idle timeout although its agent keeps an idle keep-alive connection
// open, and although another client stalls in the middle of a body.
func TestServedSessionEndsDespiteConnections(t *testing.T) {
	sv := &Serve{Server: &Server{BodyTimeout: 100 * time.Millisecond}, IdleTimeout: 50 * time.Millisecond, ClaimWait: 10 * time.Second}
	hs := httptest.NewUnstartedServer(sv)
	hs.Config = NewHTTPServer(sv)
	hs.Start()
	t.Cleanup(hs.Close)
	sv.URL = hs.URL

	// An agent whose connection stays open, idle, in its client's pool.
	var conns atomic.Int32
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conns.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	res := drive(t, sv, offlineDrive())
	w := wireNamed("chat")
	if _, err := runAgent(t.Context(), &http.Client{Transport: tr}, w, w.baseFor(hs.URL, "kept")+w.agentPath, false, nil); err != nil {
		t.Fatal(err)
	}
	if r := await(t, res); r.err != nil || len(r.tr.SinkCalls) != 1 {
		t.Errorf("the session with an idle connection: err %v, sink calls %+v", r.err, r.tr.SinkCalls)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want the agent's requests on one kept alive", n)
	}

	// An agent that stalls in the middle of a body.
	res = drive(t, sv, offlineDrive())
	stallBody(t, hs.Listener.Addr().String(), "/s/stalled/v1/chat/completions")
	r := await(t, res)
	if r.err == nil || !strings.Contains(r.err.Error(), "408") {
		t.Errorf("the stalled session: err %v, want it to end, naming its refused request", r.err)
	}
}

// TestHTTPServerSettings: the server that carries the proxy bounds
// headers and idle connections, and has no whole-request or write
// timeout, which would cut long streams (bodies have their own deadline).
func TestHTTPServerSettings(t *testing.T) {
	s := NewHTTPServer(http.NotFoundHandler())
	if s.ReadHeaderTimeout <= 0 || s.IdleTimeout <= 0 || s.MaxHeaderBytes <= 0 {
		t.Errorf("read header timeout %s, idle timeout %s, max header bytes %d: want each set", s.ReadHeaderTimeout, s.IdleTimeout, s.MaxHeaderBytes)
	}
	if s.ReadTimeout != 0 || s.WriteTimeout != 0 {
		t.Errorf("read timeout %s, write timeout %s: either would cut a long stream", s.ReadTimeout, s.WriteTimeout)
	}
}

// trickleBody starts a request whose body comes one byte every gap, as
// a client that never stalls long enough for a timeout between reads,
// until stop is closed or the connection fails. It returns the connection.
func trickleBody(t *testing.T, addr, host, path string, gap time.Duration, stop <-chan struct{}) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// 100,000 bytes: under the 256 KiB that net/http reads of a body a
	// handler left, so nothing but a deadline ends the reading.
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", path, host)
	go func() {
		tick := time.NewTicker(gap)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	return c
}

// TestTrickledBodyCut: a body sent a byte at a time, each byte well
// within any timeout between reads, is cut at the body deadline counted
// from the request's start, whatever the proxy answers: the connection
// is closed then, not held for as long as the bytes keep coming. It holds
// for a model request of an open session (408), and for requests the
// proxy refuses without reading their body (an unknown session, another
// Host), through the server the CLI runs (NewHTTPServer).
func TestTrickledBodyCut(t *testing.T) {
	const bodyTimeout = 300 * time.Millisecond
	srv := &Server{BodyTimeout: bodyTimeout}
	hs := httptest.NewUnstartedServer(srv)
	hs.Config = NewHTTPServer(srv)
	hs.Start()
	t.Cleanup(hs.Close)
	mustOpen(t, srv, "slow", offlineDrive(), sinkRules())
	addr := hs.Listener.Addr().String()
	for _, tc := range []struct {
		name, host, path string
		status           int
	}{
		{"open session", addr, "/s/slow/v1/chat/completions", http.StatusRequestTimeout},
		{"unknown session", addr, "/s/nobody/v1/chat/completions", http.StatusNotFound},
		{"another host", "rebound.example:80", "/s/slow/v1/chat/completions", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop := make(chan struct{})
			defer close(stop)
			start := time.Now()
			c := trickleBody(t, addr, tc.host, tc.path, 10*time.Millisecond, stop)
			c.SetReadDeadline(start.Add(5 * time.Second))
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer within 5s to a trickled body: %v", err)
			}
			io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			// The proxy closes the connection: a read gets EOF, not the
			// read deadline set above.
			if _, err := br.ReadByte(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("the connection was still open %s after the request started (err %v): the body deadline is %s", time.Since(start).Round(time.Millisecond), err, bodyTimeout)
			}
			if took := time.Since(start); took > bodyTimeout+2*time.Second {
				t.Errorf("the connection closed %s after the request started; the body deadline is %s", took, bodyTimeout)
			}
		})
	}
}
