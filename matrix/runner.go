package matrix

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pikit-go/pikit/target"
)

// DefaultConcurrency is the number of workers when Runner.Concurrency is 0.
const DefaultConcurrency = 8

// ErrBudget is returned by Run when MaxRequests or MaxTokens stopped the
// run before every cell was scheduled, or stopped cells before they
// finished; a model request the budget refuses fails with an error
// wrapping it.
var ErrBudget = errors.New("budget reached")

// Runner executes cells with a pool of workers.
type Runner struct {
	// Concurrency is the number of cells in flight; 0 means
	// DefaultConcurrency.
	Concurrency int
	// Progress, when set, is called after each result with the number of
	// cells done and the total. Calls are serialised.
	Progress func(done, total int)
	// Open opens a target spec; nil means target.Open. Each distinct spec
	// (with its options) is opened once per run and shared by the workers.
	Open func(spec string, opts target.Options) (target.Target, error)
	// RunID tags every result; "" means a fresh one.
	RunID string
	// WorkDir is where file-mode carriers are written ("" for the system
	// temporary directory).
	WorkDir string
	// MaxRequests, when positive, caps the model requests the run sends,
	// retries and an LLM judge's included: each takes one before it is
	// sent, and one past the cap is not sent. A cell starts only while a
	// request is free for its first; a cell whose later request the cap
	// refuses ends as a runtime_error result that says so (metadata
	// "stopped_by_budget"), which --resume runs again. MaxTokens, when
	// positive, refuses every request once the replies' tokens (prompt +
	// completion, as the provider reports them) reach it; a reply's
	// tokens are known only once it comes, so the requests in flight
	// then may go past it.
	MaxRequests int64
	MaxTokens   int64
	// Cache, when set, serves requests already answered from disk; results
	// say so in their metadata ("cached": true).
	Cache *target.Cache
	// JudgeTarget, when set, is the spec of the model the LLM judge asks
	// (with JudgeOptions); otherwise the judge asks the target under test.
	JudgeTarget  string
	JudgeOptions target.Options
	// OpenAttacker, when set, opens the adaptive attack's attacker model
	// (a config's attacker_target) with AttackerOptions, instead of Open:
	// options that move the target under test (its base URL) do not move
	// the attacker.
	OpenAttacker    func(spec string, opts target.Options) (target.Target, error)
	AttackerOptions target.Options
	// Version, when set, is recorded in every result's metadata
	// (pikit_version).
	Version string
	// Driver, when set, runs each cell's agent instead of pikit's own tool
	// loop: a user's agent through the proxy, an MCP client, a runtime.
	Driver Driver
	// Skip, when set, leaves out the cells it is true for (another
	// shard's, those a resumed run has done), decided as the plan streams
	// to the workers: the first cell starts at once, however large the
	// plan, and no list of cells is kept. It is called from one goroutine.
	Skip func(Cell) bool
	// Expect, with Skip, is how many cells the run expects to execute:
	// the total that Progress and errors give until the whole plan has
	// been seen (then the exact count).
	Expect int
	// Counted, when set, is called once the whole plan has been seen,
	// with the number of cells the run executes (those Skip kept); a run
	// stopped before that never calls it.
	Counted func(n int)
	// Stop, when set, ends the run gently once it is closed: no cell
	// starts after it, and the cells in flight go on under the run's
	// context to their results (a first Ctrl-C). Cancelling the context
	// instead ends them at once, each handed to the sink as an
	// interrupted runtime_error result.
	Stop <-chan struct{}
}

// ErrInterrupted is wrapped by the error of a run that Stop or the
// context's cancellation ended before every cell ran.
var ErrInterrupted = errors.New("interrupted")

// ErrStopped is wrapped by the error of a run that a fatal cell error
// stopped: a provider rejecting the API key (HTTP 401) fails every later
// cell the same way, so scheduling stops at the first.
var ErrStopped = errors.New("run stopped")

