package matrix

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/pikit-go/pikit/adaptive"
	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/attack"
	"github.com/pikit-go/pikit/channel"
	"github.com/pikit-go/pikit/craft"
	"github.com/pikit-go/pikit/judge"
)

// searched is what an adaptive cell's search gives the result: the final
// trace (its rounds attached) and verdict, and the facts for metadata.
type searched struct {
	tr      agent.Trace
	verdict judge.Verdict
	res     adaptive.Result
	a       *attack.Adaptive
}

// search runs an adaptive cell: the search tries candidates on the cell's
// target, each round crafted, run and judged like a cell of the fixed
// attack with that candidate as its payload.
func (e *env) search(ctx context.Context, cell Cell, st *configState, j judge.Judge) (searched, error) {
	built, err := e.attack(cell.Attack, cell.Seed)
	if err != nil {
		return searched{}, setupError{err}
	}
	a := built.(*attack.Adaptive) // the attack named adaptive is one
	cfg := cell.Config
	o := &oracle{e: e, cell: cell, st: st, j: j}
	goal := adaptive.Goal{Task: cfg.Task, Canary: cfg.Canary, SinkArgs: st.sinkArgs, Direct: cell.Direct(), UserMessage: cfg.UserMessage}
	if !goal.Direct {
		goal.Agent, goal.Channel = cell.Agent, cell.Channel.Name
	}
	if cfg.Driven == "" {
		if o.sc, err = e.scenarioOf(cell); err != nil {
			return searched{}, setupError{err}
		}
		if goal.UserMessage == "" {
			goal.UserMessage = o.sc.UserMessage
		}
		for _, t := range o.sc.Tools {
			if t.Sink {
				goal.Sinks = append(goal.Sinks, t.Name)
			}
		}
	}
	if e.driver == nil {
		if o.hooks, err = e.hooks(cell); err != nil {
			return searched{}, setupError{err}
		}
	}
	var opts adaptive.Options
	if a.UsesAttacker() {
		if opts.Attacker, err = e.attacker(cfg.attackerSpec()); err != nil {
			return searched{}, setupError{fmt.Errorf("attacker target: %w", err)}
		}
	}
	opts.Halt = e.halt
	if !e.secrets.Empty() {
		opts.Redact = e.secrets.Redact
	}
	res, err := adaptive.Search(ctx, a, goal, o, opts)
	out := searched{tr: res.Final.Trace, verdict: res.Final.Verdict, res: res, a: a}
	out.tr.Rounds = res.Rounds
	return out, err
}

// fill puts what the search found in the cell's result: its cost over
// every round, not the final trace's alone, metadata.adaptive and the
// winning injection.
func (s searched) fill(res *Result, cfg *Config) {
	res.Usage = s.res.Usage
	res.Metadata["model_calls"] = s.res.ModelCalls
	res.Metadata["adaptive"] = s.meta(cfg.attackerSpec())
	w := s.res.Winner
	if w == nil {
		return
	}
	res.Metadata["winning_injection"] = w.Payload
	if len(w.Channel) > 0 {
		res.Metadata["winning_channel_options"] = w.Channel
	}
	if len(w.Parts) > 1 {
		res.Metadata["winning_parts"] = w.Parts
	}
	if len(s.res.WinningTurns) > 0 {
		res.Metadata["winning_turns"] = s.res.WinningTurns
	}
}

// meta is what a search adds to the result's metadata.
func (s searched) meta(attacker string) map[string]any {
	r := s.res
	// rounds counts the trace's rounds that were sent, pruned those it
	// records unsent: together, every entry of trace_data.rounds.
	m := map[string]any{
		"strategy": s.a.Strategy, "rounds": r.Sent, "pruned": r.Pruned, "stop": r.Stop,
		"model_calls": r.ModelCalls, "max_rounds": s.a.MaxRounds,
	}
	if s.a.UsesAttacker() {
		m["attacker"] = attacker
		m["attacker_calls"] = r.AttackerCalls
		m["attacker_usage"] = r.AttackerUsage
		if r.AttackerFailures > 0 {
			m["attacker_failures"] = r.AttackerFailures
			m["attacker_failure"] = r.LastAttackerFailure
		}
	}
	if r.SuccessRound > 0 {
		m["success_round"] = r.SuccessRound
		m["queries_to_success"] = r.QueriesToSuccess
	}
	return m
}

// oracle tries an adaptive cell's candidates.
type oracle struct {
	e     *env
	cell  Cell
	st    *configState
	j     judge.Judge
	sc    *agent.Scenario // nil for a driven config
	hooks agent.Hooks
}

// candidateCell is the cell with the candidate as its attack's payload.
func (o *oracle) candidateCell(c adaptive.Candidate) Cell {
	cell := o.cell
	payload := c.Payload
	if len(c.Parts) > 1 {
		payload = c.Parts[0]
	}
	cell.Attack = Spec{Name: attack.Fixed, Kwargs: map[string]any{"payload": payload}}
	if len(c.Channel) > 0 {
		kw := maps.Clone(cell.Channel.Kwargs)
		if kw == nil {
			kw = map[string]any{}
		}
		maps.Copy(kw, c.Channel)
		cell.Channel.Kwargs = kw
	}
	return cell
}

