package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
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
	"github.com/pikit-go/pikit/method"
	"github.com/pikit-go/pikit/result"
	"github.com/pikit-go/pikit/target"

	// The offline obedient model (mock:obedient) is opened by its spec,
	// as every target is: it registers itself.
	_ "github.com/pikit-go/pikit/target/obedient"
)

// env holds what the cells of one run share: targets opened once per spec,
// methods and scenarios built once per spec, and the directory for
// file-mode carriers.
type env struct {
	open   func(spec string, opts target.Options) (target.Target, error)
	driver Driver
	// halt reports whether the run's budget is spent: an adaptive
	// search stops between rounds when it is.
	halt func() bool
	// openAttacker opens attacker models with attackerOpts (nil: as
	// targets are opened).
	openAttacker func(spec string, opts target.Options) (target.Target, error)
	attackerOpts target.Options
	// secrets are the API keys of the environment, kept from results and
	// from what an attacker model is told.
	secrets *target.ValueRedactor
	version string
	runID   string
	workDir string

	cache     *target.Cache
	judgeSpec string
	judgeOpts map[string]any
	fatal     atomic.Pointer[error] // an error that stops the run (a rejected key)
	requests  atomic.Int64
	tokens    atomic.Int64
	// budget admits the run's model requests (Runner.MaxRequests and
	// MaxTokens; none without a Runner).
	budget *budget

	mu       sync.Mutex
	targets  map[string]target.Target
	errs     map[string]error
	byConfig map[*Config]*configState
	dirOnce  sync.Once
	dir      string
	dirErr   error
	// fileMu serialises file-mode crafting: a channel writes its carrier
	// under a fixed name in the run's directory and reads it back, so two
	// cells crafting at once could each read the other's file.
	fileMu sync.Mutex

	methodsMu sync.RWMutex
	methods   map[methodKey]built
}

// configState is what every cell of one config shares.
type configState struct {
	target   target.Target
	sinkArgs map[string]string // read-only once built
	// temperature is what every request of the config's cells points to;
	// targets only read it.
	temperature float64
	// targetOptions are the config's target options as results record
	// them (credentials in URLs redacted), built once; read-only.
	targetOptions map[string]any
}

func newEnv(open func(string, target.Options) (target.Target, error), runID, workDir string) *env {
	if open == nil {
		open = target.Open
	}
	e := &env{
		open: open, runID: runID, workDir: workDir,
		targets: map[string]target.Target{}, errs: map[string]error{},
		byConfig: map[*Config]*configState{}, methods: map[methodKey]built{},
	}
	e.budget = newBudget(0, 0, e)
	return e
}

