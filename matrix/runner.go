package matrix

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/pikit-go/pikit/target"
)

// DefaultConcurrency is the number of workers when Runner.Concurrency is 0.
const DefaultConcurrency = 8

// Runner executes cells with a pool of workers.
type Runner struct {
	// Concurrency is the number of cells in flight; 0 means
	// DefaultConcurrency.
	Concurrency int
	// Progress, when set, is called after each result with the number of
	// cells done and the total. Calls are serialised.
	Progress func(done, total int)
	// Open opens a target spec; nil means target.Open. Each distinct spec
	// is opened once per run and shared by the workers.
	Open func(spec string, opts target.Options) (target.Target, error)
	// RunID tags every result; "" means a fresh one.
	RunID string
	// WorkDir is where file-mode carriers are written ("" for the system
	// temporary directory).
	WorkDir string
}

// NewRunID returns a run id made of the time and random bits.
func NewRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// Run executes cells and hands each result to sink as it completes
// (completion order; sink is never called concurrently). A failing cell is a
// runtime_error result, not an error of Run. Run returns the first error of
// sink, or the context's error when it was cancelled; cells the
// cancellation interrupted give no result.
func (r Runner) Run(ctx context.Context, cells []Cell, sink Sink) error {
	n := r.Concurrency
	if n <= 0 {
		n = DefaultConcurrency
	}
	n = min(n, max(len(cells), 1))
	runID := r.RunID
	if runID == "" {
		runID = NewRunID()
	}
	e := newEnv(r.Open, runID, r.WorkDir)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	jobs := make(chan int)
	results := make(chan Result, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				res, interrupted := e.execute(ctx, cells[i])
				if interrupted {
					continue
				}
				select {
				case results <- res:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for i := range cells {
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
	for res := range results {
		if sinkErr != nil {
			continue
		}
		if err := sink(res); err != nil {
			sinkErr = err
			cancel()
			continue
		}
		done++
		if r.Progress != nil {
			r.Progress(done, len(cells))
		}
	}
	if sinkErr != nil {
		return sinkErr
	}
	return ctx.Err()
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
