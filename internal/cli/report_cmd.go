package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/report"
)

// readResults reads and concatenates results files ("-" is stdin).
func readResults(files []string) ([]matrix.Result, error) {
	var all []matrix.Result
	for _, f := range files {
		res, err := report.ReadFile(f)
		if err != nil {
			return nil, usage(err)
		}
		all = append(all, res...)
	}
	return all, nil
}

func parseBy(by []string) ([]string, error) {
	for _, f := range by {
		if !slices.Contains(report.GroupFields, f) && f != "case" {
			return nil, fmt.Errorf("--by: unknown field %q; known: %s", f, strings.Join(report.GroupFields, ", "))
		}
	}
	return by, nil
}

type reportOptions struct {
	By     []string
	Format string
	HTML   string
	Force  bool
}

func newReportCmd(streams IO) *cobra.Command {
	o := &reportOptions{}
	cmd := &cobra.Command{
		Use:   "report RESULTS... ",
		Short: "Summarise results: attack success rates with 95% confidence intervals",
		Long: `Summarise results files (JSONL, JSON or CSV, including the Python pikit's JSON
and CSV): the attack success rate overall and by attack, defense, channel,
agent, target and dataset case, each as successes/n with a Wilson 95%
confidence interval; runtime errors are left out of rates and counted beside
them. --html writes one self-contained page with the traces.`,
		Example: `  pikit report results.jsonl
  pikit report a.jsonl b.jsonl --by attack,defense --format markdown
  pikit report results.jsonl --html report.html`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(_ *cobra.Command, a []string) error {
			by, err := parseBy(o.By)
			if err != nil {
				return usage(err)
			}
			switch o.Format {
			case "table", "markdown", "json", "csv":
			default:
				return usage(fmt.Errorf("--format: unknown format %q; known: table, markdown, json, csv", o.Format))
			}
			results, err := readResults(a)
			if err != nil {
				return err
			}
			if o.HTML != "" {
				if err := writeHTMLFile(o.HTML, o.Force, results, a); err != nil {
					return err
				}
				fmt.Fprintf(streams.ErrOut, "report: %s\n", o.HTML)
			}
			return writeSummaries(streams.Out, results, by, o.Format)
		},
	}
	cmd.Flags().StringSliceVar(&o.By, "by", nil, "group by these fields, e.g. attack,defense (default: each of attack, defense, channel, agent, target, case_id in turn)")
	cmd.Flags().StringVar(&o.Format, "format", "table", "output format: table, markdown, json or csv")
	cmd.Flags().StringVar(&o.HTML, "html", "", "also write a self-contained HTML report to `FILE`")
	cmd.Flags().BoolVar(&o.Force, "force", false, "overwrite an existing --html file")
	return cmd
}

