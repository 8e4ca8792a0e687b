package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/schollz/progressbar/v3"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
)

// progress draws a bar on a terminal's stderr: cells done of total, rate,
// ETA, and successes, errors and retried model requests so far. It draws
// nothing on a non-terminal or with --quiet; NO_COLOR turns colour off.
type progress struct {
	bar                 *progressbar.ProgressBar
	succ, errs, retries int
}

func newProgress(w io.Writer, total int, quiet bool) *progress {
	return &progress{bar: newBar(w, total, quiet, "cells")}
}

// newBar returns a bar of total things counted on a terminal's w, nil on a
// non-terminal, with quiet or for nothing to count.
func newBar(w io.Writer, total int, quiet bool, things string) *progressbar.ProgressBar {
	if quiet || !isTerminal(w) || total == 0 {
		return nil
	}
	_, color := os.LookupEnv("NO_COLOR")
	return progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(things),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString(things),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionEnableColorCodes(!color),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100_000_000),
		progressbar.OptionClearOnFinish(),
	)
}

func (p *progress) add(r matrix.Result) {
	if p.bar == nil {
		return
	}
	if r.Success {
		p.succ++
	}
	if r.Outcome == judge.RuntimeError {
		p.errs++
	}
	p.retries += r.Retries
	desc := fmt.Sprintf("cells · %d successes · %d errors", p.succ, p.errs)
	if p.retries > 0 {
		desc += fmt.Sprintf(" · %d retries", p.retries)
	}
	p.bar.Describe(desc)
	_ = p.bar.Add(1)
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
