package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pikit-go/pikit/attack"
	"github.com/pikit-go/pikit/dataset/exportcase"
	"github.com/pikit-go/pikit/internal/textcut"
	"github.com/pikit-go/pikit/report"
)

// What export-case reads: results files are written by attackers (the
// payloads, and a hostile file passed around), so the texts of all
// exported cases are bounded (one result's, and the --from file, by
// exportcase), and so are the warnings printed. A line of a results file
// is bounded by the reader (64 MiB).
const (
	maxExportTextBytes = 64 << 20 // the winning texts of every exported case together
	maxExportWarnings  = 20       // warnings printed; the rest are counted
)

type exportCaseOptions struct {
	Key    string
	Case   string
	From   string
	Output string
	Force  bool
	ID     string
}

func newExportCaseCmd(streams IO) *cobra.Command {
	o := &exportCaseOptions{}
	cmd := &cobra.Command{
		Use:   "export-case RESULTS [--key KEY | --case ID] [--from CONFIG_OR_DATASET] [-o FILE]",
		Short: "Turn the winning injections of adaptive results into fixed dataset cases",
		Long: `Write the winning injection of each successful adaptive result (attack
"adaptive") as a dataset case that replays it with the fixed attack, so that
pikit dataset run FILE tries the same injection again. RESULTS is a .jsonl or
.json results file ("-" reads JSONL from standard input); CSV results carry
no metadata, so no winning injection.

Without --key or --case, every successful adaptive result is exported, once
per cell key. Each case keeps the result's defense, channel (with the options
the winning candidate changed), agent, task, target, seed, temperature and
max_steps. A results file does not record the canary, sink_args,
require_sink, user_message and a few more: --from copies them from the
config or dataset (file or built-in name) the results came from, looking the
case up by its id; without it they are left out (the loader's defaults
apply) and a comment at the top of the file says so.

An injection an indirect crescendo spread over several tool results cannot
be replayed as one case yet: its payload (the last part) alone is exported,
and the file and standard error say so.

The file goes to standard output, or to --output FILE, which is never
overwritten without --force. Results files are untrusted: a result whose
winning texts pass 8 MiB is skipped (and results past 64 MiB of them in
all), and so is a result whose fields have the wrong types, each with a
warning naming its line. Text from the results is escaped in the file where
a terminal or an editor could act on it (control, bidi and other invisible
characters), and read back by the dataset loader before it is written.`,
		Example: `  pikit export-case results.jsonl --from experiment.toml -o found.toml
  pikit export-case results.jsonl --key 5bff956d --id pattern-bypass
  pikit dataset run found.toml`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(_ *cobra.Command, a []string) error {
			return runExportCase(streams, o, a[0])
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Key, "key", "", "export only the result with this cell `KEY` (or a prefix of it, such as the 8 characters in a default case id)")
	f.StringVar(&o.Case, "case", "", "export only the results of the dataset case with this `ID`")
	f.StringVar(&o.From, "from", "", "the config or dataset (`FILE` or built-in name) the results came from: the fields a result does not record are copied from it")
	f.StringVarP(&o.Output, "output", "o", "", "write the cases to `FILE` (.toml) instead of standard output (-)")
	f.BoolVar(&o.Force, "force", false, "overwrite an existing --output file")
	f.StringVar(&o.ID, "id", "", "the `ID` of the exported case (one case only; default: <case id or cell>-adaptive-<key>)")
	return cmd
}

func runExportCase(streams IO, o *exportCaseOptions, results string) error {
	if o.Key != "" && o.Case != "" {
		return usage(errors.New("give --key or --case, not both"))
	}
	if o.ID != "" && strings.TrimSpace(o.ID) == "" {
		return usage(errors.New("--id: want a non-empty case id"))
	}
	if _, err := report.InputFormatOf(results); err != nil {
		return usage(err)
	}
	if o.Output == "-" {
		o.Output = "" // standard output, as without --output
	}
	if o.Output != "" {
		if ext := strings.ToLower(filepath.Ext(o.Output)); ext != ".toml" {
			return usage(fmt.Errorf("--output %s: a dataset file ends in .toml (pikit dataset run takes a path ending in .toml as a file)", o.Output))
		}
		if err := checkOutput("--output", o.Output, results, o.From); err != nil {
			return err
		}
		if _, err := os.Lstat(o.Output); err == nil && !o.Force {
			return usage(fmt.Errorf("--output %s: %w (use --force to overwrite)", o.Output, report.ErrExists))
		}
	}
	x := &exporter{streams: streams, o: o, results: results, seen: map[string]bool{}, keys: map[string]bool{}}
	x.b.Results, x.b.DocName = results, o.Output
	if x.b.DocName == "" {
		x.b.DocName = "exported.toml"
	}
	x.b.Warn = func(line int, msg string) { x.warn(line, "%s", msg) }
	if o.From != "" {
		src, err := exportcase.LoadSource(o.From)
		if err != nil {
			return usage(err)
		}
		x.b.Source = src
	}
	if err := x.scan(); err != nil {
		return err
	}
	if o.Key != "" && len(x.keys) > 1 {
		return usage(fmt.Errorf("--key %q matches %d cells (%s); give more of the key", o.Key, len(x.keys), quotedList(slices.Sorted(maps.Keys(x.keys)), 5)))
	}
	x.flushWarnings()
	if len(x.cases) == 0 {
		return x.nothing()
	}
	if o.ID != "" {
		if len(x.cases) > 1 {
			return usage(fmt.Errorf("--id names one case, but %d would be exported; choose one with --key or --case", len(x.cases)))
		}
		x.cases[0].SetID(o.ID)
	}
	out, err := x.b.Document(x.cases)
	if err != nil {
		return err
	}
	if err := x.write(out); err != nil {
		return err
	}
	dest := "standard output"
	if o.Output != "" {
		dest = o.Output
	}
	extra := ""
	if x.dups > 0 {
		extra += fmt.Sprintf(", %d duplicate %s", x.dups, plural(x.dups, "key", "keys"))
	}
	if x.skipped > 0 {
		extra += fmt.Sprintf(", %d skipped", x.skipped)
	}
	fmt.Fprintf(streams.ErrOut, "exported %d %s from %s (%d results read, %d adaptive, %d succeeded%s) → %s\n",
		len(x.cases), plural(len(x.cases), "case", "cases"), results, x.read, x.adaptive, x.succeeded, extra, dest)
	if o.Output != "" {
		fmt.Fprintf(streams.ErrOut, "run them again with: pikit dataset run %s\n", o.Output)
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// quotedList quotes up to max values for a message, ASCII only.
func quotedList(vals []string, max int) string {
	var q []string
	for i, v := range vals {
		if i == max {
			q = append(q, fmt.Sprintf("and %d more", len(vals)-max))
			break
		}
		q = append(q, fmt.Sprintf("%+q", clip(v, 64)))
	}
	return strings.Join(q, ", ")
}

// clip cuts s to at most n bytes, on a character boundary, marking the cut.
func clip(s string, n int) string {
	return textcut.Clip(s, n, fmt.Sprintf("…(%d bytes)", len(s)))
}

// exporter reads one results file and collects its cases.
type exporter struct {
	streams IO
	o       *exportCaseOptions
	results string
	b       exportcase.Builder

	read, adaptive, succeeded, skipped, dups int
	textBytes                                int
	seen                                     map[string]bool // cell keys exported
	keys                                     map[string]bool // keys --key matched
	cases                                    []*exportcase.Case
	warnings                                 int
}

// warn prints a warning about a line of the results file, at most
// maxExportWarnings of them; msg quotes what it shows of the file.
func (x *exporter) warn(line int, format string, a ...any) {
	x.warnings++
	if x.warnings <= maxExportWarnings {
		fmt.Fprintf(x.streams.ErrOut, "pikit export-case: %s:%d: %s\n", x.results, line, fmt.Sprintf(format, a...))
	}
}

func (x *exporter) skip(line int, format string, a ...any) {
	x.skipped++
	x.warn(line, "skipped: "+format, a...)
}

func (x *exporter) flushWarnings() {
	if n := x.warnings - maxExportWarnings; n > 0 {
		fmt.Fprintf(x.streams.ErrOut, "pikit export-case: %s: %d more %s not shown\n", x.results, n, plural(n, "warning", "warnings"))
	}
}

// selected applies --key and --case.
func (x *exporter) selected(rec *report.Record) bool {
	switch {
	case x.o.Key != "":
		if rec.Key == "" || !strings.HasPrefix(rec.Key, x.o.Key) {
			return false
		}
		x.keys[rec.Key] = true
		return true
	case x.o.Case != "":
		return rec.CaseID == x.o.Case
	}
	return true
}

// add takes one result of the file.
func (x *exporter) add(rec *report.Record) error {
	x.read++
	if rec.Attack != attack.AdaptiveName || !x.selected(rec) {
		return nil
	}
	x.adaptive++
	if !rec.Success {
		return nil
	}
	x.succeeded++
	if rec.Key != "" && x.seen[rec.Key] {
		x.dups++
		return nil
	}
	res, err := rec.Result()
	if err != nil {
		x.skip(rec.Line, "a field has the wrong type: %s", quoteErr(err))
		return nil
	}
	w, err := exportcase.WinnerOf(&res)
	if err != nil {
		x.skip(rec.Line, "%s", err)
		return nil
	}
	if w == nil {
		x.skip(rec.Line, "the result succeeded but records no metadata.winning_injection (written by an older pikit?)")
		return nil
	}
	if x.textBytes+w.Size() > maxExportTextBytes {
		x.skip(rec.Line, "the exported cases would hold over %d MiB of injected text; export the rest with --key or --case", maxExportTextBytes>>20)
		return nil
	}
	c, err := x.b.Build(&res, w, rec.Line)
	if err != nil {
		x.skip(rec.Line, "%s", err)
		return nil
	}
	if err := x.b.Check(c); err != nil {
		x.skip(rec.Line, "the case would not load: %s", err)
		return nil
	}
	if w.Parts() > 1 {
		x.warn(rec.Line, "the injection was spread over %d tool results (indirect crescendo); the fixed attack cannot replay that yet, so case %+q replays its payload (the last part) alone", w.Parts(), c.ID())
	}
	x.textBytes += w.Size()
	x.b.Keep(c)
	if res.Key != "" {
		x.seen[res.Key] = true
	}
	x.cases = append(x.cases, c)
	return nil
}

// scan reads the results file. JSONL goes on past a line the reader
// refuses (a field of the wrong type, a line too long), skipped with a
// warning rather than ending the export; a file none of whose lines is a
// result is not results (exit 2). JSON and CSV files are read whole by
// the reader, whose errors name the line.
func (x *exporter) scan() error {
	var firstErr error
	var held []heldWarning // refused lines before the first result
	results, refused := 0, 0
	skip := func(n int, why string) error {
		refused++
		if firstErr == nil {
			firstErr = fmt.Errorf("%s:%d: %s", x.results, n, why)
		}
		if results > 0 {
			x.skip(n, "%s", quoteErr(errors.New(why)))
		} else if len(held) < maxExportWarnings {
			held = append(held, heldWarning{n, why})
		}
		return nil
	}
	add := func(rec *report.Record) error {
		results++
		err := x.add(rec)
		if results == 1 {
			// A result came: the lines refused before it were malformed
			// results, not a sign that the file is something else.
			for _, h := range held {
				x.skip(h.line, "%s", quoteErr(errors.New(h.msg)))
			}
			extra := refused - len(held)
			x.skipped += extra
			x.warnings += extra
			held = nil
		}
		return err
	}
	if err := scanResultsFile(x.streams.In, x.results, add, skip); err != nil {
		return usage(err) // the file could not be read, or is not results
	}
	if results == 0 && refused > 0 {
		return usage(firstErr)
	}
	return nil
}

// quoteErr shows an error about the file's content in ASCII: it may quote
// text from the file.
func quoteErr(err error) string {
	s := fmt.Sprintf("%+q", clip(err.Error(), 300))
	return s[1 : len(s)-1]
}

type heldWarning struct {
	line int
	msg  string
}

// nothing is the error when no case was exported: a check over nothing
// fails (exit 1).
func (x *exporter) nothing() error {
	what := "adaptive results"
	switch {
	case x.o.Key != "":
		what = fmt.Sprintf("adaptive results with key %+q", x.o.Key)
	case x.o.Case != "":
		what = fmt.Sprintf("adaptive results of case %+q", x.o.Case)
	}
	msg := fmt.Sprintf("%s: nothing to export: read %d results, %d %s, and none of them succeeded with a winning injection", x.results, x.read, x.adaptive, what)
	if x.succeeded > 0 {
		msg = fmt.Sprintf("%s: nothing to export: read %d results, %d %s, %d succeeded, and every one was skipped (see the warnings above)", x.results, x.read, x.adaptive, what, x.succeeded)
	}
	if f, _ := report.InputFormatOf(x.results); f == ".csv" {
		msg += " (CSV results carry no metadata, so no winning injection: export from the run's .jsonl or .json)"
	}
	return errors.New(msg)
}

// write sends the document to standard output or --output: a new file
// created exclusively (never over one that appeared meanwhile), or with
// --force one replaced whole.
func (x *exporter) write(b []byte) error {
	path := x.o.Output
	if path == "" {
		_, err := x.streams.Out.Write(b)
		return err
	}
	if x.o.Force {
		return writeFileAtomic(path, func(w io.Writer) error {
			_, err := w.Write(b)
			return err
		})
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return usage(fmt.Errorf("--output %s: %w (use --force to overwrite)", path, report.ErrExists))
	}
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
