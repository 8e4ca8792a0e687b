package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/report"
	"github.com/pikit-go/pikit/target"
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
	Resume      bool
	Concurrency int
	DryRun      bool
	Shard       string
	MaxRequests int64
	MaxTokens   int64
	Quiet       bool
	Cache       string

	BaseURL        string
	MaxRetries     int
	RequestTimeout time.Duration
	RPS            float64
	JudgeTarget    string
	JudgeBaseURL   string

	shardK, shardN int
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
	f.BoolVar(&o.Resume, "resume", false, "continue an interrupted run: keep the results already in the --output .jsonl, run only the missing cells")
	f.IntVarP(&o.Concurrency, "concurrency", "j", matrix.DefaultConcurrency, "cells run at once")
	f.BoolVar(&o.DryRun, "dry-run", false, "print the plan and send nothing")
	f.StringVar(&o.Shard, "shard", "", "run only shard `K/N` of the cells (1 <= K <= N; auto/N takes K from JOB_COMPLETION_INDEX)")
	f.Int64Var(&o.MaxRequests, "max-requests", 0, "stop scheduling cells after this many model requests (0: no limit)")
	f.Int64Var(&o.MaxTokens, "max-tokens", 0, "stop scheduling cells after this many tokens, as providers report them (0: no limit)")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress bar")
	f.StringVar(&o.BaseURL, "base-url", "", "base URL of the target's API, e.g. http://127.0.0.1:8000/v1 (default: the config's [target] base_url, then the provider's environment variable)")
	f.IntVar(&o.MaxRetries, "max-retries", target.DefaultMaxRetries, "retries of a failed model request (429, 5xx, timeouts, malformed answers)")
	f.DurationVar(&o.RequestTimeout, "request-timeout", target.DefaultAttemptTimeout, "bound on each model request attempt")
	f.Float64Var(&o.RPS, "rps", 0, "requests per second to each provider, shared by all workers (0: no limit; 429s always slow every worker)")
	f.StringVar(&o.JudgeTarget, "judge-target", "", "the model --judge llm asks (default: the target under test)")
	f.StringVar(&o.JudgeBaseURL, "judge-base-url", "", "base URL of the judge target's API")
	f.StringVar(&o.Cache, "cache", "", "cache model responses in `DIR`: a rerun sends no request already answered (repeats stay separate)")
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
	if o.MaxRetries < 0 || o.RequestTimeout <= 0 || o.RPS < 0 {
		return usage(errors.New("--max-retries and --rps must not be negative, --request-timeout must be positive"))
	}
	if o.JudgeBaseURL != "" && o.JudgeTarget == "" {
		return usage(errors.New("--judge-base-url needs --judge-target"))
	}
	if o.JudgeTarget != "" {
		if _, _, err := target.ParseSpec(o.JudgeTarget); err != nil {
			return usage(fmt.Errorf("--judge-target: %w", err))
		}
	}
	if o.MaxRequests < 0 || o.MaxTokens < 0 {
		return usage(errors.New("--max-requests and --max-tokens must not be negative"))
	}
	if o.Output != "" {
		if _, err := report.FormatOf(o.Output); err != nil {
			return usage(err)
		}
	}
	if o.Resume {
		if o.Force {
			return usage(errors.New("--resume and --force contradict each other: --force starts over, --resume continues"))
		}
		if !strings.HasSuffix(strings.ToLower(o.Output), ".jsonl") {
			return usage(errors.New("--resume needs --output FILE.jsonl (the results so far)"))
		}
	}
	if o.Shard != "" {
		k, n, err := parseShard(o.Shard, os.Getenv("JOB_COMPLETION_INDEX"))
		if err != nil {
			return usage(fmt.Errorf("--shard: %w", err))
		}
		o.shardK, o.shardN = k, n
	}
	return nil
}

