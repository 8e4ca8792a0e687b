package matrix_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/pikit-go/pikit/defense"
	"github.com/pikit-go/pikit/matrix"
)

// BenchmarkRun plans and runs b.N mock cells (every attack × every defense
// × repeats, for a direct and an indirect agent), encoding each result as a
// JSONL line (with Result.AppendJSON, as the JSONL writer does) into a file
// in a temporary directory: the harness's own cost per cell.
//
// Besides ns/op (wall time per cell, with every core busy), it reports
// cpu-µs/cell: the CPU time the process spent per cell, on all cores, which
// is what a cell costs whatever the concurrency; and user-µs/cell, the
// part of it spent outside the kernel (the rest is mostly the kernel
// writing the file, whose cost varies from run to run on this machine).
func BenchmarkRun(b *testing.B) {
	for _, agent := range []string{"chat", "email"} {
		b.Run(agent, func(b *testing.B) { benchRun(b, agent, `["*"]`) })
	}
}

// BenchmarkDefense runs chat cells of every attack under one defense (or
// detector) at a time, to compare each one's cost per cell with no
// defense's.
func BenchmarkDefense(b *testing.B) {
	for _, d := range append(defense.Names(), defense.Detectors.Names()...) {
		b.Run(d, func(b *testing.B) { benchRun(b, "chat", fmt.Sprintf("[%q]", d)) })
	}
}

func benchRun(b *testing.B, agent, defenses string) {
	// Repeats are the innermost axis: size them so that b.N cells cover
	// every attack × defense pair, not just the first few.
	// ("*" is the Python pikit's set: count what it plans once.)
	axes := fmt.Sprintf("attacks = [\"*\"]\ndefenses = %s\nagents = [%q]\n", defenses, agent)
	one, err := matrix.Parse("bench.toml", []byte(axes))
	if err != nil {
		b.Fatal(err)
	}
	pairs, err := matrix.Expand(one)
	if err != nil {
		b.Fatal(err)
	}
	repeats := b.N/pairs.Len() + 1
	cfg, err := matrix.Parse("bench.toml", fmt.Appendf(nil, "%srepeats = %d\n", axes, repeats))
	if err != nil {
		b.Fatal(err)
	}
	grid, err := matrix.Expand(cfg)
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(filepath.Join(b.TempDir(), "results.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	src := limit{grid, b.N}
	encode := func(r matrix.Result) ([]byte, error) {
		return append(r.AppendJSON(nil), '\n'), nil
	}
	// The collector as the pikit command sets it (internal/cli's tuneGC):
	// a run's live heap is small, and at the default GOGC collecting it
	// would cost more than the cells.
	defer debug.SetGCPercent(debug.SetGCPercent(800))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 30))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	user, _ := cpuTimes()
	// As the CLI does: workers encode, one writer copies bytes.
	err = matrix.Runner{Concurrency: 8}.RunEncoded(context.Background(), src, encode, func(_ matrix.Result, line []byte) error {
		_, err := w.Write(line)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	w.Flush()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cells/s")
	if used := cpuTime() - cpu; used > 0 {
		b.ReportMetric(float64(used.Microseconds())/float64(b.N), "cpu-µs/cell")
		u, _ := cpuTimes()
		b.ReportMetric(float64((u-user).Microseconds())/float64(b.N), "user-µs/cell")
	}
}

type limit struct {
	matrix.Source
	n int
}

func (l limit) Len() int { return l.n }
