package web

import (
	"maps"
	"slices"

	"github.com/pikit-go/pikit/agent"
)

// Merge puts the trace of a browser agent's model traffic (pikit proxy's)
// and of its web traffic (a session's) into one, their steps in the order
// they were recorded (Step.At; model steps first at equal times), each
// renumbered and every reference to a step (sink calls, a block) moved
// with it. The model trace gives the model calls, usage and system prompt;
// both give their sink calls, metadata and taint.
func Merge(model, site agent.Trace) agent.Trace {
	type from struct {
		step agent.Step
		web  bool
		old  int
	}
	all := make([]from, 0, len(model.Steps)+len(site.Steps))
	for _, s := range model.Steps {
		all = append(all, from{s, false, s.Index})
	}
	for _, s := range site.Steps {
		all = append(all, from{s, true, s.Index})
	}
	slices.SortStableFunc(all, func(a, b from) int { return a.step.At.Compare(b.step.At) })
	out := model
	out.Agent = site.Agent
	out.Steps = make([]agent.Step, len(all))
	renumber := [2]map[int]int{{}, {}}
	for i, f := range all {
		f.step.Index = i
		out.Steps[i] = f.step
		side := 0
		if f.web {
			side = 1
		}
		renumber[side][f.old] = i
	}
	moved := func(side, step int) int {
		if n, ok := renumber[side][step]; ok {
			return n
		}
		return step
	}
	out.SinkCalls = nil
	for side, calls := range [][]agent.SinkCall{model.SinkCalls, site.SinkCalls} {
		for _, c := range calls {
			c.Step = moved(side, c.Step)
			out.SinkCalls = append(out.SinkCalls, c)
		}
	}
	slices.SortStableFunc(out.SinkCalls, func(a, b agent.SinkCall) int { return a.Step - b.Step })
	out.TaintDelivered = model.TaintDelivered || site.TaintDelivered
	// The first block of either, where it now stands.
	out.Blocked = nil
	for side, b := range []*agent.Block{model.Blocked, site.Blocked} {
		if b == nil {
			continue
		}
		c := *b
		c.Step = moved(side, b.Step)
		if out.Blocked == nil || c.Step < out.Blocked.Step {
			out.Blocked = &c
		}
	}
	out.Meta = maps.Clone(model.Meta)
	if out.Meta == nil {
		out.Meta = map[string]any{}
	}
	maps.Copy(out.Meta, site.Meta)
	return out
}
