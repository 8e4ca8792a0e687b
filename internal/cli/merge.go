package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/pikit-go/pikit/dataset"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/objstore"
	"github.com/pikit-go/pikit/report"
)

type mergeOptions struct {
	Output  string
	Force   bool
	Config  string
	Dataset string
	s3      s3Options
}

func newMergeCmd(streams IO) *cobra.Command {
	o := &mergeOptions{}
	cmd := &cobra.Command{
		Use:   "merge RESULTS... --output ALL.jsonl",
		Short: "Merge the JSONL results of sharded or resumed runs",
		Long: `Merge JSONL result files into one, keeping each cell key once: a result that
is not a runtime error wins over one that is, otherwise the first seen. With
--config or --dataset, check that the merged results cover that plan. An
s3://BUCKET/PREFIX/ reads every shard a sharded run stored there.`,
		Example: `  pikit merge shard-*.jsonl --output all.jsonl --config experiment.toml
  pikit merge s3://pikit-results/nightly/ --output all.jsonl`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := o.s3.check(slices.ContainsFunc(a, objstore.IsURL), cmd.Flags()); err != nil {
				return err
			}
			return runMerge(cmd.Context(), streams, o, a)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Output, "output", "o", "", "the merged `FILE` (.jsonl; - for standard output)")
	f.BoolVar(&o.Force, "force", false, "overwrite an existing output file")
	f.StringVarP(&o.Config, "config", "c", "", "check coverage of this experiment config's plan")
	f.StringVar(&o.Dataset, "dataset", "", "check coverage of this dataset's plan")
	o.s3.addEndpointFlag(f)
	return cmd
}

func runMerge(ctx context.Context, streams IO, o *mergeOptions, inputs []string) error {
	if o.Output == "" {
		return usage(errors.New("--output FILE.jsonl is required"))
	}
	if objstore.IsURL(o.Output) {
		return usage(fmt.Errorf("%s: merge writes a local .jsonl file; give a path", o.Output))
	}
	if f, err := report.FormatOf(o.Output); o.Output != "-" && (err != nil || f != ".jsonl") {
		return usage(fmt.Errorf("%s: merge writes JSONL", o.Output))
	}
	if err := checkOutput("--output", o.Output, append(append([]string(nil), inputs...), o.Config, o.Dataset)...); err != nil {
		return err
	}
	var plan matrix.Source
	switch {
	case o.Config != "" && o.Dataset != "":
		return usage(errors.New("give --config or --dataset, not both"))
	case o.Config != "":
		cfg, err := loadConfig(o.Config)
		if err != nil {
			return err
		}
		if plan, err = matrix.Expand(cfg); err != nil {
			return usage(err)
		}
	case o.Dataset != "":
		ds, err := dataset.LoadAny(o.Dataset)
		if err != nil {
			return usage(err)
		}
		if plan, err = dataset.Expand(ds, dataset.Options{}); err != nil {
			return usage(err)
		}
	}
	// An s3:// input is listed once and read in each pass.
	srcs := make([]report.Source, len(inputs))
	for i, in := range inputs {
		srcs[i] = report.Source{Name: in, Open: func() (io.ReadCloser, error) { return os.Open(in) }}
		if !objstore.IsURL(in) {
			continue
		}
		st, p, err := o.s3.inspect(ctx, streams.ErrOut, in, false)
		if err != nil {
			return err
		}
		srcs[i].Open = func() (io.ReadCloser, error) { return st.Open(ctx, p), nil }
	}
	// Pass 1: which keys have a good result somewhere (every input read
	// as results before anything is written: a line that is not one, or
	// whose verdict is not one, is refused).
	d := report.NewDeduper()
	d.Check = true
	if err := d.Scan(srcs); err != nil {
		return usage(err)
	}
	if !o.Force && o.Output != "-" {
		if _, err := os.Stat(o.Output); err == nil {
			return usage(fmt.Errorf("%s: %w (use --force to overwrite)", o.Output, report.ErrExists))
		}
	}
	// Pass 2: the first good line of each key, or its first line when none
	// is good, through a temporary file beside the destination (so the
	// final rename never crosses file systems).
	// Standard output ("-") gets the lines as they are written.
	var st report.DedupStats
	err := writeOutput(streams.dataOut("jsonl"), o.Output, func(w io.Writer) error {
		var err error
		st, err = d.Write(srcs, w)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(streams.ErrOut, "merged %d files: %d results (%d duplicates dropped, %d runtime errors kept) → %s\n", len(inputs), st.Kept, st.Duplicates, st.Errors, outName(o.Output))
	if plan == nil {
		return nil
	}
	missing, foreign := 0, st.Kept
	for i := 0; i < plan.Len(); i++ {
		if d.Written(plan.Cell(i).Key) {
			foreign--
		} else {
			missing++
		}
	}
	fmt.Fprintf(streams.ErrOut, "coverage: %d of %d planned cells, %d missing, %d results not in the plan\n", plan.Len()-missing, plan.Len(), missing, foreign)
	if missing > 0 || foreign > 0 {
		return errFailed
	}
	return nil
}
