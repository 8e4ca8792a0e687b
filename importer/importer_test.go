package importer

import (
	"strings"
	"testing"
)

// TestOptionsFromSet: every importer's options are declared in the
// registry, given as KEY=VALUE texts and typed from the declaration; a
// bad key or value is an error naming it and what is valid.
func TestOptionsFromSet(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
		want string // "" for no error
	}{
		{"bipia", []string{"split=test", "tasks=email", "positions=end,start", "layout=tool", "limit=3", "middle_seed=-4"}, ""},
		{"bipia", []string{"colour=x"}, `option "colour": not an option of this method`},
		{"bipia", []string{"middle_seed=1.5"}, `option "middle_seed": want a whole number, got "1.5"`},
		{"bipia", []string{"layout=table"}, `"table" is not one of the choices`},
		{"bipia", []string{"limit=-1"}, "want 0 or more"},
		{"injecagent", []string{"protocol=react"}, ""},
		{"injecagent", []string{"protocol=xml"}, `"xml" is not one of the choices`},
		{"llmail", []string{"successful=yes", "keep_duplicates"}, ""},
		{"llmail", []string{"successful=maybe"}, `want true or false, got "maybe"`},
		{"spikee", []string{"format=full-prompt", "data_marker=none", "match_languages=false"}, ""},
		{"mcptox", []string{"include_wrong=true", "risks=Privacy Leakage"}, ""},
		{"agentdojo", []string{"limit=3"}, `option "limit": not an option of this method; valid: trust_links`},
		{"agentdojo", []string{"trust_links=true"}, ""},
		{"agentdojoo", nil, `unknown benchmark "agentdojoo" (did you mean agentdojo?)`},
		{"bipia", []string{"=3"}, "want KEY=VALUE"},
	} {
		f, err := New(tc.name, tc.set)
		switch {
		case tc.want == "" && (err != nil || f == nil):
			t.Errorf("%s %v: %v", tc.name, tc.set, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %v: error %v, want %q", tc.name, tc.set, err, tc.want)
		}
	}
	for _, info := range Registry.Infos() {
		if info.Description == "" {
			t.Errorf("%s has no description", info.Name)
		}
	}
}
