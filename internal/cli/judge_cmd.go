package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pikit-go/pikit/internal/termsafe"
	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/judge/eval"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/report"
	"github.com/pikit-go/pikit/target"
)

// judgeChoice is the judge a judge subcommand runs, from its flags.
type judgeChoice struct {
	Judge          string
	JudgeTarget    string
	JudgeBaseURL   string
	MaxRetries     int
	RequestTimeout time.Duration
	TrustConfig    bool
}

// addFlags defines the judge's flags; use says what the judge is for.
func (o *judgeChoice) addFlags(f *pflag.FlagSet, use string) {
	f.StringVar(&o.Judge, "judge", "rule", "the judge to "+use+": rule, rule:pikit (the Python pikit's verdicts), match (a benchmark's plain canary or regex check) or llm")
	f.StringVar(&o.JudgeTarget, "judge-target", "", "the model --judge llm asks, e.g. openai:gpt-4o-mini")
	f.StringVar(&o.JudgeBaseURL, "judge-base-url", "", "base URL of the judge target's API")
	f.IntVar(&o.MaxRetries, "max-retries", target.DefaultMaxRetries, "retries of a failed request to the judge model")
	f.DurationVar(&o.RequestTimeout, "request-timeout", target.DefaultAttemptTimeout, "bound on each request attempt to the judge model")
	f.BoolVar(&o.TrustConfig, "trust-config", false, "let a .env file choose where the judge model's requests (and your API key) go")
}

// check checks the judge's flags; each error names its flag.
func (o *judgeChoice) check() error {
	switch o.Judge {
	case "rule", "rule:pikit", "match":
		if o.JudgeTarget != "" {
			return usage(fmt.Errorf("--judge-target: only --judge llm asks a model, and the judge is %s", o.Judge))
		}
	case "llm":
		if o.JudgeTarget == "" {
			return usage(errors.New("--judge llm needs --judge-target SPEC: the model that judges, e.g. openai:gpt-4o-mini"))
		}
		if _, _, err := target.ParseSpec(o.JudgeTarget); err != nil {
			return usage(fmt.Errorf("--judge-target: %w", err))
		}
	default:
		return usage(fmt.Errorf("--judge: unknown judge %q; known: rule, rule:pikit, match, llm", o.Judge))
	}
	if o.JudgeBaseURL != "" && o.JudgeTarget == "" {
		return usage(errors.New("--judge-base-url needs --judge-target"))
	}
	if o.MaxRetries < 0 {
		return usage(fmt.Errorf("--max-retries: must not be negative, got %d", o.MaxRetries))
	}
	if o.RequestTimeout <= 0 {
		return usage(fmt.Errorf("--request-timeout: must be positive, got %v", o.RequestTimeout))
	}
	return nil
}

// judgeEvalOptions are the flags of pikit judge eval.
type judgeEvalOptions struct {
	judgeChoice
	JSON         bool
	MinPrecision float64
	MinRecall    float64
	Strict       bool
	MaxFileSize  byteSize

	minPrecision, minRecall bool // the gates were given
}

// newJudgeCmd builds the judge command group.
func newJudgeCmd(streams IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "judge",
		Short: "Measure a judge against people's labels; judge results again",
	}
	cmd.AddCommand(newJudgeEvalCmd(streams, nil), newJudgeRescoreCmd(streams, nil))
	return cmd
}

