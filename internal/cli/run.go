package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/report"
)

// runOptions are the flags every command that runs cells takes.
type runOptions struct {
	Target      string
	Judge       string
	Temperature float64
	temperature bool // --temperature was given
	Repeats     int
	Attacks     []string
	Output      string
	Force       bool
	Concurrency int
}

func (o *runOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.Target, "target", "", "target spec for every cell, e.g. mock or openai:gpt-4o-mini (default: the config's)")
	f.StringVar(&o.Judge, "judge", "", "judge: rule, llm or none (default: the config's)")
	f.Float64Var(&o.Temperature, "temperature", 0, "sampling temperature (default: the config's)")
	f.IntVar(&o.Repeats, "repeats", 0, "repeats per cell (default: the config's)")
	f.StringSliceVar(&o.Attacks, "attacks", nil, "attacks to use instead of the config's, comma-separated")
	f.StringVarP(&o.Output, "output", "o", "", "write results to `FILE` (.jsonl, .json or .csv); without it, a summary table goes to stdout")
	f.BoolVar(&o.Force, "force", false, "overwrite an existing output file")
	f.IntVarP(&o.Concurrency, "concurrency", "j", matrix.DefaultConcurrency, "cells run at once")
}

// complete reads which flags were given and checks them.
func (o *runOptions) complete(cmd *cobra.Command) error {
	o.temperature = cmd.Flags().Changed("temperature")
	if o.Judge != "" && o.Judge != "rule" && o.Judge != "llm" && o.Judge != "none" {
		return usage(fmt.Errorf("--judge: unknown judge %q; known: rule, llm, none", o.Judge))
	}
	if o.Repeats < 0 {
		return usage(fmt.Errorf("--repeats: must be at least 1, got %d", o.Repeats))
	}
	if o.Concurrency < 1 {
		return usage(fmt.Errorf("--concurrency: must be at least 1, got %d", o.Concurrency))
	}
	if o.Output != "" {
		if _, err := report.FormatOf(o.Output); err != nil {
			return usage(err)
		}
	}
	return nil
}

// apply overrides a config with the flags that were given.
func (o *runOptions) apply(cfg *matrix.Config) {
	if o.Target != "" {
		cfg.TargetSpec = o.Target
	}
	if o.Judge != "" {
		cfg.JudgeType = o.Judge
	}
	if o.temperature {
		cfg.Temperature = o.Temperature
	}
	if o.Repeats > 0 {
		cfg.Repeats = o.Repeats
	}
	if len(o.Attacks) > 0 {
		cfg.SetAttacks(o.Attacks)
	}
}

// execute runs planned cells, streaming results to --output (or keeping
// them for the stdout table), and prints the summary to stderr. groupBy
// picks the columns of the stdout table.
func (o *runOptions) execute(ctx context.Context, streams IO, cells []matrix.Cell, groupBy []string) error {
	var w report.Writer
	if o.Output != "" {
		var err error
		if w, err = report.Create(o.Output, o.Force); err != nil {
			if errors.Is(err, report.ErrExists) {
				return usage(err)
			}
			return err
		}
	}
	// The summary needs only the fields it groups on; traces are dropped
	// so memory does not grow with them.
	var kept []matrix.Result
	sink := func(r matrix.Result) error {
		if w != nil {
			if err := w.Write(r); err != nil {
				return fmt.Errorf("writing %s: %w", o.Output, err)
			}
		}
		r.TraceData, r.FinalText, r.Evidence = nil, "", nil
		kept = append(kept, r)
		return nil
	}
	runner := matrix.Runner{Concurrency: o.Concurrency}
	runErr := runner.Run(ctx, cells, sink)
	if w != nil {
		if err := w.Close(); err != nil && runErr == nil {
			runErr = fmt.Errorf("writing %s: %w", o.Output, err)
		}
	}
	sum := report.Summarize(kept)
	writeStatus(streams.ErrOut, sum, len(cells))
	if o.Output == "" && len(kept) > 0 {
		if err := report.Summarize(kept, groupBy...).WriteText(streams.Out); err != nil {
			return err
		}
	} else if o.Output != "" {
		fmt.Fprintf(streams.ErrOut, "results: %s\n", o.Output)
	}
	switch {
	case errors.Is(runErr, context.Canceled):
		fmt.Fprintf(streams.ErrOut, "interrupted after %d of %d cells\n", len(kept), len(cells))
		return runErr
	case runErr != nil:
		return runErr
	case sum.Errors > 0:
		fmt.Fprintf(streams.ErrOut, "%d cells failed with runtime errors (see the error field of their results)\n", sum.Errors)
		return errFailed
	}
	return nil
}

// writeStatus prints the one-paragraph summary every run ends with.
func writeStatus(w io.Writer, s report.Summary, planned int) {
	var parts []string
	for _, o := range judge.Outcomes {
		if c := s.Outcomes[o]; c > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", o, c))
		}
	}
	fmt.Fprintf(w, "%d/%d cells run · attack success %s · runtime errors %d\n", s.Cells, planned, s.ASR, s.Errors)
	if len(parts) > 0 {
		fmt.Fprintf(w, "outcomes: %s\n", strings.Join(parts, ", "))
	}
}
