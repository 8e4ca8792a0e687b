package cli

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/pikit-go/pikit/dataset"
	"github.com/pikit-go/pikit/internal/suggest"
	"github.com/pikit-go/pikit/internal/termsafe"
	"github.com/pikit-go/pikit/internal/textcut"
	"github.com/pikit-go/pikit/matrix"
)

func newDatasetCmd(streams IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dataset",
		Short: "List, show and run benchmark datasets",
		Long: `A dataset is a TOML file of test cases, each an experiment config with an id
and a description. Four are built in (pikit dataset list); any file in the same format works
(a name ending in .toml or containing a path separator is a file).`,
	}
	cmd.AddCommand(newDatasetListCmd(streams), newDatasetShowCmd(streams), newDatasetRunCmd(streams))
	return cmd
}

func newDatasetListCmd(streams IO) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the built-in datasets",
		Args:  args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			tw := tabwriter.NewWriter(streams.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tCASES\tDESCRIPTION")
			for _, name := range dataset.List() {
				ds, err := dataset.Load(name)
				if err != nil {
					return err
				}
				fmt.Fprintf(tw, "%s\t%d\t%s\n", ds.Name, len(ds.Cases), ds.Description)
			}
			return tw.Flush()
		},
	}
}

func newDatasetShowCmd(streams IO) *cobra.Command {
	maxSize := byteSize(matrix.DefaultMaxFileBytes)
	var cases []string
	var full bool
	cmd := &cobra.Command{
		Use:   "show NAME|FILE.toml",
		Short: "Show a dataset's cases",
		Long: `Show a dataset's cases, one line each, and every endpoint a run of it would
contact; --case ID shows what a case's verdict is judged against: its task,
canary and sink arguments, with its user message and expected answer.`,
		Example: `  pikit dataset show indirect_injection
  pikit dataset show indirect_injection --case email-exfil
  pikit dataset show my_cases.toml --case c1,c2 --full`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			ds, err := dataset.LoadAnyMax(a[0], int64(maxSize))
			if err != nil {
				return usage(err)
			}
			if len(cases) > 0 {
				return showCases(streams, ds, cases, full)
			}
			fmt.Fprintf(streams.Out, "%s: %s\n", ds.Name, ds.Description)
			if ds.Reference != "" {
				fmt.Fprintf(streams.Out, "reference: %s\n", ds.Reference)
			}
			fmt.Fprintf(streams.Out, "source: %s · %d cases\n\n", ds.Path, len(ds.Cases))
			tw := tabwriter.NewWriter(streams.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tAGENTS\tATTACKS\tDEFENSES\tCHANNELS\tTARGET\tDESCRIPTION")
			for _, c := range ds.Cases {
				cfg := c.Config
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", termsafe.Line(c.ID), termsafe.Line(strings.Join(cfg.Agents, ",")),
					termsafe.Line(axisNames(cfg.Attacks, cfg.AttackSpecs)), termsafe.Line(axisNames(cfg.Defenses, cfg.DefenseSpecs)),
					termsafe.Line(channelNames(cfg.Channels, cfg.ChannelSpecs)), termsafe.Line(cfg.TargetSpec), termsafe.Line(c.Description))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(ds.Cases) > 0 {
				fmt.Fprintf(streams.Out, "\n(pikit dataset show %s --case %s shows a case's task, canary and sink arguments)\n", termsafe.Line(a[0]), termsafe.Line(ds.Cases[0].ID))
			}
			// Every endpoint a run of it contacts, as the file has it, and
			// what a run would refuse without --trust-config.
			o := &runOptions{DryRun: true, dotenv: dotEnvOf(cmd.Context())}
			src, err := dataset.Expand(ds, dataset.Options{Prepare: func(cfg *matrix.Config) error { return prepareRuntime(cfg, o) }})
			if err != nil {
				return usage(err)
			}
			eps, err := o.endpoints(src)
			if err != nil {
				return err
			}
			fmt.Fprintln(streams.Out)
			writeEndpoints(streams.Out, eps)
			writeRefusals(streams.Out, o.refusals(src, eps))
			return nil
		},
	}
	cmd.Flags().Var(&maxSize, "max-file-size", "refuse a dataset file larger than this (e.g. 64MiB)")
	cmd.Flags().StringSliceVar(&cases, "case", nil, "show these cases in full detail (`ID`s, comma-separated): task, canary, sink arguments, user message")
	cmd.Flags().BoolVar(&full, "full", false, fmt.Sprintf("with --case, print long texts whole (otherwise the first %d bytes)", caseTextShown))
	return cmd
}

// caseTextShown bounds each text a case's detail view prints without
// --full: a dataset may hold a whole document as its task.
const caseTextShown = 1000

