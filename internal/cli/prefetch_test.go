package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/report"
)

// TestPrefetch: against a model that never calls a tool, an agent
// scenario's indirect cell never reads its tainted data (not_reached).
// With --prefetch (or prefetch = true) the harness reads it for the model
// before its first turn: the request carries the tool call and the tainted
// result on the wire, and the cell is judged on what the model did with it.
func TestPrefetch(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test-cli")
	srv := newModelServer(t, 0, nil)
	dir := t.TempDir()
	body := "agents = [\"email\"]\nattacks = [\"naive\"]\nchannels = [\"document\"]\ntarget_spec = \"openai:m\"\n"
	plain := writeFile(t, dir, "plain.toml", body)
	withKey := writeFile(t, dir, "prefetch.toml", body+"prefetch = true\n")
	cases := []struct {
		name    string
		args    []string
		want    judge.Outcome
		fetched bool
	}{
		{"no prefetch", []string{"matrix", "-c", plain}, judge.NotReached, false},
		{"--prefetch", []string{"matrix", "-c", plain, "--prefetch"}, judge.TaintDelivered, true},
		{"prefetch = true", []string{"matrix", "-c", withKey}, judge.TaintDelivered, true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "r"+string(rune('0'+i))+".jsonl")
			if r := run(t, append(tc.args, "--base-url", srv.URL+"/v1", "-j", "1", "-q", "-o", out)...); r.code != 0 {
				t.Fatalf("%+v", r)
			}
			res, err := report.ReadFile(out)
			if err != nil || len(res) != 1 {
				t.Fatalf("%v, %d results", err, len(res))
			}
			if res[0].Outcome != tc.want {
				t.Errorf("outcome %s, want %s: %s", res[0].Outcome, tc.want, res[0].Reason)
			}
			received, _ := srv.counts()
			msgs, _ := json.Marshal(srv.body(received - 1)["messages"])
			wire := string(msgs)
			hasCall := strings.Contains(wire, `"tool_calls"`) && strings.Contains(wire, `"role":"tool"`)
			if hasCall != tc.fetched || tc.fetched && !strings.Contains(wire, matrix.DefaultCanary) {
				t.Errorf("the model was sent (prefetch %v):\n%s", tc.fetched, wire)
			}
			if tr := res[0].TraceData; tc.fetched && (tr == nil || len(tr.Steps) < 2 || !tr.Steps[1].Prefetched || !tr.Steps[1].Tainted) {
				t.Errorf("the trace does not show the harness's read: %+v", tr)
			}
		})
	}
}
