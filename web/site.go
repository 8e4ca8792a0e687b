package web

import (
	"fmt"
	"html"
	"slices"
	"sort"
	"strings"

	"github.com/pikit-go/pikit/method"
)

// Site is a small web site an agent is sent to.
type Site struct {
	Name        string
	Description string
	// Start is the page the agent is sent to; Taint the page the payload
	// goes in (by default: a site's Taint, or Start).
	Start, Taint string
	// Task is what the user asks the agent to do there (the cell's
	// user_message, when the config gives one, replaces it); {web_url} in
	// it is the session's start URL.
	Task  string
	Pages []Page
	Forms []Form
	// Scripts lets the site's pages run their own scripts (inline or
	// from the session); without it no script runs. What a script asks
	// for is recorded and never counted as the agent's action.
	Scripts bool
}

// Page is one page of a site: its path ("/", "/product/ridgeline-38")
// and the whole HTML document.
type Page struct {
	Path string
	HTML string
}

// Form is a sink: a POST (or GET) to its path is recorded as a call of
// the sink "submit_" + Name, its fields as the call's arguments.
type Form struct {
	Name, Path string
	Fields     []string
}

// Sink names the sinks every site has beside its forms.
const (
	SinkAttacker = "visit_attacker" // any request under /x/HOST/
	SinkDownload = "download"       // any request under /download/
)

// FormSink is the name of a form's sink.
func FormSink(name string) string { return "submit_" + name }

// page returns the site's page at path.
func (s *Site) page(path string) (Page, bool) {
	for _, p := range s.Pages {
		if p.Path == path {
			return p, true
		}
	}
	return Page{}, false
}

// form returns the site's form at path.
func (s *Site) form(path string) (Form, bool) {
	for _, f := range s.Forms {
		if f.Path == path {
			return f, true
		}
	}
	return Form{}, false
}

// Sinks names the site's sinks, sorted.
func (s *Site) Sinks() []string {
	out := []string{SinkAttacker, SinkDownload}
	for _, f := range s.Forms {
		out = append(out, FormSink(f.Name))
	}
	sort.Strings(out)
	return out
}

// check says what is wrong with a site: a start or taint page it does not
// have, a path that is not absolute, two pages or forms at one path.
func (s *Site) check() error {
	seen := map[string]bool{}
	// reserved says what is wrong with a path under pikit's own.
	reserved := func(path string) error {
		for _, own := range []string{"/x/", "/download/", "/r/"} {
			if strings.HasPrefix(path, own) {
				return fmt.Errorf("site %s: %s is under %s, where pikit web serves its own sinks and resources", s.Name, path, own)
			}
		}
		return nil
	}
	for _, p := range s.Pages {
		if !strings.HasPrefix(p.Path, "/") || strings.Contains(p.Path, "..") {
			return fmt.Errorf("site %s: page path %q: want an absolute path such as /about", s.Name, p.Path)
		}
		if err := reserved(p.Path); err != nil {
			return err
		}
		if seen[p.Path] {
			return fmt.Errorf("site %s: two pages at %s", s.Name, p.Path)
		}
		seen[p.Path] = true
	}
	for _, f := range s.Forms {
		if !strings.HasPrefix(f.Path, "/") || strings.Contains(f.Path, "..") {
			return fmt.Errorf("site %s: form %s: path %q: want an absolute path such as /subscribe", s.Name, f.Name, f.Path)
		}
		if err := reserved(f.Path); err != nil {
			return err
		}
		if seen[f.Path] {
			return fmt.Errorf("site %s: form %s at %s, where there is already a page or form", s.Name, f.Name, f.Path)
		}
		seen[f.Path] = true
	}
	for _, p := range []string{s.Start, s.Taint} {
		if _, ok := s.page(p); !ok {
			return fmt.Errorf("site %s: no page at %q (pages: %s)", s.Name, p, strings.Join(s.paths(), ", "))
		}
	}
	return nil
}

func (s *Site) paths() []string {
	var out []string
	for _, p := range s.Pages {
		out = append(out, p.Path)
	}
	return out
}

var builtin = map[string]*Site{}

// register adds a built-in site; a bad one is a bug.
func register(s *Site) {
	if s.Taint == "" {
		s.Taint = s.Start
	}
	if err := s.check(); err != nil {
		panic(err)
	}
	if builtin[s.Name] != nil {
		panic("web: site " + s.Name + " registered twice")
	}
	builtin[s.Name] = s
}

// Sites names the built-in sites, sorted.
func Sites() []string {
	registerBuiltin()
	names := make([]string, 0, len(builtin))
	for n := range builtin {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// LookupSite returns a built-in site.
func LookupSite(name string) (*Site, error) {
	registerBuiltin()
	if s, ok := builtin[name]; ok {
		return s, nil
	}
	return nil, &method.UnknownError{Kind: "web site", Name: name, Known: Sites()}
}

// DefaultSite is the site of a config that names none.
const DefaultSite = "shop"

// document writes a site's page: its header and navigation, the main
// content (raw HTML) and a footer.
func document(siteTitle, pageTitle, nav, main, footer string) string {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	fmt.Fprintf(&b, "<title>%s | %s</title>\n", html.EscapeString(pageTitle), html.EscapeString(siteTitle))
	b.WriteString("<style>" + siteCSS + "</style>\n</head>\n<body>\n")
	fmt.Fprintf(&b, "<header class=\"site\"><a class=\"brand\" href=\"./\">%s</a>\n<nav>%s</nav></header>\n", html.EscapeString(siteTitle), nav)
	b.WriteString("<main>\n" + main + "\n</main>\n")
	fmt.Fprintf(&b, "<footer class=\"site\">%s</footer>\n</body>\n</html>\n", footer)
	return b.String()
}

// siteCSS is the one style sheet of the built-in sites: plain, readable,
// and white behind the text (a same-colour placement hides in it).
const siteCSS = `body{margin:0;font:16px/1.5 system-ui,sans-serif;color:#1d232a;background:#ffffff}
header.site{display:flex;gap:2rem;align-items:center;padding:.8rem 2rem;background:#24425e;color:#fff}
header.site a{color:#fff;text-decoration:none}.brand{font-weight:700;font-size:1.2rem}
nav a{margin-right:1rem}main{max-width:52rem;margin:1.5rem auto;padding:0 1.5rem}
footer.site{max-width:52rem;margin:2rem auto;padding:1rem 1.5rem;border-top:1px solid #d5dbe1;color:#5b6670;font-size:.9rem}
.price{font-size:1.3rem;font-weight:600}.muted{color:#5b6670}article{border-bottom:1px solid #e3e7eb;padding:.6rem 0}
form{display:grid;gap:.5rem;max-width:28rem}label{display:grid;gap:.2rem}input,textarea{font:inherit;padding:.35rem}
table{border-collapse:collapse}td,th{padding:.3rem .8rem;border-bottom:1px solid #e3e7eb;text-align:left}`

// Infos describes the built-in sites as pikit list shows methods: the
// [web] keys start and page, with the site's pages as their choices, and
// its sinks in the description.
func Infos() []method.Info {
	registerBuiltin()
	var out []method.Info
	for _, name := range Sites() {
		s := builtin[name]
		out = append(out, method.Info{
			Name:        s.Name,
			Description: s.Description + "; sinks: " + strings.Join(s.Sinks(), ", "),
			Options: []method.Option{
				{Name: "start", Help: "the page the agent is sent to", Default: s.Start, Choices: s.paths()},
				{Name: "page", Help: "the page the payload goes in", Default: s.Taint, Choices: s.paths()},
			},
		})
	}
	return out
}
