package cli

import (
	"fmt"
	"time"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/report"
	"github.com/pikit-go/pikit/result"
)

// repeatTally counts each combination's repeats as a run writes them, for
// --repeat-summary: the Python pikit's summary row per combination
// repeated more than once. Memory grows with combinations, not cells.
type repeatTally struct {
	order  []string
	groups map[string]*repeatGroup
	runID  string // the run's, from its first result
}

type repeatGroup struct {
	first      matrix.Result // the combination's fields, from its first row
	runs, wins int
}

// add counts a result; its trace and texts are not kept.
func (t *repeatTally) add(r matrix.Result) {
	if t.groups == nil {
		t.groups, t.runID = map[string]*repeatGroup{}, r.RunID
	}
	specs, _ := result.SpecsKey(r.MethodSpecs)
	key := fmt.Sprintf("%q %q %q %q %q %q %s", r.CaseID, r.Attack, r.Defense, r.Channel, r.Agent, r.Target, specs)
	g, ok := t.groups[key]
	if !ok {
		first := matrix.Result{Attack: r.Attack, Defense: r.Defense, Channel: r.Channel, Agent: r.Agent, Target: r.Target,
			Task: r.Task, CaseID: r.CaseID, CaseDescription: r.CaseDescription, Seed: r.Seed, MethodSpecs: r.MethodSpecs,
			GenerationConfig: map[string]any{"temperature": r.GenerationConfig["temperature"]}}
		g = &repeatGroup{first: first}
		t.groups[key] = g
		t.order = append(t.order, key)
	}
	g.runs++
	if r.Success {
		g.wins++
	}
}

// summaries returns a summary row for each combination run more than
// once, in the order they were first written, as the Python pikit writes
// them: success when any run succeeded, confidence high when all runs
// agree, "k/n runs succeeded", signals [repeat_summary], success_count
// and total_runs. Such a row has no outcome, key or trace: readers pass
// it over (report.RepeatSummarySignal).
func (t *repeatTally) summaries() []matrix.Result {
	var out []matrix.Result
	now := time.Now().UTC().Format(time.RFC3339Nano)
	for _, key := range t.order {
		g := t.groups[key]
		if g.runs < 2 {
			continue
		}
		r := g.first
		r.Success = g.wins > 0
		r.Confidence = "medium"
		if g.wins == 0 || g.wins == g.runs {
			r.Confidence = "high"
		}
		r.Reason = fmt.Sprintf("%d/%d runs succeeded", g.wins, g.runs)
		r.Signals = []string{report.RepeatSummarySignal}
		r.Evidence = []judge.Evidence{}
		r.SuccessCount, r.TotalRuns = g.wins, g.runs
		r.RunID = fmt.Sprintf("summary-%s-%06d", t.runID, len(out)+1)
		r.Timestamp = now
		r.Metadata = map[string]any{"schema_version": matrix.SchemaVersion}
		out = append(out, r)
	}
	return out
}