// Try implements adaptive.Oracle.
func (o *oracle) Try(ctx context.Context, c adaptive.Candidate) (adaptive.Feedback, error) {
	cell := o.candidateCell(c)
	var tr agent.Trace
	var task judge.Task
	var err error
	if o.e.driver != nil {
		tr, task, err = o.e.drive(ctx, cell, o.st)
	} else {
		var in agent.Input
		if in, task, err = o.e.craft(cell, o.sc, o.st); err != nil {
			return adaptive.Feedback{}, err
		}
		if len(c.Parts) > 1 {
			srcs := o.Sources()
			taint := maps.Clone(in.Taint)
			for i, p := range c.Parts[1:] {
				if i < len(srcs) {
					taint[srcs[i]] = p
				}
			}
			in.Taint = taint
		}
		tr, err = agent.Run(ctx, o.st.target, o.sc, in, o.hooks)
	}
	if err != nil {
		return adaptive.Feedback{Trace: tr}, unsetup(err)
	}
	task.Payload = c.Payload
	v, err := o.j.Judge(ctx, tr, task)
	if err != nil {
		return adaptive.Feedback{Trace: tr}, fmt.Errorf("judge: %w", err)
	}
	return adaptive.Feedback{Verdict: v, Trace: tr}, nil
}

// unsetup unwraps a setup error: inside a search, a candidate that
// cannot be crafted fails the cell like any other error.
func unsetup(err error) error {
	if errors.Is(err, errSetup) {
		return errors.Unwrap(err)
	}
	return err
}

// Converse implements adaptive.Oracle: a conversation with the cell's
// target through pikit's own loop, the attacker speaking as the user.
func (o *oracle) Converse() (adaptive.Conversation, error) {
	if o.sc == nil || o.e.driver != nil {
		return nil, errors.New("crescendo holds a conversation through pikit's own agent loop; an external agent cannot take it (use pair, tree, best_of_n or greedy)")
	}
	in := o.e.input(o.cell, o.st)
	in.UserMessage, in.Instruction = "", o.cell.Config.UserMessage // the attacker says every turn
	return &conversation{o: o, c: agent.Start(o.st.target, o.sc, in, o.hooks)}, nil
}

// conversation is a crescendo conversation, judged after each turn.
type conversation struct {
	o     *oracle
	c     *agent.Conversation
	marks []agent.Mark
}

func (c *conversation) Say(ctx context.Context, text string) (adaptive.Feedback, error) {
	c.marks = append(c.marks, c.c.Mark())
	err := c.c.Say(ctx, text, true)
	tr := c.c.Trace()
	if err != nil {
		return adaptive.Feedback{Trace: tr}, err
	}
	task := c.o.e.task(c.o.cell, craft.Crafted{Payload: text}, c.o.st)
	v, err := c.o.j.Judge(ctx, tr, task)
	if err != nil {
		return adaptive.Feedback{Trace: tr}, fmt.Errorf("judge: %w", err)
	}
	return adaptive.Feedback{Verdict: v, Trace: tr}, nil
}

func (c *conversation) Back() {
	if n := len(c.marks); n > 0 {
		c.c.Rewind(c.marks[n-1])
		c.marks = c.marks[:n-1]
	}
}

func (c *conversation) Trace() agent.Trace { return c.c.Trace() }

// Placements implements adaptive.Oracle: the options of the cell's
// channel that have a fixed set of values (where in the carrier the
// payload goes), each with the values other than the cell's own, for an
// indirect cell.
func (o *oracle) Placements() map[string][]string {
	if o.cell.Direct() || o.cell.Channel.Name == DirectChannel {
		return nil
	}
	info, ok := channel.Registry.Lookup(o.cell.Channel.Name)
	if !ok {
		return nil
	}
	out := map[string][]string{}
	for _, opt := range info.Options {
		cur, ok := o.cell.Channel.Kwargs[opt.Name]
		if !ok {
			cur = opt.Default
		}
		var others []string
		for _, c := range opt.Choices {
			if c != cur {
				others = append(others, c)
			}
		}
		if len(others) > 0 {
			out[opt.Name] = others
		}
	}
	return out
}

// Sources implements adaptive.Oracle: the scenario's source tools other
// than its taint point, in the order the scenario lists them.
func (o *oracle) Sources() []string {
	if o.sc == nil || o.cell.Direct() {
		return nil
	}
	var out []string
	for _, t := range o.sc.Tools {
		if !t.Sink && t.Name != o.sc.TaintPoint {
			out = append(out, t.Name)
		}
	}
	return out
}

// HasAdaptive reports whether a config's plan runs the adaptive attack.
func HasAdaptive(c *Config) bool {
	return slices.Contains(c.Attacks, attack.AdaptiveName) ||
		slices.ContainsFunc(c.AttackSpecs, func(s Spec) bool { return s.Name == attack.AdaptiveName })
}

// Attacker returns the attacker model a config's adaptive attacks ask
// (attacker_target, else mock:attacker), and false when none of its
// attacks asks one.
func (c *Config) Attacker() (string, bool) {
	specs := slices.DeleteFunc(slices.Clone(c.AttackSpecs), func(s Spec) bool { return s.Name != attack.AdaptiveName })
	if len(specs) == 0 && slices.Contains(c.Attacks, attack.AdaptiveName) {
		specs = []Spec{{Name: attack.AdaptiveName}} // its defaults
	}
	for _, s := range specs {
		if a, err := attack.NewAdaptive(s.Kwargs, 0); err == nil && a.UsesAttacker() {
			return c.attackerSpec(), true
		}
	}
	return "", false
}

func (c *Config) attackerSpec() string {
	if c.AttackerTarget == "" {
		return attack.DefaultAttacker
	}
	return c.AttackerTarget
}
