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
		Use:   "show attacks|defenses|channels [NAME...]",
		Short: "Preview methods offline, each applied to the same task",
		Long: `Show what each method does to one task before spending tokens: an attack's
worded payload, a defense's hardened prompt (around data carrying the payload),
or a channel's tainted carrier. Nothing is sent anywhere.`,
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
				reg = defense.Registry
			case "channels", "channel":
				reg = channel.Registry
			default:
				return usage(fmt.Errorf("unknown kind %q; show takes attacks, defenses or channels", kind))
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
				fmt.Fprintf(streams.Out, "── %s %s\n%s\n", strings.TrimSuffix(kind, "s"), n, text)
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
	case "defense":
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
