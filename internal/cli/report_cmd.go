package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pikit-go/pikit/internal/termsafe"
	"github.com/pikit-go/pikit/objstore"
	"github.com/pikit-go/pikit/report"
)

// The report, compare and gate commands print what results files hold,
// and results files are written by attackers (payloads, model output, or
// a hostile file passed around). Run makes every byte they print
// terminal-safe; values are also escaped with termsafe.Line in tables, so
// a newline or tab in one cannot break a row.

// scanResults reads results files in order ("-" is in, read as JSONL),
// calling fn with each cell's Record once (report.RecordDedup: a key's
// first verdict, a rerun's result over a runtime error; the runtime
// errors last), and returns how many duplicate lines it passed over. Only
// the fields a Record holds are decoded, so memory does not grow with the
// files beyond a set of their keys. whole says that fn reads whole results
// (Record.Result): a runtime error held for the end keeps its text. A
// file that cannot be read or is not results is a usage error (exit 2),
// naming the file and line.
//
// An s3:// argument is the prefix of a sharded run (see resultsReader).
func scanResults(r resultsReader, files []string, whole bool, fn func(*report.Record) error) (dups int, err error) {
	d := report.NewRecordDedup(fn)
	d.KeepText = whole
	for _, f := range files {
		if objstore.IsURL(f) {
			if err := r.scanPrefix(f, d.Add); err != nil {
				return 0, err
			}
			continue
		}
		if err := scanResultsFile(r.streams.In, f, d.Add, nil); err != nil {
			return 0, usage(err)
		}
	}
	return d.Duplicates(), d.Flush()
}

// sayDuplicates tells, on stderr, how many duplicate results a command
// passed over, if any.
func sayDuplicates(w io.Writer, cmd string, n int) {
	if n > 0 {
		fmt.Fprintf(w, "%s: passed over %d duplicate %s (a cell key read before: each cell counts once, by its first verdict, a rerun's over a runtime error)\n",
			cmd, n, plural(n, "result", "results"))
	}
}

// scanResultsFile reads one results file ("-" is in, read as JSONL); skip,
// when set, passes over JSONL lines that are not results
// (report.ScanSkipping).
func scanResultsFile(in io.Reader, path string, fn func(*report.Record) error, skip report.SkipFunc) error {
	format, err := report.InputFormatOf(path)
	if err != nil {
		return err
	}
	if path == "-" {
		if in == nil {
			in = os.Stdin
		}
		return report.ScanSkipping(in, "stdin", format, fn, skip)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return report.ScanSkipping(f, path, format, fn, skip)
}

func parseBy(by []string) ([]string, error) {
	for _, f := range by {
		if label, ok := strings.CutPrefix(f, report.LabelPrefix); ok && label != "" {
			continue
		}
		if !slices.Contains(report.GroupFields, f) && f != "case" {
			return nil, fmt.Errorf("--by: unknown field %q; known: %s, or label:NAME (a case label)", f, strings.Join(report.GroupFields, ", "))
		}
	}
	return by, nil
}

// writeFileAtomic writes a file through a temporary file beside it, renamed
// over it when complete: a crash leaves the old file or none, never half a
// file. It is report.WriteFileAtomic: mode 0644 less the umask, symbolic
// links written through, and a path that is not a regular file (a device,
// a FIFO) refused as bad usage, never replaced.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	err := report.WriteFileAtomic(path, write)
	if errors.Is(err, report.ErrNotRegular) {
		return usage(err)
	}
	return err
}

// checkNew checks an output a command replaces only with --force: see
// checkOutput; an existing file without force is refused. "-" is standard
// output and "" no output: nothing to check.
func checkNew(flag, path string, force bool, inputs []string) error {
	if path == "" || path == "-" {
		return nil
	}
	if err := checkOutput(flag, path, inputs...); err != nil {
		return err
	}
	if _, err := os.Stat(path); err == nil && !force {
		return usage(fmt.Errorf("%s %s: %w (use --force to overwrite)", flag, path, report.ErrExists))
	}
	return nil
}