// Stats counts what a run has spent so far.
type Stats struct {
	Requests int64 // model requests sent
	Tokens   int64 // prompt + completion tokens reported
}

// NewRunID returns a run id made of the time and random bits.
func NewRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// Run executes cells and hands each result to sink as it completes
// (completion order; sink is never called concurrently). A failing cell is
// a runtime_error result, not an error of Run. Run returns the first error
// of sink; when the context was cancelled, an error wrapping ErrInterrupted
// and the context's error (every cell in flight then is handed to sink as
// a runtime_error result whose error says it was interrupted, and no cell
// starts after it); an error wrapping ErrInterrupted alone when Stop ended
// the run with cells left to run (the cells in flight finished); or an
// error wrapping ErrBudget when a budget stopped it.
func (r Runner) Run(ctx context.Context, cells []Cell, sink Sink) error {
	return r.RunSource(ctx, Cells(cells), sink)
}

// RunSource is Run over any Source, such as a Grid computed on demand.
func (r Runner) RunSource(ctx context.Context, src Source, sink Sink) error {
	return r.RunEncoded(ctx, src, nil, func(res Result, _ []byte) error { return sink(res) })
}

// RunEncoded is RunSource with encoding done by the workers: encode (when
// not nil) turns each result into bytes in parallel, and sink receives both
// — so a single writer only copies bytes, and encoding scales with the
// workers. flush, when not nil, is called whenever the sink has caught up
// with every finished cell: a writer can buffer what sink gives it and
// write it out then, one system call for a burst of results instead of one
// per result, and no result waits longer than the burst it came in.
func (r Runner) RunEncoded(ctx context.Context, src Source, encode func(Result) ([]byte, error), sink func(Result, []byte) error, flush ...func() error) error {
	planned := src.Len()
	expect := planned
	if r.Skip != nil && r.Expect > 0 {
		expect = min(r.Expect, planned)
	}
	n := r.Concurrency
	if n <= 0 {
		n = DefaultConcurrency
	}
	n = min(n, max(expect, 1))
	runID := r.RunID
	if runID == "" {
		runID = NewRunID()
	}
	e := newEnv(r.Open, runID, r.WorkDir)
	e.cache = r.Cache
	e.driver = r.Driver
	e.version = r.Version
	e.judgeSpec, e.judgeOpts = r.JudgeTarget, r.JudgeOptions
	e.openAttacker, e.attackerOpts = r.OpenAttacker, r.AttackerOptions
	secrets := target.NewValueRedactor(target.EnvSecrets()...)
	e.secrets = secrets
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	type encoded struct {
		res Result
		b   []byte
		err error
	}
	jobs := make(chan Cell, n)
	results := make(chan encoded, n)
	var budgetHit atomic.Bool
	// cut says that Stop or the context left cells of the plan unstarted.
	var cut atomic.Bool
	stopped := func() bool {
		select {
		case <-r.Stop:
			return true
		default:
			return false
		}
	}
	var interrupted atomic.Int64 // cells in flight that the context ended
	// counted is the number of cells kept, once the whole plan has been
	// seen; -1 before.
	var counted atomic.Int64
	counted.Store(-1)
	total := func() int {
		if c := counted.Load(); c >= 0 {
			return int(c)
		}
		return expect
	}
	b := newBudget(r.MaxRequests, r.MaxTokens, e)
	e.budget = b
	e.halt = func() bool { return b.over(e.stats()) }
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range jobs {
				if e.fatal.Load() != nil || budgetHit.Load() {
					continue // the run is stopping; queued cells do not start
				}
				if ctx.Err() != nil || stopped() {
					cut.Store(true)
					continue
				}
				g, started := b.start(ctx, stopped)
				switch started {
				case startBudget:
					budgetHit.Store(true)
					continue
				case startStopped:
					cut.Store(true)
					continue
				}
				res, cutShort := e.execute(target.WithBudget(ctx, g), c)
				b.end(g)
				if cutShort {
					interrupted.Add(1)
				}
				redactResult(&res, secrets)
				out := encoded{res: res}
				if encode != nil {
					out.b, out.err = encode(res)
				}
				// The loop below reads every result until the workers are
				// done, after a cancellation too: a cell that ran is
				// never dropped.
				results <- out
			}
		}()
	}
	go func() {
		defer close(jobs)
		kept := 0
		for i := 0; i < planned; i++ {
			if i&1023 == 0 && (ctx.Err() != nil || stopped()) {
				cut.Store(true)
				return // a long run of skipped cells still notices a stop
			}
			c := src.Cell(i)
			if r.Skip != nil && r.Skip(c) {
				continue
			}
			if budgetHit.Load() || e.fatal.Load() != nil {
				return
			}
			select {
			case jobs <- c:
				kept++
			case <-ctx.Done():
				cut.Store(true)
				return
			case <-r.Stop:
				cut.Store(true)
				return
			}
		}
		counted.Store(int64(kept))
		if r.Counted != nil {
			r.Counted(kept)
		}
	}()
	go func() {
		wg.Wait()
		close(results)
	}()

	var sinkErr error
	done := 0
	for out := range results {
		if sinkErr != nil {
			continue
		}
		err := out.err
		if err == nil {
			err = sink(out.res, out.b)
		}
		if err == nil && len(results) == 0 {
			for _, f := range flush {
				if err = f(); err != nil {
					break
				}
			}
		}
		if err != nil {
			sinkErr = err
			cancel()
			continue
		}
		done++
		if r.Progress != nil {
			r.Progress(done, max(total(), done))
		}
	}
	about := ""
	if counted.Load() < 0 && r.Skip != nil {
		about = "about "
	}
	switch {
	case sinkErr != nil:
		return sinkErr
	case ctx.Err() != nil:
		return fmt.Errorf("%w after %d of %s%d cells (%d of them cut short): %w", ErrInterrupted, done, about, total(), interrupted.Load(), ctx.Err())
	case cut.Load():
		return fmt.Errorf("%w after %d of %s%d cells", ErrInterrupted, done, about, total())
	case e.fatal.Load() != nil:
		return fmt.Errorf("%w after %d of %s%d cells: %w", ErrStopped, done, about, total(), *e.fatal.Load())
	case budgetHit.Load() || b.stopped.Load() > 0:
		s := e.stats()
		err := fmt.Errorf("%w after %d of %s%d cells (%d requests, %d tokens)", ErrBudget, done, about, total(), s.Requests, s.Tokens)
		if n := b.stopped.Load(); n > 0 {
			err = fmt.Errorf("%w; %d cells it stopped before they finished are runtime errors that say so", err, n)
		}
		return err
	case b.overSpent(e.stats()):
		// Every cell ran, but the replies in flight when the token budget
		// ran out went past it (a driver that reports its requests after
		// sending them can pass the request budget too): said, never
		// silent.
		s := e.stats()
		return fmt.Errorf("%w: the requests in flight went past it (%d requests of %d, %d tokens of %d)", ErrBudget, s.Requests, r.MaxRequests, s.Tokens, r.MaxTokens)
	}
	return nil
}

