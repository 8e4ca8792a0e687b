package matrix

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pikit-go/pikit/target"
)

// TestBudgetHolds (item 16): a request budget is checked when a worker
// starts a cell, counting the cells in flight: one-request cells never
// take a run past it, however many workers; stopping for it is an error.
func TestBudgetHolds(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		repeats, j            int
		max, wantSent, wantOK int64
	}{
		{"3 of 20 at -j 8", 20, 8, 3, 3, 3},
		{"1 of 3 at -j 8", 3, 8, 1, 1, 1},
		{"1 of 3 at -j 1", 3, 1, 1, 1, 1},
		{"7 of 40 at -j 3", 40, 3, 7, 7, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cells := plan(t, "attacks = [\"naive\"]\nrepeats = "+strconv.Itoa(tc.repeats))
			var sent atomic.Int64
			tg := funcTarget(func(ctx context.Context, req target.Request) (target.Response, error) {
				sent.Add(1)
				time.Sleep(time.Millisecond) // overlap the workers
				return target.Response{Text: "fine"}, nil
			})
			var results int64
			err := Runner{Concurrency: tc.j, MaxRequests: tc.max, Open: opener(tg)}.Run(context.Background(), cells, func(Result) error { results++; return nil })
			if !errors.Is(err, ErrBudget) {
				t.Errorf("err %v, want ErrBudget", err)
			}
			if sent.Load() != tc.wantSent || results != tc.wantOK {
				t.Errorf("%d requests sent, %d results; want %d and %d", sent.Load(), results, tc.wantSent, tc.wantOK)
			}
		})
	}
}

// Cells that send several requests each can go past the budget while in
// flight: the run says so rather than ending as if nothing happened.
func TestBudgetOverspentIsAnError(t *testing.T) {
	cells := plan(t, "attacks = [\"naive\"]\nrepeats = 2")
	tg := funcTarget(func(ctx context.Context, req target.Request) (target.Response, error) {
		return target.Response{Text: "fine", Usage: target.Usage{PromptTokens: 60, CompletionTokens: 40}}, nil
	})
	err := Runner{Concurrency: 2, MaxTokens: 150, Open: opener(tg)}.Run(context.Background(), cells, func(Result) error { return nil })
	if !errors.Is(err, ErrBudget) {
		t.Errorf("200 tokens of a 150-token budget: err %v, want ErrBudget", err)
	}
}

// TestSkipStreams (item 11): a shard of a plan of ten million cells starts
// its first cell at once and keeps no list of its cells; a stop is
// noticed while the plan streams.
func TestSkipStreams(t *testing.T) {
	cfg := mustParse(t, "attacks = [\"naive\"]\nrepeats = 10000000")
	g, err := Expand(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	var first time.Duration
	var got int
	var counted atomic.Bool
	r := Runner{Concurrency: 4, Skip: func(c Cell) bool { return Shard(c.Key, 2) != 0 }, Expect: 5_000_000,
		Counted: func(int) { counted.Store(true) },
		Open:    opener(funcTarget(func(context.Context, target.Request) (target.Response, error) { return target.Response{Text: "x"}, nil }))}
	var totals []int
	r.Progress = func(done, total int) { totals = append(totals, total) }
	err = r.RunSource(ctx, g, func(res Result) error {
		if got == 0 {
			first = time.Since(start)
		}
		if Shard(res.Key, 2) != 0 {
			t.Fatalf("a cell of the other shard ran: %s", res.Key)
		}
		if got++; got == 200 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if first > time.Second {
		t.Errorf("the first result came after %v", first)
	}
	if counted.Load() {
		t.Error("Counted was called for a plan that was not seen whole")
	}
	if len(totals) == 0 || totals[0] != 5_000_000 {
		t.Errorf("progress totals %v, want the expectation until the plan is seen", totals[:min(len(totals), 3)])
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 32<<20 {
		t.Errorf("the heap grew by %d MiB for a plan it did not list", grown>>20)
	}

	// A plan seen whole reports the exact count.
	small, _ := Expand(mustParse(t, "attacks = [\"naive\"]\nrepeats = 100"))
	n := -1
	r2 := Runner{Concurrency: 2, Skip: func(c Cell) bool { return c.Repeat%3 != 0 }, Expect: 50, Counted: func(k int) { n = k },
		Open: r.Open}
	var done int
	if err := r2.RunSource(context.Background(), small, func(Result) error { done++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 34 || done != 34 {
		t.Errorf("counted %d, ran %d; want 34", n, done)
	}
}

// A dry run's counts label channel "" of a user's own agent as reports
// do: the payload alone, not direct injection.
func TestCountPayloadOnly(t *testing.T) {
	cfg := mustParse(t, "attacks = [\"naive\"]\nchannels = [\"\", \"markdown\"]")
	cfg.Driven = "proxy"
	g, err := Expand(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, ax := range CountPlan(g).Axes {
		if ax.Field != "channel" {
			continue
		}
		if ax.Values[0].Value != "(payload only)" || ax.Values[1].Value != "markdown" {
			t.Errorf("channels counted as %+v", ax.Values)
		}
		return
	}
	t.Fatal("no channel axis")
}
