package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pikit-go/pikit/matrix"
)

type matrixOptions struct {
	runOptions
	Config string
}

// newMatrixCmd builds pikit matrix; runF, when not nil, is called with the
// parsed and checked options instead of running (see newRunCmd).
func newMatrixCmd(streams IO, runF func(*cobra.Command, *matrixOptions) error) *cobra.Command {
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
			if runF != nil {
				return runF(cmd, o)
			}
			return runMatrix(cmd, streams, o)
		},
	}
	cmd.Flags().StringVarP(&o.Config, "config", "c", "", "experiment config `FILE` (TOML)")
	o.addFlags(cmd, true)
	return cmd
}

func runMatrix(cmd *cobra.Command, streams IO, o *matrixOptions) error {
	cfg, err := loadConfigMax(o.Config, int64(o.MaxFileSize))
	if err != nil {
		return err
	}
	o.inputs = []string{o.Config}
	o.apply(&cfg)
	if err := prepareRuntime(&cfg, &o.runOptions); err != nil {
		return usage(err)
	}
	grid, err := matrix.Expand(cfg)
	if err != nil {
		return usage(err)
	}
	return o.execute(cmd.Context(), streams, grid, []string{"agent", "attack", "defense", "channel"})
}

// loadConfig loads an experiment config file, refusing one that sets
// nothing: running every default is seldom what an empty file meant.
func loadConfig(path string) (matrix.Config, error) {
	return loadConfigMax(path, matrix.DefaultMaxFileBytes)
}

// loadConfigMax is loadConfig for a file of at most max bytes.
func loadConfigMax(path string, max int64) (matrix.Config, error) {
	cfg, err := matrix.LoadFileMax(path, max)
	if err != nil {
		return cfg, usage(err)
	}
	if cfg.Empty() {
		return cfg, usage(fmt.Errorf("%s: the config sets nothing (an empty file, or only comments); give at least the attacks, agents or task to run", path))
	}
	return cfg, nil
}
