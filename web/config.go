package web

import (
	"errors"
	"fmt"
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
var sectionKeys = []string{"page", "site", "start"}

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
	name := str("site")
	if name == "" {
		name = DefaultSite
	}
	site, err := LookupSite(name)
	if err != nil {
		bad("web.site", "%v", err)
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
