package mcpserve

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// initializeBody is a client's first message.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pikit-test","version":"1"}}}`

// browserCases are requests a web page could send to a local MCP
// endpoint at base (http://127.0.0.1:PORT), and one an agent on this
// machine sends; refused says whether pikit must refuse it.
func browserCases(base string) []struct {
	name    string
	host    string // "" for the URL's own
	header  map[string]string
	refused bool
} {
	port := base[strings.LastIndexByte(base, ':')+1:]
	return []struct {
		name    string
		host    string
		header  map[string]string
		refused bool
	}{
		{name: "a page elsewhere (foreign Origin)", header: map[string]string{"Origin": "https://evil.example"}, refused: true},
		{name: "DNS rebinding (foreign Host)", host: "rebind.evil.example:" + port, header: map[string]string{"Origin": "http://rebind.evil.example:" + port}, refused: true},
		{name: "DNS rebinding without an Origin", host: "rebind.evil.example:" + port, refused: true},
		{name: "a sandboxed frame (Origin null)", header: map[string]string{"Origin": "null"}, refused: true},
		{name: "a cross-site load without an Origin", header: map[string]string{"Sec-Fetch-Site": "cross-site"}, refused: true},
		{name: "an agent on this machine", refused: false},
		{name: "a local page (Origin localhost)", header: map[string]string{"Origin": "http://localhost:" + port}, refused: false},
	}
}

// postInitialize sends an initialize to endpoint with host and header,
// and returns the status and body.
func postInitialize(t *testing.T, endpoint, host string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(initializeBody))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(b)
}

func TestHandlerRefusesWebPages(t *testing.T) {
	h, err := NewHandler(cellSetup(t, emailCell), ServeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()
	for _, tt := range browserCases(srv.URL) {
		t.Run(tt.name, func(t *testing.T) {
			code, body := postInitialize(t, srv.URL+"/mcp", tt.host, tt.header)
			checkRefusal(t, code, body, tt.refused)
		})
	}
}

func TestRunnerRefusesWebPages(t *testing.T) {
	r := &Runner{Command: []string{"true"}}
	defer r.Close()
	base, err := r.Start()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range browserCases(base) {
		t.Run(tt.name, func(t *testing.T) {
			// No cell runs: a request pikit answers gets a 404, one it
			// refuses a 403 before it is routed.
			code, body := postInitialize(t, base+"/s/KEY/mcp", tt.host, tt.header)
			if !tt.refused {
				if code != http.StatusNotFound {
					t.Errorf("status %d, want 404 (answered, no such cell): %s", code, body)
				}
				return
			}
			checkRefusal(t, code, body, true)
		})
	}
}

// checkRefusal checks a 403 with a JSON-RPC error saying why, or a
// served initialize.
func checkRefusal(t *testing.T, code int, body string, refused bool) {
	t.Helper()
	if !refused {
		if code != http.StatusOK || !strings.Contains(body, `"protocolVersion"`) {
			t.Errorf("status %d, want the initialize answered: %s", code, body)
		}
		return
	}
	if code != http.StatusForbidden {
		t.Fatalf("status %d, want 403: %s", code, body)
	}
	if !strings.Contains(body, `"jsonrpc":"2.0"`) || !strings.Contains(body, "pikit mcp: this server refuses a ") {
		t.Errorf("the refusal does not say why as a JSON-RPC error: %s", body)
	}
}
func TestHandlerListenHosts(t *testing.T) {
	// Served as the host named by --listen: answered when it is one of
	// Hosts, refused when not.
	for _, tt := range []struct {
		hosts   []string
		refused bool
	}{{hosts: []string{"mcp.internal"}, refused: false}, {hosts: nil, refused: true}} {
		h, err := NewHandler(cellSetup(t, emailCell), ServeOptions{Hosts: tt.hosts})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		u, _ := url.Parse(srv.URL)
		code, body := postInitialize(t, srv.URL+"/mcp", "mcp.internal:"+u.Port(), nil)
		checkRefusal(t, code, body, tt.refused)
		srv.Close()
		h.Close()
	}
}
