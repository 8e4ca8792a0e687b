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
// run before every cell was scheduled.
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
	// MaxRequests and MaxTokens, when positive, stop scheduling new cells
	// once the run's model requests or tokens (prompt + completion, as the
	// provider reports them) reach them; cells in flight finish.
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
}

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
// of sink; the context's error when it was cancelled (cells the
// cancellation interrupted give no result); or an error wrapping ErrBudget
// when a budget stopped it.
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
	total := src.Len()
	n := r.Concurrency
	if n <= 0 {
		n = DefaultConcurrency
	}
	n = min(n, max(total, 1))
	runID := r.RunID
	if runID == "" {
		runID = NewRunID()
	}
	e := newEnv(r.Open, runID, r.WorkDir)
	e.cache = r.Cache
	e.driver = r.Driver
	e.version = r.Version
	e.judgeSpec, e.judgeOpts = r.JudgeTarget, r.JudgeOptions
	e.halt = func() bool { return r.overBudget(e.stats()) }
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
	jobs := make(chan int, n)
	results := make(chan encoded, n)
	var budgetHit atomic.Bool
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if e.fatal.Load() != nil {
					continue // the run is stopping; queued cells do not start
				}
				res, interrupted := e.execute(ctx, src.Cell(i))
				if interrupted {
					continue
				}
				redactResult(&res, secrets)
				out := encoded{res: res}
				if encode != nil {
					out.b, out.err = encode(res)
				}
				select {
				case results <- out:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for i := 0; i < total; i++ {
			if r.overBudget(e.stats()) {
				budgetHit.Store(true)
				return
			}
			if e.fatal.Load() != nil {
				return
			}
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
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
			r.Progress(done, total)
		}
	}
	switch {
	case sinkErr != nil:
		return sinkErr
	case ctx.Err() != nil:
		return ctx.Err()
	case e.fatal.Load() != nil:
		return fmt.Errorf("%w after %d of %d cells: %w", ErrStopped, done, total, *e.fatal.Load())
	case budgetHit.Load():
		s := e.stats()
		return fmt.Errorf("%w after %d of %d cells (%d requests, %d tokens)", ErrBudget, done, total, s.Requests, s.Tokens)
	}
	return nil
}

func (r Runner) overBudget(s Stats) bool {
	return (r.MaxRequests > 0 && s.Requests >= r.MaxRequests) || (r.MaxTokens > 0 && s.Tokens >= r.MaxTokens)
}

// RunAll executes cells and returns their results in plan order. On
// cancellation it returns the results completed so far (in plan order) with
// the context's error.
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
