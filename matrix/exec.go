package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/attack"
	"github.com/pikit-go/pikit/channel"
	"github.com/pikit-go/pikit/craft"
	"github.com/pikit-go/pikit/defense"
	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/target"
)

// env holds what the cells of one run share: targets opened once per spec,
// and the directory for file-mode carriers.
type env struct {
	open    func(spec string, opts target.Options) (target.Target, error)
	runID   string
	workDir string

	cache     *target.Cache
	judgeSpec string
	judgeOpts map[string]any
	fatal     atomic.Pointer[error] // an error that stops the run (a rejected key)
	requests  atomic.Int64
	tokens    atomic.Int64

	mu      sync.Mutex
	targets map[string]target.Target
	errs    map[string]error
	dirOnce sync.Once
	dir     string
	dirErr  error
}

func newEnv(open func(string, target.Options) (target.Target, error), runID, workDir string) *env {
	if open == nil {
		open = target.Open
	}
	return &env{open: open, runID: runID, workDir: workDir, targets: map[string]target.Target{}, errs: map[string]error{}}
}

// target opens (once) the target a config names.
func (e *env) target(cfg *Config) (target.Target, error) {
	return e.openOnce(cfg.TargetSpec, cfg.TargetOpts)
}

// judgeTarget is the target the LLM judge asks: the run's judge target
// when one is set, else the target under test.
func (e *env) judgeTarget(under target.Target) (target.Target, error) {
	if e.judgeSpec == "" {
		return under, nil
	}
	return e.openOnce(e.judgeSpec, e.judgeOpts)
}

func (e *env) openOnce(spec string, options map[string]any) (target.Target, error) {
	opts, _ := json.Marshal(options)
	id := spec + "\x00" + string(opts)
	e.mu.Lock()
	defer e.mu.Unlock()
	if t, ok := e.targets[id]; ok {
		return t, nil
	}
	if err, ok := e.errs[id]; ok {
		return nil, err
	}
	t, err := e.open(spec, target.Options(options))
	if err != nil {
		e.errs[id] = err
		return nil, err
	}
	t = counting{t, e}
	if e.cache != nil {
		t = target.WithCache(t, e.cache, spec)
	}
	e.targets[id] = t
	return t, nil
}

// stats returns what the run has spent so far.
func (e *env) stats() Stats {
	return Stats{Requests: e.requests.Load(), Tokens: e.tokens.Load()}
}

// counting counts every request a target sends and the tokens it reports,
// for budgets.
type counting struct {
	target.Target
	e *env
}

func (c counting) Chat(ctx context.Context, req target.Request) (target.Response, error) {
	c.e.requests.Add(1)
	resp, err := c.Target.Chat(ctx, req)
	c.e.tokens.Add(int64(resp.Usage.PromptTokens + resp.Usage.CompletionTokens))
	return resp, err
}

// carrierDir returns the per-run directory for file-mode carriers.
func (e *env) carrierDir() (string, error) {
	e.dirOnce.Do(func() {
		e.dir, e.dirErr = os.MkdirTemp(e.workDir, "pikit-carriers-")
	})
	return e.dir, e.dirErr
}

// execute runs one cell. interrupted is true when the run's context ended
// the cell early: such a cell has no result.
func (e *env) execute(ctx context.Context, cell Cell) (res Result, interrupted bool) {
	cfg := cell.Config
	start := time.Now()
	res = newResult(cell, e.runID)
	fail := func(err error) {
		if errors.Is(err, target.ErrUnauthorized) {
			// Every later cell would fail the same way.
			e.fatal.CompareAndSwap(nil, &err)
		}
		res.Outcome, res.Success, res.Confidence = judge.RuntimeError, false, "n/a"
		res.Error = err.Error()
		res.Reason = "runtime error: " + err.Error()
		res.Signals = []string{"runtime_error"}
	}
	defer func() {
		if p := recover(); p != nil {
			fail(fmt.Errorf("panic: %v\n%s", p, debug.Stack()))
		}
		res.LatencyMS = time.Since(start).Milliseconds()
		res.Timestamp = start.UTC().Format(time.RFC3339Nano)
	}()

	t, err := e.target(cfg)
	if err != nil {
		fail(err)
		return res, false
	}
	in, task, err := e.craft(cell)
	if err != nil {
		fail(err)
		return res, false
	}
	hooks, err := buildHooks(cell)
	if err != nil {
		fail(err)
		return res, false
	}
	sc, err := agent.Lookup(cell.Agent)
	if err != nil {
		fail(err)
		return res, false
	}
	var hits atomic.Int64
	if e.cache != nil {
		ctx = target.WithCacheHits(target.WithCacheSalt(ctx, fmt.Sprintf("repeat %d", cell.Repeat)), &hits)
		defer func() {
			if n := hits.Load(); n > 0 {
				res.Metadata["cached"] = true
				res.Metadata["cache_hits"] = n
			}
		}()
	}
	tr, err := agent.Run(ctx, t, sc, in, hooks)
	res.TraceData = &tr
	res.FinalText = tr.FinalText
	res.SinkFired = len(tr.SinkCalls) > 0
	res.Usage = tr.Usage
	res.Metadata["model_calls"] = tr.ModelCalls
	if tr.MaxStepsHit {
		res.Metadata["max_steps_hit"] = true
	}
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return res, true
		}
		fail(err)
		return res, false
	}
	var j judge.Judge
	switch cfg.JudgeType {
	case "none":
		j = judge.None{}
	case "llm":
		jt, err := e.judgeTarget(t)
		if err != nil {
			fail(fmt.Errorf("judge target: %w", err))
			return res, false
		}
		j = judge.LLM{Target: jt}
	default:
		j = judge.Rule{}
	}
	v, err := j.Judge(ctx, tr, task)
	if err != nil {
		if ctx.Err() != nil {
			return res, true
		}
		fail(fmt.Errorf("judge: %w", err))
		return res, false
	}
	res.Success, res.Outcome, res.Confidence, res.Reason = v.Success, v.Outcome, v.Confidence, v.Reason
	if cfg.Expected != "" {
		u := strings.Contains(strings.ToLower(tr.FinalText), strings.ToLower(cfg.Expected))
		res.Utility = &u
	}
	if cell.Attack.Name == attack.None {
		res.Metadata["benign"] = true
	}
	res.Signals, res.Evidence = v.Signals, v.Evidence
	if v.Raw != "" {
		res.Metadata["judge_raw"] = v.Raw
	}
	return res, false
}

