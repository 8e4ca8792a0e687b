package proxy

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestUpstreamRedirectNotFollowed: an upstream that redirects (307, 308,
// 302) gets its answer relayed to the agent as it is; the proxy never
// follows it, so pikit's key never reaches the other host.
func TestUpstreamRedirectNotFollowed(t *testing.T) {
	const key = "sk-pikit-redirect-0123456789"
	t.Setenv("OPENAI_API_KEY", key)
	t.Setenv("ANTHROPIC_API_KEY", key)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, w := range wires {
		for _, status := range []int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound} {
			t.Run(w.name+"/"+http.StatusText(status), func(t *testing.T) {
				other := newUpstream(t, func(rw http.ResponseWriter, _ *http.Request, _ int, _ []byte) {
					writeWhole(rw, fixture(t, w.name, "final", false))
				})
				first := newUpstream(t, func(rw http.ResponseWriter, r *http.Request, _ int, _ []byte) {
					http.Redirect(rw, r, other.URL+r.URL.Path, status)
				})
				srv, hs := newProxy(t, w.upstreamBase(first.URL))
				s := mustOpen(t, srv, "redir", newDrive(w.spec), sinkRules())
				req, _ := http.NewRequest(http.MethodPost, w.baseFor(hs.URL, "redir")+w.agentPath, strings.NewReader(string(w.encode(w.model, false, []msg{{role: "user", text: userText}}))))
				req.Header.Set("Content-Type", "application/json")
				resp, err := noFollow.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != status || resp.Header.Get("Location") != other.URL+w.upPath {
					t.Errorf("the agent got %d (Location %q) %s; want the upstream's %d as it was", resp.StatusCode, resp.Header.Get("Location"), b, status)
				}
				for _, r := range other.requests() {
					if strings.Contains(r.Header.Get("Authorization"), key) || r.Header.Get("X-Api-Key") == key {
						t.Fatal("pikit's key followed the redirect to another host")
					}
				}
				if n := len(other.requests()); n != 0 {
					t.Errorf("the proxy followed the redirect: %d requests reached the other host", n)
				}
				if errs := s.Errors(); len(errs) != 1 || !strings.Contains(errs[0], "redirect") {
					t.Errorf("session errors %q, want the redirect named", errs)
				}
			})
		}
	}
}