// budget is the run's request and token budget, a hard cap on the
// requests sent: every model request takes one before it is sent
// (target.Budget), atomically across the workers, and one it refuses is
// not sent. A cell starts holding a request for its first, and only while
// one is free (not sent, not held): cells that send one request each
// never meet a refusal, and a cell that sends several gets its first. A
// reply's tokens are known only once it comes, so MaxTokens refuses the
// requests after the replies reach it; the requests in flight then can go
// past it.
type budget struct {
	maxRequests, maxTokens int64
	e                      *env
	mu                     sync.Mutex
	cond                   *sync.Cond
	held                   int64        // cells in flight that hold their first request
	stopped                atomic.Int64 // cells it stopped
}

func newBudget(maxRequests, maxTokens int64, e *env) *budget {
	b := &budget{maxRequests: maxRequests, maxTokens: maxTokens, e: e}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// limited reports whether the budget bounds anything.
func (b *budget) limited() bool { return b.maxRequests > 0 || b.maxTokens > 0 }

// over reports whether nothing more may be sent.
func (b *budget) over(s Stats) bool {
	return (b.maxRequests > 0 && s.Requests >= b.maxRequests) || (b.maxTokens > 0 && s.Tokens >= b.maxTokens)
}

// overSpent reports whether the run went past the budget.
func (b *budget) overSpent(s Stats) bool {
	return (b.maxRequests > 0 && s.Requests > b.maxRequests) || (b.maxTokens > 0 && s.Tokens > b.maxTokens)
}

// What budget.start decides.
const (
	startOK      = iota
	startBudget  // the budget is spent
	startStopped // the run was stopped or cancelled while the cell waited
)

// start says whether a cell may start, waiting for cells in flight when
// their outcome decides it, and returns the started cell's share of the
// budget. A run stopped meanwhile starts nothing more: the cells in flight
// end (finished, or interrupted by the context) and wake the waiters.
func (b *budget) start(ctx context.Context, stopped func() bool) (*cellBudget, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		if ctx.Err() != nil || stopped() {
			return nil, startStopped
		}
		s := b.e.stats()
		if b.over(s) {
			return nil, startBudget
		}
		if b.maxRequests <= 0 {
			return &cellBudget{b: b}, startOK
		}
		if s.Requests+b.held < b.maxRequests {
			b.held++
			return &cellBudget{b: b, holds: true}, startOK
		}
		b.cond.Wait() // a cell ends, and with it its hold
	}
}

