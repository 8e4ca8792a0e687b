package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pikit-go/pikit/attack"
	"github.com/pikit-go/pikit/internal/termsafe"
	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/objstore"
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
	Defenses    []string
	// AdaptiveOptions is --adaptive-options, adaptiveOpts what it says.
	AdaptiveOptions string
	adaptiveOpts    map[string]any
	Output          string
	Force           bool
	Resume          bool
	RepeatSummary   bool
	Concurrency     int
	DryRun          bool
	Shard           string
	MaxRequests     int64
	MaxTokens       int64
	// MaxOutputTokens is --max-output-tokens: the target's max_tokens
	// option for every cell (0: the file's).
	MaxOutputTokens int64
	// Prefetch is --prefetch: the harness reads each agent scenario's
	// tainted data for the model before its first turn.
	Prefetch bool
	Quiet    bool
	Cache    string

	BaseURL        string
	MaxRetries     int
	RequestTimeout time.Duration
	RPS            float64
	JudgeTarget    string
	JudgeBaseURL   string
	AttackerTarget string
	AttackerURL    string
	TrustConfig    bool
	MaxCells       int
	Yes            bool
	CSVRaw         bool
	MaxFileSize    byteSize
	// MaxResponseBytes is --max-response-bytes; applied only when given,
	// so a config's max_response_bytes holds otherwise.
	MaxResponseBytes    byteSize
	maxResponseBytesSet bool

	shardK, shardN int
	// driver, when set, runs each cell's agent (pikit proxy, pikit mcp);
	// a config's runtime key chooses one in prepare otherwise.
	driver matrix.Driver
	// inputs are the files the command reads (its config or dataset):
	// --output may not be one of them.
	inputs []string
	// dotenv is what ./.env chose (from the command's context).
	dotenv dotEnv
	// s3 holds the flags of an s3:// --output, and s3At the output
	// itself, parsed (nil for a file).
	s3   s3Options
	s3At *objstore.URL
	// refused holds what the files chose that needs --trust-config and
	// that a --dry-run lists instead of refusing at once (a runtime).
	refused []*matrix.Error
	// keyMisses counts the requests the cache could not answer for a
	// target without its API key (see keyless).
	keyMisses atomic.Int64
}

// DefaultMaxCells is the plan size over which a run asks for --yes.
const DefaultMaxCells = 1_000_000

// networkCallsPerCell scales --max-cells into the bound on the model calls
// a plan may make to network targets before it asks for --yes.
const networkCallsPerCell = 10

// addFlags adds the flags every command that runs cells takes; batch adds
// those of the commands that run whole plans into a results file
// (--resume, --shard, the progress bar's --quiet).
//
// skip names flags a command leaves out because they would do nothing
// there (a command shows only flags that work).
func (o *runOptions) addFlags(cmd *cobra.Command, batch bool, skip ...string) {
	if slices.Contains(skip, "temperature") {
		// A command whose agent samples its own model (the proxy's, an
		// MCP client's) caps its own replies too.
		skip = append(skip, "max-output-tokens", "prefetch")
	}
	f := pflag.NewFlagSet(cmd.Name(), pflag.ContinueOnError)
	defer func() {
		f.VisitAll(func(fl *pflag.Flag) {
			if !slices.Contains(skip, fl.Name) {
				cmd.Flags().AddFlag(fl)
			}
		})
	}()
	f.StringVar(&o.Target, "target", "", "target spec for every cell, e.g. mock or openai:gpt-4o-mini (default: the config's)")
	f.StringVar(&o.Judge, "judge", "", "judge: rule, rule:pikit (the Python pikit's verdicts), match (a benchmark's plain canary or regex check), llm or none (default: the config's)")
	f.Float64Var(&o.Temperature, "temperature", 0, "sampling temperature, 0 to 2 (default: the config's)")
	f.IntVar(&o.Repeats, "repeats", 0, "repeats per cell, at least 1 (default: the config's)")
	f.StringSliceVar(&o.Attacks, "attacks", nil, "attacks to use instead of the config's, comma-separated")
	f.StringSliceVar(&o.Defenses, "defenses", nil, "defenses and detectors to use instead of the config's, comma-separated")
	f.StringVar(&o.AdaptiveOptions, "adaptive-options", "", `options of the adaptive attack as a JSON object, over the config's, e.g. '{"strategy": "best_of_n", "max_rounds": 20}' (pikit list attacks shows them)`)
	f.StringVarP(&o.Output, "output", "o", "", "write results to `FILE` (.jsonl, .json or .csv; any other extension is JSON, as in the Python pikit), to standard output as JSONL with -, or as JSONL to an s3://BUCKET/PREFIX/ (an object per shard); without it, a summary table goes to stdout")
	f.BoolVar(&o.Force, "force", false, "overwrite an existing output file (of an s3:// output: this shard's objects)")
	o.s3.addWriteFlags(f)
	f.IntVarP(&o.Concurrency, "concurrency", "j", matrix.DefaultConcurrency, "cells run at once")
	f.BoolVar(&o.DryRun, "dry-run", false, "print the plan and every endpoint it would contact, and send nothing")
	f.Int64Var(&o.MaxRequests, "max-requests", 0, "cap on the model requests sent, retries included; a cell past it is recorded as stopped by the budget (0: no limit)")
	f.Int64Var(&o.MaxTokens, "max-tokens", 0, "refuse model requests once replies have used this many tokens, as providers report them (0: no limit)")
	f.Int64Var(&o.MaxOutputTokens, "max-output-tokens", 0, "cap each reply of the target under test at `N` tokens: its max_tokens option for every cell, over the file's (the mock target has no cap)")
	f.BoolVar(&o.Prefetch, "prefetch", false, "call each agent scenario's tainted tool for the model before its first turn, so a model that cannot call tools still reads the data (prefetch = true in a config)")
	f.StringVar(&o.BaseURL, "base-url", "", "base URL of the target's API, e.g. http://127.0.0.1:8000/v1 (default: the provider's environment variable; a config's base_url needs --trust-config)")
	f.IntVar(&o.MaxRetries, "max-retries", target.DefaultMaxRetries, "retries of a failed model request (429, 5xx, timeouts, malformed answers)")
	f.DurationVar(&o.RequestTimeout, "request-timeout", target.DefaultAttemptTimeout, "bound on each model request attempt")
	f.Float64Var(&o.RPS, "rps", 0, "requests per second to each provider, shared by all workers (0: no limit; 429s always slow every worker)")
	f.StringVar(&o.JudgeTarget, "judge-target", "", "the model --judge llm asks (default: the target under test)")
	f.StringVar(&o.JudgeBaseURL, "judge-base-url", "", "base URL of the judge target's API")
	f.StringVar(&o.AttackerTarget, "attacker-target", "", "the attacker model of the adaptive attack (strategies pair, tree, crescendo), e.g. openai:gpt-4o (default: the config's attacker_target, else mock:attacker, offline)")
	f.StringVar(&o.AttackerURL, "attacker-base-url", "", "base URL of the attacker model's API (--base-url applies to the target alone)")
	f.StringVar(&o.Cache, "cache", "", "cache model responses in `DIR`: a rerun sends no request already answered (repeats stay separate, and so do cells above temperature 0); a target's API key is needed only for a request the cache lacks")
	f.BoolVar(&o.TrustConfig, "trust-config", false, "let the config, dataset or .env file choose where requests (and your API key) go, which agent runs (runtime, runtime_options) and which paths outside its directory are read or written")
	o.MaxFileSize = matrix.DefaultMaxFileBytes
	f.Var(&o.MaxFileSize, "max-file-size", "refuse a config or dataset file larger than this (e.g. 64MiB)")
	o.MaxResponseBytes = target.DefaultMaxResponseBytes
	f.Var(&o.MaxResponseBytes, "max-response-bytes", "the largest model reply read (e.g. 16MiB); a larger one fails its cell and is not retried")
	f.IntVar(&o.MaxCells, "max-cells", DefaultMaxCells, fmt.Sprintf("plans over this many cells (or %d× as many model calls to network targets) ask for --yes; 0: no limit", networkCallsPerCell))
	f.BoolVarP(&o.Yes, "yes", "y", false, "run a plan over --max-cells without asking")
	f.BoolVar(&o.CSVRaw, "csv-raw", false, "with --output FILE.csv, write cells as they are: no ' before a leading =, +, -, @, tab or CR (which a spreadsheet would run as a formula)")
	if batch {
		f.BoolVar(&o.RepeatSummary, "repeat-summary", false, "with --output, after a run with repeats write the Python pikit's summary row for each combination: how many of its repeats succeeded (readers pass these rows over)")
		f.BoolVar(&o.Resume, "resume", false, "continue an interrupted run: keep the results already in the --output .jsonl, run only the missing cells")
		f.StringVar(&o.Shard, "shard", "", "run only shard `K/N` of the cells (1 <= K <= N; auto/N takes K from JOB_COMPLETION_INDEX)")
		f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress bar")
	}
}