// parseShard reads "K/N" (1-based K) or "auto/N" with a 0-based index.
func parseShard(s, index string) (k, n int, err error) {
	ks, ns, ok := strings.Cut(s, "/")
	if !ok {
		return 0, 0, fmt.Errorf("want K/N, e.g. 2/8, got %q", s)
	}
	if n, err = strconv.Atoi(ns); err != nil || n < 1 {
		return 0, 0, fmt.Errorf("N must be a positive integer, got %q", ns)
	}
	if ks == "auto" {
		if index == "" {
			return 0, 0, errors.New("auto needs JOB_COMPLETION_INDEX (set by a Kubernetes Indexed Job)")
		}
		i, err := strconv.Atoi(index)
		if err != nil || i < 0 || i >= n {
			return 0, 0, fmt.Errorf("JOB_COMPLETION_INDEX=%q is not in 0..%d", index, n-1)
		}
		return i + 1, n, nil
	}
	if k, err = strconv.Atoi(ks); err != nil || k < 1 || k > n {
		return 0, 0, fmt.Errorf("K must be in 1..%d, got %q", n, ks)
	}
	return k, n, nil
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

// execute runs planned cells, streaming results to --output (or into the
// stdout table), and prints the summary to stderr. groupBy picks the
// columns of the stdout table.
func (o *runOptions) execute(ctx context.Context, streams IO, src matrix.Source, groupBy []string) error {
	planned := src.Len()
	if o.shardN > 0 {
		src = matrix.Filtered(src, func(c matrix.Cell) bool { return matrix.Shard(c.Key, o.shardN) == o.shardK-1 })
		fmt.Fprintf(streams.ErrOut, "shard %d/%d: %d of %d cells\n", o.shardK, o.shardN, src.Len(), planned)
	}
	if o.DryRun {
		return writePlan(streams.Out, src)
	}
	runner := o.runner()
	if err := preflight(runner, src, o); err != nil {
		return err
	}
	w, src, err := o.openOutput(streams, src)
	if err != nil {
		return err
	}
	status := report.NewAggregator()
	table := report.NewAggregator(groupBy...)
	bar := newProgress(streams.ErrOut, src.Len(), o.Quiet)
	var encode func(matrix.Result) ([]byte, error)
	var enc report.Encoder
	if ew, ok := w.(interface{ Encoder() (report.Encoder, bool) }); ok {
		if e, ok := ew.Encoder(); ok {
			enc, encode = e, e.Encode
		}
	}
	sink := func(r matrix.Result, line []byte) error {
		var err error
		switch {
		case enc != nil:
			err = enc.Append(line) // flushed when the burst ends
		case w != nil:
			err = w.Write(r)
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", o.Output, err)
		}
		status.Add(r)
		if w == nil {
			table.Add(r)
		}
		bar.add(r)
		return nil
	}
	if o.Cache != "" {
		if runner.Cache, err = target.OpenCache(o.Cache); err != nil {
			return usage(err)
		}
	}
	var flush []func() error
	if enc != nil {
		flush = append(flush, enc.Flush)
	}
	runErr := runner.RunEncoded(ctx, src, encode, sink, flush...)
	bar.finish()
	if w != nil {
		if err := w.Close(); err != nil && runErr == nil {
			runErr = fmt.Errorf("writing %s: %w", o.Output, err)
		}
	}
	if runner.Cache != nil {
		hits, misses := runner.Cache.Stats()
		fmt.Fprintf(streams.ErrOut, "cache %s: %d hits, %d misses\n", o.Cache, hits, misses)
	}
	sum := status.Summary()
	writeStatus(streams.ErrOut, sum, src.Len())
	if w == nil && sum.Cells > 0 {
		if err := table.Summary().WriteText(streams.Out); err != nil {
			return err
		}
	} else if w != nil {
		fmt.Fprintf(streams.ErrOut, "results: %s\n", o.Output)
	}
	resume := ""
	if o.Output != "" {
		resume = "; run the same command with --resume to finish it"
	}
	switch {
	case errors.Is(runErr, context.Canceled):
		fmt.Fprintf(streams.ErrOut, "interrupted after %d of %d cells%s\n", sum.Cells, src.Len(), resume)
		return runErr
	case errors.Is(runErr, matrix.ErrStopped):
		fmt.Fprintf(streams.ErrOut, "%v%s\n", runErr, resume)
		return errFailed
	case errors.Is(runErr, matrix.ErrBudget):
		fmt.Fprintf(streams.ErrOut, "stopped: %v%s\n", runErr, resume)
		return errFailed
	case runErr != nil:
		return runErr
	case sum.Errors > 0:
		fmt.Fprintf(streams.ErrOut, "%d cells failed with runtime errors (see the error field of their results)\n", sum.Errors)
		return errFailed
	}
	return nil
}

// runner builds the runner with the target flags: targets open through
// pikit's retry, timeout and rate-limit wrappers, each spec once.
func (o *runOptions) runner() matrix.Runner {
	policy := target.RetryPolicy{MaxRetries: o.MaxRetries, AttemptTimeout: o.RequestTimeout}
	if o.MaxRetries == 0 {
		policy.MaxRetries = -1 // the flag's 0 means no retries
	}
	var limiter *target.Limiter
	if o.RPS > 0 {
		limiter = target.NewLimiter(o.RPS, 1)
	} else {
		limiter = target.NewLimiter(0, 1) // no rate, but a shared back-off on 429
	}
	open := func(spec string, opts target.Options) (target.Target, error) {
		provider, _, err := target.ParseSpec(spec)
		if err != nil {
			return nil, err
		}
		if provider == "mock" {
			return target.Open(spec, opts)
		}
		return target.OpenWith(spec, opts, policy, limiter)
	}
	r := matrix.Runner{Concurrency: o.Concurrency, MaxRequests: o.MaxRequests, MaxTokens: o.MaxTokens}
	r.Open = func(spec string, opts target.Options) (target.Target, error) {
		if o.BaseURL != "" && spec != o.JudgeTarget {
			opts = withOption(opts, target.OptBaseURL, o.BaseURL)
		}
		return open(spec, opts)
	}
	if o.JudgeTarget != "" {
		r.JudgeTarget = o.JudgeTarget
		if o.JudgeBaseURL != "" {
			r.JudgeOptions = target.Options{target.OptBaseURL: o.JudgeBaseURL}
		}
	}
	return r
}

func withOption(opts target.Options, k string, v any) target.Options {
	out := make(target.Options, len(opts)+1)
	for key, val := range opts {
		out[key] = val
	}
	out[k] = v
	return out
}

// preflight opens every target the run will use before any cell runs, so a
// missing API key or a bad option is exit 2 with nothing sent or written.
func preflight(r matrix.Runner, src matrix.Source, o *runOptions) error {
	seen := map[string]bool{}
	check := func(spec string, opts map[string]any) error {
		id := fmt.Sprint(spec, opts)
		if seen[id] {
			return nil
		}
		seen[id] = true
		if _, err := r.Open(spec, target.Options(opts)); err != nil {
			return usage(fmt.Errorf("target %s: %w", spec, err))
		}
		return nil
	}
	for _, cfg := range matrix.Configs(src) {
		if err := check(cfg.TargetSpec, cfg.TargetOpts); err != nil {
			return err
		}
	}
	if o.JudgeTarget != "" {
		return check(o.JudgeTarget, r.JudgeOptions)
	}
	return nil
}

// openOutput opens --output (nil when results go to the table). With
// --resume it keeps the results already there and returns the cells still
// to run; a file whose keys are not all in the plan is refused.
func (o *runOptions) openOutput(streams IO, src matrix.Source) (report.Writer, matrix.Source, error) {
	if o.Output == "" {
		return nil, src, nil
	}
	_, statErr := os.Stat(o.Output)
	if !o.Resume || errors.Is(statErr, os.ErrNotExist) {
		w, err := report.Create(o.Output, o.Force || o.Resume)
		if errors.Is(err, report.ErrExists) {
			return nil, nil, usage(fmt.Errorf("%w, or --resume to continue it", err))
		}
		return w, src, err
	}
	done, dropped, err := report.Resume(o.Output)
	if err != nil {
		return nil, nil, usage(err)
	}
	found := 0
	rest := matrix.Filtered(src, func(c matrix.Cell) bool {
		if done[c.Key] {
			found++
			return false
		}
		return true
	})
	if found != len(done) {
		return nil, nil, usage(fmt.Errorf("%s holds %d results whose keys are not in this plan: it was written by a different config (or options); use another --output, or --force to start over", o.Output, len(done)-found))
	}
	fmt.Fprintf(streams.ErrOut, "resuming %s: %d cells done, %d to run", o.Output, found, rest.Len())
	if dropped > 0 {
		fmt.Fprintf(streams.ErrOut, " (%d failed or partial lines dropped, to be rerun)", dropped)
	}
	fmt.Fprintln(streams.ErrOut)
	w, err := report.Append(o.Output)
	return w, rest, err
}

// writePlan prints what a run would do, without sending anything.
func writePlan(w io.Writer, src matrix.Source) error {
	type key struct{ field, value string }
	counts := map[key]int{}
	var order []key
	calls := 0
	for i := 0; i < src.Len(); i++ {
		c := src.Cell(i)
		ch := c.Channel.Name
		if ch == "" {
			ch = "(direct)"
		}
		for _, k := range []key{{"agent", c.Agent}, {"attack", c.Attack.Name}, {"defense", c.Defense.Name}, {"channel", ch}, {"target", c.Config.TargetSpec}} {
			if counts[k] == 0 {
				order = append(order, k)
			}
			counts[k]++
		}
		calls += c.Config.MaxSteps
		if c.Config.JudgeType == "llm" {
			calls++
		}
	}
	fields := []string{"agent", "attack", "defense", "channel", "target"}
	for _, f := range fields {
		var parts []string
		for _, k := range order {
			if k.field == f {
				parts = append(parts, fmt.Sprintf("%s %d", k.value, counts[k]))
			}
		}
		fmt.Fprintf(w, "%-8s %s\n", f+":", strings.Join(parts, ", "))
	}
	fmt.Fprintf(w, "cells:   %d\nmodel calls: at most %d (max_steps per cell, plus one per cell for an LLM judge); nothing was sent\n", src.Len(), calls)
	return nil
}

// writeStatus prints the summary every run ends with.
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
