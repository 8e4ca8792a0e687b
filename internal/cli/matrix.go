package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/pikit-go/pikit/matrix"
)

type matrixOptions struct {
	runOptions
	Config string
}

func newMatrixCmd(streams IO) *cobra.Command {
	o := &matrixOptions{}
	cmd := &cobra.Command{
		Use:   "matrix --config FILE.toml",
		Short: "Run an experiment config: attacks × defenses × channels × agents",
		Long: `Run every cell of an experiment config (TOML, flat or with [matrix], [judge]
and [target] sections, as the Python pikit writes them) and judge each.`,
		Example: `  pikit matrix --config experiment.toml
  pikit matrix --config experiment.toml --target openai:gpt-4o-mini -o results.jsonl`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Config == "" {
				return usage(errors.New("--config FILE.toml is required"))
			}
			if err := o.complete(cmd); err != nil {
				return err
			}
			return runMatrix(cmd, streams, o)
		},
	}
	cmd.Flags().StringVarP(&o.Config, "config", "c", "", "experiment config `FILE` (TOML)")
	o.addFlags(cmd)
	return cmd
}

func runMatrix(cmd *cobra.Command, streams IO, o *matrixOptions) error {
	cfg, err := matrix.LoadFile(o.Config)
	if err != nil {
		return usage(err)
	}
	o.apply(&cfg)
	grid, err := matrix.Expand(cfg)
	if err != nil {
		return usage(err)
	}
	return o.execute(cmd.Context(), streams, grid, []string{"agent", "attack", "defense", "channel"})
}
