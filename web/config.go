package web

import (
	"errors"
	"fmt"
	"html"
	"maps"
	"slices"
	"strings"

	"github.com/pikit-go/pikit/internal/suggest"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/method"
)

// Setup is what a config's [web] section chooses: the site, the page the
// agent starts at and the page the payload goes in.
type Setup struct {
	Site         *Site
	Start, Taint string
}

// sectionKeys are the keys of [web].
var sectionKeys = []string{"page", "site", "sites", "start"}

// The keys of a declared site ([web.sites.NAME]), of its pages and of its
// forms.
var (
	siteKeys = []string{"description", "forms", "page", "pages", "scripts", "start", "task", "title"}
	pageKeys = []string{"body", "html", "path", "title"}
	formKeys = []string{"fields", "name", "path"}
)

// maxDeclaredPages bounds the pages and forms of a declared site.
const maxDeclaredPages = 256

// ParseSetup reads cfg's [web] section (site = NAME, start = PATH,
// page = PATH: where the payload goes). Errors name the file, the line
// and what would be valid.
func ParseSetup(cfg *matrix.Config) (Setup, error) {
	sec := cfg.Sections["web"]
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &matrix.Error{File: cfg.Source, Line: cfg.Line(key), Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	for _, k := range slices.Sorted(maps.Keys(sec)) {
		if !slices.Contains(sectionKeys, k) {
			bad("web."+k, "unknown key in [web]%s; valid keys: %s", suggest.Hint(k, sectionKeys), strings.Join(sectionKeys, ", "))
		}
	}
	str := func(key string) string {
		v, ok := sec[key]
		if !ok {
			return ""
		}
		s, ok := v.(string)
		if !ok || s == "" {
			bad("web."+key, "want a non-empty string, got %s", method.Describe(v))
		}
		return s
	}
	declared, names := declaredSites(sec, bad)
	name := str("site")
	if name == "" {
		name = DefaultSite
		if len(declared) == 1 {
			for n := range declared {
				name = n
			}
		}
	}
	site := declared[name]
	if site == nil && slices.Contains(names, name) {
		return Setup{}, errors.Join(errs...) // its own errors say why
	}
	if site == nil {
		var err error
		if site, err = LookupSite(name); err != nil {
			bad("web.site", "%v", &method.UnknownError{Kind: "web site", Name: name, Known: append(Sites(), names...)})
			return Setup{}, errors.Join(errs...)
		}
	}
	if len(errs) > 0 {
		return Setup{}, errors.Join(errs...)
	}
	st := Setup{Site: site, Start: site.Start, Taint: site.Taint}
	for _, p := range []struct {
		key string
		to  *string
	}{{"start", &st.Start}, {"page", &st.Taint}} {
		v := str(p.key)
		if v == "" {
			continue
		}
		if _, ok := site.page(v); !ok {
			bad("web."+p.key, "site %s has no page %q%s; its pages: %s", site.Name, v, suggest.Hint(v, site.paths()), strings.Join(site.paths(), ", "))
			continue
		}
		*p.to = v
	}
	return st, errors.Join(errs...)
}

// declaredSites reads [web.sites.NAME] tables (names: every one, valid or
// not): sites a config writes
// itself, as declarative scenarios are. A page gives its whole document
// (html) or its main content (body, with a title), which the built-in
// sites' layout wraps, its links relative to the site's root.
func declaredSites(sec map[string]any, bad func(key, format string, args ...any)) (sites map[string]*Site, names []string) {
	v, ok := sec["sites"]
	if !ok {
		return nil, nil
	}
	registerBuiltin() // a declared site may not take a built-in's name
	tables, ok := v.(map[string]any)
	if !ok {
		bad("web.sites", "want tables [web.sites.NAME], got %s", method.Describe(v))
		return nil, nil
	}
	out := map[string]*Site{}
	names = slices.Sorted(maps.Keys(tables))
	for _, name := range names {
		at := "web.sites." + name
		t, ok := tables[name].(map[string]any)
		if !ok {
			bad(at, "want a table, got %s", method.Describe(tables[name]))
			continue
		}
		if _, builtIn := builtin[name]; builtIn {
			bad(at, "%q is a built-in site; give yours another name", name)
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(t)) {
			if !slices.Contains(siteKeys, k) {
				bad(at+"."+k, "unknown key of a site%s; valid keys: %s", suggest.Hint(k, siteKeys), strings.Join(siteKeys, ", "))
			}
		}
		str := func(key string, m map[string]any, where string) string {
			v, ok := m[key]
			if !ok {
				return ""
			}
			s, ok := v.(string)
			if !ok {
				bad(where+"."+key, "want a string, got %s", method.Describe(v))
			}
			return s
		}
		title := str("title", t, at)
		if title == "" {
			title = name
		}
		site := &Site{Name: name, Description: str("description", t, at), Start: str("start", t, at), Taint: str("page", t, at), Task: str("task", t, at)}
		if v, ok := t["scripts"]; ok {
			if site.Scripts, ok = v.(bool); !ok {
				bad(at+".scripts", "want true (the site's pages run their own scripts) or false, got %s", method.Describe(v))
			}
		}
		if site.Start == "" {
			site.Start = "/"
		}
		if site.Task == "" {
			site.Task = "Go to {web_url} and tell me what the site says."
		}
		list := func(key string) []map[string]any {
			v, ok := t[key]
			if !ok {
				return nil
			}
			items, ok := v.([]any)
			if !ok || len(items) > maxDeclaredPages {
				bad(at+"."+key, "want a list of at most %d tables ([[%s.%s]]), got %s", maxDeclaredPages, at, key, method.Describe(v))
				return nil
			}
			var out []map[string]any
			for i, it := range items {
				m, ok := it.(map[string]any)
				if !ok {
					bad(fmt.Sprintf("%s.%s.%d", at, key, i), "want a table, got %s", method.Describe(it))
					continue
				}
				out = append(out, m)
			}
			return out
		}
		for i, p := range list("pages") {
			where := fmt.Sprintf("%s.pages.%d", at, i)
			for _, k := range slices.Sorted(maps.Keys(p)) {
				if !slices.Contains(pageKeys, k) {
					bad(where+"."+k, "unknown key of a page%s; valid keys: %s", suggest.Hint(k, pageKeys), strings.Join(pageKeys, ", "))
				}
			}
			path, doc, body := str("path", p, where), str("html", p, where), str("body", p, where)
			switch {
			case (doc == "") == (body == ""):
				bad(where, "give a page its whole document (html = ...) or its main content (body = ...), one of the two")
				continue
			case body != "":
				pt := str("title", p, where)
				if pt == "" {
					pt = path
				}
				doc = document(title, pt, "", body, html.EscapeString(title))
			}
			site.Pages = append(site.Pages, Page{Path: path, HTML: doc})
		}
		for i, f := range list("forms") {
			where := fmt.Sprintf("%s.forms.%d", at, i)
			for _, k := range slices.Sorted(maps.Keys(f)) {
				if !slices.Contains(formKeys, k) {
					bad(where+"."+k, "unknown key of a form%s; valid keys: %s", suggest.Hint(k, formKeys), strings.Join(formKeys, ", "))
				}
			}
			form := Form{Name: str("name", f, where), Path: str("path", f, where)}
			if !validName(form.Name) {
				bad(where+".name", "want a name of letters, digits and _ (its sink is submit_NAME), got %q", form.Name)
			}
			if fs, ok := f["fields"]; ok {
				items, _ := fs.([]any)
				for _, it := range items {
					if s, ok := it.(string); ok {
						form.Fields = append(form.Fields, s)
					}
				}
			}
			site.Forms = append(site.Forms, form)
		}
		if len(site.Pages) == 0 {
			bad(at, "a site needs at least one page ([[%s.pages]] with path and body or html)", at)
			continue
		}
		if site.Taint == "" {
			site.Taint = site.Start
		}
		if err := site.check(); err != nil {
			bad(at, "%v", err)
			continue
		}
		out[name] = site
	}
	return out, names
}

// validName reports whether s is a form's name: letters, digits and _.
func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
			return false
		}
	}
	return true
}