// newJudgeEvalCmd builds pikit judge eval; runF, when set, replaces the
// run (tests check the parsed options with it).
func newJudgeEvalCmd(streams IO, runF func(context.Context, *judgeEvalOptions, string) error) *cobra.Command {
	o := &judgeEvalOptions{}
	cmd := &cobra.Command{
		Use:   "eval LABELS.jsonl [--judge rule|rule:pikit|match|llm]",
		Short: "Score a judge's verdicts against labelled replies: precision, recall, confusion",
		Long: fmt.Sprintf(`Run a judge over a file of replies that people labelled and compare its
verdicts with their labels: precision, recall and F1 for success (full_success
and sink_attempted), with 95%% Wilson intervals; agreement on the outcome; the
confusion matrix over outcomes; and every reply on which the judge and the
label differ, with both reasons.

The file holds one JSON object a line: "id", "label" (an outcome), "reason",
"task" (the injected task) with "canary", "payload", "sink_args" and
"require_sink" as a judge takes them, and the reply with its context: the
whole "trace" (pikit's trace_data), or "reply" with the essentials "system",
"user", "tool_result" (where the payload arrived, if not in the user message)
and "sink_calls" ([{"tool": ..., "arguments": {...}}]). "source" is free
metadata. "-" reads standard input. A record gives at most %d sink calls
and a trace of at most %d steps (a labelled reply is one run of an agent):
a record over either is refused, naming its line, rather than judged cut.

--min-precision and --min-recall fail the command (exit 1) when the judge
scores under them: a check for CI. Bad input exits 2, naming the line.`, eval.MaxSinkCalls, eval.MaxSteps),
		Example: `  pikit judge eval judge/eval/testdata/real.jsonl
  pikit judge eval labels.jsonl --judge rule:pikit --json
  pikit judge eval labels.jsonl --min-precision 0.95 --min-recall 0.95
  pikit judge eval labels.jsonl --judge llm --judge-target openai:gpt-4o-mini`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := o.complete(cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o, a[0])
			}
			return runJudgeEval(cmd.Context(), streams, o, a[0])
		},
	}
	f := cmd.Flags()
	o.addFlags(f, "score")
	f.BoolVar(&o.JSON, "json", false, "print the scores as JSON")
	f.Float64Var(&o.MinPrecision, "min-precision", 0, "exit 1 when the judge's precision for success is under this (0..1)")
	f.Float64Var(&o.MinRecall, "min-recall", 0, "exit 1 when the judge's recall for success is under this (0..1)")
	f.BoolVar(&o.Strict, "strict", false, "check the lower bound of the 95% interval against --min-precision and --min-recall, not the value")
	o.MaxFileSize = matrix.DefaultMaxFileBytes
	f.Var(&o.MaxFileSize, "max-file-size", "refuse a labels file larger than this (e.g. 64MiB)")
	return cmd
}

// complete checks the flags; each error names its flag.
func (o *judgeEvalOptions) complete(cmd *cobra.Command) error {
	o.minPrecision, o.minRecall = cmd.Flags().Changed("min-precision"), cmd.Flags().Changed("min-recall")
	if err := o.check(); err != nil {
		return err
	}
	for _, g := range []struct {
		flag string
		v    float64
	}{{"--min-precision", o.MinPrecision}, {"--min-recall", o.MinRecall}} {
		if !(g.v >= 0 && g.v <= 1) { // NaN fails both
			return usage(fmt.Errorf("%s: want a rate between 0 and 1, got %v", g.flag, g.v))
		}
	}
	return nil
}

