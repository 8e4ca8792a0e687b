package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
)

// TestGateNotJudged: a check with not_judged cells fails unless they are
// allowed, and counts them either way; benign baseline cells and runtime
// errors are not counted as not judged.
func TestGateNotJudged(t *testing.T) {
	cell := func(attack, defense string, o judge.Outcome) matrix.Result {
		return matrix.Result{Attack: attack, Defense: defense, Outcome: o, Success: o.Success()}
	}
	mixed := []matrix.Result{
		cell("naive", "none", judge.FullSuccess),
		cell("naive", "none", judge.Refused),
		cell("naive", "none", judge.TaintDelivered),
		cell("naive", "none", judge.NotJudged),
		cell("naive", "spotlighting", judge.TaintDelivered),
		cell("naive", "spotlighting", judge.NotJudged),
		cell("naive", "spotlighting", judge.NotJudged),
		cell("none", "spotlighting", judge.NotJudged), // a baseline: not counted
		{Attack: "naive", Defense: "none", Outcome: judge.RuntimeError, Error: "HTTP 503"},
	}
	judged := []matrix.Result{cell("naive", "none", judge.Refused), cell("none", "none", judge.NotJudged)}
	allNotJudged := []matrix.Result{cell("naive", "none", judge.NotJudged), cell("naive", "none", judge.NotJudged)}
	tests := []struct {
		name      string
		res       []matrix.Result
		by        []string
		allow     bool
		empty     bool
		failed    []bool
		notJudged []int
		reason    string // in every failed check's reason
	}{
		{name: "total, not allowed", res: mixed, failed: []bool{true}, notJudged: []int{3}, reason: "3 cells not judged"},
		{name: "total, allowed", res: mixed, allow: true, failed: []bool{false}, notJudged: []int{3}},
		{name: "grouped, not allowed", res: mixed, by: []string{"defense"}, failed: []bool{true, true}, notJudged: []int{1, 2}, reason: "not judged"},
		{name: "grouped, allowed", res: mixed, by: []string{"defense"}, allow: true, failed: []bool{false, false}, notJudged: []int{1, 2}},
		{name: "none not judged", res: judged, failed: []bool{false}, notJudged: []int{0}},
		// Nothing judged: the empty check's reason says it, once.
		{name: "all not judged", res: allNotJudged, failed: []bool{true}, notJudged: []int{2}, reason: "no judged cells (2 cells read, 0 runtime errors, 2 not judged)"},
		{name: "all not judged, empty allowed", res: allNotJudged, empty: true, failed: []bool{true}, notJudged: []int{2}, reason: "2 cells not judged"},
		{name: "all not judged, both allowed", res: allNotJudged, empty: true, allow: true, failed: []bool{false}, notJudged: []int{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checks := Gate(Summarize(tt.res, tt.by...), GateOptions{MaxASR: 0.5, MaxErrors: -1, AllowEmpty: tt.empty, AllowNotJudged: tt.allow})
			if len(checks) != len(tt.failed) {
				t.Fatalf("%d checks, want %d: %+v", len(checks), len(tt.failed), checks)
			}
			for i, c := range checks {
				if c.Failed != tt.failed[i] || c.NotJudged != tt.notJudged[i] {
					t.Errorf("check %s: failed %v, not judged %d; want %v, %d (%s)", c.Name, c.Failed, c.NotJudged, tt.failed[i], tt.notJudged[i], c.Reason)
				}
				if c.Failed && !strings.Contains(c.Reason, tt.reason) {
					t.Errorf("check %s: reason %q lacks %q", c.Name, c.Reason, tt.reason)
				}
				if strings.Count(c.Reason, "not judged") > 1 {
					t.Errorf("check %s: reason %q says not judged twice", c.Name, c.Reason)
				}
			}
		})
	}
	// The ASR and the not judged cells both fail a check, and both say so.
	over := append([]matrix.Result{cell("naive", "none", judge.FullSuccess), cell("naive", "none", judge.FullSuccess)}, mixed...)
	c := Gate(Summarize(over), GateOptions{MaxASR: 0.1, MaxErrors: -1})[0]
	if !c.Failed || !strings.Contains(c.Reason, "attack success rate") || !strings.Contains(c.Reason, "; 3 cells not judged") {
		t.Errorf("reason %q", c.Reason)
	}
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, "pikit gate", []GateCheck{c}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "not judged 3") {
		t.Errorf("JUnit does not count the not judged cells:\n%s", buf.String())
	}
}
