package matrix

import (
	"strings"

	"github.com/pikit-go/pikit/attack"
	"github.com/pikit-go/pikit/target"
)

// Count is what a plan holds, counted without running it: its cells, the
// cells per value of each axis, and the most model calls it may make.
type Count struct {
	Cells int
	// Axes holds, for each of the fields "agent", "attack", "defense",
	// "channel" and "target" (in that order), the values in plan order with
	// their numbers of cells. A direct channel is "(direct)"; channel "" of
	// a user's own agent is "(payload only)", as reports have it.
	Axes []AxisCount
	// MaxCalls is the most model calls the plan may make: max_steps per
	// cell, plus one per cell for an LLM judge. NetworkCalls is the part of
	// it sent to targets other than the offline mock.
	MaxCalls, NetworkCalls int
	// Adaptive counts the cells of adaptive attacks; their rounds are in
	// MaxCalls (max_rounds runs of the agent each), and AttackerCalls is
	// the most calls their attacker models may get.
	Adaptive, AttackerCalls int
}

// AxisCount is one axis of a Count.
type AxisCount struct {
	Field  string
	Values []ValueCount
}

// ValueCount is the number of cells with one value of an axis.
type ValueCount struct {
	Value string
	Cells int
}

// CountFields are the axes a Count holds, in order.
var CountFields = []string{"agent", "attack", "defense", "channel", "target"}

// CountPlan counts a source. For a Grid and for a Concat of grids (a
// dataset) it takes time in the number of axis values, not of cells, so
// a plan of a billion cells counts at once; any other source is visited
// cell by cell. Sums saturate at MaxPlanCells rather than overflow.
func CountPlan(src Source) Count {
	c := newCounter()
	c.add(src)
	return c.count()
}

type counter struct {
	cells, calls, network int
	adaptive, attacker    int
	index                 map[[2]string]int // (field, value) → position in values[field]
	values                map[string][]ValueCount
}

func newCounter() *counter {
	return &counter{index: map[[2]string]int{}, values: map[string][]ValueCount{}}
}

func (c *counter) count() Count {
	out := Count{Cells: c.cells, MaxCalls: c.calls, NetworkCalls: c.network, Adaptive: c.adaptive, AttackerCalls: c.attacker}
	for _, f := range CountFields {
		out.Axes = append(out.Axes, AxisCount{Field: f, Values: c.values[f]})
	}
	return out
}

// tally adds n cells to a value of a field.
func (c *counter) tally(field, value string, n int) {
	k := [2]string{field, value}
	i, ok := c.index[k]
	if !ok {
		i = len(c.values[field])
		c.index[k] = i
		c.values[field] = append(c.values[field], ValueCount{Value: value})
	}
	c.values[field][i].Cells = addSat(c.values[field][i].Cells, n)
}

// config adds the calls of n cells of one config.
func (c *counter) config(cfg *Config, n int) {
	c.cells = addSat(c.cells, n)
	c.calls1(cfg, n, 1)
	c.tally("target", cfg.TargetSpec, n)
}

// calls1 adds the calls of n runs of a config's agent, each judged: n
// cells, or rounds of adaptive ones.
func (c *counter) calls1(cfg *Config, n, runs int) {
	per := mulSat(cfg.MaxSteps, 1+cfg.Reruns)
	if cfg.JudgeType == "llm" {
		per++
	}
	calls := mulSat(mulSat(n, runs), per)
	c.calls = addSat(c.calls, calls)
	if provider, _, _ := target.ParseSpec(cfg.TargetSpec); provider != "mock" {
		c.network = addSat(c.network, calls)
	}
}

// search adds the rounds beyond the first of n cells of an adaptive
// attack, and their attacker calls.
func (c *counter) search(cfg *Config, spec Spec, n int) {
	if spec.Name != attack.AdaptiveName {
		return
	}
	a, err := attack.NewAdaptive(spec.Kwargs, 0)
	if err != nil {
		return
	}
	c.adaptive = addSat(c.adaptive, n)
	c.calls1(cfg, n, a.MaxRounds-1)
	c.attacker = addSat(c.attacker, mulSat(n, AttackerCalls(a)))
}

// AttackerCalls is the most calls one cell of an adaptive attack may send
// its attacker model: each proposal may be asked twice and an unreadable
// one asked again up to three times; a tree's children are each asked
// whether they are on topic.
func AttackerCalls(a *attack.Adaptive) int {
	const perProposal = 2 * 3
	switch a.Strategy {
	case attack.StrategyPAIR, attack.StrategyCrescendo:
		return mulSat(a.MaxRounds, perProposal)
	case attack.StrategyTree:
		children := mulSat(mulSat(a.Depth, a.Width), a.Branching)
		per := perProposal
		if a.Prune {
			per++
		}
		return mulSat(children, per)
	}
	return 0
}

func (c *counter) add(src Source) {
	switch s := src.(type) {
	case *Grid:
		c.grid(s)
	case *concat:
		for _, part := range s.srcs {
			c.add(part)
		}
	default:
		for i := 0; i < src.Len(); i++ {
			cell := src.Cell(i)
			c.config(cell.Config, 1)
			c.search(cell.Config, cell.Attack, 1)
			c.tally("agent", cell.Agent, 1)
			c.tally("attack", cell.Attack.Name, 1)
			c.tally("defense", cell.Defense.Name, 1)
			c.tally("channel", channelLabel(cell.Agent, cell.Channel.Name), 1)
		}
	}
}

// grid counts a Grid from its axes: in each agent's block every attack
// meets every defense, channel and repeat.
func (c *counter) grid(g *Grid) {
	c.config(g.cfg, g.total)
	a, d := len(g.attacks), len(g.defenses)
	for _, b := range g.blocks {
		ch := len(b.channels)
		c.tally("agent", b.agent, b.size)
		for _, at := range g.attacks {
			c.tally("attack", at.spec.Name, b.size/a)
			c.search(g.cfg, at.spec, b.size/a)
		}
		for _, df := range g.defenses {
			c.tally("defense", df.spec.Name, b.size/d)
		}
		for _, cn := range b.channels {
			c.tally("channel", channelLabel(b.agent, cn.spec.Name), b.size/ch)
		}
	}
}

// channelLabel names a channel in counts as reports group it: channel ""
// is direct injection, except for a user's own agent (the proxy's, a
// runtime's), where it is the payload alone in a tool result.
func channelLabel(agent, name string) string {
	if name != DirectChannel {
		return name
	}
	if agent == "proxy" || agent == "web" || strings.HasPrefix(agent, "runtime:") {
		return "(payload only)"
	}
	return "(direct)"
}

func addSat(a, b int) int {
	if a > MaxPlanCells-b {
		return MaxPlanCells
	}
	return a + b
}

func mulSat(a, b int) int {
	if p, ok := product(a, b); ok {
		return p
	}
	return MaxPlanCells
}
