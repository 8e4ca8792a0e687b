package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pikit-go/pikit/matrix"
)

// runtimeDriver returns the driver that a config's runtime key chooses
// (nil when no config of src names one).
func runtimeDriver(_ IO, src matrix.Source, _ *runOptions) (matrix.Driver, error) {
	for _, cfg := range matrix.Configs(src) {
		if cfg.Runtime != "" {
			return nil, fmt.Errorf("%s: runtime %q: agent runtimes are not available in this build", cfg.Source, cfg.Runtime)
		}
	}
	return nil, nil
}

func newRuntimeCmd(streams IO) *cobra.Command {
	return &cobra.Command{Use: "runtime", Short: "Agent runtimes (not built yet)", Hidden: true}
}
