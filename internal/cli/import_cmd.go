package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/pikit-go/pikit/dataset"
	"github.com/pikit-go/pikit/importer"
	"github.com/pikit-go/pikit/internal/termsafe"
)

type importOptions struct {
	Set         []string
	Output      string
	Force       bool
	List        bool
	TrustConfig bool
}

func newImportCmd(streams IO) *cobra.Command {
	o := &importOptions{}
	cmd := &cobra.Command{
		Use:   "import KIND PATH -o FILE.toml",
		Short: "Turn a standard benchmark's own data files into a pikit dataset",
		Long: `Read a prompt-injection benchmark's data files, as its users download them,
and write a pikit dataset: declarative scenarios (the benchmark's tools, as
sources and sinks) and cases that keep the benchmark's ids, each with a
reference to where it came from. Run it with pikit dataset run.

The written file is loaded back before pikit says it is done: what import
writes, dataset run reads. --list names the benchmarks and what each reads.

A benchmark's files are read inside the directory named (for a file or a
part of a benchmark, the benchmark's directory): a file that is a symbolic
link out of it, or a hard link, is refused unless --trust-config.`,
		Example: `  pikit import --list
  pikit import injecagent InjecAgent/data -o injecagent.toml
  pikit dataset run injecagent.toml --target openai:gpt-4o-mini -o results.jsonl`,
		Args: func(cmd *cobra.Command, a []string) error {
			if o.List {
				return args(cobra.NoArgs)(cmd, a)
			}
			return args(cobra.ExactArgs(2))(cmd, a)
		},
		RunE: func(cmd *cobra.Command, a []string) error {
			if o.List {
				return listImporters(streams.Out)
			}
			return runImport(streams, o, a[0], a[1])
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Output, "output", "o", "", "write the dataset to `FILE.toml` (required)")
	f.BoolVar(&o.Force, "force", false, "overwrite an existing output file")
	f.BoolVar(&o.List, "list", false, "list the benchmarks pikit imports")
	f.BoolVar(&o.TrustConfig, "trust-config", false, "read the benchmark's files through symbolic links that leave its directory, and files with other names (hard links)")
	f.StringArrayVar(&o.Set, "set", nil, "an importer option `KEY=VALUE` (repeatable), e.g. limit=100 or positions=start,end; an unknown key lists the importer's options")
	return cmd
}

func listImporters(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tREADS")
	for _, info := range importer.Registry.Infos() {
		fmt.Fprintf(tw, "%s\t%s\n", info.Name, info.Description)
	}
	fmt.Fprintln(tw, "\npikit list importers shows each one's --set options.")
	return tw.Flush()
}

func runImport(streams IO, o *importOptions, kind, path string) error {
	if err := importer.Registry.Check(kind); err != nil {
		return usage(err)
	}
	set := o.Set
	if info, _ := importer.Registry.Lookup(kind); o.TrustConfig {
		if _, ok := info.Option(importer.TrustOption); ok {
			set = append(slices.Clone(set), importer.TrustOption+"=true")
		}
	}
	imp, err := importer.New(kind, set)
	if err != nil {
		return usage(fmt.Errorf("--set: %w", err))
	}
	if o.Output == "" {
		return usage(errors.New("-o FILE.toml is required: where to write the dataset"))
	}
	if !strings.HasSuffix(o.Output, ".toml") {
		return usage(fmt.Errorf("-o %s: a dataset is a .toml file", o.Output))
	}
	if err := checkOutput("--output", o.Output, path); err != nil {
		return err
	}
	if _, err := os.Stat(o.Output); err == nil && !o.Force {
		return usage(fmt.Errorf("%s exists; give --force to overwrite it", o.Output))
	}
	if _, err := os.Stat(path); err != nil {
		return usage(fmt.Errorf("%s: %w", path, errors.Unwrap(err)))
	}
	// An import is one pass that allocates much and keeps little: the
	// run's GC setting (tuneGC: collect at 8x the live heap) would let its
	// garbage grow to several times the dataset.
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	ds, err := imp(path)
	if err != nil {
		return usage(err)
	}
	if ds.Benchmark == "" {
		ds.Benchmark = kind
	}
	// What import writes, dataset run must read: Encode loads it back
	// before a byte is written. Only the counts and what was left out are
	// needed after it, and ds is not used past the call, so Encode, the
	// last user of the importer's values, lets them go before it parses
	// the text back; the parsed dataset goes once its cases are counted.
	scenarios, leftOut, leftOutCount := len(ds.Scenarios), ds.LeftOut, ds.LeftOutCount
	var text bytes.Buffer
	loaded, err := dataset.Encode(&text, o.Output, &ds.File)
	if err != nil {
		return fmt.Errorf("%s: the dataset made from %s is not written (a bug in the importer; please report it): %w", kind, path, err)
	}
	cases := len(loaded.Cases)
	if err := writeFileAtomic(o.Output, func(w io.Writer) error { _, err := w.Write(text.Bytes()); return err }); err != nil {
		return fmt.Errorf("writing %s: %w", o.Output, err)
	}
	const shown = 10
	for _, e := range leftOut[:min(len(leftOut), shown)] {
		fmt.Fprintf(streams.ErrOut, "warning: left out: %s\n", termsafe.Line(e.Error()))
	}
	if n := leftOutCount - min(len(leftOut), shown); n > 0 {
		fmt.Fprintf(streams.ErrOut, "warning: and %d more cases left out\n", n)
	}
	left := ""
	if n := leftOutCount; n > 0 {
		left = fmt.Sprintf(" (%d left out)", n)
	}
	fmt.Fprintf(streams.ErrOut, "%s: %d scenarios, %d cases%s from %s\nrun it: pikit dataset run %s\n", o.Output, scenarios, cases, left, path, o.Output)
	return nil
}