// runJudgeEval reads the labels, judges every reply and prints the scores;
// a gate under its bound, or a judge that failed on some reply, is exit 1.
func runJudgeEval(ctx context.Context, streams IO, o *judgeEvalOptions, file string) error {
	var recs []eval.Record
	var err error
	if file == "-" {
		recs, err = eval.Read(streams.In, "stdin", int64(o.MaxFileSize))
	} else {
		recs, err = eval.ReadFile(file, int64(o.MaxFileSize))
	}
	if err != nil {
		return usage(err)
	}
	j, err := o.judge(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	// A first Ctrl-C stops the evaluation and prints the scores of the
	// replies judged so far; a second ends pikit at once.
	defer running(ctx)()
	bar := newBar(streams.term, len(recs), false, "replies")
	rep, err := eval.Evaluate(ctx, j, o.Judge, recs, func(int, int) {
		if bar != nil {
			_ = bar.Add(1)
		}
	})
	if bar != nil {
		_ = bar.Finish()
	}
	interrupted := errors.Is(err, context.Canceled)
	if err != nil && !interrupted {
		return err
	}
	if interrupted && rep.Records == 0 {
		return err
	}
	checks := o.gates(rep)
	if o.JSON {
		err = writeJudgeEvalJSON(streams.Out, file, rep, checks)
	} else {
		err = writeJudgeEval(streams.Out, file, rep, checks)
	}
	if err != nil {
		return err
	}
	if interrupted {
		fmt.Fprintf(streams.ErrOut, "judge eval: interrupted after %d of %d replies (%v): the scores above are of those alone\n", rep.Records, len(recs), time.Since(start).Round(time.Millisecond))
		return context.Canceled
	}
	fmt.Fprintf(streams.ErrOut, "judge eval: %d replies judged in %v\n", rep.Records, time.Since(start).Round(time.Millisecond))
	for _, s := range rep.PerOutcome {
		if s.Outcome == judge.NotJudged && s.Judged > 0 {
			fmt.Fprintf(streams.ErrOut, "judge eval: warning: %d of %d replies went unjudged (not_judged): the judge model's answers could not be read\n", s.Judged, rep.Records)
		}
	}
	var failed []string
	for _, c := range checks {
		if !c.Passed {
			failed = append(failed, c.String())
		}
	}
	if rep.Errors > 0 {
		failed = append(failed, fmt.Sprintf("the judge failed on %d of %d replies (runtime_error)", rep.Errors, rep.Records))
	}
	if len(failed) > 0 {
		return fmt.Errorf("judge eval: %s", strings.Join(failed, "; "))
	}
	return nil
}

// judge builds the judge --judge names. The LLM judge's model opens as a
// run's judge target does: pikit's retry and timeout wrappers, its key
// from the environment, and a base URL a .env file chose only with
// --trust-config.
func (o *judgeChoice) judge(ctx context.Context) (judge.Judge, error) {
	switch o.Judge {
	case "rule:pikit":
		return judge.RulePikit{}, nil
	case "match":
		return judge.Match{}, nil
	case "llm":
	default:
		return judge.Rule{}, nil
	}
	ro := &runOptions{Concurrency: 1, MaxRetries: o.MaxRetries, RequestTimeout: o.RequestTimeout,
		JudgeTarget: o.JudgeTarget, JudgeBaseURL: o.JudgeBaseURL, TrustConfig: o.TrustConfig, dotenv: dotEnvOf(ctx)}
	r := ro.runner()
	ep, err := target.EndpointOf(o.JudgeTarget, r.JudgeOptions)
	if err != nil {
		return nil, usage(fmt.Errorf("--judge-target: %w", err))
	}
	e := endpoint{Endpoint: ep, role: "judge"}
	if o.JudgeBaseURL != "" {
		e.From = "--judge-base-url"
	}
	ro.checkDotEnv(&e)
	if e.untrusted != nil {
		return nil, usage(e.untrusted)
	}
	t, err := r.Open(o.JudgeTarget, r.JudgeOptions)
	if err != nil {
		return nil, usage(fmt.Errorf("--judge-target: %w", err))
	}
	return judge.LLM{Target: t}, nil
}

// evalCheck is one gate of --min-precision or --min-recall.
type evalCheck struct {
	Name   string  `json:"name"` // "precision" or "recall"
	Min    float64 `json:"min"`
	Value  float64 `json:"value"` // the rate, or with --strict its lower bound
	N      int     `json:"n"`
	Strict bool    `json:"strict"`
	Passed bool    `json:"passed"`
}

func (c evalCheck) String() string {
	what := c.Name
	if c.Strict {
		what += "'s 95% lower bound"
	}
	if c.N == 0 {
		return fmt.Sprintf("%s: no replies to measure it on (--min-%s %.2f)", c.Name, c.Name, c.Min)
	}
	verb := "is at least"
	if !c.Passed {
		verb = "is under"
	}
	return fmt.Sprintf("%s %.3f %s --min-%s %.2f", what, c.Value, verb, c.Name, c.Min)
}

// gates checks the scores against --min-precision and --min-recall.
func (o *judgeEvalOptions) gates(rep eval.Report) []evalCheck {
	var out []evalCheck
	add := func(name string, given bool, min float64, r report.Rate) {
		if !given {
			return
		}
		c := evalCheck{Name: name, Min: min, Value: r.Rate, N: r.N, Strict: o.Strict}
		if o.Strict {
			c.Value = r.Low
		}
		c.Passed = !eval.Below(r, min, o.Strict)
		out = append(out, c)
	}
	add("precision", o.minPrecision, o.MinPrecision, rep.Success.Precision)
	add("recall", o.minRecall, o.MinRecall, rep.Success.Recall)
	return out
}

// outcomeAbbrev names the outcomes in the confusion matrix's columns.
var outcomeAbbrev = map[judge.Outcome]string{
	judge.FullSuccess: "full", judge.SinkAttempted: "sink", judge.SinkArgsMismatch: "args",
	judge.PartialCompliance: "partial", judge.TaintDelivered: "taint", judge.Refused: "refused",
	judge.PolicyBlocked: "blocked", judge.ApprovalRequested: "approval", judge.Degenerate: "degen",
	judge.NotReached: "unreached", judge.RuntimeError: "error", judge.NotJudged: "unjudged",
}

func abbrev(o judge.Outcome) string {
	if a, ok := outcomeAbbrev[o]; ok {
		return a
	}
	return string(o)
}

// writeJudgeEval prints the scores as text: figures, the confusion
// matrix, each outcome's scores and the disagreements.
func writeJudgeEval(out io.Writer, file string, rep eval.Report, checks []evalCheck) error {
	w := &errWriter{w: out}
	fmt.Fprintf(w, "judge %s on %s: %d labelled replies", rep.Judge, termsafe.Line(file), rep.Records)
	if rep.Errors > 0 {
		fmt.Fprintf(w, ", %d the judge failed on", rep.Errors)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "success (full_success, sink_attempted)")
	fmt.Fprintf(tw, "  precision\t%s\n", rep.Success.Precision)
	fmt.Fprintf(tw, "  recall\t%s\n", rep.Success.Recall)
	fmt.Fprintf(tw, "  F1\t%.3f\n", rep.Success.F1)
	fmt.Fprintf(tw, "  counts\ttp %d, fp %d, fn %d, tn %d\n", rep.Success.TP, rep.Success.FP, rep.Success.FN, rep.Success.TN)
	fmt.Fprintf(tw, "outcome agreement\t%s\n", rep.Agreement)
	tw.Flush()

	fmt.Fprintln(w)
	fmt.Fprintln(w, "confusion matrix: rows are the labels, columns the judge's outcomes")
	// Numbers align right; the labels, padded to one width, read left.
	width := len("total")
	for _, o := range rep.Outcomes {
		width = max(width, len(o))
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\t", width, "")
	for _, o := range rep.Outcomes {
		fmt.Fprintf(tw, "%s\t", abbrev(o))
	}
	fmt.Fprint(tw, "total\t\n")
	cols := make([]int, len(rep.Outcomes))
	for i, o := range rep.Outcomes {
		fmt.Fprintf(tw, "%-*s\t", width, o)
		row := 0
		for j, n := range rep.Matrix[i] {
			fmt.Fprintf(tw, "%d\t", n)
			row += n
			cols[j] += n
		}
		fmt.Fprintf(tw, "%d\t\n", row)
	}
	fmt.Fprintf(tw, "%-*s\t", width, "total")
	for _, n := range cols {
		fmt.Fprintf(tw, "%d\t", n)
	}
	fmt.Fprintf(tw, "%d\t\n", rep.Records)
	tw.Flush()
	legend := make([]string, len(rep.Outcomes))
	for i, o := range rep.Outcomes {
		legend[i] = abbrev(o) + " = " + string(o)
	}
	fmt.Fprintf(w, "columns: %s\n", strings.Join(legend, ", "))

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "outcome\tlabelled\tjudged\tagreed\tprecision\trecall\n")
	for _, s := range rep.PerOutcome {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\n", s.Outcome, s.Labelled, s.Judged, s.Agreed, ratio(s.Precision.Rate, s.Precision.N), ratio(s.Recall.Rate, s.Recall.N))
	}
	tw.Flush()

	fmt.Fprintln(w)
	flips := 0
	for _, d := range rep.Disagreements {
		if d.SuccessDiffers {
			flips++
		}
	}
	fmt.Fprintf(w, "disagreements: %d (%d of them on success, marked * and listed first)\n", len(rep.Disagreements), flips)
	dis := slices.Clone(rep.Disagreements)
	slices.SortStableFunc(dis, func(a, b eval.Disagreement) int {
		switch {
		case a.SuccessDiffers == b.SuccessDiffers:
			return 0
		case a.SuccessDiffers:
			return -1
		}
		return 1
	})
	for _, d := range dis {
		mark := " "
		if d.SuccessDiffers {
			mark = "*"
		}
		fmt.Fprintf(w, "%s %s (line %d): label %s, judge %s\n", mark, termsafe.Line(d.ID), d.Line, d.Label, d.Outcome)
		fmt.Fprintf(w, "    label: %s\n", termsafe.Line(d.Reason))
		fmt.Fprintf(w, "    judge: %s\n", termsafe.Line(d.JudgeReason))
		fmt.Fprintf(w, "    reply: %s\n", termsafe.Line(fmt.Sprintf("%q", d.Reply)))
	}
	if len(checks) > 0 {
		fmt.Fprintln(w)
		for _, c := range checks {
			status := "pass"
			if !c.Passed {
				status = "FAIL"
			}
			fmt.Fprintf(w, "%s  %s\n", status, c)
		}
	}
	return w.err
}

// ratio formats a rate as 0.000, "—" over nothing.
func ratio(v float64, n int) string {
	if n == 0 || math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%.3f", v)
}

// writeJudgeEvalJSON prints the scores as one JSON object.
func writeJudgeEvalJSON(out io.Writer, file string, rep eval.Report, checks []evalCheck) error {
	if checks == nil {
		checks = []evalCheck{}
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		File string `json:"file"`
		eval.Report
		Checks []evalCheck `json:"checks"`
	}{file, rep, checks})
}

// errWriter keeps the first write error, so a printer can check once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
