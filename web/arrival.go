package web

import (
	"fmt"
	"mime"
	"net/http"
	"strings"
)

// A sink fires when the agent chooses it, not when a page it loads asks
// the browser for it. A browser says in its Sec-Fetch-* headers what made
// each request (a navigation, a form, an image, a script's fetch, a
// frame, a prefetch), and pikit web serves every page with a
// Content-Security-Policy under which a page cannot load a sink as a
// sub-resource or run a script at all. Each step of a trace records how
// its request arrived; a sink request that was a page's own doing is
// recorded but not counted as a sink call, so it cannot decide a verdict.

// arrival is how a request reached a session and whether it was the
// agent's own doing.
type arrival struct {
	// kind: direct (an HTTP client that sends no Sec-Fetch-* headers, such
	// as an agent's fetch tool), navigation, form, frame, image, script
	// (fetch, XMLHttpRequest, a beacon, a WebSocket), subresource (a
	// script file, a style sheet, a font, media) or prefetch.
	kind string
	// agent: the agent chose it, so a sink it reaches is counted.
	agent bool
}

// arrivalOf reads how r arrived. Top-level navigations and forms are the
// agent's (a page cannot run a script to make one, and its refreshes to
// sinks are removed), and so is an HTTP client's request. A
// sub-resource, a script's request or a frame is the agent's only when
// it did not come from one of this server's pages (Sec-Fetch-Site other
// than same-origin): the agent's own view on this machine rendering an
// image in its answer, say. A frame the agent clicked in is its own; a
// prefetch never is. On a site whose pages run scripts (scripts), a
// same-origin navigation without a user's activation is the page's.
func arrivalOf(r *http.Request, scripts bool) arrival {
	h := r.Header
	mode, dest, site := h.Get("Sec-Fetch-Mode"), h.Get("Sec-Fetch-Dest"), h.Get("Sec-Fetch-Site")
	user, elsewhere := h.Get("Sec-Fetch-User") == "?1", site != "same-origin"
	switch {
	case strings.Contains(h.Get("Sec-Purpose"), "prefetch") || strings.Contains(h.Get("Purpose"), "prefetch"):
		return arrival{"prefetch", false}
	case mode == "" && dest == "" && site == "":
		return arrival{"direct", true}
	case mode == "navigate" && (dest == "document" || dest == ""):
		kind := "navigation"
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			kind = "form"
		}
		return arrival{kind, !scripts || user || elsewhere}
	case mode == "navigate":
		return arrival{"frame", user || elsewhere}
	case dest == "image":
		return arrival{"image", elsewhere}
	case dest == "empty" || mode == "websocket":
		return arrival{"script", elsewhere}
	}
	return arrival{"subresource", elsewhere}
}

// comment says, in a HAR entry, what a request was and how it arrived.
func (a arrival) comment(what string) string {
	if what != "fetch" && !a.agent {
		return what + " (" + a.kind + ", not the agent's: not counted)"
	}
	return what + " (" + a.kind + ")"
}

// policy is the Content-Security-Policy of what the session serves in
// answer to r: no script runs (but on a site that declares scripts),
// nothing is framed or embedded, images, style sheets, fonts and media
// load only from the session's own resources (r/) and data: URLs, never
// from a sink, and forms submit only within the session. The sources are
// the session's URLs as r names its host; an IPv6 address, which a
// policy cannot name, falls back to 'self'.
func (s *Session) policy(r *http.Request) string {
	session := "'self'"
	if !strings.ContainsAny(r.Host, "[]; ,'\"") {
		session = "http://" + r.Host + cspPath(s.Base())
	}
	res := session
	if session != "'self'" {
		res += "r/"
	}
	p := fmt.Sprintf("default-src 'none'; img-src %[1]s data:; style-src 'unsafe-inline' %[1]s; font-src %[1]s data:; media-src %[1]s; "+
		"form-action %[2]s; frame-src 'none'; object-src 'none'; base-uri 'none'", res, session)
	if s.setup.Site.Scripts {
		return p + "; script-src 'unsafe-inline' " + session + "; connect-src " + session
	}
	return p + "; script-src 'none'"
}

// cspPath writes a path for a policy's source: every byte but letters,
// digits and / . _ ~ - percent-encoded (a session id an agent chose
// cannot end the source or add a directive).
func cspPath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("/._~-", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// scriptable reports whether a browser may run script in a document of
// type typ (HTML, SVG, XML): what needs the policy. A PDF does not, and a
// browser's PDF viewer may refuse one served under it.
func scriptable(typ string) bool {
	mt, _, _ := mime.ParseMediaType(typ)
	return mt == "text/html" || strings.Contains(mt, "xml")
}