// craft words the payload and places it: in the user message (direct) or in
// the scenario's taint point through the channel (indirect).
func (e *env) craft(cell Cell) (agent.Input, judge.Task, error) {
	cfg := cell.Config
	sc, err := agent.Lookup(cell.Agent)
	if err != nil {
		return agent.Input{}, judge.Task{}, err
	}
	o := craft.Options{
		Attack: cell.Attack.Name, AttackKwargs: cell.Attack.Kwargs,
		Channel: cell.Channel.Name, ChannelKwargs: cell.Channel.Kwargs,
		CarrierMode: cfg.CarrierMode, Seed: cell.Seed,
	}
	if cell.Direct() {
		o.Instruction = cfg.UserMessage
		if o.Instruction == "" {
			o.Instruction = sc.UserMessage
		}
	} else {
		if o.Data, err = e.data(cfg); err != nil {
			return agent.Input{}, judge.Task{}, err
		}
		if cfg.CarrierMode == "file" {
			if o.Dir, err = e.carrierDir(); err != nil {
				return agent.Input{}, judge.Task{}, fmt.Errorf("carrier directory: %w", err)
			}
		}
	}
	c, err := craft.Craft(cfg.Task, o)
	if err != nil {
		return agent.Input{}, judge.Task{}, err
	}
	temp := cfg.Temperature
	in := agent.Input{MaxSteps: cfg.MaxSteps, Temperature: &temp, UserMessage: cfg.UserMessage}
	if cfg.SeedSet {
		seed := cell.Seed
		in.Seed = &seed
	}
	switch {
	case cell.Attack.Name == attack.None:
		// The benign baseline: nothing tainted, the tools answer as they
		// would.
		if c.Mode == craft.Direct {
			in.UserMessage, in.Instruction = c.Delivery, o.Instruction
		}
	case c.Mode == craft.Direct:
		in.UserMessage, in.UserTainted, in.Instruction = c.Delivery, true, o.Instruction
	default:
		in.Taint = map[string]string{sc.TaintPoint: c.Delivery}
	}
	task := judge.Task{Text: cfg.Task, Payload: c.Payload, Canary: cfg.Canary, RequireSink: cfg.RequireSink, SinkArgs: sinkArgs(cfg.SinkArgs)}
	return in, task, nil
}

// data picks the clean carrier of an indirect cell: the config's
// data_sample, or "" for the channel's own sample.
func (e *env) data(cfg *Config) (string, error) {
	if cfg.DataSample == "" {
		return "", nil
	}
	s, ok := channel.LookupSample(cfg.DataSample)
	if !ok {
		return "", channel.CheckSample(cfg.DataSample)
	}
	return s, nil
}

// buildHooks places the cell's defense: on the user message for direct
// injection, on tool results for indirect; a detector screens the same
// point.
func buildHooks(cell Cell) (agent.Hooks, error) {
	var h agent.Hooks
	name := cell.Defense.Name
	if name == "" || name == DefaultDefense {
		return h, nil
	}
	if defense.IsDetector(name) {
		d, err := defense.NewDetector(name, cell.Defense.Kwargs, cell.Seed)
		if err != nil {
			return h, err
		}
		h.Detectors = []agent.NamedDetector{{Name: name, Detector: d}}
		return h, nil
	}
	d, err := defense.New(name, cell.Defense.Kwargs, cell.Seed)
	if err != nil {
		return h, err
	}
	if cell.Direct() {
		h.User = d
	} else {
		h.ToolResult = d
	}
	return h, nil
}

func sinkArgs(m map[string]any) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// newResult fills in what a result knows before the cell runs.
func newResult(cell Cell, runID string) Result {
	cfg := cell.Config
	gen := map[string]any{"temperature": cfg.Temperature, "max_steps": cfg.MaxSteps}
	if cfg.SeedSet {
		gen["seed"] = cell.Seed
	}
	mode := "indirect"
	if cell.Direct() {
		mode = "direct"
	}
	meta := map[string]any{"mode": mode, "judge": cfg.JudgeType}
	if !cell.Direct() {
		meta["carrier_mode"] = cfg.CarrierMode
		if cfg.DataSample != "" {
			meta["data_sample"] = cfg.DataSample
		}
	}
	return Result{
		Key:              cell.Key,
		Attack:           cell.Attack.Name,
		Defense:          cell.Defense.Name,
		Channel:          cell.Channel.Name,
		Agent:            cell.Agent,
		Target:           cfg.TargetSpec,
		Task:             cfg.Task,
		CaseID:           cfg.CaseID,
		CaseDescription:  cfg.CaseDescription,
		Signals:          []string{},
		RepeatIndex:      cell.Repeat,
		RunID:            runID,
		Seed:             cell.Seed,
		GenerationConfig: gen,
		MethodSpecs:      map[string]Spec{"attack": cell.Attack, "defense": cell.Defense, "channel": cell.Channel},
		Metadata:         meta,
	}
}