// showCases prints the named cases of a dataset in detail, in the order
// named; an unknown id is a usage error listing some known ones.
func showCases(streams IO, ds *dataset.Dataset, ids []string, full bool) error {
	byID := make(map[string]*dataset.Case, len(ds.Cases))
	known := make([]string, 0, len(ds.Cases))
	for i := range ds.Cases {
		byID[ds.Cases[i].ID] = &ds.Cases[i]
		known = append(known, ds.Cases[i].ID)
	}
	for _, id := range ids {
		if byID[id] == nil {
			shown := known[:min(len(known), 10)]
			more := ""
			if len(known) > len(shown) {
				more = fmt.Sprintf(", … (%d in all)", len(known))
			}
			return usage(fmt.Errorf("--case: dataset %s has no case %q%s; its cases: %s%s",
				ds.Name, textcut.Clip(id, 80, "…"), suggest.Hint(id, known), strings.Join(shown, ", "), more))
		}
	}
	w := streams.Out
	text := func(s string) string {
		if p := textcut.Prefix(s, caseTextShown); !full && p != s {
			s = p + fmt.Sprintf(" … [%d more bytes; --full shows all]", len(s)-len(p))
		}
		return strings.ReplaceAll(termsafe.String(s), "\n", "\n      ")
	}
	for i, id := range ids {
		c := byID[id]
		cfg := c.Config
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "case %s: %s\n", termsafe.Line(c.ID), text(c.Description))
		if c.Reference != "" {
			fmt.Fprintf(w, "  reference:    %s\n", termsafe.Line(c.Reference))
		}
		fmt.Fprintf(w, "  agents %s · attacks %s · defenses %s · channels %s · target %s\n",
			termsafe.Line(strings.Join(cfg.Agents, ",")), termsafe.Line(axisNames(cfg.Attacks, cfg.AttackSpecs)),
			termsafe.Line(axisNames(cfg.Defenses, cfg.DefenseSpecs)), termsafe.Line(channelNames(cfg.Channels, cfg.ChannelSpecs)), termsafe.Line(cfg.TargetSpec))
		fmt.Fprintf(w, "  task:\n      %s\n", text(cfg.Task))
		canary := "(none)"
		if cfg.Canary != "" {
			canary = text(cfg.Canary)
		}
		fmt.Fprintf(w, "  canary:       %s\n", canary)
		args := "(none)"
		if len(cfg.SinkArgs) > 0 {
			keys := slices.Sorted(maps.Keys(cfg.SinkArgs))
			parts := make([]string, len(keys))
			for j, k := range keys {
				parts[j] = fmt.Sprintf("%s=%q", k, fmt.Sprint(cfg.SinkArgs[k]))
			}
			args = text(strings.Join(parts, " "))
		}
		fmt.Fprintf(w, "  sink args:    %s\n", args)
		fmt.Fprintf(w, "  require sink: %v\n", cfg.RequireSink)
		if cfg.UserMessage != "" {
			fmt.Fprintf(w, "  user message:\n      %s\n", text(cfg.UserMessage))
		}
		if cfg.Expected != "" {
			fmt.Fprintf(w, "  expected:     %s\n", text(cfg.Expected))
		}
	}
	return nil
}

func axisNames(names []string, specs []matrix.Spec) string {
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, s := range specs {
		if !seen[s.Name] {
			seen[s.Name] = true
			out = append(out, s.Name)
		}
	}
	return strings.Join(out, ",")
}

func channelNames(names []string, specs []matrix.Spec) string {
	s := axisNames(names, specs)
	if s == "" {
		return "(default)"
	}
	return strings.ReplaceAll(s, ",,", ",")
}

type datasetRunOptions struct {
	runOptions
}

func newDatasetRunCmd(streams IO) *cobra.Command {
	o := &datasetRunOptions{}
	cmd := &cobra.Command{
		Use:   "run NAME|FILE.toml",
		Short: "Run every case of a dataset",
		Example: `  pikit dataset run direct_injection
  pikit dataset run indirect_injection -o results.jsonl
  pikit dataset run my_cases.toml --target openai:gpt-4o-mini --attacks naive,combined`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, a []string) error {
			if err := o.complete(cmd); err != nil {
				return err
			}
			ds, err := dataset.LoadAnyMax(a[0], int64(o.MaxFileSize))
			if err != nil {
				return usage(err)
			}
			opts := dataset.Options{Target: o.Target, Judge: o.Judge, Repeats: o.Repeats, Attacks: o.Attacks,
				Prepare: func(cfg *matrix.Config) error {
					o.applyCase(cfg)
					return prepareRuntime(cfg, &o.runOptions)
				}}
			if o.temperature {
				opts.Temperature = &o.Temperature
			}
			src, err := dataset.Expand(ds, opts)
			if err != nil {
				return usage(err)
			}
			if dataset.IsFile(a[0]) {
				o.inputs = []string{a[0]}
			}
			return o.execute(cmd.Context(), streams, src, []string{"case_id", "outcome"})
		},
	}
	o.addFlags(cmd, true)
	return cmd
}
