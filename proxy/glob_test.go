package proxy

import (
	"net/http"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/agent"
)

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "https://acme.example/a/b?c=d", true},
		{"*acme.example*", "https://acme.example/inbox", true},
		{"*acme.example*", "https://other.example/acme", false},
		{"*.eml", "mail/2024/q3/lunch.eml", true},
		{"*.eml", "/home/u/lunch.eml", true},
		{"*.eml", "lunch.eml.txt", false},
		{"mail/*/lunch.eml", "mail/a/b/lunch.eml", true},
		{"https://*/inbox", "https://acme.example/inbox", true},
		{"read_*", "read_inbox", true},
		{"read_*", "send_email", false},
		{"read_?nbox", "read_inbox", true},
		{"read_?nbox", "read_nbox", false},
		{"?", "é", true}, // one character, not one byte
		{"a?c", "a/c", true},
		{"[rs]ead_*", "send_email", false},
		{"[rs]e*", "send_email", true},
		{"[^r]e*", "send_email", true},
		{"[a-c]x", "bx", true},
		{"[a-c]x", "dx", false},
		{`\*lit`, "*lit", true},
		{`\*lit`, "xlit", false},
		{"a*b*c", "a/x/b/y/c", true},
		{"a*b*c", "a/x/c/y/b", false},
		{"**", "anything/at/all", true},
		{"inbox", "inbox", true},
		{"inbox", "Inbox", false},
		{"", "", true},
		{"", "x", false},
	} {
		if got := globMatch(tc.pattern, tc.s); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

// TestArgsGlobs: the README's own rules match the calls they are written
// for, URLs and paths with directories included.
func TestArgsGlobs(t *testing.T) {
	for _, tc := range []struct {
		rule Rule
		args map[string]any
		want bool
	}{
		{Rule{Tool: "fetch_url", Args: map[string]string{"url": "*acme.example*"}}, map[string]any{"url": "https://acme.example/inbox?page=2"}, true},
		{Rule{Tool: "read_file", Args: map[string]string{"path": "*.eml"}}, map[string]any{"path": "mail/2024/lunch.eml"}, true},
		{Rule{Tool: "read_file", Args: map[string]string{"path": "*.eml"}}, map[string]any{"path": "mail/2024/lunch.txt"}, false},
		{Rule{Tool: "read_*", Args: map[string]string{"n": "4?"}}, map[string]any{"n": 42}, true},
	} {
		if got := tc.rule.matches(tc.rule.Tool, tc.args); got != tc.want {
			t.Errorf("%+v on %v: %v, want %v", tc.rule, tc.args, got, tc.want)
		}
	}
}

// TestUnmatchedRules: a taint rule that tainted nothing in a cell (it
// matched no call, or fewer calls than its nth) is named in the result's
// metadata and in the trace's last step, so an untainted cell says why.
func TestUnmatchedRules(t *testing.T) {
	srv, hs := newProxy(t, "")
	rules := Rules{Taint: []Rule{
		{Tool: "fetch_url", Args: map[string]string{"url": "*acme.example*"}, Mode: ModeAppend},
		{Tool: "read_*", Nth: 3, Mode: ModeAppend},
	}, Sinks: []string{"send_*"}}
	s := mustOpen(t, srv, "unmatched", offlineDrive(), rules)
	w := wireNamed("chat")
	if _, err := runAgent(t.Context(), http.DefaultClient, w, w.baseFor(hs.URL, "unmatched")+w.agentPath, false, nil); err != nil {
		t.Fatal(err)
	}
	tr := s.Trace()
	if tr.TaintDelivered {
		t.Fatal("tainted")
	}
	px, _ := tr.Meta["proxy"].(map[string]any)
	um, _ := px["unmatched_rules"].([]string)
	if len(um) != 2 || !strings.Contains(um[0], "taint[0]") || !strings.Contains(um[0], "no tool call") ||
		!strings.Contains(um[1], "taint[1]") || !strings.Contains(um[1], "nth = 3") {
		t.Errorf("unmatched_rules %q", um)
	}
	last := tr.Steps[len(tr.Steps)-1]
	if last.Kind != StepProxy || !strings.Contains(last.Text, "taint[0]") || !strings.Contains(last.Text, "taint[1]") {
		t.Errorf("last step %+v, want a proxy note naming both rules", last)
	}

	// A cell whose rules all tainted has neither.
	s2 := mustOpen(t, srv, "matched", offlineDrive(), sinkRules())
	if _, err := runAgent(t.Context(), http.DefaultClient, w, w.baseFor(hs.URL, "matched")+w.agentPath, false, nil); err != nil {
		t.Fatal(err)
	}
	tr = s2.Trace()
	if px, _ := tr.Meta["proxy"].(map[string]any); px["unmatched_rules"] != nil {
		t.Errorf("unmatched_rules %v in a tainted cell", px["unmatched_rules"])
	}
	if last := tr.Steps[len(tr.Steps)-1]; last.Kind != agent.StepModel {
		t.Errorf("last step %+v", last)
	}
}