// writeOutput writes an output to its file, whole (writeFileAtomic), or to
// stdout when path is "-".
func writeOutput(stdout io.Writer, path string, write func(io.Writer) error) error {
	if path == "-" {
		return write(stdout)
	}
	return writeFileAtomic(path, write)
}

// checkFormat refuses a --format value outside known.
func checkFormat(format string, known ...string) error {
	if !slices.Contains(known, format) {
		return usage(fmt.Errorf("--format: unknown format %q; known: %s", format, strings.Join(known, ", ")))
	}
	return nil
}

type reportOptions struct {
	By         []string
	Format     string
	HTML       string
	HTMLTraces int
	Force      bool
	CSVRaw     bool
	Output     string
	s3         s3Options
}

// newReportCmd builds pikit report; runF, when not nil, is called with the
// parsed options and the files instead of reporting (see newRunCmd).
func newReportCmd(streams IO, runF func(*cobra.Command, *reportOptions, []string) error) *cobra.Command {
	o := &reportOptions{}
	cmd := &cobra.Command{
		Use:   "report RESULTS... ",
		Short: "Summarise results: attack success rates with 95% confidence intervals",
		Long: `Summarise results files (JSONL, JSON or CSV, including the Python pikit's JSON
and CSV; "-" reads JSONL from standard input): the attack success rate
overall and by attack, defense, channel, agent, target and dataset case,
each as successes/n with a Wilson 95% confidence interval; runtime errors
are left out of rates and counted beside them. Each cell key counts once,
whichever files repeat it: its first verdict, or a rerun's result over a
runtime error (standard error says how many results were passed over).
Files stream: only the fields a summary needs are decoded, so a
million-cell file takes seconds.

--html writes one self-contained page: every count and chart covers every
cell; the table of cells with their traces lists at most --html-traces of
them (a sample of each attack × defense group, successes and errors first).

Values from the results are escaped before they reach the terminal
(control characters, terminal escapes, bidi overrides); CSV is escaped only
when standard output is a terminal. CSV cells a spreadsheet would run as
formulas (=, +, -, @, tab, CR first) get a leading ' unless --csv-raw.`,
		Example: `  pikit report results.jsonl
  pikit report a.jsonl b.jsonl --by attack,defense --format markdown
  pikit report results.jsonl --html report.html`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if runF != nil {
				return runF(cmd, o, a)
			}
			return runReport(cmd, streams, o, a)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.By, "by", nil, "group by these fields, e.g. attack,defense (default: each of attack, defense, channel, agent, target, case_id in turn)")
	f.StringVar(&o.Format, "format", "table", "output format: table, markdown, json, csv, or html (with --output: the same page as --html)")
	f.StringVarP(&o.Output, "output", "o", "", "write the report to `FILE` instead of stdout (--format html needs it)")
	f.StringVar(&o.HTML, "html", "", "also write a self-contained HTML report to `FILE`")
	f.IntVar(&o.HTMLTraces, "html-traces", report.DefaultMaxTraces, "list at most `N` cells with their traces in the --html page (0: every cell)")
	f.BoolVar(&o.Force, "force", false, "overwrite an existing --html or --output file")
	f.BoolVar(&o.CSVRaw, "csv-raw", false, "with --format csv, write cells as they are: no ' before a cell that starts with =, +, -, @, tab or CR (for programs, not spreadsheets)")
	o.s3.addEndpointFlag(f)
	return cmd
}

