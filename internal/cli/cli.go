// Package cli is the pikit command line: one file per subcommand, each with
// an options struct and a run function, built on cobra. Main is the whole
// program; cmd/pikit only exits with its status.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/pikit-go/pikit/dataset"
	"github.com/pikit-go/pikit/internal/termsafe"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/method"
	"github.com/pikit-go/pikit/report"
	"github.com/pikit-go/pikit/target"
)

// Exit statuses.
const (
	ExitOK          = 0   // the run completed and no cell errored
	ExitFailed      = 1   // a cell errored, or a gate tripped
	ExitUsage       = 2   // bad usage or config: nothing ran, nothing was written
	ExitInterrupted = 130 // stopped by a signal
)

// IO holds the streams a command uses; tests give buffers.
type IO struct {
	In     io.Reader
	Out    io.Writer // data: tables, results
	ErrOut io.Writer // status: summaries, warnings, errors
	// term is ErrOut before Run made it terminal-safe: the progress bar
	// draws on it (its own text, with the carriage returns it needs).
	term io.Writer
	// rawOut is Out before Run made it terminal-safe: data for programs
	// (CSV to a file or a pipe) goes there byte for byte; see dataOut.
	rawOut io.Writer
}

// dataOut returns where a command writes data in a format: the raw stdout
// for CSV or JSONL results that are not going to a terminal (a file or a
// program gets the values as they are), else the terminal-safe Out (the
// JSON stays valid, see termsafe).
func (s IO) dataOut(format string) io.Writer {
	if (format == "csv" || format == "jsonl") && s.rawOut != nil && !isTerminal(s.rawOut) {
		return s.rawOut
	}
	return s.Out
}

// isTerminal reports whether a stream (stdin, stdout or stderr) is a
// terminal.
func isTerminal(stream any) bool {
	f, ok := stream.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// usageError marks an error as bad usage or config (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usage(err error) error { return usageError{err} }

// errFailed marks a run that completed with errored cells (exit 1); its
// summary is already printed.
var errFailed = errors.New("some cells failed")

// exitCode maps an error to an exit status, in one place.
func exitCode(err error) int {
	var ue usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.As(err, &ue), errors.Is(err, matrix.ErrConfig), errors.Is(err, method.ErrUnknown),
		errors.Is(err, method.ErrOption), errors.Is(err, dataset.ErrUnknown), errors.Is(err, report.ErrExists), errors.Is(err, report.ErrNotRegular),
		errors.Is(err, target.ErrMissingKey):
		return ExitUsage
	}
	return ExitFailed
}

// Main runs the pikit command line with the process's arguments and streams
// and returns the exit status. The first SIGINT or SIGTERM cancels the run
// (in-flight cells finish or are dropped, results on disk stay valid); a
// second one exits at once.
func Main() int {
	tuneGC()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	state := &runState{}
	ctx = withRunState(ctx, state)
	go watchSignals(sigs, cancel, os.Stderr, func() { os.Exit(ExitInterrupted) }, state.busy)
	env, err := loadDotEnv("", os.Stderr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pikit: %s\n", termsafe.String(err.Error()))
		return ExitUsage
	}
	return Run(withDotEnv(ctx, env), os.Args[1:], IO{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
}

// dotEnv is what a .env file in the working directory chose: the base
// URL variables it set for a provider whose key it did not also set. Keys
// from the environment would follow such a URL, so it counts as a file's
// choice (--trust-config), not the user's.
type dotEnv struct {
	path string
	urls map[string]bool // base URL variables, e.g. OPENAI_BASE_URL
	aws  []string        // the AWS_ variables it set (see s3Refusal)
}

type dotEnvKey struct{}

func withDotEnv(ctx context.Context, env dotEnv) context.Context {
	return context.WithValue(ctx, dotEnvKey{}, env)
}

// dotEnvOf returns what the .env file loaded at start-up chose.
func dotEnvOf(ctx context.Context) dotEnv {
	if ctx == nil {
		return dotEnv{}
	}
	env, _ := ctx.Value(dotEnvKey{}).(dotEnv)
	return env
}

// loadDotEnv reads API keys from ./.env (the real environment wins) and
// says on errOut when it also moved a provider's base URL: every key of
// that provider goes there, so a .env file from someone else must not do
// it silently. A base URL whose provider's key the same file does not set
// is returned in urls: a run that would send there needs --trust-config.
func loadDotEnv(path string, errOut io.Writer) (dotEnv, error) {
	set, err := target.LoadDotEnvVars(path)
	if err != nil {
		return dotEnv{}, err
	}
	if path == "" {
		path = target.DotEnvFile
	}
	env := dotEnv{path: path}
	for _, name := range set {
		if strings.HasPrefix(name, "AWS_") {
			env.aws = append(env.aws, name)
			if strings.HasPrefix(name, "AWS_ENDPOINT_URL") {
				fmt.Fprintf(errOut, "pikit: %s sets %s=%s: s3:// results, and the AWS credentials that sign them, go there\n",
					path, name, termsafe.Line(target.Redact(os.Getenv(name))))
			}
		}
		p, ok := providerOfBaseURL(name)
		if !ok {
			continue
		}
		fmt.Fprintf(errOut, "pikit: %s sets %s=%s: requests to that provider, and its API key, go there\n",
			path, name, termsafe.Line(target.Redact(os.Getenv(name))))
		if p.KeyEnv == "" || !slices.Contains(set, p.KeyEnv) {
			if env.urls == nil {
				env.urls = map[string]bool{}
			}
			env.urls[name] = true
		}
	}
	return env, nil
}

// providerOfBaseURL returns the provider whose base URL variable is name.
func providerOfBaseURL(name string) (target.Provider, bool) {
	for _, p := range target.Providers() {
		if p.BaseURLEnv == name {
			return p, true
		}
	}
	return target.Provider{}, false
}

// tuneGC trades a little memory for CPU: a run's live heap is small and
// flat (results stream to disk), but every cell allocates, so the default
// GOGC of 100 collects every few hundred cells. Unless the user set GOGC,
// collect at 8x the live heap, under a 1 GiB soft limit.
func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	debug.SetGCPercent(800)
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(1 << 30)
	}
}

