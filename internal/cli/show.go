package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pikit-go/pikit/attack"
	"github.com/pikit-go/pikit/channel"
	"github.com/pikit-go/pikit/defense"
	"github.com/pikit-go/pikit/matrix"
	"github.com/pikit-go/pikit/method"
)

type showOptions struct {
	Task        string
	Instruction string
}

const showData = "Quarterly revenue rose 4% on strong subscription renewals."

func newShowCmd(streams IO) *cobra.Command {
	o := &showOptions{}
	cmd := &cobra.Command{
		Use:   "show attacks|defenses|detectors|channels [NAME...]",
		Short: "Preview methods offline, each applied to the same task",
		Long: `Show what each method does to one task before spending tokens: an attack's
worded payload, a defense's hardened prompt (around data carrying the payload),
a detector's verdicts on the data with and without the payload, or a
channel's tainted carrier. Nothing is sent anywhere.`,
		Example: `  pikit show attacks combined important_instructions
  pikit show channels unicode_hidden --task "Reply with PWNED."`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(_ *cobra.Command, a []string) error {
			kind, names := a[0], a[1:]
			var reg interface {
				Names() []string
				Lookup(name string) (method.Info, bool)
				Check(string) error
			}
			switch kind {
			case "attacks", "attack":
				reg = attack.Registry
			case "defenses", "defense":
				reg = defenseNames{} // a defenses list names detectors too
			case "detectors", "detector":
				reg = defense.Detectors
			case "channels", "channel":
				reg = channel.Registry
			default:
				return usage(fmt.Errorf("unknown kind %q; show takes attacks, defenses, detectors or channels", kind))
			}
			if len(names) == 0 {
				names = reg.Names()
			}
			for _, n := range names {
				if err := reg.Check(n); err != nil {
					return usage(err)
				}
			}
			for i, n := range names {
				text, err := o.preview(kind, n)
				if err != nil {
					return err
				}
				if i > 0 {
					fmt.Fprintln(streams.Out)
				}
				label := strings.TrimSuffix(kind, "s")
				if defense.IsDetector(n) {
					label = "detector"
				}
				fmt.Fprintf(streams.Out, "── %s %s\n%s\n", label, n, text)
				// The options, with their defaults and where they differ
				// from the Python pikit's.
				if info, ok := reg.Lookup(n); ok && len(info.Options) > 0 {
					fmt.Fprintln(streams.Out, "options:")
					for _, opt := range info.Options {
						choices := ""
						if len(opt.Choices) > 0 {
							choices = " (" + strings.Join(opt.Choices, " | ") + ")"
						}
						fmt.Fprintf(streams.Out, "  %s = %s%s: %s\n", opt.Name, formatDefault(opt.Default), choices, opt.Help)
					}
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.Task, "task", matrix.DefaultTask, "the injected task")
	cmd.Flags().StringVar(&o.Instruction, "instruction", "Summarize the attached report.", "the benign user request")
	return cmd
}

func (o *showOptions) preview(kind, name string) (string, error) {
	switch strings.TrimSuffix(kind, "s") {
	case "attack":
		a, err := attack.New(name, nil, 0)
		if err != nil {
			return "", err
		}
		return a.Inject(o.Instruction, o.Task), nil
	case "defense", "detector":
		if defense.IsDetector(name) {
			d, err := defense.NewDetector(name, nil, 0)
			if err != nil {
				return "", err
			}
			verdict := func(text string) string {
				v := d.Detect(text)
				out := fmt.Sprintf("flagged %v, score %.2f", v.Flagged, v.Score)
				if v.Reason != "" {
					out += ": " + v.Reason
				}
				return out
			}
			return fmt.Sprintf("the data alone: %s\nwith the task:  %s", verdict(showData), verdict(showData+"\n"+o.Task)), nil
		}
		d, err := defense.New(name, nil, 0)
		if err != nil {
			return "", err
		}
		return d.Apply(showData+"\n"+o.Task, o.Instruction), nil
	}
	ch, err := channel.New(name, nil, 0)
	if err != nil {
		return "", err
	}
	data := ""
	if s, ok := ch.(channel.Sampler); ok {
		data = s.Sample()
	}
	return ch.Taint(data, o.Task)
}

// defenseNames is the name space of a config's defenses list: prevention
// defenses and detectors together.
type defenseNames struct{}

func (defenseNames) Names() []string      { return defense.AllNames() }
func (defenseNames) Check(n string) error { return defense.Check(n) }
func (defenseNames) Lookup(n string) (method.Info, bool) {
	if info, ok := defense.Registry.Lookup(n); ok {
		return info, true
	}
	return defense.Detectors.Lookup(n)
}