// complete reads which flags were given and checks them; each error names
// its flag.
func (o *runOptions) complete(cmd *cobra.Command) error {
	o.temperature = cmd.Flags().Changed("temperature")
	o.dotenv = dotEnvOf(cmd.Context())
	o.maxResponseBytesSet = cmd.Flags().Changed("max-response-bytes")
	if o.MaxResponseBytes > 1<<30 {
		return usage(fmt.Errorf("--max-response-bytes: at most 1GiB, got %s", o.MaxResponseBytes.String()))
	}
	if o.Judge != "" && o.Judge != "rule" && o.Judge != "rule:pikit" && o.Judge != "match" && o.Judge != "llm" && o.Judge != "none" {
		return usage(fmt.Errorf("--judge: unknown judge %q; known: rule, rule:pikit, match, llm, none", o.Judge))
	}
	if o.temperature && !(o.Temperature >= 0 && o.Temperature <= 2) { // NaN fails both
		return usage(fmt.Errorf("--temperature: want a number from 0 to 2, got %v", o.Temperature))
	}
	if cmd.Flags().Changed("repeats") && o.Repeats < 1 {
		return usage(fmt.Errorf("--repeats: must be at least 1, got %d (leave it out to use the config's)", o.Repeats))
	}
	if o.Concurrency < 1 {
		return usage(fmt.Errorf("--concurrency: must be at least 1, got %d", o.Concurrency))
	}
	if o.MaxRetries < 0 {
		return usage(fmt.Errorf("--max-retries: must not be negative, got %d", o.MaxRetries))
	}
	if o.RequestTimeout <= 0 {
		return usage(fmt.Errorf("--request-timeout: must be positive, got %v", o.RequestTimeout))
	}
	if !(o.RPS >= 0) || math.IsInf(o.RPS, 0) {
		return usage(fmt.Errorf("--rps: want requests per second, 0 (no limit) or more, got %v", o.RPS))
	}
	if o.MaxCells < 0 {
		return usage(fmt.Errorf("--max-cells: must not be negative, got %d", o.MaxCells))
	}
	if o.JudgeBaseURL != "" && o.JudgeTarget == "" {
		return usage(errors.New("--judge-base-url needs --judge-target"))
	}
	if o.JudgeTarget != "" {
		if _, _, err := target.ParseSpec(o.JudgeTarget); err != nil {
			return usage(fmt.Errorf("--judge-target: %w", err))
		}
	}
	if o.AttackerTarget != "" {
		if _, _, err := target.ParseSpec(o.AttackerTarget); err != nil {
			return usage(fmt.Errorf("--attacker-target: %w", err))
		}
	}
	if o.AdaptiveOptions != "" {
		if err := json.Unmarshal([]byte(o.AdaptiveOptions), &o.adaptiveOpts); err != nil || o.adaptiveOpts == nil {
			msg := "want a JSON object"
			if err != nil {
				msg += fmt.Sprintf(" (%v)", err)
			}
			return usage(fmt.Errorf(`--adaptive-options: %s, e.g. '{"strategy": "tree", "max_rounds": 20}'`, msg))
		}
		if _, err := attack.New(attack.AdaptiveName, o.adaptiveOpts, 0); err != nil {
			return usage(fmt.Errorf("--adaptive-options: %w", err))
		}
	}
	if o.MaxRequests < 0 {
		return usage(fmt.Errorf("--max-requests: must not be negative, got %d", o.MaxRequests))
	}
	if o.MaxTokens < 0 {
		return usage(fmt.Errorf("--max-tokens: must not be negative, got %d", o.MaxTokens))
	}
	if cmd.Flags().Changed("max-output-tokens") && (o.MaxOutputTokens < 1 || o.MaxOutputTokens > math.MaxInt32) {
		return usage(fmt.Errorf("--max-output-tokens: want a positive number of tokens per reply (at most %d), got %d (--max-tokens is the run's token budget)", math.MaxInt32, o.MaxOutputTokens))
	}
	if err := o.s3.check(objstore.IsURL(o.Output), cmd.Flags()); err != nil {
		return err
	}
	if objstore.IsURL(o.Output) {
		u, err := objstore.ParseURL(o.Output)
		if err != nil {
			return usage(fmt.Errorf("--output: %w", err))
		}
		o.s3At = &u
		if o.CSVRaw || o.RepeatSummary {
			return usage(errors.New("an s3:// --output holds JSONL results: --csv-raw and --repeat-summary write files (pikit merge, then pikit report)"))
		}
	} else if o.Output != "" && !o.toStdout() && !report.KnownFormat(o.Output) {
		fmt.Fprintf(cmd.ErrOrStderr(), "pikit: %s: writing JSON, as the Python pikit does for an extension it has no format of (.jsonl, .json and .csv name one)\n", termsafe.Line(o.Output))
	}
	if o.CSVRaw && !strings.HasSuffix(strings.ToLower(o.Output), ".csv") {
		return usage(errors.New("--csv-raw applies only with --output FILE.csv"))
	}
	if o.RepeatSummary {
		switch {
		case o.Output == "":
			return usage(errors.New("--repeat-summary writes rows to --output FILE: give one"))
		case o.Resume, o.Shard != "":
			return usage(errors.New("--repeat-summary counts a whole run's repeats: not with --resume or --shard (merge the shards, then count them with pikit report)"))
		}
	}
	if o.Resume {
		if o.toStdout() {
			return usage(errors.New("--resume reads the results so far back from --output: standard output (-) cannot be read back; give --output FILE.jsonl"))
		}
		if o.Force {
			return usage(errors.New("--resume and --force contradict each other: --force starts over, --resume continues"))
		}
		if !strings.HasSuffix(strings.ToLower(o.Output), ".jsonl") && o.s3At == nil {
			return usage(errors.New("--resume needs --output FILE.jsonl or s3://BUCKET/PREFIX/ (the results so far)"))
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
	o.applyCase(cfg)
}

// applyCase overrides a config, or a dataset's case (after the options
// dataset.Expand applies itself), with the flags dataset.Options does not
// carry.
func (o *runOptions) applyCase(cfg *matrix.Config) {
	if len(o.Defenses) > 0 {
		cfg.SetDefenses(o.Defenses)
	}
	if o.adaptiveOpts != nil && matrix.HasAdaptive(cfg) {
		cfg.SetAttackOptions(attack.AdaptiveName, o.adaptiveOpts)
	}
	if o.AttackerTarget != "" {
		cfg.AttackerTarget = o.AttackerTarget
	}
	if o.Prefetch {
		cfg.Prefetch = true
	}
	if o.MaxOutputTokens > 0 && !isMock(cfg.TargetSpec) {
		// As if the file said max_tokens: results record it in their
		// target options, and it is part of the cells' keys.
		cfg.TargetOpts = withOption(cfg.TargetOpts, target.OptMaxTokens, o.MaxOutputTokens)
	}
}

// isMock reports whether a target spec names an offline mock, which takes
// no max_tokens option (its replies are short and not sampled).
func isMock(spec string) bool {
	provider, _, err := target.ParseSpec(spec)
	return err == nil && provider == "mock"
}

// execute runs planned cells, streaming results to --output (or into the
// stdout table), and prints the summary to stderr. groupBy picks the
// columns of the stdout table.
func (o *runOptions) execute(ctx context.Context, streams IO, src matrix.Source, groupBy []string) error {
	src, runner, err := o.prepare(streams, src)
	if err != nil || src == nil {
		return err
	}
	// planned is how many cells the run executes: the plan's, or what a
	// shard or a resume expects until the plan has been seen whole.
	planned, exact := src.Len(), true
	if runner.Skip != nil {
		planned, exact = runner.Expect, false
	}
	w, err := o.openOutput(ctx, streams, src, runner, &planned, &exact)
	if err != nil {
		return err
	}
	status := report.NewAggregator()
	table := report.NewAggregator(groupBy...)
	counted := runner.Counted
	bar := newProgress(streams.term, planned, o.Quiet)
	var encode func(matrix.Result) ([]byte, error)
	var enc report.Encoder
	if ew, ok := w.(interface{ Encoder() (report.Encoder, bool) }); ok {
		if e, ok := ew.Encoder(); ok {
			enc, encode = e, e.Encode
		}
	}
	cutShort := 0 // cells in flight that a signal ended (external agents)
	var repeats repeatTally
	sink := func(r matrix.Result, line []byte) error {
		var err error
		switch {
		case enc != nil:
			err = enc.Append(line) // flushed when the burst ends
		case w != nil:
			err = w.Write(r)
		}
		if err != nil {
			return writeError{outName(o.Output), err}
		}
		status.Add(r)
		if w == nil {
			table.Add(r)
		}
		if o.RepeatSummary {
			repeats.add(r)
		}
		bar.add(r)
		if r.Metadata["interrupted"] == true {
			cutShort++
		}
		return nil
	}
	var flush []func() error
	if enc != nil {
		flush = append(flush, enc.Flush)
	}
	var mu sync.Mutex // Counted runs on the scheduler's goroutine
	runner.Counted = func(n int) {
		mu.Lock()
		defer mu.Unlock()
		planned, exact = n, true
		if counted != nil {
			counted(n)
		}
	}
	stopRunning := running(ctx)
	runErr := runner.RunEncoded(o.cellContext(ctx, runner), src, encode, sink, flush...)
	stopRunning()
	bar.finish()
	mu.Lock()
	of := strconv.Itoa(planned)
	if !exact {
		of = "about " + of
	}
	mu.Unlock()
	if w != nil && o.RepeatSummary && runErr == nil {
		if enc != nil {
			runErr = enc.Flush()
		}
		for _, r := range repeats.summaries() {
			if runErr == nil {
				runErr = w.Write(r)
			}
		}
		if runErr != nil {
			runErr = writeError{outName(o.Output), runErr}
		}
	}
	if s3w, ok := w.(*s3Writer); ok && runErr == nil {
		// The shard's run ended (its failed cells too): one object.
		if enc != nil {
			runErr = enc.Flush()
		}
		if runErr == nil {
			runErr = o.finishS3(ctx, streams, s3w)
		} else {
			s3w.Close()
		}
	} else if w != nil {
		if err := w.Close(); err != nil && runErr == nil {
			runErr = writeError{outName(o.Output), err}
		}
	}
	o.writeCacheStats(streams, runner)
	sum := status.Summary()
	writeStatus(streams.ErrOut, sum, of)
	if warn := sum.ToolErrorWarning(); warn != "" {
		fmt.Fprintf(streams.ErrOut, "warning: %s\n", warn)
	}
	if w == nil && sum.Cells > 0 {
		if err := table.Summary().WriteText(streams.Out); err != nil {
			return err
		}
	} else if w != nil && !errors.As(runErr, new(writeError)) {
		fmt.Fprintf(streams.ErrOut, "results: %s\n", outName(o.Output))
	}
	resume := ""
	if o.Output != "" && !o.toStdout() {
		resume = "; run the same command with --resume to finish it"
	}
	switch {
	case errors.Is(runErr, matrix.ErrInterrupted), errors.Is(runErr, context.Canceled):
		where := ""
		switch {
		case o.toStdout():
			where = " and is on standard output"
		case o.Output != "":
			where = " and is in " + o.Output
		}
		how := "every cell that started finished" + where
		if cutShort > 0 {
			how = fmt.Sprintf("every cell that started is written%s; the %d in flight were ended, as runtime errors that say interrupted", where, cutShort)
		}
		return interrupted{fmt.Sprintf("interrupted after %d of %s cells (%s)%s", sum.Cells, of, how, resume)}
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

// writeError is a failure to write the results: the run says where it
// failed, not where the results are.
// toStdout reports whether --output is "-": the results go to standard
// output as JSONL, and everything the command says goes to stderr.
func (o *runOptions) toStdout() bool { return o.Output == "-" }

// createOutput opens the --output of a command that writes its results
// once they are all in (pikit run): a file, or standard output for "-".
func (o *runOptions) createOutput(streams IO) (report.Writer, error) {
	if o.toStdout() {
		return stdoutResults(streams), nil
	}
	w, err := report.CreateWith(o.Output, o.Force, report.CSVOptions{Raw: o.CSVRaw})
	if errors.Is(err, report.ErrExists) {
		return nil, usage(err)
	}
	return w, err
}

// stdoutResults writes results as JSONL to standard output (--output -);
// closing it flushes, and standard output stays open.
func stdoutResults(streams IO) report.Writer { return report.NewJSONL(streams.dataOut("jsonl")) }

type writeError struct {
	out string
	err error
}

func (e writeError) Error() string { return fmt.Sprintf("writing %s: %v", e.out, e.err) }
func (e writeError) Unwrap() error { return e.err }

// cellContext sets how a first signal (which cancels ctx) ends a run: no
// cell starts after it (runner.Stop). pikit's own agent loop sends only
// requests, so the cells in flight then finish, under a context the signal
// does not cancel, and are written like any other; a second signal ends
// the process at once (watchSignals) with every result before it on
// disk. An external agent (the proxy's, MCP's, a runtime's) is a process
// group of its own that such an exit would leave running, so the first
// signal ends it: each cell in flight is written as interrupted, a
// runtime error that --resume runs again.
func (o *runOptions) cellContext(ctx context.Context, runner *matrix.Runner) context.Context {
	runner.Stop = ctx.Done()
	if runner.Driver != nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// interrupted ends a run that a signal stopped: its text says how far the
// run got, and it counts as context.Canceled (exit 130).
type interrupted struct{ msg string }

func (e interrupted) Error() string        { return e.msg }
func (e interrupted) Is(target error) bool { return target == context.Canceled }

// writeCacheStats says what the response cache answered, and how many
// requests it could not answer that had no API key to go out with.
func (o *runOptions) writeCacheStats(streams IO, runner *matrix.Runner) {
	if runner.Cache == nil {
		return
	}
	hits, misses := runner.Cache.Stats()
	fmt.Fprintf(streams.ErrOut, "cache %s: %d hits, %d misses\n", o.Cache, hits, misses)
	if n := o.keyMisses.Load(); n > 0 {
		fmt.Fprintf(streams.ErrOut, "%d requests were not in the cache and were not sent: their target's API key is missing; their cells failed (set the key and run again to fill them in)\n", n)
	}
}

// prepare does everything before the first cell: it takes the shard,
// checks the plan's size (asking for --yes over --max-cells), prints the
// plan for --dry-run (returning a nil source: nothing to run), refuses an
// --output that is one of the inputs and a file-chosen base URL that would
// receive an API key, and opens every target and the cache. Nothing is
// sent or written before it returns.
func (o *runOptions) prepare(streams IO, src matrix.Source) (matrix.Source, *matrix.Runner, error) {
	if (o.adaptiveOpts != nil || o.AttackerTarget != "" || o.AttackerURL != "") && !slices.ContainsFunc(matrix.Configs(src), matrix.HasAdaptive) {
		flag := "--adaptive-options"
		if o.adaptiveOpts == nil {
			flag = "--attacker-target"
			if o.AttackerTarget == "" {
				flag = "--attacker-base-url"
			}
		}
		return nil, nil, usage(fmt.Errorf("%s: no cell of the plan runs the adaptive attack (add --attacks adaptive)", flag))
	}
	if o.JudgeTarget != "" && !slices.ContainsFunc(matrix.Configs(src), func(c *matrix.Config) bool { return c.JudgeType == "llm" }) {
		return nil, nil, usage(errors.New("--judge-target: no cell of the plan uses the llm judge, so no judge model is asked (add --judge llm)"))
	}
	if err := o.checkSelfJudged(src); err != nil {
		return nil, nil, err
	}
	count := matrix.CountPlan(src)
	planned := count.Cells
	if o.DryRun && o.shardN > 0 && o.MaxCells > 0 && planned > o.MaxCells {
		// Too large to split cell by cell for a preview.
		fmt.Fprintf(streams.ErrOut, "shard %d/%d: about %d of %d cells (split exactly when it runs); the whole plan:\n", o.shardK, o.shardN, ceilDiv(planned, o.shardN), planned)
		return nil, nil, o.dryRun(streams, src, count)
	}
	if !o.DryRun {
		// What is wrong with the command is said before anything is asked.
		if o.s3At == nil {
			if err := checkOutput("--output", o.Output, o.inputs...); err != nil {
				return nil, nil, err
			}
		} else if err := o.s3.s3Refusal(o.dotenv, o.TrustConfig); err != nil {
			return nil, nil, err
		}
		if err := o.trustCheck(src); err != nil {
			return nil, nil, err
		}
		if err := o.confirm(streams, count, max(o.shardN, 1)); err != nil {
			return nil, nil, err
		}
	}
	inShard := func(c matrix.Cell) bool { return matrix.Shard(c.Key, o.shardN) == o.shardK-1 }
	if o.DryRun {
		if o.shardN > 0 {
			// A preview of a plan under --max-cells: split it exactly.
			src = matrix.Filtered(src, inShard)
			fmt.Fprintf(streams.ErrOut, "shard %d/%d: %d of %d cells\n", o.shardK, o.shardN, src.Len(), planned)
			count = matrix.CountPlan(src)
		}
		return nil, nil, o.dryRun(streams, src, count)
	}
	runner := o.runner()
	if o.shardN > 0 {
		// The shard is taken as the plan streams to the workers: the
		// first cell starts at once and no list of cells is kept.
		runner.Skip = func(c matrix.Cell) bool { return !inShard(c) }
		runner.Expect = ceilDiv(planned, o.shardN)
		fmt.Fprintf(streams.ErrOut, "shard %d/%d: about %d of %d cells\n", o.shardK, o.shardN, runner.Expect, planned)
	}
	if err := preflight(streams, runner, src, o); err != nil {
		return nil, nil, err
	}
	if runner.Driver == nil {
		d, err := runtimeDriver(streams, src, o)
		if err != nil {
			return nil, nil, usage(err)
		}
		runner.Driver = d
	}
	if o.Cache != "" {
		c, err := target.OpenCache(o.Cache)
		if err != nil {
			return nil, nil, usage(err)
		}
		runner.Cache = c
	}
	return src, &runner, nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// confirm lets a plan over --max-cells (or over networkCallsPerCell times
// as many model calls to network targets) run only with --yes, or when
// the user says yes at a terminal. shards divides the counts: each shard
// is what one process runs.
func (o *runOptions) confirm(streams IO, c matrix.Count, shards int) error {
	cells, calls := ceilDiv(c.Cells, shards), ceilDiv(c.NetworkCalls, shards)
	limit := o.MaxCells
	if o.Yes || limit == 0 || (cells <= limit && calls <= networkCallsPerCell*limit) {
		return nil
	}
	what := fmt.Sprintf("the plan has %d cells", cells)
	if calls > 0 {
		what += fmt.Sprintf(" and may send up to %d model requests to network targets", calls)
	}
	if shards > 1 {
		what = fmt.Sprintf("this shard (1/%d of %d cells) has %d cells", shards, c.Cells, cells)
	}
	if !isTerminal(streams.In) {
		return usage(fmt.Errorf("%s, over --max-cells %d: pass --yes to run it (--dry-run shows it, --max-cells raises the bound)", what, limit))
	}
	fmt.Fprintf(streams.ErrOut, "%s (over --max-cells %d). Run it? [y/N] ", what, limit)
	answer, _ := bufio.NewReader(streams.In).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
		return usage(errors.New("not confirmed; nothing ran"))
	}
	return nil
}

// endpoint is one place a run sends requests to.
type endpoint struct {
	target.Endpoint
	role      string        // "target" or "judge"
	fileURL   string        // a base URL the file set for an offline target: used if --target names a network one
	untrusted *matrix.Error // a file chose the URL and a key would go there
	label     bool          // the cells' agent talks to its own model: the target only labels results
	judged    bool          // …but an LLM judge without a target of its own asks it
}

// labelsTarget reports whether the run's driver leaves the target alone:
// pikit mcp run's agent command talks to its own model, and the cell's
// target only labels its results.
func (o *runOptions) labelsTarget() bool {
	l, ok := o.driver.(interface{ LabelsTarget() bool })
	return ok && l.LabelsTarget()
}

// endpoints lists every endpoint the cells of src (and an LLM judge) would
// contact, once each, in plan order.
func (o *runOptions) endpoints(src matrix.Source) ([]endpoint, error) {
	var out []endpoint
	seen := map[string]bool{}
	add := func(e endpoint) {
		id := e.role + "\x00" + e.Spec + "\x00" + e.URL + "\x00" + e.From
		if !seen[id] {
			seen[id] = true
			out = append(out, e)
		}
	}
	for _, cfg := range matrix.Configs(src) {
		opts := target.Options(cfg.TargetOpts)
		_, fromFile := opts[target.OptBaseURL]
		if o.BaseURL != "" {
			opts, fromFile = withOption(opts, target.OptBaseURL, o.BaseURL), false
		}
		te, err := target.EndpointOf(cfg.TargetSpec, opts)
		if err != nil {
			return nil, usage(fmt.Errorf("target %s: %w", cfg.TargetSpec, err))
		}
		e := endpoint{Endpoint: te, role: "target"}
		if o.labelsTarget() {
			e.label = true
			e.judged = cfg.JudgeType == "llm" && o.JudgeTarget == ""
			if !e.judged {
				add(e) // nothing is sent to it: no URL to check
				continue
			}
		}
		if o.BaseURL != "" {
			e.From = "--base-url"
		}
		if fromFile && te.Offline() {
			e.fileURL = fmt.Sprint(opts[target.OptBaseURL])
		} else if fromFile {
			key := "target_options." + target.OptBaseURL
			e.From = cfg.Source
			if line := cfg.Line(key); line > 0 {
				e.From += fmt.Sprintf(":%d", line)
			}
			if !o.TrustConfig { // every prompt, and any key, would go there
				what := "every cell's prompts and data"
				if te.KeyEnv != "" {
					what += " and your " + te.KeyEnv
				}
				e.untrusted = &matrix.Error{File: cfg.Source, Line: cfg.Line(key), Case: cfg.CaseID, Key: key,
					Msg: fmt.Sprintf("%s comes from this file, and the run would send it %s; "+
						"pikit sends requests only where you chose: pass --base-url, or set %s, or add --trust-config if you trust this file",
						te.URL, what, te.BaseURLEnv)}
			}
		}
		o.checkDotEnv(&e)
		add(e)
	}
	attackers := map[string]bool{}
	for _, cfg := range matrix.Configs(src) {
		spec, ok := cfg.Attacker()
		if !ok || attackers[spec] {
			continue
		}
		attackers[spec] = true
		opts := target.Options{}
		if o.AttackerURL != "" {
			opts[target.OptBaseURL] = o.AttackerURL
		}
		ae, err := target.EndpointOf(spec, opts)
		if err != nil {
			return nil, usage(fmt.Errorf("attacker target %s: %w", spec, err))
		}
		if o.AttackerURL != "" {
			ae.From = "--attacker-base-url"
		}
		e := endpoint{Endpoint: ae, role: "attacker"}
		o.checkDotEnv(&e)
		add(e)
	}
	if o.JudgeTarget != "" {
		opts := target.Options{}
		from := ""
		if o.JudgeBaseURL != "" {
			opts[target.OptBaseURL], from = o.JudgeBaseURL, "--judge-base-url"
		}
		je, err := target.EndpointOf(o.JudgeTarget, opts)
		if err != nil {
			return nil, usage(fmt.Errorf("--judge-target: %w", err))
		}
		if from != "" {
			je.From = from
		}
		e := endpoint{Endpoint: je, role: "judge"}
		o.checkDotEnv(&e)
		add(e)
	}
	return out, nil
}

// checkDotEnv marks an endpoint whose URL a .env file chose (for a
// provider whose key it did not set) as needing --trust-config: the key
// from the user's environment would follow it.
func (o *runOptions) checkDotEnv(e *endpoint) {
	if o.TrustConfig || e.untrusted != nil || e.Offline() || e.BaseURLEnv == "" || e.From != e.BaseURLEnv || !o.dotenv.urls[e.BaseURLEnv] {
		return
	}
	what := "every cell's prompts and data"
	if e.KeyEnv != "" {
		what += " and your " + e.KeyEnv + " from the environment"
	}
	e.From = e.BaseURLEnv + " in " + o.dotenv.path
	e.untrusted = &matrix.Error{File: o.dotenv.path,
		Msg: fmt.Sprintf("%s sets %s=%s, and the run would send it %s; a .env file may move a provider only together with its own key: "+
			"pass --base-url, set %s in your environment, put the key in the same .env, or add --trust-config", o.dotenv.path, e.BaseURLEnv, e.URL, what, e.BaseURLEnv)}
}

// refusals lists what the files of src choose that only --trust-config
// allows: a path outside a file's directory (after symbolic links), a URL
// requests would go to (a file's base_url, or a .env's), and an agent that
// would run (a runtime, held in o.refused). eps are src's endpoints.
func (o *runOptions) refusals(src matrix.Source, eps []endpoint) []*matrix.Error {
	if o.TrustConfig {
		return nil
	}
	var out []*matrix.Error
	for _, cfg := range matrix.Configs(src) {
		out = append(out, outsidePaths(cfg, "sends to a model")...)
	}
	for _, e := range eps {
		if e.untrusted != nil {
			out = append(out, e.untrusted)
		}
	}
	return append(out, o.refused...)
}

// outsidePaths refuses each path of cfg that leaves its file's directory
// (carrier_path, output_path); use says where what pikit reads goes.
func outsidePaths(cfg *matrix.Config, use string) []*matrix.Error {
	var out []*matrix.Error
	for _, key := range cfg.OutsidePaths() {
		out = append(out, &matrix.Error{File: cfg.Source, Line: cfg.Line(key), Case: cfg.CaseID, Key: key,
			Msg: cfg.OutsideReason(key) + ": a file may not choose what pikit reads (and " + use + ") or writes elsewhere; move the file beside the config (a plain copy, not a link), or give --trust-config"})
	}
	return out
}

// trustCheck refuses a run that reads or writes a path, sends requests
// to a URL, or runs a program that a config, dataset or .env file chose,
// unless --trust-config says the file may.
func (o *runOptions) trustCheck(src matrix.Source) error {
	eps, err := o.endpoints(src)
	if err != nil {
		return err
	}
	if r := o.refusals(src, eps); len(r) > 0 {
		return usage(r[0])
	}
	return nil
}

// dryRun prints the plan and its endpoints.
func (o *runOptions) dryRun(streams IO, src matrix.Source, c matrix.Count) error {
	eps, err := o.endpoints(src)
	if err != nil {
		return err
	}
	external, web := false, false
	for _, cfg := range matrix.Configs(src) {
		external = external || cfg.Driven != "" || cfg.Via != "" || cfg.Runtime != ""
		web = web || cfg.Driven == "web"
	}
	bound := ""
	switch {
	case web:
		// A browser agent talks to its own model: pikit neither opens the
		// target nor sees a request.
		bound = "your agent's own, to its own model (pikit serves it web pages and sends nothing; --agent-timeout bounds each run)"
	case external:
		bound = "as many as your agent makes in each run (pikit does not bound them: --agent-timeout, --max-requests and --max-tokens do)"
	}
	out := streams.Out
	if o.toStdout() {
		out = streams.ErrOut // stdout is for results alone
	}
	writePlan(out, c, bound)
	o.writeReplyCap(out, src)
	writeEndpoints(out, eps)
	if o.s3At != nil {
		o.writeS3(out)
	}
	refused := o.refusals(src, eps)
	if o.s3At != nil {
		if err := o.s3.s3Refusal(o.dotenv, o.TrustConfig); err != nil {
			refused = append(refused, &matrix.Error{File: o.dotenv.path, Msg: err.Error()})
		}
	}
	writeRefusals(out, refused)
	return nil
}

// writeReplyCap says what caps each reply of the target under test:
// --max-output-tokens, or the max_tokens option the files set (each
// value once, with where it was first set); nothing when none does.
func (o *runOptions) writeReplyCap(w io.Writer, src matrix.Source) {
	if o.MaxOutputTokens > 0 {
		fmt.Fprintf(w, "reply cap: %d tokens per reply of the target under test (--max-output-tokens, over the files' max_tokens)", o.MaxOutputTokens)
		if slices.ContainsFunc(matrix.Configs(src), func(c *matrix.Config) bool { return isMock(c.TargetSpec) }) {
			fmt.Fprint(w, "; the mock target has no cap")
		}
		fmt.Fprintln(w)
		return
	}
	const shown = 5
	var parts []string
	seen := map[string]bool{}
	for _, cfg := range matrix.Configs(src) {
		v, ok := cfg.TargetOpts[target.OptMaxTokens]
		if !ok {
			continue
		}
		val := fmt.Sprint(v)
		if seen[val] {
			continue
		}
		seen[val] = true
		if len(parts) == shown {
			parts = append(parts, "…")
			break
		}
		where := cfg.Source
		if line := cfg.Line("target_options." + target.OptMaxTokens); line > 0 {
			where += fmt.Sprintf(":%d", line)
		}
		parts = append(parts, fmt.Sprintf("max_tokens %s (%s)", val, where))
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "reply cap: %s\n", strings.Join(parts, ", "))
	}
}

// maxRefusalsShown bounds the refusals a dry run lists (a dataset may
// repeat one in every case).
const maxRefusalsShown = 20

// writeRefusals lists what a run would refuse without --trust-config,
// once each.
func writeRefusals(w io.Writer, refused []*matrix.Error) {
	if len(refused) == 0 {
		return
	}
	fmt.Fprintln(w, "REFUSED without --trust-config (a file chose it):")
	seen := map[string]bool{}
	shown := 0
	for _, r := range refused {
		msg := r.Error()
		if seen[msg] {
			continue
		}
		seen[msg] = true
		if shown == maxRefusalsShown {
			fmt.Fprintln(w, "  … and more")
			break
		}
		shown++
		fmt.Fprintf(w, "  %s\n", msg)
	}
}

// writeEndpoints prints where a run would send requests.
func writeEndpoints(w io.Writer, eps []endpoint) {
	fmt.Fprintln(w, "endpoints:")
	for _, e := range eps {
		role := ""
		if e.role == "judge" || e.role == "attacker" {
			role = e.role + " "
		}
		if e.label && !e.judged {
			fmt.Fprintf(w, "  %s%s: labels the results only (the agent command talks to its own model; pikit sends it nothing)\n", role, e.Spec)
			continue
		}
		if e.Offline() {
			fmt.Fprintf(w, "  %s%s: offline, nothing is sent", role, e.Spec)
			if e.fileURL != "" {
				fmt.Fprintf(w, " (the file's base_url %s would apply to a network --target, and needs --trust-config)", e.fileURL)
			}
			fmt.Fprintln(w)
			continue
		}
		key := "no API key"
		if e.KeyEnv != "" {
			key = "with the key in " + e.KeyEnv
		}
		fmt.Fprintf(w, "  %s%s: %s (from %s), %s", role, e.Spec, e.URL, e.From, key)
		if e.judged {
			fmt.Fprint(w, "; the LLM judge asks it (the agent command talks to its own model)")
		}
		if e.untrusted != nil {
			fmt.Fprint(w, " — REFUSED without --trust-config: the file chose this URL")
		}
		fmt.Fprintln(w)
	}
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
		if o.maxResponseBytesSet {
			opts = withOption(opts, target.OptMaxResponseBytes, int64(o.MaxResponseBytes))
		}
		t, err := target.OpenWith(spec, opts, policy, limiter)
		if errors.Is(err, target.ErrMissingKey) && o.Cache != "" {
			// The cache may answer every request: only one it cannot
			// answer needs the key.
			return keyless{err: err, cache: o.Cache, misses: &o.keyMisses}, nil
		}
		return t, err
	}
	r := matrix.Runner{Concurrency: o.Concurrency, MaxRequests: o.MaxRequests, MaxTokens: o.MaxTokens, Driver: o.driver, Version: version()}
	r.Open = func(spec string, opts target.Options) (target.Target, error) {
		if o.BaseURL != "" && spec != o.JudgeTarget {
			opts = withOption(opts, target.OptBaseURL, o.BaseURL)
		}
		return open(spec, opts)
	}
	// The attacker model is opened apart: --base-url moves the target
	// under test, not the attacker (nor its key) with it.
	r.OpenAttacker = open
	if o.AttackerURL != "" {
		r.AttackerOptions = target.Options{target.OptBaseURL: o.AttackerURL}
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

// keyless stands for a network target whose API key is missing, in a run
// with --cache: the cache may hold the answer to every request the run
// makes. A request it does not hold fails its cell, saying so; it is never
// sent.
type keyless struct {
	err    error // the open's, wrapping target.ErrMissingKey
	cache  string
	misses *atomic.Int64
}

func (k keyless) Chat(context.Context, target.Request) (target.Response, error) {
	k.misses.Add(1)
	return target.Response{}, fmt.Errorf("%w; the cache %s holds no answer to this request, and without the key it cannot be sent", k.err, k.cache)
}

// preflight opens every target the run will use before any cell runs, so a
// missing API key or a bad option is exit 2 with nothing sent or written.
// With --cache, a missing key is a warning: the cache may answer every
// request, and a cell whose request it cannot answer fails.
func preflight(streams IO, r matrix.Runner, src matrix.Source, o *runOptions) error {
	seen := map[string]bool{}
	// check opens spec once; role names a target that is not the one
	// under test. Open's errors already name the spec.
	check := func(open func(string, target.Options) (target.Target, error), role, spec string, opts map[string]any) error {
		id := fmt.Sprint(role, spec, opts)
		if seen[id] {
			return nil
		}
		seen[id] = true
		t, err := open(spec, target.Options(opts))
		if err != nil {
			return usage(fmt.Errorf("%s%w", role, err))
		}
		if k, ok := t.(keyless); ok {
			fmt.Fprintf(streams.ErrOut, "warning: %s%v; --cache %s answers the requests it holds, and a cell with a request it does not hold fails\n", role, k.err, o.Cache)
		}
		return nil
	}
	for _, cfg := range matrix.Configs(src) {
		if err := check(r.Open, "", cfg.TargetSpec, cfg.TargetOpts); err != nil {
			return err
		}
		if spec, ok := cfg.Attacker(); ok {
			if err := check(r.OpenAttacker, "attacker ", spec, r.AttackerOptions); err != nil {
				return err
			}
		}
	}
	if o.JudgeTarget != "" {
		return check(r.Open, "judge ", o.JudgeTarget, r.JudgeOptions)
	}
	return nil
}

// openOutput opens the --output file, if any, before the first cell: nil
// when results go to the table. With
// --resume it keeps the results already there and has runner skip their
// cells, lowering planned (exact says whether it is a count or an
// expectation) by their number; a file whose keys are not all in the plan
// is refused.
func (o *runOptions) openOutput(ctx context.Context, streams IO, src matrix.Source, runner *matrix.Runner, planned *int, exact *bool) (_ report.Writer, err error) {
	switch {
	case o.Output == "":
		return nil, nil
	case o.toStdout():
		return stdoutResults(streams), nil // never resumed (complete)
	}
	var done map[string]bool
	var dropped int
	var s3w *s3Writer
	if o.s3At != nil {
		if s3w, done, dropped, err = o.openS3Output(ctx); err != nil {
			return nil, err
		}
		if len(done) == 0 && dropped == 0 {
			return s3w, nil
		}
		defer func() {
			if err != nil {
				s3w.Close()
			}
		}()
	} else {
		_, statErr := os.Stat(o.Output)
		if !o.Resume || errors.Is(statErr, os.ErrNotExist) {
			w, err := report.CreateWith(o.Output, o.Force || o.Resume, report.CSVOptions{Raw: o.CSVRaw})
			if errors.Is(err, report.ErrExists) {
				return nil, usage(fmt.Errorf("%w, or --resume to continue it", err))
			}
			return w, err
		}
		if done, dropped, err = report.Resume(o.Output); err != nil {
			return nil, usage(err)
		}
	}
	foreign := func(n int) error {
		return fmt.Errorf("%s holds %d results whose keys are not in this plan: it was written by a different config (or options); use another --output, or --force to start over", o.Output, n)
	}
	checked := src.Len() <= resumeCheckCells
	if checked {
		// Small enough to check before anything runs that every result
		// on disk is one of this plan's.
		found := 0
		for i := 0; i < src.Len(); i++ {
			if done[src.Cell(i).Key] {
				found++
			}
		}
		if found != len(done) {
			return nil, usage(foreign(len(done) - found))
		}
	}
	// The cells done are skipped as the plan streams; a plan too large to
	// check first is checked once it has been seen whole.
	inShard, found := runner.Skip, 0
	runner.Skip = func(c matrix.Cell) bool {
		if inShard != nil && inShard(c) {
			return true
		}
		if done[c.Key] {
			found++
			return true
		}
		return false
	}
	counted := runner.Counted
	runner.Counted = func(n int) {
		if found != len(done) {
			fmt.Fprintf(streams.ErrOut, "warning: %v\n", foreign(len(done)-found))
		}
		if counted != nil {
			counted(n)
		}
	}
	*planned = max(*planned-len(done), 0)
	*exact = *exact && checked
	runner.Expect = *planned
	about := ""
	if !*exact {
		about = "about "
	}
	fmt.Fprintf(streams.ErrOut, "resuming %s: %d cells done, %s%d to run", o.Output, len(done), about, *planned)
	if dropped > 0 {
		fmt.Fprintf(streams.ErrOut, " (%d failed or partial lines dropped, to be rerun)", dropped)
	}
	fmt.Fprintln(streams.ErrOut)
	if s3w != nil {
		return s3w, nil
	}
	return report.Append(o.Output)
}

// resumeCheckCells bounds the plans whose every key --resume checks
// against the results file before it runs (a second or so): a larger plan
// starts at once and is checked as it streams.
const resumeCheckCells = 2_000_000

// writePlan prints what a run would do, without sending anything: the
// cells per value of each axis, counted from the axes (a plan of a billion
// cells prints at once).
//
// external, when set, says what bounds the model calls of cells whose
// agents are the user's own (the proxy, MCP, a runtime, pikit web): they
// choose how many they make.
func writePlan(w io.Writer, c matrix.Count, external string) {
	for _, a := range c.Axes {
		parts := make([]string, len(a.Values))
		for i, v := range a.Values {
			parts[i] = fmt.Sprintf("%s %d", v.Value, v.Cells)
		}
		fmt.Fprintf(w, "%-8s %s\n", a.Field+":", strings.Join(parts, ", "))
	}
	if external != "" {
		fmt.Fprintf(w, "cells:   %d\nmodel calls: %s; nothing was sent\n", c.Cells, external)
		return
	}
	if c.Adaptive > 0 {
		fmt.Fprintf(w, "cells:   %d, %d of them adaptive\nmodel calls: at most %d, %d of them to network targets (max_steps per cell, plus one per cell for an LLM judge; an adaptive cell runs up to max_rounds times), and at most %d to attacker models (max_tokens and --max-tokens bound tokens); nothing was sent\n", c.Cells, c.Adaptive, c.MaxCalls, c.NetworkCalls, c.AttackerCalls)
		return
	}
	fmt.Fprintf(w, "cells:   %d\nmodel calls: at most %d, %d of them to network targets (max_steps per cell, plus one per cell for an LLM judge); nothing was sent\n", c.Cells, c.MaxCalls, c.NetworkCalls)
}

// writeStatus prints the summary every run ends with.
func writeStatus(w io.Writer, s report.Summary, planned string) {
	var parts []string
	for _, o := range judge.Outcomes {
		if c := s.Outcomes[o]; c > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", o, c))
		}
	}
	fmt.Fprintf(w, "%d/%s cells run · attack success %s · runtime errors %d", s.Cells, planned, s.ASR, s.Errors)
	if s.Retries > 0 {
		fmt.Fprintf(w, " · %d of %d model requests were retries", s.Retries, s.Attempts)
	}
	fmt.Fprintln(w)
	if len(parts) > 0 {
		fmt.Fprintf(w, "outcomes: %s\n", strings.Join(parts, ", "))
	}
}

// checkSelfJudged refuses a plan whose benchmark cases an LLM judge grades
// when no --judge-target names the judge model: the judge would be the
// model under test, grading its own answers, and a benchmark's figure must
// not rest on that.
func (o *runOptions) checkSelfJudged(src matrix.Source) error {
	if o.JudgeTarget != "" {
		return nil
	}
	n, first := 0, (*matrix.Config)(nil)
	for _, c := range matrix.Configs(src) {
		if c.JudgeType == "llm" && c.Benchmark != "" {
			if n++; first == nil {
				first = c
			}
		}
	}
	if n == 0 {
		return nil
	}
	what := first.Benchmark
	if first.CaseID != "" {
		what += " case " + termsafe.Line(first.CaseID)
	}
	return usage(fmt.Errorf("%d benchmark case(s) are graded by the LLM judge (the first: %s), and no --judge-target names the judge model, so the model under test would grade its own answers; give --judge-target SPEC (a model other than the one tested, e.g. openai:gpt-4o-mini), or grade by rule with --judge rule", n, what))
}