// watchSignals acts on SIGINT and SIGTERM. With cells in flight (busy),
// the first cancels the run, which lets them finish or drops them with
// every result so far on disk, and a second calls exit. With none (an
// import, a plan being built, a report), the first calls exit at once:
// there is nothing to finish, and such a phase may not watch the context.
func watchSignals(sigs <-chan os.Signal, cancel func(), errOut io.Writer, exit func(), busy func() bool) {
	if _, ok := <-sigs; !ok {
		return
	}
	if busy == nil || !busy() {
		fmt.Fprintln(errOut, "pikit: interrupted")
		cancel()
		exit()
		return
	}
	fmt.Fprintln(errOut, "pikit: interrupted; finishing cells in flight (press Ctrl-C again to quit now)")
	cancel()
	if _, ok := <-sigs; ok {
		exit()
	}
}

// runState says whether a command has cells (or served sessions) in
// flight, for watchSignals.
type runState struct{ inFlight atomic.Int32 }

func (s *runState) busy() bool { return s.inFlight.Load() > 0 }

type runStateKey struct{}

func withRunState(ctx context.Context, s *runState) context.Context {
	return context.WithValue(ctx, runStateKey{}, s)
}

// running marks cells in flight until the returned function is called: a
// first signal then lets them finish instead of ending the process.
func running(ctx context.Context) (done func()) {
	s, _ := ctx.Value(runStateKey{}).(*runState)
	if s == nil {
		return func() {}
	}
	s.inFlight.Add(1)
	var once sync.Once
	return func() { once.Do(func() { s.inFlight.Add(-1) }) }
}

// Run executes one command line and returns its exit status.
//
// Everything a command prints passes through termsafe, its errors
// included: model output, dataset files and results files are
// attacker-controlled, and an escape sequence in them must show as text,
// never act on the terminal. JSON stays valid JSON with the same values.
// CSV data not going to a terminal is the one exception (IO.dataOut).
func Run(ctx context.Context, args []string, streams IO) int {
	if streams.term == nil {
		streams.term = streams.ErrOut
	}
	if streams.rawOut == nil {
		streams.rawOut = streams.Out
	}
	out, errOut := termsafe.NewWriter(streams.Out), termsafe.NewWriter(streams.ErrOut)
	defer out.Flush()
	defer errOut.Flush()
	streams.Out, streams.ErrOut = out, errOut
	root := NewRootCmd(streams)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil && strings.HasPrefix(err.Error(), "unknown command") {
		err = usage(err)
	}
	out.Flush()
	if err != nil && !errors.Is(err, errFailed) {
		fmt.Fprintf(streams.ErrOut, "pikit: %v\n", err)
	}
	return exitCode(err)
}

// args wraps a cobra argument check so that its error is a usage error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return usage(err)
		}
		return nil
	}
}

// NewRootCmd builds the pikit command tree.
func NewRootCmd(streams IO) *cobra.Command {
	root := &cobra.Command{
		Use:   "pikit",
		Short: "Prompt-injection evaluation toolkit",
		Long: `pikit tests whether a model, an agent or a defense falls for prompt injection,
how often, and where. It crosses attacks (how the injected task is worded),
channels (where it hides), defenses and agent scenarios into a matrix of
cells, runs them against a target model, judges each, and writes results.

Everything runs offline on the built-in mock target; point --target at a
real model to test it.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usage(err) })
	root.AddCommand(newDatasetCmd(streams), newImportCmd(streams), newProxyCmd(streams), newMCPCmd(streams), newWebCmd(streams), newRuntimeCmd(streams), newMatrixCmd(streams, nil), newListCmd(streams), newShowCmd(streams), newRunCmd(streams, nil), newMergeCmd(streams), newExportCaseCmd(streams), newReportCmd(streams, nil), newCompareCmd(streams), newGateCmd(streams, nil), newJudgeCmd(streams), newVersionCmd(streams))
	return root
}