// config returns the state the cells of cfg share: its target, opened once
// (cells of one plan share their *Config, so this skips encoding the
// target's options for every cell), and its sink arguments.
func (e *env) config(cfg *Config) (*configState, error) {
	e.mu.Lock()
	st, ok := e.byConfig[cfg]
	e.mu.Unlock()
	if ok {
		return st, nil
	}
	t, err := e.openOnce(cfg.TargetSpec, cfg.TargetOpts)
	if err != nil {
		return nil, err
	}
	st = &configState{target: t, sinkArgs: sinkArgs(cfg.SinkArgs), temperature: cfg.Temperature}
	if len(cfg.TargetOpts) > 0 {
		st.targetOptions = redactedOptions(cfg.TargetOpts)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if prev, ok := e.byConfig[cfg]; ok {
		return prev, nil // another worker got there first
	}
	e.byConfig[cfg] = st
	return st, nil
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
	return e.openWith(e.open, "", spec, options)
}

// attacker opens an attacker model once per run.
func (e *env) attacker(spec string) (target.Target, error) {
	if e.openAttacker == nil {
		return e.openOnce(spec, e.attackerOpts)
	}
	return e.openWith(e.openAttacker, "attacker\x00", spec, e.attackerOpts)
}

// openWith opens spec with open once per run; role keeps apart targets
// opened differently.
func (e *env) openWith(open func(string, target.Options) (target.Target, error), role, spec string, options map[string]any) (target.Target, error) {
	opts, _ := json.Marshal(options)
	id := role + spec + "\x00" + string(opts)
	e.mu.Lock()
	defer e.mu.Unlock()
	if t, ok := e.targets[id]; ok {
		return t, nil
	}
	if err, ok := e.errs[id]; ok {
		return nil, err
	}
	t, err := open(spec, target.Options(options))
	if err != nil {
		e.errs[id] = err
		return nil, err
	}
	_, self := t.(interface{ CountsAttempts() bool })
	t = counting{Target: t, e: e, self: self}
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

// counting has every request a target sends take from the budget of its
// context (its cell's share of the run's; the run's for a request of no
// cell) before it is sent, counts the tokens it reports, and counts each
// request as an attempt of its cell (target.AttemptsOf the context).
// A target that counts its attempts itself (a retry wrapper, which also
// sees the retries) takes from the budget itself, once per attempt: the
// cap is on the requests sent, retries included. A request refused for
// a missing API key was never sent: it is given back.
type counting struct {
	target.Target
	e    *env
	self bool
}

func (c counting) Chat(ctx context.Context, req target.Request) (target.Response, error) {
	b := target.BudgetOf(ctx)
	if b == nil {
		b = c.e.budget
		ctx = target.WithBudget(ctx, b)
	}
	if !c.self {
		if err := b.Take(); err != nil {
			return target.Response{}, err
		}
		ctx = target.WithBudget(ctx, nil) // taken: nothing below takes it again
	}
	start := time.Now()
	resp, err := c.Target.Chat(ctx, req)
	if errors.Is(err, target.ErrMissingKey) {
		if !c.self {
			b.Give()
		}
		return resp, err
	}
	if !c.self {
		target.AttemptsOf(ctx).Add(false, time.Since(start), err == nil)
	}
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
// the cell early: its result is then a runtime_error whose error says so,
// with what the cell had done (its trace so far), and metadata
// "interrupted": true.
func (e *env) execute(ctx context.Context, cell Cell) (res Result, interrupted bool) {
	cfg := cell.Config
	start := time.Now()
	res = newResult(cell, e.runID)
	if e.version != "" {
		res.Metadata["pikit_version"] = e.version
	}
	// What the cell's model requests cost, retries included, counted by
	// the targets it asks.
	attempts := &target.Attempts{}
	ctx = target.WithAttempts(ctx, attempts)
	// The cell's share of the run's budget, which its requests take from.
	share, ok := target.BudgetOf(ctx).(*cellBudget)
	if !ok {
		share = &cellBudget{b: e.budget}
		ctx = target.WithBudget(ctx, share)
	}
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
		res.SetVerdictFields()
		res.LatencyMS = time.Since(start).Milliseconds()
		sent, retries, answered := attempts.Counts()
		res.Attempts, res.Retries, res.ModelLatencyMS = int(sent), int(retries), answered.Milliseconds()
		res.Timestamp = start.UTC().Format(time.RFC3339Nano)
	}()
	interrupt := func(err error) {
		fail(fmt.Errorf("interrupted: the run was stopped before the cell finished (%w); --resume runs it again", err))
		res.Metadata["interrupted"] = true
	}
	// budgetStopped records the cell as stopped by the budget when the
	// budget refused one of its requests (err is what came of the cell
	// then): it did not run to its end, so it is no verdict.
	budgetStopped := func(err error) bool {
		why := share.refused()
		if why == nil || ctx.Err() != nil {
			return false
		}
		stop := why.err
		if err != nil && !errors.Is(err, ErrBudget) {
			stop = fmt.Errorf("%w; the cell's agent then: %w", stop, err)
		}
		fail(fmt.Errorf("%w; --resume runs the cell again", stop))
		res.Metadata[metaStoppedBy] = why.by
		return true
	}

	st, err := e.config(cfg)
	switch {
	case st != nil && st.targetOptions != nil:
		res.Metadata["target_options"] = st.targetOptions // shared, read-only
	case st == nil && len(cfg.TargetOpts) > 0: // the target did not open
		res.Metadata["target_options"] = redactedOptions(cfg.TargetOpts)
	}
	if err != nil {
		fail(err)
		return res, false
	}
	t := st.target
	var hits atomic.Int64
	if e.cache != nil {
		// Repeats are cached apart; so are distinct cells, for requests
		// sampled above temperature 0: each cell is its own draw.
		ctx = target.WithCacheSample(target.WithCacheSalt(ctx, fmt.Sprintf("repeat %d", cell.Repeat)), cell.Key)
		ctx = target.WithCacheHits(ctx, &hits)
		defer func() {
			if n := hits.Load(); n > 0 {
				res.Metadata["cached"] = true
				res.Metadata["cache_hits"] = n
			}
		}()
	}
	j, err := e.judge(cfg, t)
	if err != nil {
		fail(err)
		return res, false
	}
	var (
		tr   agent.Trace
		task judge.Task
		v    judge.Verdict
		s    searched
	)
	adaptive := cell.Attack.Name == attack.AdaptiveName
	if adaptive {
		s, err = e.search(ctx, cell, st, j)
		tr, v = s.tr, s.verdict
	} else {
		tr, task, err = e.run(ctx, cell, st)
	}
	if errors.Is(err, errSetup) {
		fail(errors.Unwrap(err))
		return res, false
	}
	if adaptive {
		task = e.task(cell, craft.Crafted{Payload: s.res.FinalPayload}, st)
	}
	res.JudgedAgainst = result.Against(task)
	res.TraceData = &tr
	res.FinalText = tr.FinalText
	res.SinkFired = len(tr.SinkCalls) > 0
	res.Usage = tr.Usage
	res.Metadata["model_calls"] = tr.ModelCalls
	if adaptive {
		s.fill(&res, cfg)
	}
	for k, v := range tr.Meta {
		if _, taken := res.Metadata[k]; !taken {
			res.Metadata[k] = v
		}
	}
	if tr.MaxStepsHit {
		res.Metadata["max_steps_hit"] = true
	}
	if budgetStopped(err) {
		return res, false
	}
	if err != nil {
		if ctx.Err() != nil {
			interrupt(ctx.Err())
			return res, true
		}
		fail(err)
		return res, false
	}
	if !adaptive {
		v, err = j.Judge(ctx, tr, task)
		if budgetStopped(err) {
			return res, false
		}
		if err != nil {
			if ctx.Err() != nil {
				interrupt(ctx.Err())
				return res, true
			}
			fail(fmt.Errorf("judge: %w", err))
			return res, false
		}
	}
	res.Success, res.Outcome, res.Confidence, res.Reason = v.Success, v.Outcome, v.Confidence, v.Reason
	if cfg.Expected != "" {
		u := strings.Contains(strings.ToLower(tr.FinalText), strings.ToLower(cfg.Expected))
		res.Utility = &u
	}
	if cell.Attack.Name == attack.None {
		res.Metadata["benign"] = true
	}
	res.Signals, res.Evidence = v.Signals, judge.Annotate(v.Evidence, tr, task)
	if v.Raw != "" {
		res.Metadata["judge_raw"] = v.Raw
	}
	return res, false
}

// judge returns the judge a config names; the LLM judge asks the run's
// judge target, else the target under test.
func (e *env) judge(cfg *Config, under target.Target) (judge.Judge, error) {
	switch cfg.JudgeType {
	case "none":
		return judge.None{}, nil
	case "rule:pikit":
		return judge.RulePikit{}, nil
	case "match":
		return judge.Match{}, nil
	case "llm":
		jt, err := e.judgeTarget(under)
		if err != nil {
			return nil, fmt.Errorf("judge target: %w", err)
		}
		return judge.LLM{Target: jt}, nil
	}
	return judge.Rule{}, nil
}

// errSetup marks an error of a cell before its agent ran.
var errSetup = errors.New("setup")

type setupError struct{ err error }

func (s setupError) Error() string        { return s.err.Error() }
func (s setupError) Unwrap() error        { return s.err }
func (s setupError) Is(target error) bool { return target == errSetup }

// run crafts the cell and runs its agent: pikit's own loop over the cell's
// scenario, or the run's Driver.
func (e *env) run(ctx context.Context, cell Cell, st *configState) (agent.Trace, judge.Task, error) {
	if e.driver != nil {
		return e.drive(ctx, cell, st)
	}
	sc, err := e.scenarioOf(cell)
	if err != nil {
		return agent.Trace{}, judge.Task{}, setupError{err}
	}
	in, task, err := e.craft(cell, sc, st)
	if err != nil {
		return agent.Trace{}, judge.Task{}, setupError{err}
	}
	hooks, err := e.hooks(cell)
	if err != nil {
		return agent.Trace{}, judge.Task{}, setupError{err}
	}
	tr, err := agent.Run(ctx, st.target, sc, in, hooks)
	return tr, task, err
}

// craft words the payload and places it: in the user message (direct) or in
// the scenario's taint point through the channel (indirect).
func (e *env) craft(cell Cell, sc *agent.Scenario, st *configState) (agent.Input, judge.Task, error) {
	c, o, err := e.crafted(cell, sc)
	if err != nil {
		return agent.Input{}, judge.Task{}, err
	}
	in := e.input(cell, st)
	switch {
	case cell.Attack.Name == attack.None:
		// The benign baseline: nothing tainted, the tools answer as they
		// would.
		if c.Mode == craft.Direct {
			in.UserMessage, in.Instruction = c.Delivery, o.Instruction
		}
	case c.Mode == craft.Direct:
		in.UserMessage, in.UserTainted, in.Instruction = c.Delivery, true, o.Instruction
		in.Turns = attack.Turns(o.AttackMethod)
	default:
		in.Taint = map[string]string{sc.TaintPoint: c.Delivery}
	}
	return in, e.task(cell, c, st), nil
}

// input is what every run of a cell's agent is given: its step limit,
// temperature, seed and the user's request.
func (e *env) input(cell Cell, st *configState) agent.Input {
	cfg := cell.Config
	in := agent.Input{MaxSteps: cfg.MaxSteps, Reruns: cfg.Reruns, Protocol: cfg.ToolProtocol, Prefetch: cfg.Prefetch, Temperature: &st.temperature, UserMessage: cfg.UserMessage}
	if cfg.SeedSet {
		seed := cell.Seed
		in.Seed = &seed
	}
	return in
}

func (e *env) task(cell Cell, c craft.Crafted, st *configState) judge.Task {
	cfg := cell.Config
	return judge.Task{Text: cfg.Task, Payload: c.Payload, Canary: cfg.Canary, CanaryRegex: cfg.CanaryRegex, CanaryFuzzy: cfg.CanaryFuzzy, Criteria: cfg.JudgeCriteria, RequireSink: cfg.RequireSink, SinkArgs: st.sinkArgs}
}

// crafted runs task → attack → channel for a cell, with the run's shared
// methods; sc may be nil (a driven cell).
func (e *env) crafted(cell Cell, sc *agent.Scenario) (craft.Crafted, craft.Options, error) {
	cfg := cell.Config
	o := craft.Options{
		Attack: cell.Attack.Name, AttackKwargs: cell.Attack.Kwargs,
		Channel: cell.Channel.Name, ChannelKwargs: cell.Channel.Kwargs,
		CarrierMode: cfg.CarrierMode, Seed: cell.Seed,
	}
	var err error
	if cell.Direct() {
		o.Instruction, o.PayloadMarker = cfg.UserMessage, cfg.PayloadMarker
		if o.Instruction == "" && sc != nil {
			o.Instruction = sc.UserMessage
		}
	} else if cell.Channel.Name != DirectChannel {
		if o.Data, err = e.data(cfg); err != nil {
			return craft.Crafted{}, o, err
		}
		if cfg.CarrierMode == "file" {
			if o.Dir, err = e.carrierDir(); err != nil {
				return craft.Crafted{}, o, fmt.Errorf("carrier directory: %w", err)
			}
		}
	}
	// The methods, built once per run (but a fixed attack's payload, which
	// differs in every round of a search); in the order craft.Craft would build
	// them, so a cell fails with the error it always did.
	if o.AttackMethod, err = e.attack(cell.Attack, cell.Seed); err != nil {
		return craft.Crafted{}, o, err
	}
	if cell.Attack.Name != attack.None && cell.Channel.Name != DirectChannel {
		if o.ChannelMethod, err = e.channel(cell.Channel, cell.Seed); err != nil {
			return craft.Crafted{}, o, err
		}
	}
	if o.Dir != "" {
		e.fileMu.Lock()
	}
	c, err := craft.Craft(cfg.Task, o)
	if o.Dir != "" {
		e.fileMu.Unlock()
	}
	if err == nil && cfg.OutputPath != "" && c.Mode == craft.Indirect && c.Payload != "" {
		err = writeNew(cfg, c)
	}
	return c, o, err
}

// drive runs a cell with the run's Driver: the payload crafted as for any
// cell, the agent the driver's.
func (e *env) drive(ctx context.Context, cell Cell, st *configState) (agent.Trace, judge.Task, error) {
	var sc *agent.Scenario
	if cell.Config.Driven == "" {
		var err error
		if sc, err = e.scenarioOf(cell); err != nil {
			return agent.Trace{}, judge.Task{}, setupError{err}
		}
	}
	c, o, err := e.crafted(cell, sc)
	if err != nil {
		return agent.Trace{}, judge.Task{}, setupError{err}
	}
	hooks, err := e.hooks(cell)
	if err != nil {
		return agent.Trace{}, judge.Task{}, setupError{err}
	}
	var t target.Target = st.target
	if share, ok := target.BudgetOf(ctx).(*cellBudget); ok {
		t = cellTarget{Target: st.target, share: share}
	}
	d := Drive{
		Cell: cell, Target: t, Scenario: sc, Hooks: hooks,
		Benign: cell.Attack.Name == attack.None, Payload: c.Payload, Delivery: c.Delivery, Path: c.Path,
		Channel: o.ChannelMethod, Instruction: cell.Config.UserMessage,
		Spend: func(requests, tokens int64) {
			e.requests.Add(requests)
			e.tokens.Add(tokens)
		},
	}
	if d.Benign {
		d.Payload, d.Delivery = "", ""
	} else if cell.Channel.Name == DirectChannel {
		d.Delivery = c.Payload // the payload alone, not appended to a request
	}
	if d.Instruction == "" && sc != nil {
		d.Instruction = sc.UserMessage
	}
	task := e.task(cell, c, st)
	d.Task = task
	tr, err := e.driver.Drive(ctx, d)
	return tr, task, err
}

// cellTarget is a driven cell's target. Its requests take from the
// cell's share of the run's budget whatever context they come with (a
// proxy answering offline asks it in its HTTP handler's), and it is the
// target.Budget that a driver sending model requests itself (the proxy,
// forwarding them upstream) takes each of them from before sending it.
type cellTarget struct {
	target.Target
	share *cellBudget
}

var _ target.Budget = cellTarget{}

// Chat implements target.Target, taking from the cell's share.
func (t cellTarget) Chat(ctx context.Context, req target.Request) (target.Response, error) {
	return t.Target.Chat(target.WithBudget(ctx, t.share), req)
}

// Take implements target.Budget.
func (t cellTarget) Take() error { return t.share.Take() }

// Give implements target.Budget.
func (t cellTarget) Give() { t.share.Give() }

// data picks the clean carrier of an indirect cell: the config's
// data_sample, or "" for the channel's own sample.
func (e *env) data(cfg *Config) (string, error) {
	if cfg.CarrierData != "" {
		return cfg.CarrierData, nil
	}
	if cfg.DataSample == "" {
		return "", nil
	}
	s, ok := channel.LookupSample(cfg.DataSample)
	if !ok {
		return "", channel.CheckSample(cfg.DataSample)
	}
	return s, nil
}

// hooks places the cell's defense: on the user message for direct
// injection, on tool results for indirect; a detector screens the same
// point.
func (e *env) hooks(cell Cell) (agent.Hooks, error) {
	name := cell.Defense.Name
	if name == "" || name == DefaultDefense {
		return agent.Hooks{}, nil
	}
	point := cell.Config.DefensePoint
	if point == "" {
		point = PointToolResult
		if cell.Direct() {
			point = PointUser
		}
	}
	kind := map[string]int{PointUser: kindHooksDirect, PointToolResult: kindHooksIndirect, PointSystem: kindHooksSystem}[point]
	return cached(e, kind, cell.Defense, cell.Seed, func(seed int64) (agent.Hooks, error) { return buildHooks(cell.Defense, point, seed) })
}

func buildHooks(spec Spec, point string, seed int64) (agent.Hooks, error) {
	var h agent.Hooks
	name := spec.Name
	if defense.IsDetector(name) {
		d, err := defense.NewDetector(name, spec.Kwargs, seed)
		if err != nil {
			return h, err
		}
		h.Detectors = []agent.NamedDetector{{Name: name, Detector: d}}
		return h, nil
	}
	d, err := defense.New(name, spec.Kwargs, seed)
	if err != nil {
		return h, err
	}
	switch point {
	case PointSystem:
		h.System = d
	case PointUser:
		h.User = d
	default:
		h.ToolResult = d
	}
	return h, nil
}

// attack returns the cell's attack, as craft.Craft would build it.
func (e *env) attack(spec Spec, seed int64) (attack.Attack, error) {
	if spec.Name == "" {
		spec.Name = "naive" // craft.Craft's default
	}
	if spec.Name == attack.Fixed {
		return attack.New(spec.Name, spec.Kwargs, seed) // cheap, and never the same twice in a search
	}
	return cached(e, kindAttack, spec, seed, func(seed int64) (attack.Attack, error) { return attack.New(spec.Name, spec.Kwargs, seed) })
}

// channel returns the cell's channel, as craft.Craft would build it.
func (e *env) channel(spec Spec, seed int64) (channel.Channel, error) {
	return cached(e, kindChannel, spec, seed, func(seed int64) (channel.Channel, error) { return channel.New(spec.Name, spec.Kwargs, seed) })
}

// scenario returns the named agent scenario.
func (e *env) scenario(name string) (*agent.Scenario, error) {
	return cached(e, kindAgent, Spec{Name: name}, 0, func(int64) (*agent.Scenario, error) { return agent.Lookup(name) })
}

// scenarioOf returns a cell's scenario: its config's own, else a built-in
// one (built once per run).
func (e *env) scenarioOf(cell Cell) (*agent.Scenario, error) {
	if sc, ok := cell.Config.Scenarios[cell.Agent]; ok {
		return sc, nil
	}
	return e.scenario(cell.Agent)
}

// Kinds of what env.methods caches.
const (
	kindAttack = iota
	kindChannel
	kindHooksDirect
	kindHooksIndirect
	kindHooksSystem
	kindAgent
)

// methodKey identifies a method built from a spec: what it is for, its
// name, and its options as JSON (map keys sorted, so equal options give
// equal keys; "" for none).
type methodKey struct {
	kind   int
	name   string
	kwargs string
}

// built is a cached method, or the error building it gave. seeded marks a
// method that depends on the cell's seed: it is built afresh for each cell.
type built struct {
	v      any
	err    error
	seeded bool
}

// cached returns what build makes of spec, building it once per run and
// sharing it between cells. Sharing is safe because the methods are values
// fixed when built: attacks, channels, defenses and detectors keep no state
// between calls, and a scenario is read-only after registration. A method
// whose description declares a "seed" option draws on the cell's seed (0
// means the run's seed), so it is built for each cell with that seed and
// never shared; a test checks that every other method ignores the seed.
func cached[T any](e *env, kind int, spec Spec, seed int64, build func(seed int64) (T, error)) (T, error) {
	key := methodKey{kind: kind, name: spec.Name}
	if len(spec.Kwargs) > 0 {
		b, err := json.Marshal(spec.Kwargs)
		if err != nil {
			return build(seed)
		}
		key.kwargs = string(b)
	}
	e.methodsMu.RLock()
	m, ok := e.methods[key]
	e.methodsMu.RUnlock()
	if !ok {
		v, err := build(seed)
		m = built{v: v, err: err, seeded: usesSeed(kind, spec.Name)}
		if m.seeded {
			// Remember only that it must be built per cell.
			m.v, m.err = nil, nil
		}
		e.methodsMu.Lock()
		e.methods[key] = m // two workers may both build it: they agree
		e.methodsMu.Unlock()
		if m.seeded {
			return v, err
		}
	}
	if m.seeded {
		return build(seed)
	}
	v, _ := m.v.(T)
	return v, m.err
}

// usesSeed reports whether the named method takes the cell's seed: whether
// its description declares a "seed" option.
func usesSeed(kind int, name string) bool {
	var info method.Info
	switch kind {
	case kindAttack:
		info, _ = attack.Registry.Lookup(name)
	case kindChannel:
		info, _ = channel.Registry.Lookup(name)
	case kindHooksDirect, kindHooksIndirect, kindHooksSystem:
		var ok bool
		if info, ok = defense.Detectors.Lookup(name); !ok {
			info, _ = defense.Registry.Lookup(name)
		}
	}
	_, ok := info.Option("seed")
	return ok
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
	// Maps made with room for the keys a result gets, so that the first
	// insertions do not grow them.
	gen := make(map[string]any, 3)
	gen["temperature"], gen["max_steps"] = cfg.Temperature, cfg.MaxSteps
	if cfg.SeedSet {
		gen["seed"] = cell.Seed
	}
	mode := "indirect"
	if cell.Direct() {
		mode = "direct"
	}
	meta := make(map[string]any, 8)
	meta["mode"], meta["judge"], meta["schema_version"], meta["runtime_version"] = constant(mode), constant(cfg.JudgeType), SchemaVersion, goVersion
	if cfg.CaseDescription != "" {
		meta["case_description"] = cfg.CaseDescription
	}
	if cfg.Benchmark != "" {
		meta["benchmark"] = cfg.Benchmark
	}
	if len(cfg.Labels) > 0 {
		labels := make(map[string]any, len(cfg.Labels))
		for k, v := range cfg.Labels {
			labels[k] = v
		}
		meta["labels"] = labels
	}
	if !cell.Direct() {
		meta["carrier_mode"] = constant(cfg.CarrierMode)
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
		MethodSpecs:      map[string]Spec{"attack": withKwargs(cell.Attack), "defense": withKwargs(cell.Defense), "channel": withKwargs(cell.Channel)},
		Metadata:         meta,
	}
}

// withKwargs returns s with kwargs {} when it has none, as a result's
// method_specs give them (the Python pikit's always do). A planned cell's
// specs already have them (entries); this allocates only for a cell made
// by hand.
func withKwargs(s Spec) Spec {
	if s.Kwargs == nil {
		s.Kwargs = map[string]any{}
	}
	return s
}

// SchemaVersion names the result schema, in every result's metadata
// (schema_version): the Python pikit's name for the schema pikit's
// results are a superset of.
const SchemaVersion = result.SchemaVersion

// goVersion is the Go release pikit was built with, in every result's
// metadata (runtime_version: what the Python pikit's interpreter version
// is to its results).
var goVersion = runtime.Version()

// redactedOptions copies target options for a result, with any credential
// in a URL (a base_url with a password) redacted. Keys never get here: a
// config that names one is refused.
func redactedOptions(opts map[string]any) map[string]any {
	out := make(map[string]any, len(opts))
	for k, v := range opts {
		if s, ok := v.(string); ok {
			v = target.Redact(s)
		}
		out[k] = v
	}
	return out
}

// constant returns s as an interface value. For the few values every
// result's metadata holds (modes, judge types, carrier modes) it returns a
// constant, which costs no allocation, where converting a variable string
// allocates for each result.
func constant(s string) any {
	switch s {
	case "direct":
		return "direct"
	case "indirect":
		return "indirect"
	case "rule":
		return "rule"
	case "match":
		return "match"
	case "llm":
		return "llm"
	case "none":
		return "none"
	case "text":
		return "text"
	case "file":
		return "file"
	}
	return s
}

// writeNew writes a crafted carrier to the path a config names (its file,
// in file mode; else the tainted text), never over a file that exists nor
// through a link: inside the config's directory through os.Root, which
// keeps the write there whatever was swapped in since the config was read.
func writeNew(cfg *Config, c craft.Crafted) error {
	body := []byte(c.Delivery)
	if c.Path != "" {
		b, err := os.ReadFile(c.Path)
		if err != nil {
			return fmt.Errorf("output_path: %w", err)
		}
		body = b
	}
	const flags = os.O_WRONLY | os.O_CREATE | os.O_EXCL
	var f *os.File
	var err error
	if cfg.outputRoot != "" {
		var root *os.Root
		if root, err = os.OpenRoot(cfg.outputRoot); err == nil {
			f, err = root.OpenFile(cfg.outputRel, flags, 0o644)
			root.Close()
		}
	} else {
		f, err = os.OpenFile(cfg.OutputPath, flags, 0o644)
	}
	if err != nil {
		return fmt.Errorf("output_path: %w", err)
	}
	if _, err := f.Write(body); err != nil {
		f.Close()
		return fmt.Errorf("output_path: %w", err)
	}
	return f.Close()
}
