package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/spf13/cobra"

	"github.com/pikit-go/pikit/internal/termsafe"
	"github.com/pikit-go/pikit/judge"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/report"
)

// judgeRescoreOptions are the flags of pikit judge rescore.
type judgeRescoreOptions struct {
	judgeChoice
	Output string
	Force  bool
}

// newJudgeRescoreCmd builds pikit judge rescore; runF, when set, replaces
// the run (tests check the parsed options with it).
func newJudgeRescoreCmd(streams IO, runF func(context.Context, *judgeRescoreOptions, string) error) *cobra.Command {
	o := &judgeRescoreOptions{}
	cmd := &cobra.Command{
		Use:   "rescore RESULTS -o OUT.jsonl [--judge rule|rule:pikit|match|llm]",
		Short: "Judge a results file's cells again, from their traces: no model is run",
		Long: `Judge every cell of a results file again with the judge you choose, from
what the file recorded: the cell's trace (trace_data) and what its verdict
was judged against (judged_against: task, payload, canary, sink_args,
require_sink). No config, dataset or target is needed and no agent runs, so a
run can be scored again after the judge improved, or with another judge
(rule:pikit to compare with the Python pikit, llm for a judge model).

Each cell's verdict fields (success, outcome, confidence, reason, signals,
evidence) are replaced; everything else is kept, and metadata.rescored says
which judge gave the new verdict and what the old outcome was. A cell with no
trace or no judged_against (a runtime error, a file written before pikit
recorded them) is kept as it was and counted. Standard error says how many
verdicts changed, from which outcome to which.

RESULTS is JSONL or JSON ("-" reads JSONL from standard input); CSV results
hold no trace. OUT is JSONL, written whole or not at all ("-" writes it to
standard output as it goes).`,
		Example: `  pikit judge rescore results.jsonl -o rescored.jsonl
  pikit judge rescore results.jsonl -o pikit-verdicts.jsonl --judge rule:pikit
  pikit judge rescore results.jsonl -o llm.jsonl --judge llm --judge-target openai:gpt-4o-mini`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := o.check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o, a[0])
			}
			return runJudgeRescore(cmd.Context(), streams, o, a[0])
		},
	}
	f := cmd.Flags()
	o.addFlags(f, "judge with")
	f.StringVarP(&o.Output, "output", "o", "", "the rescored results `FILE` (.jsonl; - for standard output)")
	f.BoolVar(&o.Force, "force", false, "overwrite an existing output file")
	return cmd
}

// rescoreTally counts what a rescore did.
type rescoreTally struct {
	judged, kept, changed int
	moves                 map[[2]judge.Outcome]int // old → new, for changed verdicts
}

// runJudgeRescore judges each result of file again and writes them all to
// the output, streaming.
func runJudgeRescore(ctx context.Context, streams IO, o *judgeRescoreOptions, file string) error {
	if o.Output == "" {
		return usage(errors.New("--output FILE.jsonl is required"))
	}
	if f, err := report.FormatOf(o.Output); o.Output != "-" && (err != nil || f != ".jsonl") {
		return usage(fmt.Errorf("%s: rescore writes JSONL", o.Output))
	}
	in, err := report.InputFormatOf(file)
	if err != nil {
		return usage(err)
	}
	if in == ".csv" {
		return usage(fmt.Errorf("%s: CSV results hold no trace to judge again; rescore reads JSONL or JSON", file))
	}
	if file != "-" {
		if _, err := os.Stat(file); err != nil {
			return usage(err)
		}
	}
	if err := checkOutput("--output", o.Output, file); err != nil {
		return err
	}
	if !o.Force && o.Output != "-" {
		if _, err := os.Stat(o.Output); err == nil {
			return usage(fmt.Errorf("%s: %w (use --force to overwrite)", o.Output, report.ErrExists))
		}
	}
	j, err := o.judge(ctx)
	if err != nil {
		return err
	}
	t := rescoreTally{moves: map[[2]judge.Outcome]int{}}
	var failed error
	err = writeOutput(streams.dataOut("jsonl"), o.Output, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		out := report.NewJSONL(bw)
		var fnErr error // an error of ours, not of the file
		err := scanResultsFile(streams.In, file, func(rec *report.Record) error {
			res, err := rec.Result()
			if err != nil {
				return err // the file's: not a result
			}
			if err := rescore(ctx, j, o.Judge, &res, &t); err != nil && failed == nil {
				failed = fmt.Errorf("%s:%d: %w", file, rec.Line, err)
			}
			if fnErr = ctx.Err(); fnErr == nil {
				fnErr = out.Write(res)
			}
			return fnErr
		}, nil)
		switch {
		case fnErr != nil:
			return fnErr
		case err != nil:
			return usage(err)
		}
		if err := out.Close(); err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(streams.ErrOut, "rescored %d results of %s with %s: %d verdicts changed, %d kept as they were (no trace or no judged_against) → %s\n",
		t.judged, termsafe.Line(file), o.Judge, t.changed, t.kept, termsafe.Line(outName(o.Output)))
	moves := make([][2]judge.Outcome, 0, len(t.moves))
	for m := range t.moves {
		moves = append(moves, m)
	}
	sort.Slice(moves, func(a, b int) bool {
		if t.moves[moves[a]] != t.moves[moves[b]] {
			return t.moves[moves[a]] > t.moves[moves[b]]
		}
		return moves[a][0]+moves[a][1] < moves[b][0]+moves[b][1]
	})
	for _, m := range moves {
		fmt.Fprintf(streams.ErrOut, "  %-20s → %-20s %d\n", m[0], m[1], t.moves[m])
	}
	if failed != nil {
		return fmt.Errorf("judge rescore: the judge failed on a cell (kept as runtime_error): %w", failed)
	}
	return nil
}

// rescore judges res again with j (named name) when it recorded what it
// needs, and tallies it. A judge that fails leaves the cell a
// runtime_error with the judge's error, and returns the error.
func rescore(ctx context.Context, j judge.Judge, name string, res *matrix.Result, t *rescoreTally) error {
	if res.TraceData == nil || res.JudgedAgainst == nil || res.Outcome == judge.RuntimeError {
		t.kept++
		return nil
	}
	was := res.Outcome
	task := res.JudgedAgainst.JudgeTask()
	v, err := j.Judge(ctx, *res.TraceData, task)
	t.judged++
	if res.Metadata == nil {
		res.Metadata = map[string]any{}
	}
	res.Metadata["rescored"] = map[string]any{"judge": name, "was": string(was)}
	if err != nil {
		res.Success, res.Outcome, res.Confidence, res.Reason = false, judge.RuntimeError, "", ""
		res.Signals, res.Evidence = []string{}, nil
		res.Error = "judge: " + err.Error()
		res.SetVerdictFields()
		t.changed++
		t.moves[[2]judge.Outcome{was, judge.RuntimeError}]++
		return err
	}
	res.Success, res.Outcome, res.Confidence, res.Reason = v.Success, v.Outcome, v.Confidence, v.Reason
	res.Signals, res.Evidence = v.Signals, judge.Annotate(v.Evidence, *res.TraceData, task)
	delete(res.Metadata, "judge_raw")
	if v.Raw != "" {
		res.Metadata["judge_raw"] = v.Raw
	}
	res.SetVerdictFields()
	if v.Outcome != was {
		t.changed++
		t.moves[[2]judge.Outcome{was, v.Outcome}]++
	}
	return nil
}