// end releases a started cell's hold on the budget, and counts it when
// the budget stopped it.
func (b *budget) end(g *cellBudget) {
	if g.refused() != nil {
		b.stopped.Add(1)
	}
	if b.maxRequests <= 0 {
		return // nothing held
	}
	b.mu.Lock()
	if g.holds {
		g.holds = false
		b.held--
	}
	b.mu.Unlock()
	b.cond.Broadcast()
}

// take admits one request of cell g (nil for a request of no cell), or
// says why it may not be sent.
func (b *budget) take(g *cellBudget) error {
	if !b.limited() {
		b.e.requests.Add(1)
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.e.stats()
	switch {
	case b.maxTokens > 0 && s.Tokens >= b.maxTokens:
		return g.refuse(fmt.Errorf("%w: --max-tokens %d: the run's replies have used %d tokens; this request was not sent", ErrBudget, b.maxTokens, s.Tokens), stopTokens)
	case b.maxRequests <= 0:
	case g != nil && g.holds:
		g.holds = false
		b.held--
	case s.Requests+b.held >= b.maxRequests:
		held := ""
		if b.held > 0 {
			held = fmt.Sprintf(" and cells in flight hold %d for their first", b.held)
		}
		return g.refuse(fmt.Errorf("%w: --max-requests %d: the run has sent %d model requests%s; this one was not sent", ErrBudget, b.maxRequests, s.Requests, held), stopRequests)
	}
	b.e.requests.Add(1)
	return nil
}

// give hands back a request taken and not sent.
func (b *budget) give() {
	b.e.requests.Add(-1)
	if b.limited() {
		b.cond.Broadcast()
	}
}

// Take implements target.Budget for requests of no cell.
func (b *budget) Take() error { return b.take(nil) }

// Give implements target.Budget.
func (b *budget) Give() { b.give() }

// metaStoppedBy is the metadata key of a result whose cell a budget
// stopped; its value names the budget, stopRequests or stopTokens.
const (
	metaStoppedBy = "stopped_by_budget"
	stopRequests  = "max_requests"
	stopTokens    = "max_tokens"
)

// cellBudget is one cell's share of the run's budget: the target.Budget
// its model requests take from, which remembers the first request it
// refused.
type cellBudget struct {
	b     *budget
	holds bool // guarded by b.mu: the cell holds a request for its first
	why   atomic.Pointer[budgetStop]
}

// budgetStop is why a budget stopped a cell.
type budgetStop struct {
	err error
	by  string // stopRequests or stopTokens
}

var _ target.Budget = (*cellBudget)(nil)

// Take implements target.Budget.
func (g *cellBudget) Take() error { return g.b.take(g) }

// Give implements target.Budget.
func (g *cellBudget) Give() { g.b.give() }

// refuse records err as why the cell was stopped (the first refusal
// stands) and returns it; a nil g records nothing.
func (g *cellBudget) refuse(err error, by string) error {
	if g != nil {
		g.why.CompareAndSwap(nil, &budgetStop{err: err, by: by})
	}
	return err
}

// refused returns why the budget stopped the cell, nil if it did not.
func (g *cellBudget) refused() *budgetStop {
	if g == nil {
		return nil
	}
	return g.why.Load()
}

// RunAll executes cells and returns their results in plan order. On
// cancellation it returns the results so far (in plan order, the cells
// the cancellation cut short among them) with Run's error.
func (r Runner) RunAll(ctx context.Context, cells []Cell) ([]Result, error) {
	slots := make([]*Result, len(cells))
	pos := make(map[string]int, len(cells))
	for i, c := range cells {
		pos[c.Key] = i
	}
	err := r.Run(ctx, cells, func(res Result) error {
		slots[pos[res.Key]] = &res
		return nil
	})
	out := make([]Result, 0, len(cells))
	for _, s := range slots {
		if s != nil {
			out = append(out, *s)
		}
	}
	return out, err
}

// Filtered returns the cells of src that keep accepts, in order. It visits
// every cell once, keeping only their indexes (4 bytes a cell, 8 beyond
// 2^31 cells).
func Filtered(src Source, keep func(Cell) bool) Source {
	f := &filtered{src: src}
	n := src.Len()
	for i := 0; i < n; i++ {
		if !keep(src.Cell(i)) {
			continue
		}
		if i <= math.MaxInt32 {
			f.small = append(f.small, int32(i))
		} else {
			f.big = append(f.big, i)
		}
	}
	return f
}

type filtered struct {
	src   Source
	small []int32 // indexes below 2^31
	big   []int   // the rest, all after small's
}

func (f *filtered) Len() int { return len(f.small) + len(f.big) }
func (f *filtered) Cell(i int) Cell {
	if i < len(f.small) {
		return f.src.Cell(int(f.small[i]))
	}
	return f.src.Cell(f.big[i-len(f.small)])
}

// Concat joins sources into one, in order (a dataset's cases).
func Concat(srcs ...Source) Source {
	c := &concat{srcs: srcs}
	for _, s := range srcs {
		c.ends = append(c.ends, c.Len()+s.Len())
	}
	return c
}

type concat struct {
	srcs []Source
	ends []int
}

func (c *concat) Len() int {
	if len(c.ends) == 0 {
		return 0
	}
	return c.ends[len(c.ends)-1]
}

func (c *concat) Cell(i int) Cell {
	start := 0
	for k, end := range c.ends {
		if i < end {
			cell := c.srcs[k].Cell(i - start)
			cell.Index = i
			return cell
		}
		start = end
	}
	panic(fmt.Sprintf("matrix: cell %d out of range (%d cells)", i, c.Len()))
}

// Configs returns the distinct configs of a source's cells (one for a
// Grid; one per dataset case), without visiting every cell when the source
// knows them.
func Configs(src Source) []*Config {
	if c, ok := src.(interface{ configs() []*Config }); ok {
		return c.configs()
	}
	var out []*Config
	seen := map[*Config]bool{}
	for i := 0; i < src.Len(); i++ {
		if c := src.Cell(i).Config; !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

func (g *Grid) configs() []*Config { return []*Config{g.cfg} }

func (f *filtered) configs() []*Config { return Configs(f.src) }

func (c *concat) configs() []*Config {
	var out []*Config
	for _, s := range c.srcs {
		out = append(out, Configs(s)...)
	}
	return out
}
