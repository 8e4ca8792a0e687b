package web

import (
	"bytes"
	"errors"
	"strings"

	"golang.org/x/net/html"

	"github.com/pikit-go/pikit/internal/lazy"
)

// A page could navigate the browser to a sink by itself with
// <meta http-equiv="refresh">, which no Content-Security-Policy forbids.
// Every refresh in what a session serves that leads anywhere but a page
// or resource of the session is removed when the session opens
// (web_redirect's own, to the page it lifted, stays). The page is read as
// a browser reads it, with scripting on (a <noscript> is text) and off
// (it is markup), and written again only when something was removed.

// refreshTo is the one form of a refresh that is kept: a delay and a
// path of the session in characters no browser reads otherwise.
var refreshTo = lazy.Regexp(`(?i)^\s*\d+(?:\.\d*)?\s*[;,]\s*url\s*=\s*(/s/[A-Za-z0-9._~-]+/[A-Za-z0-9/._~-]*)\s*$`)

// maxRefreshPasses bounds the times a page is read and written again
// while refreshes are removed from it.
const maxRefreshPasses = 4

// dropRefreshes returns page with every refresh that leads outside the
// session's pages and resources removed.
func (s *Session) dropRefreshes(page []byte) ([]byte, error) {
	if !bytes.Contains(bytes.ToLower(page), []byte("http-equiv")) {
		return page, nil // attribute names are read as written, in any case
	}
	for range maxRefreshPasses {
		changed := false
		for _, scripting := range []bool{true, false} {
			doc, err := html.ParseWithOptions(bytes.NewReader(page), html.ParseOptionEnableScripting(scripting))
			if err != nil {
				return nil, err
			}
			if !s.removeRefreshes(doc) {
				continue
			}
			var b bytes.Buffer
			if err := html.Render(&b, doc); err != nil {
				return nil, err
			}
			page, changed = b.Bytes(), true
		}
		if !changed {
			return page, nil
		}
	}
	return nil, errors.New("a <meta http-equiv=refresh> that leads out of the session could not be removed")
}

// removeRefreshes removes the refreshes under n that the session does
// not keep, and reports whether it removed one.
func (s *Session) removeRefreshes(n *html.Node) bool {
	removed := false
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		if c.Type == html.ElementNode && c.Data == "meta" && isRefresh(c) && !s.keepRefresh(c) {
			n.RemoveChild(c)
			removed = true
		} else if s.removeRefreshes(c) {
			removed = true
		}
		c = next
	}
	return removed
}

// isRefresh reports whether a meta element is a refresh.
func isRefresh(n *html.Node) bool {
	for _, a := range n.Attr {
		if a.Key == "http-equiv" && strings.EqualFold(strings.TrimSpace(a.Val), "refresh") {
			return true
		}
	}
	return false
}

// keepRefresh reports whether a refresh leads to a page or resource of
// the session (never a form or a sink: they are not pages).
func (s *Session) keepRefresh(n *html.Node) bool {
	for _, a := range n.Attr {
		if a.Key != "content" {
			continue
		}
		m := refreshTo().FindStringSubmatch(a.Val)
		if m == nil {
			return false
		}
		rest, ok := strings.CutPrefix(m[1], s.Base())
		if !ok {
			return false
		}
		_, page := s.pages["/"+rest]
		_, res := s.res["/"+rest]
		return page || res
	}
	return false
}
