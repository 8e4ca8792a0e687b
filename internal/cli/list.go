package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/pikit-go/pikit/agent"
	"github.com/pikit-go/pikit/attack"
	"github.com/pikit-go/pikit/channel"
	"github.com/pikit-go/pikit/defense"
	"github.com/pikit-go/pikit/importer"
	"github.com/pikit-go/pikit/method"
	"github.com/pikit-go/pikit/target"
	"github.com/pikit-go/pikit/web"
)

// catalog returns the registered methods of each kind.
func catalog() map[string][]method.Info {
	return map[string][]method.Info{
		"attacks":   attack.Registry.Infos(),
		"defenses":  defense.Registry.Infos(),
		"detectors": defense.Detectors.Infos(),
		"channels":  channel.Registry.Infos(),
		"agents":    agent.Registry.Infos(),
		"targets":   target.Registry.Infos(),
		"importers": importer.Registry.Infos(),
		"sites":     web.Infos(),
	}
}

var catalogKinds = []string{"attacks", "defenses", "detectors", "channels", "agents", "targets", "importers", "sites"}

type listOptions struct {
	JSON bool
}

func newListCmd(streams IO) *cobra.Command {
	o := &listOptions{}
	cmd := &cobra.Command{
		Use:       "list [attacks|defenses|detectors|channels|agents|targets|importers|sites]",
		Short:     "List the registered methods with their options",
		Args:      args(cobra.MaximumNArgs(1)),
		ValidArgs: catalogKinds,
		RunE: func(_ *cobra.Command, a []string) error {
			kinds := catalogKinds
			if len(a) == 1 {
				if !slices.Contains(catalogKinds, a[0]) {
					return usage(fmt.Errorf("unknown kind %q; known: %s", a[0], strings.Join(catalogKinds, ", ")))
				}
				kinds = a
			}
			cat := catalog()
			if o.JSON {
				out := map[string][]method.Info{}
				for _, k := range kinds {
					out[k] = cat[k]
				}
				enc := json.NewEncoder(streams.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			tw := tabwriter.NewWriter(streams.Out, 0, 4, 2, ' ', 0)
			for i, k := range kinds {
				if i > 0 {
					fmt.Fprintln(tw)
				}
				fmt.Fprintf(tw, "%s (%d)\n", strings.ToUpper(k), len(cat[k]))
				for _, m := range cat[k] {
					fmt.Fprintf(tw, "  %s\t%s\n", m.Name, m.Description)
					for _, opt := range m.Options {
						choices := ""
						if len(opt.Choices) > 0 {
							choices = " (" + strings.Join(opt.Choices, " | ") + ")"
						}
						fmt.Fprintf(tw, "  \t  %s = %s%s: %s\n", opt.Name, formatDefault(opt.Default), choices, opt.Help)
					}
				}
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	return cmd
}

func formatDefault(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func jsonIndent(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	return append(b, '\n'), err
}