func runReport(cmd *cobra.Command, streams IO, o *reportOptions, files []string) error {
	by, err := parseBy(o.By)
	if err != nil {
		return usage(err)
	}
	if err := checkFormat(o.Format, "table", "markdown", "json", "csv", "html"); err != nil {
		return err
	}
	if o.Format == "html" {
		// The Python pikit's spelling of --html FILE.
		switch {
		case o.Output == "" && o.HTML == "":
			return usage(errors.New("--format html writes a page: give --output FILE.html"))
		case o.Output != "" && o.HTML != "" && o.Output != o.HTML:
			return usage(errors.New("--format html --output and --html name different files; give one"))
		case o.HTML == "":
			o.HTML = o.Output
		}
	} else {
		// The summary goes to --output, or to standard output ("-").
		summary := o.Output
		if summary == "" {
			summary = "-"
		}
		if err := checkDistinct(output{"--output", summary}, output{"--html", o.HTML}); err != nil {
			return err
		}
		if err := checkNew("--output", o.Output, o.Force, files); err != nil {
			return err
		}
	}
	if o.CSVRaw && o.Format != "csv" {
		return usage(fmt.Errorf("--csv-raw applies to --format csv, not %s", o.Format))
	}
	if o.HTMLTraces < 0 {
		return usage(fmt.Errorf("--html-traces: want 0 (every cell) or more, got %d", o.HTMLTraces))
	}
	if cmd.Flags().Changed("html-traces") && o.HTML == "" {
		return usage(errors.New("--html-traces applies to --html"))
	}
	var page *report.HTMLReport
	if o.HTML != "" {
		if err := checkNew("--html", o.HTML, o.Force, files); err != nil {
			return err
		}
		max := o.HTMLTraces
		if max == 0 {
			max = -1
		}
		page = report.NewHTMLReport(report.HTMLOptions{Title: "pikit report", Generated: time.Now().UTC().Format(time.RFC3339), Sources: files, MaxTraces: max})
	}
	// Without --by: the totals, and a table per field that takes more than
	// one value. The first also builds the adaptive-attack section.
	var aggs []*report.Aggregator
	if len(by) > 0 {
		aggs = append(aggs, report.NewAggregator(by...).TrackAdaptive())
	} else {
		aggs = append(aggs, report.NewAggregator().TrackAdaptive())
		for _, f := range []string{"attack", "defense", "channel", "agent", "target", "case_id"} {
			aggs = append(aggs, report.NewAggregator(f))
		}
	}
	if err := o.s3.check(slices.ContainsFunc(files, objstore.IsURL), cmd.Flags()); err != nil {
		return err
	}
	dups, err := scanResults(resultsReader{cmd.Context(), streams, &o.s3, false}, files, page != nil, func(r *report.Record) error {
		for _, a := range aggs {
			a.AddRecord(r)
		}
		if page != nil {
			return page.Add(r)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sayDuplicates(streams.ErrOut, "report", dups)
	if page != nil {
		if err := writeOutput(streams.Out, o.HTML, page.Write); err != nil {
			return err
		}
		if o.HTML != "-" {
			fmt.Fprintf(streams.ErrOut, "report: %s\n", termsafe.Line(o.HTML))
		}
	}
	sums := []report.Summary{aggs[0].Summary()}
	for _, a := range aggs[1:] {
		if s := a.Summary(); len(s.Groups) > 1 {
			sums = append(sums, s)
		}
	}
	switch {
	case o.Format == "html":
		return nil // the page is the report
	case o.Output != "" && o.Output != "-":
		err := writeFileAtomic(o.Output, func(w io.Writer) error {
			return writeSummaries(w, sums, o.Format, report.CSVOptions{Raw: o.CSVRaw})
		})
		if err == nil {
			fmt.Fprintf(streams.ErrOut, "report: %s\n", termsafe.Line(o.Output))
		}
		return err
	}
	return writeSummaries(streams.dataOut(o.Format), sums, o.Format, report.CSVOptions{Raw: o.CSVRaw})
}

// writeSummaries prints the summaries: the first in full, the others (one
// per grouping field) as their group tables only, then the first's
// adaptive-attack section, if it has one (JSON keeps it in the first; CSV
// has no place for it).
func writeSummaries(w io.Writer, sums []report.Summary, format string, csvOpts report.CSVOptions) error {
	if format == "json" {
		if len(sums) == 1 {
			return sums[0].WriteJSON(w)
		}
		return writeJSON(w, sums)
	}
	sums = slices.Clone(sums)
	adaptive := sums[0].Adaptive
	sums[0].Adaptive = nil
	for i, s := range sums {
		if i > 0 {
			fmt.Fprintln(w)
		}
		var err error
		switch {
		case format == "csv":
			err = s.WriteCSVWith(w, csvOpts)
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
	switch {
	case adaptive == nil || format == "csv":
		return nil
	case format == "markdown":
		fmt.Fprintln(w)
		return adaptive.WriteMarkdown(w)
	}
	fmt.Fprintln(w)
	return adaptive.WriteText(w)
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

type compareOptions struct {
	By     []string
	Format string
	s3     s3Options
}

// maxFlipsShown is how many flipped cells compare's table lists; --format
// json lists them all.
const maxFlipsShown = 20

func newCompareCmd(streams IO) *cobra.Command {
	o := &compareOptions{}
	cmd := &cobra.Command{
		Use:   "compare BASE NEW",
		Short: "Compare two runs: per-group change in attack success, with a significance test",
		Long: `Compare the attack success rates of two results files group by group, each
change with both intervals and a two-proportion z-test (changes with p < 0.05
are flagged as unlikely to be noise), and list the cells (by key) whose
verdict flipped: the first 20 in the table, every one with --format json.
Each run counts a cell key once, as pikit report does. Files stream; what
is kept of the base run is a small record per cell.`,
		Example: `  pikit compare before.jsonl after.jsonl --by defense`,
		Args:    args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, a []string) error {
			return runCompare(cmd, streams, o, a)
		},
	}
	cmd.Flags().StringSliceVar(&o.By, "by", nil, "group by these fields (default attack,defense)")
	cmd.Flags().StringVar(&o.Format, "format", "table", "output format: table or json")
	o.s3.addEndpointFlag(cmd.Flags())
	return cmd
}

func runCompare(cmd *cobra.Command, streams IO, o *compareOptions, files []string) error {
	by, err := parseBy(o.By)
	if err != nil {
		return usage(err)
	}
	if err := checkFormat(o.Format, "table", "json"); err != nil {
		return err
	}
	if len(by) == 0 {
		by = []string{"attack", "defense"}
	}
	// compare's live heap grows with the base run (a small record per
	// cell), unlike a run's: collect at the default pace, not the run's
	// 8x (see tuneGC), unless the user chose GOGC.
	if _, set := os.LookupEnv("GOGC"); !set {
		defer debug.SetGCPercent(debug.SetGCPercent(100))
	}
	c := report.NewComparer(by...)
	if err := o.s3.check(slices.ContainsFunc(files, objstore.IsURL), cmd.Flags()); err != nil {
		return err
	}
	in := resultsReader{cmd.Context(), streams, &o.s3, false}
	// Each run counts its cells once; the two share their keys.
	dups, err := scanResults(in, files[:1], false, func(r *report.Record) error { c.AddBase(r); return nil })
	if err != nil {
		return err
	}
	sayDuplicates(streams.ErrOut, "compare: base", dups)
	if dups, err = scanResults(in, files[1:], false, func(r *report.Record) error { c.AddNew(r); return nil }); err != nil {
		return err
	}
	sayDuplicates(streams.ErrOut, "compare: new", dups)
	if o.Format == "json" {
		return c.Comparison().WriteJSON(streams.Out)
	}
	return writeComparison(streams.Out, c.Comparison())
}

// compareRate formats one side of a change: "s/n rate% (low–high)", or
// "0/0 —" without data.
func compareRate(r report.Rate) string {
	if r.N == 0 {
		return "0/0 —"
	}
	return fmt.Sprintf("%d/%d %.1f%% (%.1f–%.1f)", r.Successes, r.N, 100*r.Rate, 100*r.Low, 100*r.High)
}

func writeComparison(w io.Writer, c report.Comparison) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(name string, ch report.Change) {
		delta, test := "—", "—"
		if ch.Base.N > 0 && ch.New.N > 0 {
			delta, test = fmt.Sprintf("%+.1f pts", 100*ch.Delta), fmt.Sprintf("p=%.3f", ch.P)
			if ch.Significant {
				test += "  *"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, compareRate(ch.Base), compareRate(ch.New), delta, test)
	}
	fmt.Fprintf(tw, "%s\tBASE\tNEW\tCHANGE\tTEST\n", strings.ToUpper(strings.Join(c.By, " · ")))
	row("all cells", c.Overall)
	for _, g := range c.Groups {
		vals := make([]string, len(g.Values))
		for i, v := range g.Values {
			vals[i] = termsafe.Line(v)
		}
		row(strings.Join(vals, " · "), g)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n* p < %.2f: unlikely to be noise (two-proportion z-test); — where a side has no judged cells\n", report.Alpha)
	for _, side := range []struct {
		name  string
		cells int
		n     int
	}{{"base", c.BaseToolErrorCells, c.Overall.Base.N}, {"new", c.NewToolErrorCells, c.Overall.New.N}} {
		if side.cells > 0 {
			fmt.Fprintf(w, "\nwarning: %s: %d of the %d judged cells had tool calls that all errored; their failures may not measure the model\n", side.name, side.cells, side.n)
		}
	}
	fmt.Fprintf(w, "\n%d cells flipped; %d only in base, %d only in new\n", len(c.Flips), c.OnlyBase, c.OnlyNew)
	for i, f := range c.Flips {
		if i == maxFlipsShown {
			fmt.Fprintf(w, "  … and %d more (--format json lists every flipped cell)\n", len(c.Flips)-maxFlipsShown)
			break
		}
		dir := "now succeeds"
		if !f.NewSuccess {
			dir = "now fails"
		}
		fmt.Fprintf(w, "  %s  %s: %s → %s (%s)\n", termsafe.Line(f.Key), termsafe.Line(f.Label), termsafe.Line(string(f.Base)), termsafe.Line(string(f.New)), dir)
	}
	return nil
}

type gateOptions struct {
	By         []string
	MaxASR     float64
	MaxErrors  int
	Strict     bool
	JUnit      string
	AllowEmpty bool
	// AllowNotJudged passes checks with not_judged cells, which fail them
	// by default.
	AllowNotJudged bool
	s3             s3Options
}

// newGateCmd builds pikit gate; runF, when not nil, is called with the
// parsed options and the files instead of checking them (see newRunCmd).
func newGateCmd(streams IO, runF func(*cobra.Command, *gateOptions, []string) error) *cobra.Command {
	o := &gateOptions{}
	cmd := &cobra.Command{
		Use:   "gate RESULTS... --max-asr RATE",
		Short: "Fail (exit 1) when an attack success rate is over a threshold: for CI",
		Long: `Check the attack success rate of results files, overall or per group, against
a threshold: exit 1 when a check fails, 0 when all pass. A check over no
judged cells (an empty file, every cell errored, nothing judged) fails
unless --allow-empty: it shows nothing about the rate. A check with cells
the judge gave no verdict on (not_judged: --judge none, or an LLM judge's
answer that could not be read) fails unless --allow-not-judged, as each may
hide a success; the gate says how many there were either way. Each cell
key counts once, as pikit report does. --junit
writes (or overwrites) a JUnit XML report, replaced whole through a
temporary file.`,
		Example: `  pikit gate results.jsonl --max-asr 0.10
  pikit gate results.jsonl --max-asr 0.05 --by defense --strict --max-errors 0 --junit pikit.xml`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if runF != nil {
				return runF(cmd, o, a)
			}
			return runGate(cmd, streams, o, a)
		},
	}
	f := cmd.Flags()
	f.Float64Var(&o.MaxASR, "max-asr", 0, "the highest acceptable attack success rate, 0..1")
	f.StringSliceVar(&o.By, "by", nil, "check each group of these fields (default: all cells together)")
	f.BoolVar(&o.Strict, "strict", false, "compare the upper bound of the 95% interval, not the rate")
	f.IntVar(&o.MaxErrors, "max-errors", 0, "fail when more cells than this errored (default: no limit)")
	f.StringVar(&o.JUnit, "junit", "", "write a JUnit XML report to `FILE`")
	f.BoolVar(&o.AllowEmpty, "allow-empty", false, "pass a check over no judged cells instead of failing it")
	f.BoolVar(&o.AllowNotJudged, "allow-not-judged", false, "pass a check with not_judged cells (no verdict from the judge) instead of failing it")
	o.s3.addEndpointFlag(f)
	return cmd
}

func runGate(cmd *cobra.Command, streams IO, o *gateOptions, files []string) error {
	if !cmd.Flags().Changed("max-asr") {
		return usage(errors.New("--max-asr is required (a rate between 0 and 1, e.g. 0.10)"))
	}
	if math.IsNaN(o.MaxASR) || o.MaxASR < 0 || o.MaxASR > 1 {
		return usage(fmt.Errorf("--max-asr: want a rate between 0 and 1, got %v", o.MaxASR))
	}
	maxErrors := -1 // not given: no limit
	if cmd.Flags().Changed("max-errors") {
		if o.MaxErrors < 0 {
			return usage(fmt.Errorf("--max-errors: want 0 or more runtime errors, got %d (leave it out for no limit)", o.MaxErrors))
		}
		maxErrors = o.MaxErrors
	}
	by, err := parseBy(o.By)
	if err != nil {
		return usage(err)
	}
	if err := checkOutput("--junit", o.JUnit, files...); err != nil {
		return err
	}
	if err := o.s3.check(slices.ContainsFunc(files, objstore.IsURL), cmd.Flags()); err != nil {
		return err
	}
	agg := report.NewAggregator(by...)
	dups, err := scanResults(resultsReader{cmd.Context(), streams, &o.s3, true}, files, false, func(r *report.Record) error { agg.AddRecord(r); return nil })
	var unfinished unfinishedError
	if errors.As(err, &unfinished) {
		// A run that has not ended has no rate to check yet.
		fmt.Fprintf(streams.Out, "FAIL %s\n", termsafe.Line(unfinished.msg))
		fmt.Fprintln(streams.ErrOut, "gate: failed: the results are not all there")
		return errFailed
	}
	if err != nil {
		return err
	}
	sayDuplicates(streams.ErrOut, "gate", dups)
	sum := agg.Summary()
	checks := report.Gate(sum, report.GateOptions{MaxASR: o.MaxASR, Strict: o.Strict, MaxErrors: maxErrors, AllowEmpty: o.AllowEmpty, AllowNotJudged: o.AllowNotJudged})
	if w := sum.ToolErrorWarning(); w != "" {
		fmt.Fprintf(streams.ErrOut, "gate: warning: %s\n", w)
	}
	out := streams.Out
	if o.JUnit != "" {
		err := writeOutput(streams.Out, o.JUnit, func(w io.Writer) error { return report.WriteJUnit(w, "pikit gate", checks) })
		if err != nil {
			return err
		}
		if o.JUnit == "-" {
			out = streams.ErrOut // stdout is the XML's
		}
	}
	failed := 0
	for _, c := range checks {
		status := "ok  "
		if c.Failed {
			status, failed = "FAIL", failed+1
		}
		fmt.Fprintf(out, "%s %s: %s", status, termsafe.Line(c.Name), c.ASR)
		if c.Reason != "" {
			fmt.Fprintf(out, " — %s", termsafe.Line(c.Reason))
		}
		if c.NotJudged > 0 && o.AllowNotJudged {
			fmt.Fprintf(out, " — %d not judged, allowed", c.NotJudged)
		}
		fmt.Fprintln(out)
	}
	if sum.NotJudged > 0 {
		verb := "failing their checks (--allow-not-judged passes them)"
		if o.AllowNotJudged {
			verb = "allowed by --allow-not-judged"
		}
		fmt.Fprintf(streams.ErrOut, "gate: %d not judged %s (no verdict from the judge), %s\n", sum.NotJudged, plural(sum.NotJudged, "cell", "cells"), verb)
	}
	if failed > 0 {
		fmt.Fprintf(streams.ErrOut, "gate: %d of %d checks failed\n", failed, len(checks))
		return errFailed
	}
	fmt.Fprintf(streams.ErrOut, "gate: all %d checks pass\n", len(checks))
	return nil
}
