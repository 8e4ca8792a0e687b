package report

import (
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/pikit-go/pikit/judge"
)

// benchFile returns the results file the report benchmarks read:
// PIKIT_REPORT_FILE when set (e.g. a 1,000,000-line JSONL file), else n
// lines made from real mock cells with their traces, with varied keys,
// attacks and outcomes.
func benchFile(b *testing.B, n int) string {
	b.Helper()
	if path := os.Getenv("PIKIT_REPORT_FILE"); path != "" {
		return path
	}
	seed := htmlRunCells(b, `attacks = ["naive", "combined", "context_ignoring"]
agents = ["chat", "email", "rag"]
channels = ["", "document"]
defenses = ["none", "spotlighting", "pattern"]`)
	path := b.TempDir() + "/results.jsonl"
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := NewJSONL(f)
	attacks := []string{"naive", "escape", "combined", "context_ignoring", "fake_completion", "none"}
	for i := range n {
		r := seed[i%len(seed)]
		r.Key = fmt.Sprintf("%016x", uint64(i)*0x9e3779b97f4a7c15)
		r.Attack = attacks[i/7%len(attacks)]
		r.CaseID = fmt.Sprintf("c-%03d", i%50)
		if i%5 == 0 {
			r.Outcome, r.Success = judge.FullSuccess, true
		}
		if err := w.Write(r); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	return path
}

// BenchmarkReport streams a results file through the summaries pikit
// report prints without --by: the totals and one table per field.
func BenchmarkReport(b *testing.B) {
	path := benchFile(b, 20_000)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	b.ReportAllocs()
	cells := 0
	for b.Loop() {
		aggs := []*Aggregator{NewAggregator()}
		for _, f := range []string{"attack", "defense", "channel", "agent", "target", "case_id"} {
			aggs = append(aggs, NewAggregator(f))
		}
		cells = 0
		err := ScanFile(path, func(r *Record) error {
			for _, a := range aggs {
				a.AddRecord(r)
			}
			cells++
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		for _, a := range aggs {
			a.Summary()
		}
	}
	b.ReportMetric(float64(cells), "cells")
}

// BenchmarkCompareFiles compares a results file with itself, as pikit
// compare does: streamed, a small record kept per base cell.
func BenchmarkCompareFiles(b *testing.B) {
	path := benchFile(b, 20_000)
	b.ReportAllocs()
	for b.Loop() {
		c := NewComparer("attack", "defense")
		if err := ScanFile(path, func(r *Record) error { c.AddBase(r); return nil }); err != nil {
			b.Fatal(err)
		}
		if err := ScanFile(path, func(r *Record) error { c.AddNew(r); return nil }); err != nil {
			b.Fatal(err)
		}
		c.Comparison()
	}
}

// BenchmarkHTMLReport streams a results file into an HTML report and
// reports the page's size.
func BenchmarkHTMLReport(b *testing.B) {
	path := benchFile(b, 20_000)
	b.ReportAllocs()
	var size int64
	for b.Loop() {
		h := NewHTMLReport(HTMLOptions{})
		if err := ScanFile(path, h.Add); err != nil {
			b.Fatal(err)
		}
		cw := &countWriter{}
		if err := h.Write(cw); err != nil {
			b.Fatal(err)
		}
		size = cw.n
	}
	b.ReportMetric(float64(size)/(1<<20), "MB")
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)