// writeSummaries prints the totals and, without --by, one table per field
// that takes more than one value.
func writeSummaries(w io.Writer, results []matrix.Result, by []string, format string) error {
	var sums []report.Summary
	if len(by) > 0 {
		sums = append(sums, report.Summarize(results, by...))
	} else {
		sums = append(sums, report.Summarize(results))
		for _, f := range []string{"attack", "defense", "channel", "agent", "target", "case_id"} {
			s := report.Summarize(results, f)
			if len(s.Groups) > 1 {
				sums = append(sums, s)
			}
		}
	}
	if format == "json" {
		if len(sums) == 1 {
			return sums[0].WriteJSON(w)
		}
		return writeJSON(w, sums)
	}
	for i, s := range sums {
		if i > 0 {
			fmt.Fprintln(w)
		}
		var err error
		switch {
		case format == "csv":
			err = s.WriteCSV(w)
		case format == "markdown" && i == 0:
			err = s.WriteMarkdown(w)
		case format == "markdown":
			fmt.Fprintf(w, "### by %s\n\n", strings.Join(s.By, ", "))
			err = s.WriteGroupsMarkdown(w)
		case i == 0:
			err = s.WriteText(w)
		default:
			err = s.WriteGroupsText(w) // the totals were printed once already
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	b, err := jsonIndent(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func writeHTMLFile(path string, force bool, results []matrix.Result, sources []string) error {
	if !force {
		if _, err := os.Stat(path); err == nil {
			return usage(fmt.Errorf("%s: %w (use --force to overwrite)", path, report.ErrExists))
		}
	}
	f, err := os.CreateTemp(dirOf(path), ".pikit-report-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	err = report.WriteHTML(f, results, report.HTMLOptions{Title: "pikit report", Generated: time.Now().UTC().Format(time.RFC3339), Sources: sources})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func dirOf(path string) string {
	if i := strings.LastIndexAny(path, `/\`); i >= 0 {
		return path[:i+1]
	}
	return "."
}

type compareOptions struct {
	By     []string
	Format string
}

func newCompareCmd(streams IO) *cobra.Command {
	o := &compareOptions{}
	cmd := &cobra.Command{
		Use:   "compare BASE NEW",
		Short: "Compare two runs: per-group change in attack success, with a significance test",
		Long: `Compare the attack success rates of two results files group by group, each
change with both intervals and a two-proportion z-test (changes with p < 0.05
are flagged as unlikely to be noise), and list the cells (by key) whose
verdict flipped.`,
		Example: `  pikit compare before.jsonl after.jsonl --by defense`,
		Args:    args(cobra.ExactArgs(2)),
		RunE: func(_ *cobra.Command, a []string) error {
			by, err := parseBy(o.By)
			if err != nil {
				return usage(err)
			}
			if len(by) == 0 {
				by = []string{"attack", "defense"}
			}
			base, err := readResults(a[:1])
			if err != nil {
				return err
			}
			next, err := readResults(a[1:])
			if err != nil {
				return err
			}
			c := report.Compare(base, next, by...)
			if o.Format == "json" {
				return writeJSON(streams.Out, c)
			}
			return writeComparison(streams.Out, c)
		},
	}
	cmd.Flags().StringSliceVar(&o.By, "by", nil, "group by these fields (default attack,defense)")
	cmd.Flags().StringVar(&o.Format, "format", "table", "output format: table or json")
	return cmd
}

func writeComparison(w io.Writer, c report.Comparison) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(name string, ch report.Change) {
		mark := ""
		if ch.Significant {
			mark = "  *"
		}
		fmt.Fprintf(tw, "%s\t%d/%d %.1f%% (%.1f–%.1f)\t%d/%d %.1f%% (%.1f–%.1f)\t%+.1f pts\tp=%.3f%s\n", name,
			ch.Base.Successes, ch.Base.N, 100*ch.Base.Rate, 100*ch.Base.Low, 100*ch.Base.High,
			ch.New.Successes, ch.New.N, 100*ch.New.Rate, 100*ch.New.Low, 100*ch.New.High, 100*ch.Delta, ch.P, mark)
	}
	fmt.Fprintf(tw, "%s\tBASE\tNEW\tCHANGE\tTEST\n", strings.ToUpper(strings.Join(c.By, " · ")))
	row("all cells", c.Overall)
	for _, g := range c.Groups {
		row(strings.Join(g.Values, " · "), g)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n* p < %.2f: unlikely to be noise (two-proportion z-test)\n", report.Alpha)
	fmt.Fprintf(w, "\n%d cells flipped; %d only in base, %d only in new\n", len(c.Flips), c.OnlyBase, c.OnlyNew)
	for _, f := range c.Flips {
		dir := "now succeeds"
		if !f.NewSuccess {
			dir = "now fails"
		}
		fmt.Fprintf(w, "  %s  %s: %s → %s (%s)\n", f.Key, f.Label, f.Base, f.New, dir)
	}
	return nil
}

type gateOptions struct {
	By        []string
	MaxASR    float64
	MaxErrors int
	Strict    bool
	JUnit     string
}

func newGateCmd(streams IO) *cobra.Command {
	o := &gateOptions{}
	cmd := &cobra.Command{
		Use:   "gate RESULTS... --max-asr RATE",
		Short: "Fail (exit 1) when an attack success rate is over a threshold: for CI",
		Example: `  pikit gate results.jsonl --max-asr 0.10
  pikit gate results.jsonl --max-asr 0.05 --by defense --strict --max-errors 0 --junit pikit.xml`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if !cmd.Flags().Changed("max-asr") {
				return usage(errors.New("--max-asr is required (a rate between 0 and 1, e.g. 0.10)"))
			}
			if o.MaxASR < 0 || o.MaxASR > 1 {
				return usage(fmt.Errorf("--max-asr: want a rate between 0 and 1, got %v", o.MaxASR))
			}
			by, err := parseBy(o.By)
			if err != nil {
				return usage(err)
			}
			results, err := readResults(a)
			if err != nil {
				return err
			}
			checks := report.Gate(report.Summarize(results, by...), report.GateOptions{MaxASR: o.MaxASR, Strict: o.Strict, MaxErrors: o.MaxErrors})
			if o.JUnit != "" {
				f, err := os.Create(o.JUnit)
				if err != nil {
					return err
				}
				err = report.WriteJUnit(f, "pikit gate", checks)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					return err
				}
			}
			failed := 0
			for _, c := range checks {
				status := "ok  "
				if c.Failed {
					status, failed = "FAIL", failed+1
				}
				fmt.Fprintf(streams.Out, "%s %s: %s", status, c.Name, c.ASR)
				if c.Reason != "" {
					fmt.Fprintf(streams.Out, " — %s", c.Reason)
				}
				fmt.Fprintln(streams.Out)
			}
			if failed > 0 {
				fmt.Fprintf(streams.ErrOut, "gate: %d of %d checks over the threshold\n", failed, len(checks))
				return errFailed
			}
			fmt.Fprintf(streams.ErrOut, "gate: all %d checks pass\n", len(checks))
			return nil
		},
	}
	f := cmd.Flags()
	f.Float64Var(&o.MaxASR, "max-asr", 0, "the highest acceptable attack success rate, 0..1")
	f.StringSliceVar(&o.By, "by", nil, "check each group of these fields (default: all cells together)")
	f.BoolVar(&o.Strict, "strict", false, "compare the upper bound of the 95% interval, not the rate")
	f.IntVar(&o.MaxErrors, "max-errors", -1, "fail when more cells than this errored (default: no limit)")
	f.StringVar(&o.JUnit, "junit", "", "write a JUnit XML report to `FILE`")
	return cmd
}
